/*
RMSNorm rung n1 · two kernels: one pass computes each row's 1/rms, a second pass applies it.

What changes: nothing yet -- the unfused form. Kernel 1 reads x (4MN bytes) and writes M
floats; kernel 2 reads x again, w and the M floats, and writes y: 12MN bytes issued. Between
the launches the whole x has streamed through L2, so the second read comes from DRAM.
Byte ledger: 12MN bytes over the copy bandwidth.
Predicted effect: H200, 8192 x 3584: 0.090 ms (12MN = 352 MB over the 4.26 TB/s copy bandwidth = 0.083 ms, at 92%). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 8,192 x 3,584: 0.1278
ms, 1.42x the prediction (finding h200-rmsnorm-two-pass-apply-kernel); rung 0 0.07366 ms.
Seed (RTX 4090, M=8192 N=3584): 0.386 ms, 90.5% of 1008 GB/s on 12MN bytes.
*/
#define N1_BLOCK 256
__device__ __forceinline__ float n1_block_sum(float v, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = (threadIdx.x < N1_BLOCK / 32) ? scratch[threadIdx.x] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
extern "C" __global__ void __launch_bounds__(N1_BLOCK)
rmsnorm_rstd(const float* __restrict__ x, float* __restrict__ rstd, int N, float eps) {
  __shared__ float scratch[N1_BLOCK / 32];
  const float* row = x + (size_t)blockIdx.x * N;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < N; j += N1_BLOCK) ss += row[j] * row[j];
  ss = n1_block_sum(ss, scratch);
  if (threadIdx.x == 0) rstd[blockIdx.x] = rsqrtf(ss / (float)N + eps);
}
extern "C" __global__ void __launch_bounds__(N1_BLOCK)
rmsnorm_apply(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ rstd,
              float* __restrict__ y, int N) {
  const int j = blockIdx.x * N1_BLOCK + threadIdx.x;
  const size_t r = blockIdx.y;
  if (j < N) y[r * N + j] = x[r * N + j] * rstd[r] * w[j];
}
