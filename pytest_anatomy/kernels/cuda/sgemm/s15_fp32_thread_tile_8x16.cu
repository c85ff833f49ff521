/*
SGEMM rung s15 · cuBLAS fp32's regime on s9's pipeline: 8x16 thread tile, one 8-warp 128x256x8 block per SM.

What changes: why s9 stops at 85% of cuBLAS fp32, from the recorded profiles (ncu, 2026-12-02 00:18, 4096^3):
both kernels run the same FFMA count on the busiest SM (s9 8 blocks of 128 x 128, cuBLAS 4 of 256 x 128; 3.88 waves
each, so the tail is not the gap) and neither waits on memory (s9: DRAM 3.8%, L2 12.8%); the gap is the rate.
s9 retires 2.70 warp-FFMA per SM-cycle (16.78 M over 6.20 M elapsed cycles), cuBLAS 3.16 (over 5.31 M): 0.855.
Two factors make it: (1) s9's instruction mix, FFMA share 0.8505 of its compiled K loop (180 other instructions per
1,024 FFMA: 64 LDS.128, 10 LDGSTS, ~100 address, predicate and move instructions) against ~0.91 for cuBLAS (its 3.16
over its 3.47 issued per cycle); (2) s9's pace, 4.72 warp cycles per issued instruction: 16 warps keep only 79.6% of
issue slots busy, where cuBLAS's 8 warps at 2.23 cycles keep 86.8%. Occupancy is not the limit (s9 has twice
cuBLAS's warps) and depth is not (s13's third stage and single barrier made the pace worse: 1.12x its ledger). The
profile records no stall breakdown for s9, so which stall sets its 4.72 cycles is not established.
s15 moves to cuBLAS's regime: each thread 8 x 16 outputs (128 accumulators, s7's and cuBLAS's count; s9: 64), a
warp 64 x 64, 8 warps a 128 x 256 block, __launch_bounds__(256, 1): ptxas (sm_90) 253 registers, no spill, 24,832
bytes static shared (two stages of As[8][132] and Bs[8][256]), one block = 8 warps per SM. s9's two-stage cp.async
pipeline, two barriers and register double-buffered fragments are kept (s7 had none: 2.3 of its 5.08 cycles per
issue waited on global loads). Per k a thread issues 2 LDS.128 of A and 4 of B for 128 FFMAs (s9: 4 for 64); its A
rows are r..r+3 and r+32..r+35, so a warp's 8 distinct A float4 are 128 contiguous bytes (s9's lie 32 bytes apart).
Per 1,024 FFMAs: 4 LDGSTS.32 of A (a warp covers 4 rows x 8 consecutive k, 32 distinct banks with the 4-float row
pad) and 2 LDGSTS.128 of B (s9: 8 + 2). The compiled K loop (N % 4 == 0 side) issues 1,163 instructions per thread
per k-tile, 1,024 FFMA: share 0.8805 (s9 0.8505, s13 0.8218). Edges as s9: zero-filled copies out of range, scalar
B copies and stores when N % 4 != 0, any M, N, K.
Predicted effect: H200, from the issue ledger (theory/kernel_issue.issue_time) at the pace of the kernel whose
regime s15 copies: cuBLAS fp32's counted 2.23 warp cycles per issued instruction (ncu run 2026-12-02 00:18,
sgemm.S15_PACE_NCU_STAMP; kernel_issue.counted_pace, no latency term), 8 warps per SM: min(4, 8 / 2.23) = 3.587
instructions per SM-cycle; FFMA share 0.8805 (the compiled loop above); 128 x 256 block tiles counted whole on the
busiest of 132 SMs; 1.98 GHz. At 4096^3, 512 blocks, 4 on the busiest SM: 4 x 128 x 256 x 4096 / 32 = 16.78 M
warp-FFMA / 0.8805 = 19.05 M instructions / 3.587 / 1.98 GHz. 4096^3: 2.683 ms. At 2048 x 18944 x 3584, 16 x 74 =
1,184 blocks (8.97 waves), 9 on the busiest SM, 33.03 M warp-FFMA: 2048 x 18944 x 3584: 5.281 ms. At 32 rows, 74
blocks on 74 SMs, 96 of each tile's 128 rows idle (3.67 M warp-FFMA, 4x the useful ones): 32 x 18944 x 3584: 0.587 ms.
Against cuBLAS fp32 as recorded (2.6787, 5.2868 and 0.1264 ms, 2026-12-01 21:51): 100%, 100% and 22%; with s9's
measured 1.07x over its own ledger carried over, ~2.87 and ~5.65 ms, 93% and 94% of cuBLAS (targets 90% and 80%
met), and ~0.63 ms at 32 rows, far under its 80%: s15 does not attack that shape, whose loss is the grid (74 of 132
SMs, 3/4 of the FMAs on zero rows), not the pace; a 32-row tile with split K is what it needs. Not used: the s9
family's ledger (c0 3.41 from s5-s7, L 83.84 re-fitted on s9) gives 4.065 cycles per issue at 128 accumulators,
1.97 instructions per cycle at 8 warps, 4.890 / 9.627 / 1.070 ms at the three shapes; its c0 lies above the 2.23
cycles cuBLAS was counted at with 128 accumulators and 8 warps, so it cannot price this regime (it puts cuBLAS's own
kernel at ~1.8x its time). What the pre-registration tests: if s15 keeps cuBLAS's pace, the thread tile and the
instruction mix were s9's gap and the fp32 target falls; if it keeps s7's pace without its global-load stalls (5.08 -
2.3 = 2.78 cycles per issue: 2.88 instructions per cycle, 3.34 ms at 4096^3, slower than s9) the 8-warp pace is the
limit and a hand-scheduled loop (register-bank-aware FFMA order, as cuBLAS's SASS) is the next step, not the tile.
Written before any measurement of this rung.
Measured outcome: H200, kernels plan run of 2026-12-04T18:46:32Z (batch 20261204T184632Z, results/h200/kernels),
correct at every checked shape. 4096^3: 3.4600 ms, 1.29x the prediction: the header's second outcome (s7's pace less
its global-load stalls, 3.34 ms; ~3.57 ms with s9's 1.07x bias), not cuBLAS's pace; rung 0 2.6832 ms: s15 is 78% of
cuBLAS fp32, under the 90% target and slower than s9 beside it (3.1444 ms, 85%: s9 stays the best fp32 rung);
2048 x 18944 x 3584: 6.7873 ms, 1.29x (78% of cuBLAS, target 80%); rung 0 5.2866 ms; 32 x 18944 x 3584: 0.7388 ms,
1.26x; rung 0 0.1265 ms. The device's ptxas: 255 registers, no spill; its K loop is the one counted here, so the gap
is the pace, ~2.9 warp cycles per issue at 1.98 GHz (cuBLAS 2.23). The tuner candidates that ran a 128 x 256 x 8
block one per SM before s15 (s9's and s13's families, 16 warps of 64 accumulators) ran within 2% of s15 at every
shape: the block regime, not the thread tile or the instruction mix, carries the time; why is not established (no
Nsight Compute profile of s15; finding h200-s15-one-block-128x256-pace-not-cublas).
Seed: no such rung.
*/
// requires: sm_80 (cp.async global-to-shared copies)
#define S15_BM 128  // block tile 128 x 256 x 8: 2 x 4 warps of 64 x 64
#define S15_BN 256
#define S15_BK 8
#define S15_APAD 4  // As row = BM + 4 floats: float4-aligned, and a warp's 4-byte copies hit 32 distinct banks
#define S15_WM 64
#define S15_WN 64
#define S15_THREADS 256
#define S15_TM 8    // thread tile 8 x 16: rows r..r+3 and r+32..r+35, columns c..c+3, +16, +32, +48
#define S15_TN 16

#ifdef CUDA_EMULATOR
// By default the emulator copies at issue time; the barriers around each stage make that ordering equivalent.
// With S15_EMU_LATE_COPY a copy lands only when the thread waits on its group (as late as the device may land
// it): a stage read before its wait shows as a wrong product (tests_kernels/test_kernels_late_copy.py).
#ifdef S15_EMU_LATE_COPY
#define S15_ISSUE(op) emu::async_issue(op)
static inline void s15_cp_async_commit() { emu::async_commit(); }
static inline void s15_cp_async_wait_1() { emu::async_wait(1); }
#else
#define S15_ISSUE(op) (op)()
static inline void s15_cp_async_commit() {}
static inline void s15_cp_async_wait_1() {}
#endif
static inline void s15_cp_async4(float* dst, const float* src, bool ok) {
  S15_ISSUE(([=] { *dst = ok ? *src : 0.0f; }));
}
static inline void s15_cp_async16(float* dst, const float* src, bool ok) {
  S15_ISSUE(([=] { for (int e = 0; e < 4; ++e) dst[e] = ok ? src[e] : 0.0f; }));
}
#else
// src-size 0 zero-fills the destination: out-of-range elements become 0 without a branch around the copy.
__device__ __forceinline__ void s15_cp_async4(float* dst, const float* src, bool ok) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void s15_cp_async16(float* dst, const float* src, bool ok) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void s15_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void s15_cp_async_wait_1() { asm volatile("cp.async.wait_group 1;\n" ::); }
#endif

// Issue the copies of k-tile [k0, k0 + BK) into one stage. A: 1,024 floats, 4 four-byte copies per thread, a warp
// covering 4 rows x 8 consecutive k (one 32-byte sector per row). B: 512 float4, 2 sixteen-byte copies per thread,
// a warp covering one 512-byte row segment. Out-of-range sources are replaced by the matrix base (never read).
__device__ __forceinline__ void s15_load_tile(float (*As)[S15_BM + S15_APAD], float (*Bs)[S15_BN],
                                              const float* __restrict__ A, const float* __restrict__ B,
                                              int M, int N, int K, int brow, int bcol, int k0, bool vec, int tid) {
  const int ar = tid / S15_BK, ak = tid % S15_BK;
  const bool k_ok = k0 + ak < K;
  const float* a = A + (size_t)(brow + ar) * K + k0 + ak;
#pragma unroll
  for (int i = 0; i < S15_BM * S15_BK / S15_THREADS; ++i) {
    const int r = ar + i * (S15_THREADS / S15_BK);
    const bool ok = k_ok && brow + r < M;
    s15_cp_async4(&As[ak][r], ok ? a + (size_t)i * (S15_THREADS / S15_BK) * K : A, ok);
  }
#pragma unroll
  for (int i = 0; i < S15_BK * S15_BN / 4 / S15_THREADS; ++i) {
    const int e = tid + i * S15_THREADS, k = e / (S15_BN / 4), c = (e % (S15_BN / 4)) * 4;
    const int gk = k0 + k, gc = bcol + c;
    if (vec) {  // N % 4 == 0: a float4 starting inside the row lies wholly inside it
      const bool ok = gk < K && gc < N;
      s15_cp_async16(&Bs[k][c], ok ? &B[(size_t)gk * N + gc] : B, ok);
    } else {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const bool ok = gk < K && gc + x < N;
        s15_cp_async4(&Bs[k][c + x], ok ? &B[(size_t)gk * N + gc + x] : B, ok);
      }
    }
  }
}

// Fragment k of a stage: 8 A values (two LDS.128: rows trow..trow+3, trow+32..trow+35) and 16 B values (four
// LDS.128: columns tcol + 16 h .. + 3). A warp's 8 distinct A float4 are 128 contiguous bytes and its 4 distinct B
// float4 64 contiguous bytes: one shared wavefront each, the rest broadcast.
__device__ __forceinline__ void s15_load_frag(float* fa, float* fb, const float (*as)[S15_BM + S15_APAD],
                                              const float (*bs)[S15_BN], int k, int trow, int tcol) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float4 v = *reinterpret_cast<const float4*>(&as[k][trow + h * 32]);
    fa[h * 4 + 0] = v.x; fa[h * 4 + 1] = v.y; fa[h * 4 + 2] = v.z; fa[h * 4 + 3] = v.w;
  }
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const float4 v = *reinterpret_cast<const float4*>(&bs[k][tcol + h * 16]);
    fb[h * 4 + 0] = v.x; fb[h * 4 + 1] = v.y; fb[h * 4 + 2] = v.z; fb[h * 4 + 3] = v.w;
  }
}

extern "C" __global__ void __launch_bounds__(S15_THREADS, 1)
sgemm_fp32_thread_tile_8x16(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C) {
  __shared__ __align__(16) float As[2][S15_BK][S15_BM + S15_APAD];  // transposed: [stage][k][m]
  __shared__ __align__(16) float Bs[2][S15_BK][S15_BN];             // [stage][k][n]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wrow = (warp / (S15_BN / S15_WN)) * S15_WM, wcol = (warp % (S15_BN / S15_WN)) * S15_WN;
  const int trow = wrow + (lane / 4) * 4;  // rows trow..trow+3 and trow+32..trow+35
  const int tcol = wcol + (lane % 4) * 4;  // columns tcol + 16 h .. tcol + 16 h + 3, h = 0..3
  const int brow = blockIdx.y * S15_BM, bcol = blockIdx.x * S15_BN;
  const bool vec = (N % 4) == 0;
  const int tiles = (K + S15_BK - 1) / S15_BK;

  float acc[S15_TM][S15_TN] = {{0.0f}};
  float fa[2][S15_TM], fb[2][S15_TN];

  s15_load_tile(As[0], Bs[0], A, B, M, N, K, brow, bcol, 0, vec, tid);
  s15_cp_async_commit();
  for (int t = 0; t < tiles; ++t) {
    const int s = t & 1;
    // The stage written here was last read in iteration t-1, which every thread left through the trailing
    // barrier: the copy cannot overwrite operands still being multiplied.
    if (t + 1 < tiles) s15_load_tile(As[s ^ 1], Bs[s ^ 1], A, B, M, N, K, brow, bcol, (t + 1) * S15_BK, vec, tid);
    s15_cp_async_commit();  // an empty group on the last tile keeps "wait until 1 group is pending" exact
    s15_cp_async_wait_1();  // this thread's copies of tile t have landed ...
    __syncthreads();        // ... and so have everyone else's
    s15_load_frag(fa[0], fb[0], As[s], Bs[s], 0, trow, tcol);
#pragma unroll
    for (int k = 0; k < S15_BK; ++k) {
      const int cur = k & 1, nxt = cur ^ 1;
      if (k + 1 < S15_BK) s15_load_frag(fa[nxt], fb[nxt], As[s], Bs[s], k + 1, trow, tcol);  // k+1 under k's FMAs
#pragma unroll
      for (int i = 0; i < S15_TM; ++i)
#pragma unroll
        for (int j = 0; j < S15_TN; ++j) acc[i][j] += fa[cur][i] * fb[cur][j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < S15_TM; ++i) {
    const int r = brow + trow + (i / 4) * 32 + i % 4;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int c = bcol + tcol + h * 16;
      if (vec && c < N) {
        *reinterpret_cast<float4*>(&C[(size_t)r * N + c]) =
            make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (c + e < N) C[(size_t)r * N + c + e] = acc[i][h * 4 + e];
      }
    }
  }
}
