/*
RMSNorm rung n3 · register-resident: each thread keeps its slice of the row in registers.

What changes: the row is read once into up to 32 registers per thread (256 threads x 32 = 8,192
columns at most), reduced, scaled and written: 8MN bytes issued = 8MN compulsory. A longer row
does not fit and the rung refuses it (see the registry's max_cols). The array is indexed only
by unrolled constants, so it stays in registers (ptxas: 0 bytes stack frame).
Predicted effect: H200, 8192 x 3584: 0.060 ms, 92% of the copy bandwidth on 8MN bytes. Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 8,192 x 3,584: 0.06328
ms, 1.05x the prediction (within the ladders' 15% acceptance band); rung 0 0.07366 ms.
Seed (RTX 4090): 0.256 ms, 91.0% of 1008 GB/s on 8MN bytes.
*/
#define N3_BLOCK 256
#define N3_PER 32
__device__ __forceinline__ float n3_block_sum(float v, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = (threadIdx.x < N3_BLOCK / 32) ? scratch[threadIdx.x] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
extern "C" __global__ void __launch_bounds__(N3_BLOCK)
rmsnorm_registers(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                  float eps) {
  __shared__ float scratch[N3_BLOCK / 32];
  const float* row = x + (size_t)blockIdx.x * N;
  float* out = y + (size_t)blockIdx.x * N;
  float v[N3_PER];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < N3_PER; ++i) {
    const int j = threadIdx.x + i * N3_BLOCK;
    v[i] = (j < N) ? row[j] : 0.0f;
    ss += v[i] * v[i];
  }
  const float r = rsqrtf(n3_block_sum(ss, scratch) / (float)N + eps);
#pragma unroll
  for (int i = 0; i < N3_PER; ++i) {
    const int j = threadIdx.x + i * N3_BLOCK;
    if (j < N) out[j] = v[i] * r * w[j];
  }
}
