/*
Reduction rung r4 · unrolled last warp (Harris #5, in its Volta-safe form).

What changes: once 64 values remain, the last warp finishes without __syncthreads. Since Volta
the lanes of a warp are not guaranteed to run in lockstep, so the classic volatile-only version
is a race; each step here reads, __syncwarp()s, writes, __syncwarp()s. Saves 5 block barriers
per block; still two loads per thread as in r3.
Predicted effect: H200, 2^28 floats: 0.29 ms. Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 2^28 floats: 0.4466 ms,
1.54x the prediction (finding h200-reduction-tree-bound); rung 0 0.2484 ms.
*/
#define R4_BLOCK 256
extern "C" __global__ void __launch_bounds__(R4_BLOCK)
reduce_unrolled_warp(const float* __restrict__ x, float* __restrict__ partials, int n) {
  __shared__ float s[R4_BLOCK];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * (2 * R4_BLOCK) + tid;
  float v = (i < (unsigned)n) ? x[i] : 0.0f;
  if (i + R4_BLOCK < (unsigned)n) v += x[i + R4_BLOCK];
  s[tid] = v;
  __syncthreads();
  for (unsigned stride = R4_BLOCK / 2; stride > 32; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid < 32) {
    v = s[tid] + s[tid + 32];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      __syncwarp();
      s[tid] = v;
      __syncwarp();
      v += s[tid + off];
    }
    if (tid == 0) partials[blockIdx.x] = v;
  }
}
