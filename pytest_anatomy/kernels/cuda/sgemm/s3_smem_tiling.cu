/*
SGEMM rung s3 · shared-memory tiling, 32x32 tiles, one output per thread.

What changes: the block stages a 32x32 tile of A and of B in shared memory, then every thread
reads its row of As (a broadcast: the warp shares ty) and its column of Bs (32 distinct
addresses). Global loads per FMA drop from 2 to 2/32; each FMA now costs two shared loads.
Instruction ledger per FMA: 1 distinct LDS + 1 broadcast LDS + 0.0625 LDG.
Predicted effect: H200, 4096^3: 27 ms (1 distinct LDS x 2.68 + 1 broadcast LDS x 0.54 + 1/16 LDG x 1.94 = 3.34 cycles per warp-FMA, the 4090's prices). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 15.84 ms, 0.59x
the prediction (finding h200-4090-load-prices-too-high); rung 0 2.69 ms.
Seed (RTX 4090): 22.2 ms, only 1.16x over s2: the shared loads, not DRAM, set the pace.
*/
#define S3_TILE 32
extern "C" __global__ void sgemm_smem_tiling(int M, int N, int K, const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ C) {
  __shared__ float As[S3_TILE][S3_TILE];
  __shared__ float Bs[S3_TILE][S3_TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * S3_TILE + ty, col = blockIdx.x * S3_TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += S3_TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < S3_TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
