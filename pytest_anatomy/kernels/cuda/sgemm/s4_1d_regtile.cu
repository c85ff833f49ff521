/*
SGEMM rung s4 · 1D register tiling: each thread computes TM=8 outputs of one column.

What changes: a 64x64 block tile with BK=8; a thread keeps one B value in a register and reuses
it for 8 FMAs against 8 broadcast A values. Per FMA: 1/8 distinct LDS + 1 broadcast LDS +
(64+64)/(64*64) = 1/32 LDG. The distinct shared loads, the expensive kind, drop 8x.
Predicted effect: H200, 4096^3: 7.7 ms (1/8 x 2.68 + 1 x 0.54 + 1/32 x 1.94 = 0.93 cycles per warp-FMA). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 8.65 ms, 1.12x
the prediction (within the ladders' 15% acceptance band); rung 0 2.69 ms.
Seed (RTX 4090, 32x32 tile variant): 6.6 ms, 3.4x over s3.
*/
#define S4_BM 64
#define S4_BN 64
#define S4_BK 8
#define S4_TM 8
extern "C" __global__ void __launch_bounds__(512)
sgemm_1d_regtile(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C) {
  __shared__ float As[S4_BM * S4_BK];  // [BM][BK]
  __shared__ float Bs[S4_BK * S4_BN];  // [BK][BN]
  const int tid = threadIdx.x;
  const int tcol = tid % S4_BN, trow = tid / S4_BN;  // a warp shares trow: As reads broadcast
  const int brow = blockIdx.y * S4_BM, bcol = blockIdx.x * S4_BN;
  const int a_r = tid / S4_BK, a_c = tid % S4_BK;  // 512 threads load the 64x8 A tile
  const int b_r = tid / S4_BN, b_c = tid % S4_BN;  // and the 8x64 B tile, one element each
  float acc[S4_TM] = {0.0f};
  for (int k0 = 0; k0 < K; k0 += S4_BK) {
    As[a_r * S4_BK + a_c] = (brow + a_r < M && k0 + a_c < K) ? A[(size_t)(brow + a_r) * K + k0 + a_c] : 0.0f;
    Bs[b_r * S4_BN + b_c] = (k0 + b_r < K && bcol + b_c < N) ? B[(size_t)(k0 + b_r) * N + bcol + b_c] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < S4_BK; ++k) {
      const float b = Bs[k * S4_BN + tcol];
#pragma unroll
      for (int i = 0; i < S4_TM; ++i) acc[i] += As[(trow * S4_TM + i) * S4_BK + k] * b;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < S4_TM; ++i) {
    const int r = brow + trow * S4_TM + i, c = bcol + tcol;
    if (r < M && c < N) C[(size_t)r * N + c] = acc[i];
  }
}
