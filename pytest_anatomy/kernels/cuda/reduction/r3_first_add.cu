/*
Reduction rung r3 · first add during load (Harris #4): each thread loads two elements a block
apart and adds them before the tree.

What changes: half the blocks, half the tree work per element, two independent loads in flight
per thread. Partials: 2^28/512 = 524,288.
Predicted effect: H200, 2^28 floats: 0.32 ms. Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 2^28 floats: 0.6139 ms,
1.92x the prediction (finding h200-reduction-tree-bound); rung 0 0.2484 ms.
*/
#define R3_BLOCK 256
extern "C" __global__ void __launch_bounds__(R3_BLOCK)
reduce_first_add(const float* __restrict__ x, float* __restrict__ partials, int n) {
  __shared__ float s[R3_BLOCK];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * (2 * R3_BLOCK) + tid;
  float v = (i < (unsigned)n) ? x[i] : 0.0f;
  if (i + R3_BLOCK < (unsigned)n) v += x[i + R3_BLOCK];
  s[tid] = v;
  __syncthreads();
  for (unsigned stride = R3_BLOCK / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = s[0];
}
