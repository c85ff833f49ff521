/*
SGEMM rung s6 · vectorized: 128-bit global and shared loads on top of s5.

What changes: A is stored transposed in shared memory (As[k][m]) so that a thread's 8 A values
are contiguous; every global load, shared load and global store moves a float4. Per FMA:
1/32 + 1/32 LDS.128 and 1/256 LDG.128 -- a quarter of s5's load instructions, the same bytes.
Needs K and N divisible by 4 for aligned float4 rows; otherwise the same kernel takes a scalar,
bounds-checked path (a uniform branch), so odd sizes stay correct.
Predicted effect: H200, 4096^3: 3.3 ms; the instruction ledger with 32-bit prices says ~1.1 ms and is expected to be ~3x too fast (128-bit shared loads unpriced). FP32 floor: 2.05 ms at 67 TFLOP/s. Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 4.43 ms, 1.34x
the prediction (finding h200-sgemm-latency-bound-low-occupancy); rung 0 2.69 ms.
Seed (RTX 4090): 3.36 ms, 1.19x over s5 -- its instruction ledger, pricing LDS.128 like LDS.32,
predicted 3.7x too fast: a 128-bit shared load costs more than a 32-bit one.
*/
#define S6_BM 128
#define S6_BN 128
#define S6_BK 8
#define S6_TM 8
#define S6_TN 8
extern "C" __global__ void __launch_bounds__(256)
sgemm_vectorized(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C) {
  __shared__ __align__(16) float As[S6_BK * S6_BM];  // transposed: [BK][BM]
  __shared__ __align__(16) float Bs[S6_BK * S6_BN];  // [BK][BN]
  const int tid = threadIdx.x;
  const int tcol = tid % (S6_BN / S6_TN), trow = tid / (S6_BN / S6_TN);
  const int brow = blockIdx.y * S6_BM, bcol = blockIdx.x * S6_BN;
  const int a_r = tid / (S6_BK / 4), a_c = (tid % (S6_BK / 4)) * 4;  // one float4 of A each
  const int b_r = tid / (S6_BN / 4), b_c = (tid % (S6_BN / 4)) * 4;  // one float4 of B each
  const bool vec = (K % 4 == 0) && (N % 4 == 0);  // uniform: rows start 16-byte aligned
  float acc[S6_TM][S6_TN] = {{0.0f}};
  float regM[S6_TM], regN[S6_TN];
  for (int k0 = 0; k0 < K; k0 += S6_BK) {
    float4 a, b;
    {
      const int r = brow + a_r, k = k0 + a_c;
      if (vec && r < M && k < K) {
        a = *reinterpret_cast<const float4*>(&A[(size_t)r * K + k]);
      } else {
        const float* p = &A[(size_t)r * K + k];
        a.x = (r < M && k + 0 < K) ? p[0] : 0.0f;
        a.y = (r < M && k + 1 < K) ? p[1] : 0.0f;
        a.z = (r < M && k + 2 < K) ? p[2] : 0.0f;
        a.w = (r < M && k + 3 < K) ? p[3] : 0.0f;
      }
      As[(a_c + 0) * S6_BM + a_r] = a.x;
      As[(a_c + 1) * S6_BM + a_r] = a.y;
      As[(a_c + 2) * S6_BM + a_r] = a.z;
      As[(a_c + 3) * S6_BM + a_r] = a.w;
    }
    {
      const int k = k0 + b_r, c = bcol + b_c;
      if (vec && k < K && c < N) {
        b = *reinterpret_cast<const float4*>(&B[(size_t)k * N + c]);
      } else {
        const float* p = &B[(size_t)k * N + c];
        b.x = (k < K && c + 0 < N) ? p[0] : 0.0f;
        b.y = (k < K && c + 1 < N) ? p[1] : 0.0f;
        b.z = (k < K && c + 2 < N) ? p[2] : 0.0f;
        b.w = (k < K && c + 3 < N) ? p[3] : 0.0f;
      }
      *reinterpret_cast<float4*>(&Bs[b_r * S6_BN + b_c]) = b;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < S6_BK; ++k) {
      const float4 m0 = *reinterpret_cast<const float4*>(&As[k * S6_BM + trow * S6_TM]);
      const float4 m1 = *reinterpret_cast<const float4*>(&As[k * S6_BM + trow * S6_TM + 4]);
      const float4 n0 = *reinterpret_cast<const float4*>(&Bs[k * S6_BN + tcol * S6_TN]);
      const float4 n1 = *reinterpret_cast<const float4*>(&Bs[k * S6_BN + tcol * S6_TN + 4]);
      regM[0] = m0.x; regM[1] = m0.y; regM[2] = m0.z; regM[3] = m0.w;
      regM[4] = m1.x; regM[5] = m1.y; regM[6] = m1.z; regM[7] = m1.w;
      regN[0] = n0.x; regN[1] = n0.y; regN[2] = n0.z; regN[3] = n0.w;
      regN[4] = n1.x; regN[5] = n1.y; regN[6] = n1.z; regN[7] = n1.w;
#pragma unroll
      for (int i = 0; i < S6_TM; ++i)
#pragma unroll
        for (int j = 0; j < S6_TN; ++j) acc[i][j] += regM[i] * regN[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < S6_TM; ++i) {
    const int r = brow + trow * S6_TM + i;
#pragma unroll
    for (int j = 0; j < S6_TN; j += 4) {
      const int c = bcol + tcol * S6_TN + j;
      if (vec && r < M && c < N) {
        *reinterpret_cast<float4*>(&C[(size_t)r * N + c]) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
      } else if (r < M) {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (c + e < N) C[(size_t)r * N + c + e] = acc[i][j + e];
      }
    }
  }
}
