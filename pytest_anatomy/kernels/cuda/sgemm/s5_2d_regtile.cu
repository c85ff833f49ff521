/*
SGEMM rung s5 · 2D register tiling: each thread computes an 8x8 block of C.

What changes: a 128x128 block tile, BK=8, 256 threads. Per k a thread loads TM=8 A values and
TN=8 B values into registers and does 64 FMAs with them: per FMA 1/8 broadcast-ish LDS (two rows
per warp) + 1/8 distinct LDS + (128+128)/(128*128) = 1/64 LDG. Shared loads per FMA fall from
1.125 to 0.25. Costs: 64 accumulators per thread (occupancy drops), and the B reads stride 8
words across lanes (a 4-way bank conflict the instruction ledger does not price).
Predicted effect: H200, 4096^3: 3.6 ms (0.43 cycles per warp-FMA; ptxas already turns these shared loads into LDS.128, so expect the ledger to miss as it did on the 4090's K6). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 4.43 ms, 1.23x
the prediction (finding h200-sgemm-latency-bound-low-occupancy); rung 0 2.69 ms.
Seed (RTX 4090, 8x4 tile): 3.98 ms, 1.66x over the 1D tile at 33% occupancy instead of 75%.
*/
#define S5_BM 128
#define S5_BN 128
#define S5_BK 8
#define S5_TM 8
#define S5_TN 8
extern "C" __global__ void __launch_bounds__(256)
sgemm_2d_regtile(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C) {
  __shared__ float As[S5_BM * S5_BK];  // [BM][BK]
  __shared__ float Bs[S5_BK * S5_BN];  // [BK][BN]
  const int tid = threadIdx.x;
  const int tcol = tid % (S5_BN / S5_TN), trow = tid / (S5_BN / S5_TN);
  const int brow = blockIdx.y * S5_BM, bcol = blockIdx.x * S5_BN;
  const int a_r = tid / S5_BK, a_c = tid % S5_BK;  // 32 rows per pass, 4 passes
  const int b_r = tid / S5_BN, b_c = tid % S5_BN;  // 2 rows per pass, 4 passes
  float acc[S5_TM][S5_TN] = {{0.0f}};
  float regM[S5_TM], regN[S5_TN];
  for (int k0 = 0; k0 < K; k0 += S5_BK) {
#pragma unroll
    for (int o = 0; o < S5_BM; o += 256 / S5_BK) {
      const int r = brow + a_r + o, k = k0 + a_c;
      As[(a_r + o) * S5_BK + a_c] = (r < M && k < K) ? A[(size_t)r * K + k] : 0.0f;
    }
#pragma unroll
    for (int o = 0; o < S5_BK; o += 256 / S5_BN) {
      const int k = k0 + b_r + o, c = bcol + b_c;
      Bs[(b_r + o) * S5_BN + b_c] = (k < K && c < N) ? B[(size_t)k * N + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < S5_BK; ++k) {
#pragma unroll
      for (int i = 0; i < S5_TM; ++i) regM[i] = As[(trow * S5_TM + i) * S5_BK + k];
#pragma unroll
      for (int j = 0; j < S5_TN; ++j) regN[j] = Bs[k * S5_BN + tcol * S5_TN + j];
#pragma unroll
      for (int i = 0; i < S5_TM; ++i)
#pragma unroll
        for (int j = 0; j < S5_TN; ++j) acc[i][j] += regM[i] * regN[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < S5_TM; ++i)
#pragma unroll
    for (int j = 0; j < S5_TN; ++j) {
      const int r = brow + trow * S5_TM + i, c = bcol + tcol * S5_TN + j;
      if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
    }
}
