/*
RMSNorm rung n4 · register-resident with float4 loads and stores.

What changes: 8 float4 per thread (still 8,192 columns at most), one LDG.128 per four elements.
Same 8MN bytes as n3, a quarter of the memory instructions. When N is not a multiple of 4 the
rows are not 16-byte aligned; the kernel then takes n3's scalar path (a uniform branch).
Predicted effect: H200, 8192 x 3584: 0.059 ms, 93% (issue 5 target: 92%). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 8,192 x 3,584: 0.0581
ms, 0.98x the prediction (within the ladders' 15% acceptance band); rung 0 0.07366 ms.
Seed (RTX 4090): 0.256 ms, the same as n3: the stream, not the instruction count, sets the time.
*/
#define N4_BLOCK 256
#define N4_PER4 8
__device__ __forceinline__ float n4_block_sum(float v, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = (threadIdx.x < N4_BLOCK / 32) ? scratch[threadIdx.x] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
extern "C" __global__ void __launch_bounds__(N4_BLOCK)
rmsnorm_vectorized(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                   float eps) {
  __shared__ float scratch[N4_BLOCK / 32];
  const float* row = x + (size_t)blockIdx.x * N;
  float* out = y + (size_t)blockIdx.x * N;
  float4 v[N4_PER4];
  float ss = 0.0f;
  if (N % 4 == 0) {
    const int n4 = N / 4;
    const float4* row4 = reinterpret_cast<const float4*>(row);
#pragma unroll
    for (int i = 0; i < N4_PER4; ++i) {
      const int j = threadIdx.x + i * N4_BLOCK;
      v[i] = (j < n4) ? row4[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      ss += v[i].x * v[i].x + v[i].y * v[i].y + v[i].z * v[i].z + v[i].w * v[i].w;
    }
    const float r = rsqrtf(n4_block_sum(ss, scratch) / (float)N + eps);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* out4 = reinterpret_cast<float4*>(out);
#pragma unroll
    for (int i = 0; i < N4_PER4; ++i) {
      const int j = threadIdx.x + i * N4_BLOCK;
      if (j < n4) {
        const float4 g = w4[j];
        out4[j] = make_float4(v[i].x * r * g.x, v[i].y * r * g.y, v[i].z * r * g.z, v[i].w * r * g.w);
      }
    }
  } else {
    float s[4 * N4_PER4];  // the scalar path's own registers (odd N: rows are not 16-byte aligned)
#pragma unroll
    for (int i = 0; i < 4 * N4_PER4; ++i) {
      const int j = threadIdx.x + i * N4_BLOCK;
      s[i] = (j < N) ? row[j] : 0.0f;
      ss += s[i] * s[i];
    }
    const float r = rsqrtf(n4_block_sum(ss, scratch) / (float)N + eps);
#pragma unroll
    for (int i = 0; i < 4 * N4_PER4; ++i) {
      const int j = threadIdx.x + i * N4_BLOCK;
      if (j < N) out[j] = s[i] * r * w[j];
    }
  }
}
