/*
Reduction rung r2 · sequential addressing (Harris #3): the active threads are the first `s`.

What changes: `if (tid < s) s[tid] += s[tid + s]` -- whole warps retire together instead of
every warp keeping one active lane, and the accesses are contiguous (no bank conflicts). The
work per element is the same, so the byte ledger predicts no change; what shrinks is the
instruction overhead per element, which matters only if it was the bottleneck.
Predicted effect: H200, 2^28 floats: 0.55 ms. Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 2^28 floats: 1.14 ms,
2.08x the prediction (finding h200-reduction-tree-bound); rung 0 0.2484 ms.
*/
#define R2_BLOCK 256
extern "C" __global__ void __launch_bounds__(R2_BLOCK)
reduce_sequential(const float* __restrict__ x, float* __restrict__ partials, int n) {
  __shared__ float s[R2_BLOCK];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * R2_BLOCK + tid;
  s[tid] = (i < (unsigned)n) ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = R2_BLOCK / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = s[0];
}
