/*
Softmax rung x1 · three kernels: row max, row sum of exp(x - max), then normalize.

What changes: nothing yet -- the textbook, numerically safe form. x is read three times and y
written once: 16MN bytes issued; every pass streams the whole x, so each re-read comes from
DRAM once x is larger than L2.
Predicted effect: H200, 8192 x 2048: 0.060 ms (16MN = 268 MB at 4.26 TB/s is 0.063 ms, but x is 67 MB, near the 60 MB L2, so part of a re-read hits). 128 x 152,064: 0.24 ms (the two row kernels run 128 blocks on 132 SMs: too few bytes in flight per SM). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 8,192 x 2,048: 0.09739
ms, 1.62x the prediction (finding h200-softmax-short-rows-instruction-bound); rung 0 0.04213 ms; 128
x 152,064: 0.1272 ms, 0.53x the prediction (finding h200-softmax-vocab-rows-faster-than-feared);
rung 0 0.09088 ms.
Seed (RTX 4090, M=8192 N=2048): 0.251 ms -- "106%" of bandwidth on issued bytes (the 64 MiB x
mostly fit in the 72 MiB L2, so the re-reads did not all reach DRAM).
*/
#ifndef INFINITY  // NVRTC has no math.h; nvcc and the CPU emulator do
#define INFINITY __int_as_float(0x7f800000)
#endif
#define X1_BLOCK 256
__device__ __forceinline__ float x1_block_max(float v, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = (threadIdx.x < X1_BLOCK / 32) ? scratch[threadIdx.x] : -INFINITY;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
    if (threadIdx.x == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
__device__ __forceinline__ float x1_block_sum(float v, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = (threadIdx.x < X1_BLOCK / 32) ? scratch[threadIdx.x] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
extern "C" __global__ void __launch_bounds__(X1_BLOCK)
softmax_row_max(const float* __restrict__ x, float* __restrict__ row_max, int N) {
  __shared__ float scratch[X1_BLOCK / 32];
  const float* row = x + (size_t)blockIdx.x * N;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < N; j += X1_BLOCK) m = fmaxf(m, row[j]);
  m = x1_block_max(m, scratch);
  if (threadIdx.x == 0) row_max[blockIdx.x] = m;
}
extern "C" __global__ void __launch_bounds__(X1_BLOCK)
softmax_row_sum(const float* __restrict__ x, const float* __restrict__ row_max, float* __restrict__ row_sum,
                int N) {
  __shared__ float scratch[X1_BLOCK / 32];
  const float* row = x + (size_t)blockIdx.x * N;
  const float m = row_max[blockIdx.x];
  float d = 0.0f;
  for (int j = threadIdx.x; j < N; j += X1_BLOCK) d += __expf(row[j] - m);
  d = x1_block_sum(d, scratch);
  if (threadIdx.x == 0) row_sum[blockIdx.x] = d;
}
extern "C" __global__ void __launch_bounds__(X1_BLOCK)
softmax_normalize(const float* __restrict__ x, const float* __restrict__ row_max,
                  const float* __restrict__ row_sum, float* __restrict__ y, int N) {
  const int j = blockIdx.x * X1_BLOCK + threadIdx.x;
  const size_t r = blockIdx.y;
  if (j < N) y[r * N + j] = __expf(x[r * N + j] - row_max[r]) / row_sum[r];
}
