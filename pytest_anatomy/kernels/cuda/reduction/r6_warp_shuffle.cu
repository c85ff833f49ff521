/*
Reduction rung r6 · warp shuffles: registers instead of shared memory for the tree.

What changes: after the grid-stride sum, each warp reduces its 32 values with __shfl_down_sync
(5 shuffles, no shared memory, no barrier), warp leaders write 8 values to shared memory, and
the first warp reduces those. Removes the shared-memory tree entirely; the load stream is the
same as r5, so the byte ledger predicts the same time.
Predicted effect: H200, 2^28 floats: 0.255 ms. Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 2^28 floats: 0.4234 ms,
1.66x the prediction (finding h200-reduction-bytes-in-flight); rung 0 0.2484 ms.
Seed (RTX 4090, "R6 shuffle"): 1.1212 ms = 95.0% -- identical to R5.
*/
#define R6_BLOCK 256
__device__ __forceinline__ float r6_warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}
extern "C" __global__ void __launch_bounds__(R6_BLOCK)
reduce_warp_shuffle(const float* __restrict__ x, float* __restrict__ partials, int n) {
  __shared__ float warp_sums[R6_BLOCK / 32];
  const unsigned tid = threadIdx.x;
  float v = 0.0f;
  for (size_t i = (size_t)blockIdx.x * R6_BLOCK + tid; i < (size_t)n; i += (size_t)gridDim.x * R6_BLOCK) v += x[i];
  v = r6_warp_sum(v);
  if ((tid & 31) == 0) warp_sums[tid / 32] = v;
  __syncthreads();
  if (tid < 32) {
    v = (tid < R6_BLOCK / 32) ? warp_sums[tid] : 0.0f;
    v = r6_warp_sum(v);
    if (tid == 0) partials[blockIdx.x] = v;
  }
}
