/*
SGEMM rung s16 · s9 with a 32-deep k-tile (issue 17's fp32 target).

What changes: one thing, the k-tile depth: 32 (s9: 16). Everything else is s9's: 128x128 block tile, 8 warps of
64x32, 8x8 outputs per thread (64 accumulators) under __launch_bounds__(256, 2), two cp.async stages, two barriers
per k-tile, fragments double-buffered in registers (k+1's LDS.128 issued before k's 64 FFMA). Half the k-tiles
means half the barrier pairs, cp.async waits, commits and copy-loop setups per FMA, and twice the FMAs (2,048 per
thread) over which the next tile's copies land. What follows from it: the two stages are 66,560 bytes, above the
48 KB static limit, so they are the launch's dynamic window (two blocks per SM still fit: 2 x 65 KB of 228 KB);
A's 4-byte copies map 4 rows x 8 k to a warp (one 32-byte sector per row, 32 distinct banks), since s9's one-row
mapping at this depth would put 4 copies on each bank; the main loop copies whole k-tiles only (k offsets are
immediates, the row guard is the only test), a ragged last k-tile and odd N take guarded paths outside it.
Compiled (sm_90, nvcc 13.0): 128 registers (the cap), no spill, 16 warps per SM; the main K loop (N % 4 == 0)
issues 2,311 instructions per 2,048 FFMA (share 0.8862; s9 1,204 per 1,024, 0.8505): 128 LDS.128, 20 LDGSTS.
Why this change, from the counters (ncu.sgemm.{s9-cp-async-pipeline,s0-cublas}.4096x4096x4096@20261202T001813Z):
s9 issues 2.70 warp-FFMA per SM-cycle against cuBLAS fp32's 3.16 (0.855), through a lower FFMA share (0.85 vs
~0.91) and fewer busy issue slots (79.6% vs 86.8%, 4.72 warp cycles per issue at 16 warps). Of s9's knobs, one has
moved its time on the device: its tuner ran the same kernel at 8-deep k-tiles 6.6% slower (3.3512 vs 3.1447 ms,
run 20261201T215110Z) where its compiled instructions rose 2.5% (share 0.8298 vs 0.8505): a k-tile boundary
costs more than its instructions (the barrier pair, the wait). The changes that attacked the pace otherwise did
not pay: a third stage and one barrier (s13: 3.394 ms), cuBLAS's thread tile at one block per SM (s15: 3.460 ms);
the register double-buffering of fragments is already s9's.
Predicted effect: H200, the tuner's run (1.98 GHz boost). s9's time split as T = X / share + S x 16 / bk (an issue
part at s9's pace, a stall part per k-tile), solved from that run's T(8) and T(16) with the shares above (at
4096^3: X = 2.563 ms, S = 0.131 ms), priced at s16's share 0.8862 and half the k-tiles:
4096^3: 2.958 ms (90.6% of that run's cuBLAS fp32 2.6787 ms; target 90% = 2.976 ms: met by 0.6%);
2048 x 18944 x 3584: 5.825 ms (90.7% of 5.2827 ms; target 80% met, as s9 meets it);
32 x 18944 x 3584: 0.651 ms (19% of 0.1261 ms; the grid problem, not attacked).
Alternative outcomes, pre-registered: (a) the 8-deep tile's stalls were its own (half a tile of FMAs to hide the
next copy), already hidden at 16, so 32 saves only the instructions: X / 0.8862 + S, 3.023 ms at 4096^3 (88.6%),
5.908 ms at 2,048 rows (89.4%): the target missed by the stall part, and the next fp32 step is the FFMA operand
order (register banks) or fewer LDS per FFMA, not the k-tile; (b) the instructions saved do not buy time (the
128-register cap's scheduling or the dynamic window cost the pace what the share gains): within 2% of s9
(3.08-3.21 ms, 83-87%). A time above 3.21 ms is outside all three and a finding.
Measured outcome: H200, kernels plan run of 2026-12-04T20:21:22Z (batch 20261204T202122Z, results/h200/kernels),
correct at every checked shape. 4096^3: 3.2662 ms, 1.10x the prediction, above all three outcomes written above
(the prediction, (a) 3.023, (b) 3.08-3.21) and slower than s9 beside it (3.1454 ms); rung 0 2.6785 ms: s16 is 82%
of cuBLAS fp32, under the 90% target, and s9 stays the best fp32 rung; 2048 x 18944 x 3584: 6.4493 ms, 1.11x
(s9 6.1470); rung 0 5.2858 ms; 32 x 18944 x 3584: 0.7178 ms, 1.10x (s9 0.6859); rung 0 0.1266 ms. Why, from the
device's compile and Nsight Compute (ncu.sgemm.{s16-fp32-ktile32,s9-cp-async-pipeline}.4096x4096x4096@
20261204T203849Z, same card): the device's NVRTC 13.0.88 spilled at the 128-register cap (96-byte stack frame,
248 bytes of spill stores, 296 of loads; nvcc 13.0.88 here does not), 19 LDL and 3 STL in the main K loop (ncu:
22.09 spill requests per warp per k-tile). Issued instructions fell to 0.970x s9's, near the 0.960x priced, but the
pace rose from 4.72 to 5.00 warp cycles per issue at the same 16 warps (issue slots 74.2% busy against 79.6%): the
pace loss sits beside the spill, its stall not itemised by the profile. The L1 carve-out risk did not apply (s9 and
s16 ran the same 132 KB shared-memory configuration). Finding h200-s16-device-spill-pace-below-s9.
Seed: no such rung.
*/
// requires: sm_80 (cp.async global-to-shared copies)
#define S16_BM 128
#define S16_BN 128
#define S16_BK 32  // s9: 16
#define S16_APAD 4  // As row = BM + 4 floats: float4-aligned fragment loads, as in s9
#define S16_WM 64  // warp tile 64 x 32, thread tile 8 x 8: s9's, unchanged
#define S16_WN 32
#define S16_THREADS 256
#define S16_TM 8
#define S16_TN 8
#define S16_KG 8  // A copies: 8 lanes read 8 consecutive k (one 32-byte sector) of one row
#define S16_A_STAGE (S16_BK * (S16_BM + S16_APAD))
#define S16_B_STAGE (S16_BK * S16_BN)
#define S16_SMEM_FLOATS (2 * (S16_A_STAGE + S16_B_STAGE))  // two stages: 66,560 bytes, the launch's dynamic window

#ifdef CUDA_EMULATOR
// By default the emulator copies at issue time; the barriers around each stage make that ordering equivalent.
// With S16_EMU_LATE_COPY a copy lands only when the thread waits on its group (as late as the device may land
// it): a stage read before its wait shows as a wrong product (tests_kernels/test_kernels_late_copy.py).
#ifdef S16_EMU_LATE_COPY
#define S16_ISSUE(op) emu::async_issue(op)
static inline void s16_cp_async_commit() { emu::async_commit(); }
static inline void s16_cp_async_wait_1() { emu::async_wait(1); }
#else
#define S16_ISSUE(op) (op)()
static inline void s16_cp_async_commit() {}
static inline void s16_cp_async_wait_1() {}
#endif
static inline void s16_cp_async4(float* dst, const float* src, bool ok) {
  S16_ISSUE(([=] { *dst = ok ? *src : 0.0f; }));
}
static inline void s16_cp_async16(float* dst, const float* src, bool ok) {
  S16_ISSUE(([=] { for (int e = 0; e < 4; ++e) dst[e] = ok ? src[e] : 0.0f; }));
}
#else
// src-size 0 zero-fills the destination: out-of-range elements become 0 without a branch around the copy.
__device__ __forceinline__ void s16_cp_async4(float* dst, const float* src, bool ok) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void s16_cp_async16(float* dst, const float* src, bool ok) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void s16_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void s16_cp_async_wait_1() { asm volatile("cp.async.wait_group 1;\n" ::); }
#endif

// Issue the copies of k-tile [k0, k0 + 32) into one stage. A: 4,096 floats, 16 four-byte copies per thread.
// Lane l of warp w copies row 4w + l/8 (+ 32 per pass) at k = l%8 (+ 8 per group): a warp's 32 copies are 4 rows
// x 8 k, one 32-byte sector per row, and land on 32 distinct banks (bank = 4k + row mod 32 with the 132-float
// rows); s9's mapping at this depth (one row x 32 k per warp) would be 4-way conflicted. FULL: the k-tile lies
// wholly inside K (every tile but a ragged last one), so only the row guard remains and the k offsets are
// immediates. B: 1,024 float4, 4 sixteen-byte copies per thread, a warp covering one 512-byte row segment (s9's);
// VEC: N % 4 == 0, so a float4 starting inside the row lies wholly inside it.
template <bool FULL, bool VEC>
__device__ __forceinline__ void s16_load_tile(float* As, float* Bs, const float* __restrict__ A,
                                              const float* __restrict__ B, int M, int N, int K, int brow, int bcol,
                                              int k0, int tid) {
  const int ar = (tid / 32) * 4 + (tid % 32) / S16_KG, ak = tid % S16_KG;
  const float* a = A + (size_t)(brow + ar) * K + k0 + ak;
  const float* fallback = A + (size_t)brow * K + (FULL ? k0 + ak : 0);  // row brow exists: a source for idle rows
#pragma unroll
  for (int p = 0; p < S16_BM / (S16_THREADS / S16_KG); ++p) {  // 4 passes of 32 rows
    const int r = ar + p * (S16_THREADS / S16_KG);
    const bool r_ok = brow + r < M;
    const float* ap = r_ok ? a + (size_t)p * (S16_THREADS / S16_KG) * K : fallback;
#pragma unroll
    for (int g = 0; g < S16_BK / S16_KG; ++g) {  // 4 groups of 8 k
      const bool ok = r_ok && (FULL || k0 + ak + g * S16_KG < K);
      s16_cp_async4(&As[(ak + g * S16_KG) * (S16_BM + S16_APAD) + r], FULL || ok ? ap + g * S16_KG : fallback, ok);
    }
  }
  if (VEC) {
#pragma unroll
    for (int i = 0; i < S16_BK * S16_BN / 4 / S16_THREADS; ++i) {
      const int e = tid + i * S16_THREADS, k = e / (S16_BN / 4), c = (e % (S16_BN / 4)) * 4;
      const int gk = k0 + k, gc = bcol + c;
      const bool ok = (FULL || gk < K) && gc < N;
      s16_cp_async16(&Bs[k * S16_BN + c], ok ? &B[(size_t)gk * N + gc] : B, ok);
    }
  } else {  // 4-byte copies (odd N only, never a timed shape): rolled loops, so they cost no registers in the hot path
#pragma unroll 1
    for (int i = 0; i < S16_BK * S16_BN / 4 / S16_THREADS; ++i) {
      const int e = tid + i * S16_THREADS, k = e / (S16_BN / 4), c = (e % (S16_BN / 4)) * 4;
      const int gk = k0 + k, gc = bcol + c;
#pragma unroll 1
      for (int x = 0; x < 4; ++x) {
        const bool ok = (FULL || gk < K) && gc + x < N;
        s16_cp_async4(&Bs[k * S16_BN + c + x], ok ? &B[(size_t)gk * N + gc + x] : B, ok);
      }
    }
  }
}

// The 32 k-steps of one staged k-tile: s9's fragment code (k+1's LDS.128 issued before k's 64 FFMA).
__device__ __forceinline__ void s16_multiply(const float* as, const float* bs, int trow, int tcol,
                                             float (&acc)[S16_TM][S16_TN]) {
  float fa[2][S16_TM], fb[2][S16_TN];
  {
    const float4 a0 = *reinterpret_cast<const float4*>(&as[trow]);
    const float4 a1 = *reinterpret_cast<const float4*>(&as[trow + 4]);
    const float4 b0 = *reinterpret_cast<const float4*>(&bs[tcol]);
    const float4 b1 = *reinterpret_cast<const float4*>(&bs[tcol + 16]);
    fa[0][0] = a0.x; fa[0][1] = a0.y; fa[0][2] = a0.z; fa[0][3] = a0.w;
    fa[0][4] = a1.x; fa[0][5] = a1.y; fa[0][6] = a1.z; fa[0][7] = a1.w;
    fb[0][0] = b0.x; fb[0][1] = b0.y; fb[0][2] = b0.z; fb[0][3] = b0.w;
    fb[0][4] = b1.x; fb[0][5] = b1.y; fb[0][6] = b1.z; fb[0][7] = b1.w;
  }
#pragma unroll
  for (int k = 0; k < S16_BK; ++k) {
    const int cur = k & 1, nxt = cur ^ 1;
    if (k + 1 < S16_BK) {  // fragments for k+1 in flight while k's 64 FMAs issue
      const float* ak = as + (k + 1) * (S16_BM + S16_APAD);
      const float* bk = bs + (k + 1) * S16_BN;
      const float4 a0 = *reinterpret_cast<const float4*>(&ak[trow]);
      const float4 a1 = *reinterpret_cast<const float4*>(&ak[trow + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bk[tcol]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bk[tcol + 16]);
      fa[nxt][0] = a0.x; fa[nxt][1] = a0.y; fa[nxt][2] = a0.z; fa[nxt][3] = a0.w;
      fa[nxt][4] = a1.x; fa[nxt][5] = a1.y; fa[nxt][6] = a1.z; fa[nxt][7] = a1.w;
      fb[nxt][0] = b0.x; fb[nxt][1] = b0.y; fb[nxt][2] = b0.z; fb[nxt][3] = b0.w;
      fb[nxt][4] = b1.x; fb[nxt][5] = b1.y; fb[nxt][6] = b1.z; fb[nxt][7] = b1.w;
    }
#pragma unroll
    for (int i = 0; i < S16_TM; ++i)
#pragma unroll
      for (int j = 0; j < S16_TN; ++j) acc[i][j] += fa[cur][i] * fb[cur][j];
  }
}

// One k-tile of s9's pipeline: issue the copies of tile t+1 into the other stage (whole, ragged or none), wait
// for tile t, multiply it.
template <bool VEC>
__device__ __forceinline__ void s16_step(float* smem, int t, int next, int M, int N, int K, const float* __restrict__ A,
                                         const float* __restrict__ B, float (&acc)[S16_TM][S16_TN], int brow,
                                         int bcol, int trow, int tcol, int tid) {
  const int s = t & 1;
  // The stage written here was last read in iteration t-1, which every thread left through the
  // trailing barrier: the copy cannot overwrite operands still being multiplied.
  float* const as_next = smem + (s ^ 1) * S16_A_STAGE;
  float* const bs_next = smem + 2 * S16_A_STAGE + (s ^ 1) * S16_B_STAGE;
  if (next == 1)
    s16_load_tile<true, VEC>(as_next, bs_next, A, B, M, N, K, brow, bcol, (t + 1) * S16_BK, tid);
  else if (next == 2)
    s16_load_tile<false, VEC>(as_next, bs_next, A, B, M, N, K, brow, bcol, (t + 1) * S16_BK, tid);
  s16_cp_async_commit();  // an empty group on the last tile keeps "wait until 1 group is pending" exact
  s16_cp_async_wait_1();  // this thread's copies of tile t have landed ...
  __syncthreads();        // ... and so have everyone else's
  s16_multiply(smem + s * S16_A_STAGE, smem + 2 * S16_A_STAGE + s * S16_B_STAGE, trow, tcol, acc);
  __syncthreads();
}

// s9's pipeline with the copy path fixed per loop: the main loop copies whole k-tiles only (next == 1 is a constant
// there), the last one or two k-tiles follow it (a ragged k-tile when K % 32 != 0). VEC is uniform over the launch.
template <bool VEC>
__device__ __forceinline__ void s16_pipeline(float* smem, int M, int N, int K, const float* __restrict__ A,
                                             const float* __restrict__ B, float (&acc)[S16_TM][S16_TN], int brow,
                                             int bcol, int trow, int tcol, int tid) {
  const int tiles = (K + S16_BK - 1) / S16_BK, whole = K / S16_BK;
  if (whole > 0)
    s16_load_tile<true, VEC>(smem, smem + 2 * S16_A_STAGE, A, B, M, N, K, brow, bcol, 0, tid);
  else
    s16_load_tile<false, VEC>(smem, smem + 2 * S16_A_STAGE, A, B, M, N, K, brow, bcol, 0, tid);
  s16_cp_async_commit();
  int t = 0;
  for (; t + 1 < whole; ++t) s16_step<VEC>(smem, t, 1, M, N, K, A, B, acc, brow, bcol, trow, tcol, tid);
  for (; t < tiles; ++t)
    s16_step<VEC>(smem, t, t + 1 < tiles ? 2 : 0, M, N, K, A, B, acc, brow, bcol, trow, tcol, tid);
}

extern "C" __global__ void __launch_bounds__(S16_THREADS, 2)
sgemm_fp32_ktile32(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C) {
#ifdef CUDA_EMULATOR
  __shared__ __align__(16) float smem[S16_SMEM_FLOATS];  // blocks run one after another: one block's window
#else
  extern __shared__ __align__(16) float smem[];  // [stage] As[k][m] (transposed), then [stage] Bs[k][n]
#endif
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wrow = (warp / (S16_BN / S16_WN)) * S16_WM, wcol = (warp % (S16_BN / S16_WN)) * S16_WN;
  const int trow = wrow + (lane / 4) * S16_TM;  // 8 consecutive rows
  const int tcol = wcol + (lane % 4) * 4;       // columns tcol..tcol+3 and tcol+16..tcol+19
  const int brow = blockIdx.y * S16_BM, bcol = blockIdx.x * S16_BN;
  const bool vec = (N % 4) == 0;

  float acc[S16_TM][S16_TN] = {{0.0f}};
  if (vec)
    s16_pipeline<true>(smem, M, N, K, A, B, acc, brow, bcol, trow, tcol, tid);
  else
    s16_pipeline<false>(smem, M, N, K, A, B, acc, brow, bcol, trow, tcol, tid);
#pragma unroll
  for (int i = 0; i < S16_TM; ++i) {
    const int r = brow + trow + i;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
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
