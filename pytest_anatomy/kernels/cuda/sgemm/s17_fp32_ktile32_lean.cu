/*
SGEMM rung s17 · s16 without the device's spill (issue 17's fp32 target).

What changes: the copies of s16's main loop, nothing else. s16 (s9 with 32-deep k-tiles) ran 3.266 ms at 4096^3,
slower than s9 (3.145 ms), because the device's compiler, NVRTC 13.0.88, spilled it at the 128-register cap of
__launch_bounds__(256, 2): a 96-byte stack frame, 19 LDL and 3 STL in the main K loop (ncu: 22.09 spill requests per
warp per k-tile; nvcc 13.0.88 and NVRTC 13.5 showed no spill, so the check before that run missed it). What spilled,
by the SASS NVRTC 13.0.88 gives here (the device's loop, instruction for instruction): the A copies' shared-memory
offsets, one register per copy (16 of them, (k x 132 + row) hoisted out of the loop, the stage offset added in it),
and a 64-bit pointer, beside the row guards' selects between a row pointer and the fallback. s17 leaves none of them:
in the main loop (whole k-tiles, N % 4 == 0) the copies are unguarded: a row past M reads row M-1 and a column past
N reads column N-4, in-range addresses whose products land only in outputs the epilogue never stores, while the k
dimension, which every output sums, stays exact because the main loop copies whole k-tiles only; each copy's
shared-memory offset (g x 8 x 132 + p x 32 floats) and k offset are immediates of its cp.async (inline PTX
[base+imm]), so one shared base per operand, four A row pointers and one B pointer live across the loop; the stages
are interleaved ([As, Bs] per stage) so one offset moves both. A ragged last k-tile (K % 32 != 0) and odd N run
s16's guarded, zero-filling copies in rolled loops outside the main loop. Kept from s16: the 128 x 128 x 32 block
tile, 8 warps of 64 x 32, 8 x 8 outputs per thread, two stages in the 66,560-byte dynamic window, two barriers per
k-tile, fragments double-buffered, A's 4-rows-x-8-k copy mapping (32 banks).
Compiled with the device's compiler (NVRTC 13.0.88, sm_90, pinned here since 2026-12-04 21:50): 128 registers, no
stack frame, no spill, two blocks = 16 warps per SM with the window; the main K loop issues 2,232 instructions per
2,048 FFMA (share 0.9176; s16 on the device 2,407, 0.8509; s9 1,205 per 1,024, 0.8498): 128 LDS.128, 20 LDGSTS (16
A, 4 B), 2 barriers, no LDL or STL, 29 integer, predicate and branch instructions (s16 on the device: 182 beside
its 22 spill instructions).
Predicted effect: H200, the tuner's run (1.98 GHz boost), s16's method at the device's compiled shares: s9's time
split as T = X / share + S x 16 / bk (an issue part at s9's pace, a stall part per k-tile), solved from that run's
(20261201T215110Z) T(8) = 3.3512 and T(16) = 3.1447 ms of s9's kernel with the shares NVRTC 13.0.88 compiles for
them, 0.8218 and 0.8498 (s16's pre-registration divided by nvcc's 0.8298 and 0.8505): at 4096^3 X = 2.585 ms,
S = 0.103 ms; then priced at s17's share 0.9176 and half the k-tiles, X / 0.9176 + S / 2:
4096^3: 2.868 ms (93.4% of that run's cuBLAS fp32 2.6787 ms; target 90% = 2.976 ms);
2048 x 18944 x 3584: 5.648 ms (93.5% of 5.2827 ms; target 80%, met as s9 meets it);
32 x 18944 x 3584: 0.631 ms (20% of 0.1261 ms; the grid problem, not attacked).
The same split at s16's device share (0.8509) gives 3.089 ms at 4096^3, where s16 ran 3.266 ms with its spill (1.057x):
this rung tests whether that 5.7% was the spill's.
Alternative outcomes, pre-registered: (a) the spill goes but s16's pace stays (the 32-deep tile's own: its longer
barrier waits, the dynamic window, the L1 the A copies share): s9's time x s17 / s9 compiled instructions (0.8498 /
0.9176 = 0.926) x s16 / s9 warp cycles per issue in the 20:38 profile (5.00 / 4.72): 3.085 ms at 4096^3 (86.8%: the
target missed, and the next step is that pace, not the instructions), 6.033 ms at 2,048 rows, 0.670 ms at 32 rows;
(b) instructions only (s16's alternative (a): the 8-deep tile's stalls were its own, so halving the k-tiles saves
nothing more), X / 0.9176 + S: 2.920 ms at 4096^3 (91.7%), 5.703 ms at 2,048 rows (92.6%), 0.633 ms at 32 rows.
A time above s9's beside it (slower than s9 at 4096^3) is outside all three and a finding.
Known risks: (1) 128 registers is the cap and NVRTC 13.0.88 here is the device's, so a spill would show here first;
a different driver JIT does not apply (the cubin is loaded as compiled); (2) the clamped reads of rows past M at the
32-row shape: 96 of 128 rows read row 31 (the same cache lines as before, no extra DRAM traffic); (3) the emulator
copies at issue time, so a stage-reuse ordering error would show only as `wrong` in the plan's check (the stage
logic is s16's, which was correct on the device).
Measured outcome: H200, kernels batch 20261205T025617Z (2026-12-05 02:56), correct at every odd shape;
4096^3: 2.9333 ms, 1.023x the prediction (2.868; the alternative 2.920 nearer); rung 0 2.6883 ms: 91.6% of
cuBLAS fp32, issue 17's 90% fp32 target met at 4096^3 (the first hand rung to meet it). The FFN shapes were not
reached: the call was stopped at its 420 s limit after the timing shapes (RECORDING.md). Mended before any run: the
prologue commits tile 0's copies as a group of their own (found by the emulator's late-copy mode).
Seed: no such rung.
*/
// requires: sm_80 (cp.async global-to-shared copies)
#define S17_BM 128
#define S17_BN 128
#define S17_BK 32
#define S17_LDA (S17_BM + 4)  // As row = BM + 4 floats: float4-aligned fragment loads, as in s9 and s16
#define S17_WM 64
#define S17_WN 32
#define S17_THREADS 256
#define S17_TM 8
#define S17_TN 8
#define S17_KG 8  // A copies: 8 lanes read 8 consecutive k (one 32-byte sector) of one row, s16's mapping
#define S17_A_STAGE (S17_BK * S17_LDA)
#define S17_STAGE (S17_A_STAGE + S17_BK * S17_BN)  // one stage: As[k][m] then Bs[k][n]
#define S17_SMEM_FLOATS (2 * S17_STAGE)             // 66,560 bytes, the launch's dynamic window

#ifdef CUDA_EMULATOR
// A copy lands when it is issued (the default) or, with S17_EMU_LATE_COPY, only when the thread waits on its group
// (as late as the device may land it: a stage read before its wait shows as a wrong product); the tests run both.
#ifdef S17_EMU_LATE_COPY
#define S17_ISSUE(op) emu::async_issue(op)
static inline void s17_commit() { emu::async_commit(); }
static inline void s17_wait_1() { emu::async_wait(1); }
#else
#define S17_ISSUE(op) (op)()
static inline void s17_commit() {}
static inline void s17_wait_1() {}
#endif
template <int D, int S> static inline void s17_cp4(float* dst, const float* src) {
  S17_ISSUE(([=] { dst[D] = src[S]; }));
}
template <int D> static inline void s17_cp16(float* dst, const float* src) {
  S17_ISSUE(([=] { for (int e = 0; e < 4; ++e) dst[D + e] = src[e]; }));
}
static inline void s17_cp4_zfill(float* dst, const float* src, bool ok) {
  S17_ISSUE(([=] { *dst = ok ? *src : 0.0f; }));
}
static inline void s17_cp16_zfill(float* dst, const float* src, bool ok) {
  S17_ISSUE(([=] { for (int e = 0; e < 4; ++e) dst[e] = ok ? src[e] : 0.0f; }));
}
#else
__device__ __forceinline__ unsigned s17_shared(const float* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// The main loop's copies: the destination's offset D and the source's S (in floats) are immediates of the
// instruction, so a thread's 16 A copies share one shared-memory base and one global pointer per row.
template <int D, int S> __device__ __forceinline__ void s17_cp4(float* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0+%2], [%1+%3], 4;\n" ::"r"(s17_shared(dst)), "l"(src), "n"(D * 4),
               "n"(S * 4));
}
template <int D> __device__ __forceinline__ void s17_cp16(float* dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0+%2], [%1], 16;\n" ::"r"(s17_shared(dst)), "l"(src), "n"(D * 4));
}
// The guarded copies (a ragged last k-tile, odd N): src-size 0 zero-fills the destination.
__device__ __forceinline__ void s17_cp4_zfill(float* dst, const float* src, bool ok) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s17_shared(dst)), "l"(src), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void s17_cp16_zfill(float* dst, const float* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s17_shared(dst)), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void s17_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void s17_wait_1() { asm volatile("cp.async.wait_group 1;\n" ::); }
#endif

__device__ __forceinline__ int s17_clamp(int v, int hi) { return v < hi ? v : hi; }

// A whole k-tile's copies, no guard: rows past M and columns past N read a clamped in-range row / column, whose
// products land in outputs the epilogue never stores. a_dst / b_dst: this thread's first destination in the stage;
// a[p]: row p's source at the tile's first k; b: B's source at the tile's first k row; nb8 = 8 rows of B.
template <int P = 0>
__device__ __forceinline__ void s17_copy_a(float* a_dst, const float* const (&a)[4]) {
  if constexpr (P < 16) {
    s17_cp4<(P % 4) * S17_KG * S17_LDA + (P / 4) * 32, (P % 4) * S17_KG>(a_dst, a[P / 4]);
    s17_copy_a<P + 1>(a_dst, a);
  }
}
template <int I = 0>
__device__ __forceinline__ void s17_copy_b(float* b_dst, const float* b, size_t nb8) {
  if constexpr (I < 4) {
    s17_cp16<I * 8 * S17_BN>(b_dst, b + I * nb8);
    s17_copy_b<I + 1>(b_dst, b, nb8);
  }
}

// A ragged last k-tile (K % 32 != 0), or any k-tile when N % 4 != 0: every copy guarded, zero-filled past K (the
// k sum must not see garbage) and past M and N; rolled loops, so these copies hold no registers across the main loop.
template <bool VEC>
__device__ void s17_copy_guarded(float* st, const float* __restrict__ A, const float* __restrict__ B, int M, int N,
                                 int K, int brow, int bcol, int k0, int tid) {
  const int ar = (tid / 32) * 4 + (tid % 32) / S17_KG, ak = tid % S17_KG;
#pragma unroll 1
  for (int p = 0; p < 4; ++p) {
#pragma unroll 1
    for (int g = 0; g < 4; ++g) {
      const int r = brow + ar + p * 32, k = k0 + ak + g * S17_KG;
      const bool ok = r < M && k < K;
      s17_cp4_zfill(&st[(ak + g * S17_KG) * S17_LDA + ar + p * 32], ok ? A + (size_t)r * K + k : A, ok);
    }
  }
  float* const bs = st + S17_A_STAGE;
#pragma unroll 1
  for (int i = 0; i < 4; ++i) {
    const int k = tid / 32 + i * 8, c = (tid % 32) * 4, gk = k0 + k, gc = bcol + c;
    if (VEC) {
      const bool ok = gk < K && gc < N;
      s17_cp16_zfill(&bs[k * S17_BN + c], ok ? B + (size_t)gk * N + gc : B, ok);
    } else {
#pragma unroll 1
      for (int x = 0; x < 4; ++x) {
        const bool ok = gk < K && gc + x < N;
        s17_cp4_zfill(&bs[k * S17_BN + c + x], ok ? B + (size_t)gk * N + gc + x : B, ok);
      }
    }
  }
}

// The 32 k-steps of one staged k-tile: s9's fragment code (k+1's LDS.128 issued before k's 64 FFMA), s16's.
__device__ __forceinline__ void s17_multiply(const float* as, const float* bs, int trow, int tcol,
                                             float (&acc)[S17_TM][S17_TN]) {
  float fa[2][S17_TM], fb[2][S17_TN];
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
  for (int k = 0; k < S17_BK; ++k) {
    const int cur = k & 1, nxt = cur ^ 1;
    if (k + 1 < S17_BK) {
      const float* ak = as + (k + 1) * S17_LDA;
      const float* bk = bs + (k + 1) * S17_BN;
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
    for (int i = 0; i < S17_TM; ++i)
#pragma unroll
      for (int j = 0; j < S17_TN; ++j) acc[i][j] += fa[cur][i] * fb[cur][j];
  }
}

// Wait for the stage holding tile t, multiply it, leave through the barrier that frees it for tile t+2's copies.
__device__ __forceinline__ void s17_consume(const float* st, int trow, int tcol, float (&acc)[S17_TM][S17_TN]) {
  s17_commit();  // an empty group on the last tile keeps "wait until 1 group is pending" exact
  s17_wait_1();  // this thread's copies of tile t have landed ...
  __syncthreads();  // ... and so have everyone else's
  s17_multiply(st, st + S17_A_STAGE, trow, tcol, acc);
  __syncthreads();
}

template <bool VEC>
__device__ __forceinline__ void s17_pipeline(float* smem, int M, int N, int K, const float* __restrict__ A,
                                             const float* __restrict__ B, float (&acc)[S17_TM][S17_TN], int brow,
                                             int bcol, int trow, int tcol, int tid) {
  const int tiles = (K + S17_BK - 1) / S17_BK, whole = VEC ? K / S17_BK : 0;
  int t = 0;
  if (whole > 1) {  // the main loop: whole k-tiles, unguarded copies
    const int ar = (tid / 32) * 4 + (tid % 32) / S17_KG, ak = tid % S17_KG;
    const int kb = tid / 32, cb = (tid % 32) * 4;
    const float* a[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) a[p] = A + (size_t)s17_clamp(brow + ar + p * 32, M - 1) * K + ak;
    const float* b = B + (size_t)kb * N + s17_clamp(bcol + cb, N - 4);
    const size_t nb8 = (size_t)8 * N;
    float* const a_dst = smem + ak * S17_LDA + ar;
    float* const b_dst = smem + S17_A_STAGE + kb * S17_BN + cb;
    s17_copy_a(a_dst, a);
    s17_copy_b(b_dst, b, nb8);
    s17_commit();  // tile 0's copies are a group of their own: the first wait (1 pending) then waits for them
    for (; t + 1 < whole; ++t) {
      const int cur = (t & 1) * S17_STAGE, nxt = S17_STAGE - cur;
#pragma unroll
      for (int p = 0; p < 4; ++p) a[p] += S17_BK;
      b += 4 * nb8;
      s17_copy_a(a_dst + nxt, a);
      s17_copy_b(b_dst + nxt, b, nb8);
      s17_consume(smem + cur, trow, tcol, acc);
    }
  } else {
    s17_copy_guarded<VEC>(smem, A, B, M, N, K, brow, bcol, 0, tid);
    s17_commit();
  }
  for (; t < tiles; ++t) {  // the last one or two k-tiles (all of them when N % 4 != 0)
    const int cur = (t & 1) * S17_STAGE, nxt = S17_STAGE - cur;
    if (t + 1 < tiles) s17_copy_guarded<VEC>(smem + nxt, A, B, M, N, K, brow, bcol, (t + 1) * S17_BK, tid);
    s17_consume(smem + cur, trow, tcol, acc);
  }
}

extern "C" __global__ void __launch_bounds__(S17_THREADS, 2)
sgemm_fp32_ktile32_lean(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                        float* __restrict__ C) {
#ifdef CUDA_EMULATOR
  __shared__ __align__(16) float smem[S17_SMEM_FLOATS];  // blocks run one after another: one block's window
#else
  extern __shared__ __align__(16) float smem[];  // [stage] { As[k][m] (transposed), Bs[k][n] }
#endif
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wrow = (warp / (S17_BN / S17_WN)) * S17_WM, wcol = (warp % (S17_BN / S17_WN)) * S17_WN;
  const int trow = wrow + (lane / 4) * S17_TM;  // 8 consecutive rows
  const int tcol = wcol + (lane % 4) * 4;       // columns tcol..tcol+3 and tcol+16..tcol+19
  const int brow = blockIdx.y * S17_BM, bcol = blockIdx.x * S17_BN;
  const bool vec = (N % 4) == 0;

  float acc[S17_TM][S17_TN] = {{0.0f}};
  if (vec)
    s17_pipeline<true>(smem, M, N, K, A, B, acc, brow, bcol, trow, tcol, tid);
  else
    s17_pipeline<false>(smem, M, N, K, A, B, acc, brow, bcol, trow, tcol, tid);
#pragma unroll
  for (int i = 0; i < S17_TM; ++i) {
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
