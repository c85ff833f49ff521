/*
SGEMM rung s7 · warp tiling: a third level of tiling between the block and the thread.

What changes: 128 threads (4 warps) own a 128x128 block tile, BK=16; each warp owns a 64x64
warp tile computed as 1 x 4 sub-tiles of 64x16, each thread an 8x4 piece of every sub-tile
(128 outputs per thread). A warp's lanes now read shared memory in a pattern that is mostly
broadcast (8 distinct A addresses, 4 distinct B addresses per LDS.128), and the block's 16-deep
k-step halves the barriers per FMA. Per FMA: 2/128 + 4/128 LDS.128, 1/256 LDG.128.
Predicted effect: H200, 4096^3: 3.0 ms, i.e. 90-93% of cuBLAS fp32 if cuBLAS takes 2.7-2.8 ms (the project's H200 ran cuBLAS fp32 at 51 TFLOP/s at 8192^3): at issue 5's 90% target with no margin. Written before any H200 measurement (the percentage was corrected from a mis-stated ~75% before the first H200 run; the 3.0 ms is unchanged).
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 6.07 ms, 2.02x
the prediction (finding h200-sgemm-latency-bound-low-occupancy); rung 0 2.69 ms.
Seed: no such rung (its ladder stopped at s6).
*/
#define S7_BM 128
#define S7_BN 128
#define S7_BK 16
#define S7_WM 64
#define S7_WN 64
#define S7_WNITER 4
#define S7_TM 8
#define S7_TN 4
#define S7_THREADS 128
#define S7_WSUBN (S7_WN / S7_WNITER)  // 16
extern "C" __global__ void __launch_bounds__(S7_THREADS)
sgemm_warptiling(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C) {
  __shared__ __align__(16) float As[S7_BK * S7_BM];  // transposed: [BK][BM]
  __shared__ __align__(16) float Bs[S7_BK * S7_BN];  // [BK][BN]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_row = warp / (S7_BN / S7_WN), warp_col = warp % (S7_BN / S7_WN);
  const int t_row = lane / (S7_WSUBN / S7_TN), t_col = lane % (S7_WSUBN / S7_TN);  // 8 x 4 lanes
  const int brow = blockIdx.y * S7_BM, bcol = blockIdx.x * S7_BN;
  const int a_r = tid / (S7_BK / 4), a_c = (tid % (S7_BK / 4)) * 4;  // 32 rows per pass
  const int b_r = tid / (S7_BN / 4), b_c = (tid % (S7_BN / 4)) * 4;  // 4 rows per pass
  const bool vec = (K % 4 == 0) && (N % 4 == 0);
  float acc[S7_TM][S7_WNITER * S7_TN] = {{0.0f}};
  float regM[S7_TM], regN[S7_WNITER * S7_TN];
  for (int k0 = 0; k0 < K; k0 += S7_BK) {
#pragma unroll
    for (int o = 0; o < S7_BM; o += S7_THREADS * 4 / S7_BK) {
      const int r = brow + a_r + o, k = k0 + a_c;
      float4 a;
      if (vec && r < M && k < K) {
        a = *reinterpret_cast<const float4*>(&A[(size_t)r * K + k]);
      } else {
        const float* p = &A[(size_t)r * K + k];
        a.x = (r < M && k + 0 < K) ? p[0] : 0.0f;
        a.y = (r < M && k + 1 < K) ? p[1] : 0.0f;
        a.z = (r < M && k + 2 < K) ? p[2] : 0.0f;
        a.w = (r < M && k + 3 < K) ? p[3] : 0.0f;
      }
      As[(a_c + 0) * S7_BM + a_r + o] = a.x;
      As[(a_c + 1) * S7_BM + a_r + o] = a.y;
      As[(a_c + 2) * S7_BM + a_r + o] = a.z;
      As[(a_c + 3) * S7_BM + a_r + o] = a.w;
    }
#pragma unroll
    for (int o = 0; o < S7_BK; o += S7_THREADS * 4 / S7_BN) {
      const int k = k0 + b_r + o, c = bcol + b_c;
      float4 b;
      if (vec && k < K && c < N) {
        b = *reinterpret_cast<const float4*>(&B[(size_t)k * N + c]);
      } else {
        const float* p = &B[(size_t)k * N + c];
        b.x = (k < K && c + 0 < N) ? p[0] : 0.0f;
        b.y = (k < K && c + 1 < N) ? p[1] : 0.0f;
        b.z = (k < K && c + 2 < N) ? p[2] : 0.0f;
        b.w = (k < K && c + 3 < N) ? p[3] : 0.0f;
      }
      *reinterpret_cast<float4*>(&Bs[(b_r + o) * S7_BN + b_c]) = b;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < S7_BK; ++k) {
      const float* am = &As[k * S7_BM + warp_row * S7_WM + t_row * S7_TM];
      const float4 m0 = *reinterpret_cast<const float4*>(am);
      const float4 m1 = *reinterpret_cast<const float4*>(am + 4);
      regM[0] = m0.x; regM[1] = m0.y; regM[2] = m0.z; regM[3] = m0.w;
      regM[4] = m1.x; regM[5] = m1.y; regM[6] = m1.z; regM[7] = m1.w;
#pragma unroll
      for (int w = 0; w < S7_WNITER; ++w) {
        const float4 n = *reinterpret_cast<const float4*>(
            &Bs[k * S7_BN + warp_col * S7_WN + w * S7_WSUBN + t_col * S7_TN]);
        regN[w * 4 + 0] = n.x; regN[w * 4 + 1] = n.y; regN[w * 4 + 2] = n.z; regN[w * 4 + 3] = n.w;
      }
#pragma unroll
      for (int i = 0; i < S7_TM; ++i)
#pragma unroll
        for (int j = 0; j < S7_WNITER * S7_TN; ++j) acc[i][j] += regM[i] * regN[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < S7_TM; ++i) {
    const int r = brow + warp_row * S7_WM + t_row * S7_TM + i;
#pragma unroll
    for (int w = 0; w < S7_WNITER; ++w) {
      const int c = bcol + warp_col * S7_WN + w * S7_WSUBN + t_col * S7_TN;
      if (vec && r < M && c < N) {
        *reinterpret_cast<float4*>(&C[(size_t)r * N + c]) =
            make_float4(acc[i][w * 4], acc[i][w * 4 + 1], acc[i][w * 4 + 2], acc[i][w * 4 + 3]);
      } else if (r < M) {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (c + e < N) C[(size_t)r * N + c + e] = acc[i][w * 4 + e];
      }
    }
  }
}
