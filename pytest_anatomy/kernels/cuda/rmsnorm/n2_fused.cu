/*
RMSNorm rung n2 · fused: one block per row does both passes, no intermediate in DRAM.

What changes: one kernel; the row (14 KB at N=3584) is read twice by the same block a few
microseconds apart, so the second read is served from L1/L2. Issued bytes are still 12MN;
DRAM bytes should be ~8MN. The byte ledger counted on issued bytes predicts no gain; counted
on DRAM bytes it predicts n1 x 8/12.
Predicted effect: H200, 8192 x 3584: 0.062 ms (8MN of DRAM bytes = 235 MB, 0.055 ms at full copy bandwidth). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 8,192 x 3,584: 0.06552
ms, 1.06x the prediction (within the ladders' 15% acceptance band); rung 0 0.07366 ms.
Seed (RTX 4090): 0.259 ms -- "134.9%" of bandwidth on issued bytes, i.e. the second read hit L2.
*/
#define N2_BLOCK 256
__device__ __forceinline__ float n2_block_sum(float v, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = (threadIdx.x < N2_BLOCK / 32) ? scratch[threadIdx.x] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
extern "C" __global__ void __launch_bounds__(N2_BLOCK)
rmsnorm_fused(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
              float eps) {
  __shared__ float scratch[N2_BLOCK / 32];
  const float* row = x + (size_t)blockIdx.x * N;
  float* out = y + (size_t)blockIdx.x * N;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < N; j += N2_BLOCK) ss += row[j] * row[j];
  const float r = rsqrtf(n2_block_sum(ss, scratch) / (float)N + eps);
  for (int j = threadIdx.x; j < N; j += N2_BLOCK) out[j] = row[j] * r * w[j];
}
