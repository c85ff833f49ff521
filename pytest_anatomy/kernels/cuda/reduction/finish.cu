/*
Reduction helper · reduce_finish: sums `n` partials with a grid-stride loop and warp shuffles,
writing one value per block. Launched with a grid of G blocks it turns n partials into G; with
one block it writes the final sum. Shared by every rung, so it is the same cost in each.
Not a rung: its time is part of each rung's measured time and of its byte ledger (8 bytes per
partial: written once, read once).
*/
#define RF_BLOCK 1024
__device__ __forceinline__ float rf_warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}
extern "C" __global__ void __launch_bounds__(RF_BLOCK)
reduce_finish(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float warp_sums[RF_BLOCK / 32];
  const unsigned tid = threadIdx.x;
  float v = 0.0f;
  for (size_t i = (size_t)blockIdx.x * RF_BLOCK + tid; i < (size_t)n; i += (size_t)gridDim.x * RF_BLOCK) v += in[i];
  v = rf_warp_sum(v);
  if ((tid & 31) == 0) warp_sums[tid / 32] = v;
  __syncthreads();
  if (tid < 32) {
    v = warp_sums[tid];  // RF_BLOCK / 32 == 32: every lane has a value
    v = rf_warp_sum(v);
    if (tid == 0) out[blockIdx.x] = v;
  }
}
