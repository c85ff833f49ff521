/*
Reduction rung r7 · vectorized: float4 loads in the grid-stride loop, four sums per thread.

What changes: one LDG.128 instead of four LDG.32 per four elements, and four independent
accumulators, so each thread keeps more bytes in flight -- the lever that matters once the
kernel is a pure stream (Little's law: bytes in flight = bandwidth x latency). Elements past
the last whole float4 (n % 4) are summed by the first threads of block 0.
Predicted effect: H200, 2^28 floats: 0.250 ms, 96% of the measured read bandwidth (issue 5 target: 95%). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 2^28 floats: 0.2458 ms,
0.98x the prediction (within the ladders' 15% acceptance band); rung 0 0.2484 ms.
*/
#define R7_BLOCK 256
__device__ __forceinline__ float r7_warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}
extern "C" __global__ void __launch_bounds__(R7_BLOCK)
reduce_vectorized(const float* __restrict__ x, float* __restrict__ partials, int n) {
  __shared__ float warp_sums[R7_BLOCK / 32];
  const unsigned tid = threadIdx.x;
  const size_t n4 = (size_t)n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);  // torch allocations are 256-byte aligned
  float a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;
  for (size_t i = (size_t)blockIdx.x * R7_BLOCK + tid; i < n4; i += (size_t)gridDim.x * R7_BLOCK) {
    const float4 q = x4[i];
    a += q.x; b += q.y; c += q.z; d += q.w;
  }
  if (blockIdx.x == 0 && tid < (unsigned)(n - n4 * 4)) a += x[n4 * 4 + tid];
  float v = r7_warp_sum((a + b) + (c + d));
  if ((tid & 31) == 0) warp_sums[tid / 32] = v;
  __syncthreads();
  if (tid < 32) {
    v = (tid < R7_BLOCK / 32) ? warp_sums[tid] : 0.0f;
    v = r7_warp_sum(v);
    if (tid == 0) partials[blockIdx.x] = v;
  }
}
