/*
Reduction rung r5 · multiple elements per thread, grid-stride (Harris #6/#7).

What changes: a fixed grid of 8 blocks per SM (full occupancy at 256 threads) walks the array
with a grid-stride loop, so each thread sums ~1,000 elements in a register before any shared
memory or barrier is touched; the tree cost per element all but vanishes and only the stream of
loads remains. One partial per block (1,056 on an H200), finished by one single-block launch.
Predicted effect: H200, 2^28 floats: 0.26 ms (92% of the 4.47 TB/s read bandwidth measured on this H200). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 2^28 floats: 0.4233 ms,
1.63x the prediction (finding h200-reduction-bytes-in-flight); rung 0 0.2484 ms.
Seed (RTX 4090, "R5 coarsened"): 1.1211 ms = 95.0% of 1008 GB/s.
*/
#define R5_BLOCK 256
extern "C" __global__ void __launch_bounds__(R5_BLOCK)
reduce_grid_stride(const float* __restrict__ x, float* __restrict__ partials, int n) {
  __shared__ float s[R5_BLOCK];
  const unsigned tid = threadIdx.x;
  float v = 0.0f;
  for (size_t i = (size_t)blockIdx.x * R5_BLOCK + tid; i < (size_t)n; i += (size_t)gridDim.x * R5_BLOCK) v += x[i];
  s[tid] = v;
  __syncthreads();
  for (unsigned stride = R5_BLOCK / 2; stride > 32; stride >>= 1) {
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
