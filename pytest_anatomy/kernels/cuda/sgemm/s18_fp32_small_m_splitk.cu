/*
SGEMM rung s18 · small-M split-K (issue 17's fp32 target at 32 rows).

What changes: the block tile and the grid, for few rows. Every fp32 rung so far spends a 128-row block tile on the
32-row FFN shape (75% of its FFMAs on rows that do not exist) and launches 148 blocks on 132 SMs, one or two an SM: the
best of them, s9, ran 0.686 ms at 32 x 18944 x 3584 in the 20:21 run, 18% of cuBLAS fp32's 0.1266 ms, and the tuner's
space held no tile under 64 rows and no split-K (finding h200-autotuned-fp32-below-cublas-target). s18: a 32 x 128 x 16
block tile (all of a 32-row M in one tile, no FFMA on padding), 2 warps of 32 x 64, s9's 8 x 8 thread tile and fragment
code (k+1's LDS.128 issued before k's FFMAs), s9's two cp.async stages (20,992 bytes, static), 8 blocks = 16 warps per
SM under __launch_bounds__(64, 8); and K split into S slices along grid z so the grid fills the SMs in one wave: S is
the largest with ceil(M / 32) x ceil(N / 128) x S <= 8 x SMs, at most one slice per k-tile (at 32 x 18944 x 3584 on
132 SMs: S = 7, 1,036 blocks in 1,056 slots, 32 k-tiles each). Slice z sums k-tiles [T z / S, T (z+1) / S) of the T =
ceil(K / 16) and writes its 32 x 128 partial to a workspace; a second kernel, sgemm_splitk_reduce, sums the S partials
of each element in slice order, four elements a thread. Why a second kernel: it is deterministic (no atomics, the same
bits every run) and needs nothing of the runner but the workspace; a fused last-block reduction needs zeroed arrival
counters, which the runner's workspace (uninitialised on the GPU, NaN in the emulator) does not give, and a cluster
reduction through distributed shared memory depends on how many clusters are co-resident, which this card has twice
given fewer of than counted (x9, x6). Where the tiles alone fill the SMs (2,048 rows, 4096^3: S = 1) the kernel writes
C and nothing else is launched. B at 32 rows streams from DRAM once: each of its k-rows is read by one slice, each of
its column tiles by one block of that slice. The main loop's copies are s17's kind: unguarded (whole k-tiles of a whole
block tile, N % 4 == 0; an edge block, a ragged last k-tile and odd N take guarded, zero-filling copies in rolled
loops) with each copy's offsets as cp.async immediates: A in warp copies of 4 rows x 8 k (4-byte copies into its
transposed place, 32 banks; four row pointers), B in warp copies of 4 rows x 128 bytes (16-byte copies, 32 banks; two
row pointers). Tile t0's copies are committed as their own group before the loop (s17 leaves them in one group with
tile t0+1's, so its first wait_group 1 waits for neither; the emulator's late-copy mode below shows it).
Compiled with the device's compiler (NVRTC 13.0.88, sm_90): 123 registers, no stack frame, no spill, 8 blocks = 16
warps per SM with the 20,992 bytes; the main K loop issues 1,141 instructions per warp and 16-deep k-tile, 1,024 of them
FFMA (share 0.8975; s9 on the device 1,205, 0.8498): 64 LDS.128, 16 LDGSTS (8 A, 8 B), 2 barriers, 3 LDS predicated
off (@!PT, the compiler's placeholders before LDGSTS), no LDG, LDL or STL, 30 integer, predicate and branch
instructions. The reduction: 24 registers, no spill.
Predicted effect: H200, at the 1.98 GHz boost clock, written before any s18 run: the main loop's instructions on the
busiest SM (ceil(blocks / 132) blocks x 2 warps x its k-tiles x 1,141) at s9's issue rate (Nsight Compute's Executed
Ipc Elapsed 3.18 for s9 at 4096^3, 16 warps per SM, profile of 2026-12-04 20:38), or A's and B's bytes, 4 (MK + KN),
at the 20:21 run's read ceiling (4.387 TB/s), whichever is longer; plus, where S > 1, the partials written and read back
and C written, 4 (2 S M N + M N) bytes, at that run's copy ceiling (4.267 TB/s), and one kernel boundary (4 us,
flash-decoding's pre-registered price of its reduction kernel, stated, not fitted):
32 x 18944 x 3584: 0.1053 ms (S = 7: 8 blocks x 2 x 32 x 1,141 = 584,192 instructions / 3.18 / 1.98 GHz = 92.8 us,
above A's and B's 62.0 us; + 8.5 us for the 36.4 MB of partials and C + 4 us. That is 120% of the 20:21 run's cuBLAS
fp32, 0.1266 ms; the target, 80%, is 0.1583 ms);
2048 x 18944 x 3584: 5.845 ms (S = 1: 72 blocks x 2 x 224 x 1,141 = 36,804,096 instructions = 5,845 us, above 68.6 us
of bytes; 90% of cuBLAS's 5.286 ms, target 80%);
4096^3: 2.969 ms (S = 1: 32 blocks x 2 x 256 x 1,141 = 18,694,144 instructions = 2,969 us, above 30.6 us of bytes;
90.2% of cuBLAS's 2.678 ms, on the 90% target: a small-M rung, not built for it).
Alternative outcomes, pre-registered: (a) the B stream is not hidden under the issue (every k-tile's wait pays its
copy): issue + bytes + split, 0.1673 ms at 32 rows (75.7% of cuBLAS: the target missed, and the next step is the
pipeline's depth, not the tile), 5.914 ms at 2,048 rows, 3.000 ms at 4096^3; (b) the SMs issue at cuBLAS fp32's own
rate (Executed Ipc Elapsed 3.47, same profile): 0.0976 ms at 32 rows, 5.357 ms at 2,048 rows, 2.721 ms at 4096^3. A
time at 32 rows above s9's beside it is outside all three and a finding.
Known risks: (1) the issue rate is s9's at 4096^3, where its operands come from L2; at 32 rows every block waits on
DRAM, hidden only if one 10 KB stage in flight per block (80 KB per SM, 10.6 MB on the card) keeps ahead of a k-tile's
~2.9 us of issue; (2) not priced: the fill, the first stage of all 1,036 blocks (10.6 MB, ~2.4 us at the read ceiling)
before any FFMA, and the partials' reads from L2 instead of DRAM (which would save part of the 8.5 us); (3) at S = 1 a
32 x 128 tile moves 2.5 times s9's bytes per FMA through L2 (10.7 GB at 4096^3, ~3.6 TB/s at the predicted time, about
a third of the L2 throughput s9's profile implies); (4) the clock: the 32-row call keeps FFMA and DRAM busy together,
and a lower clock level scales the issue part.
Measured outcome: H200, kernels batch 20261205T025617Z (2026-12-05 02:56), correct at every odd shape and its
32-row check shape; 4096^3: 3.0409 ms (not the shape it is built for); rung 0 2.6883 ms; kernels batch
20261205T035327Z (03:53), the card under sw_power_cap at both FFN shapes (at 32 rows NVML 1,845 MHz, the SM-clock
probe 1,821 / 1,965 MHz behind the two blocks): 32 x 18944 x 3584: 0.1244 ms (second block 0.1182), 1.18x / 1.12x
the prediction, between the headline and alternative (a); cuBLAS fp32 beside it 0.1350 / 0.1297 ms (rung 0), s18
108.6% / 109.7% of it: issue 17's 32-row target (80%) is met, and the finding that it was missed is retired. Risk (4)
priced (the 92.8 us issue part at the measured clock: 0.1121 ms at 1,845 MHz) leaves 5-11% over the headline, which
risks (1), the DRAM waits not hidden, and (2), the fill, would cover; which is not established (Nsight Compute
profiled s18 at 4096^3 only; no profile of s18 at 32 rows exists). Finding
h200-s18-32-rows-between-its-headline-and-unhidden-stream (tests_kernels/kernel_s18_x10_findings.py).
2048 x 18944 x 3584: 6.4021 ms (second block 6.8590, the clock falling to 1,545 MHz under the cap), 1.10x; 4096^3:
3.0416 ms.
Seed: no such rung.
*/
// requires: sm_80 (cp.async global-to-shared copies)
#define S18_BM 32
#define S18_BN 128
#define S18_BK 16
#define S18_LDA (S18_BM + 4)  // As row = BM + 4 floats: float4-aligned fragment loads, the 4-byte scatter on 32 banks
#define S18_WN 64             // warp tile 32 x 64: 2 warps cover the 32 x 128 block tile
#define S18_THREADS 64
#define S18_MINB 8  // __launch_bounds__ min blocks per SM: 8 x 64 threads caps registers at 128
#define S18_TM 8
#define S18_TN 8
#define S18_A_STAGE (S18_BK * S18_LDA)             // 576 floats
#define S18_STAGE (S18_A_STAGE + S18_BK * S18_BN)  // one stage: As[k][m] then Bs[k][n], 10,496 bytes
#define S18_REDUCE_THREADS 256

#ifdef CUDA_EMULATOR
// A copy lands when the thread waits on its group (S18_EMU_LATE_COPY: as late as the device may land it, so a stage
// read before its wait shows as a wrong product) or when it is issued (the default: a stage overwritten while another
// warp still multiplies it shows as a wrong product); the tests run both.
#ifdef S18_EMU_LATE_COPY
#define S18_ISSUE(op) emu::async_issue(op)
#else
#define S18_ISSUE(op) (op)()
#endif
template <int D, int S> static inline void s18_cp4(float* dst, const float* src) {
  S18_ISSUE(([=] { dst[D] = src[S]; }));
}
template <int D, int S> static inline void s18_cp16(float* dst, const float* src) {
  S18_ISSUE(([=] { for (int e = 0; e < 4; ++e) dst[D + e] = src[S + e]; }));
}
static inline void s18_cp4_zfill(float* dst, const float* src, bool ok) {
  S18_ISSUE(([=] { *dst = ok ? *src : 0.0f; }));
}
static inline void s18_cp16_zfill(float* dst, const float* src, bool ok) {
  S18_ISSUE(([=] { for (int e = 0; e < 4; ++e) dst[e] = ok ? src[e] : 0.0f; }));
}
#ifdef S18_EMU_LATE_COPY
static inline void s18_commit() { emu::async_commit(); }
static inline void s18_wait_1() { emu::async_wait(1); }
#else
static inline void s18_commit() {}
static inline void s18_wait_1() {}
#endif
#else
__device__ __forceinline__ unsigned s18_shared(const float* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// The main loop's copies: the destination's offset D and the source's S (in floats) are immediates of the
// instruction, so a thread's copies share one shared-memory base and a few global row pointers.
template <int D, int S> __device__ __forceinline__ void s18_cp4(float* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0+%2], [%1+%3], 4;\n" ::"r"(s18_shared(dst)), "l"(src), "n"(D * 4),
               "n"(S * 4));
}
template <int D, int S> __device__ __forceinline__ void s18_cp16(float* dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0+%2], [%1+%3], 16;\n" ::"r"(s18_shared(dst)), "l"(src), "n"(D * 4),
               "n"(S * 4));
}
// The guarded copies (edge blocks, a ragged last k-tile, odd N): src-size 0 zero-fills the destination.
__device__ __forceinline__ void s18_cp4_zfill(float* dst, const float* src, bool ok) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s18_shared(dst)), "l"(src), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void s18_cp16_zfill(float* dst, const float* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s18_shared(dst)), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void s18_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void s18_wait_1() { asm volatile("cp.async.wait_group 1;\n" ::); }
#endif

// A whole k-tile of a whole block tile, no guard. A: thread (warp w, lane = 8 rr + kk) copies rows w16 + 4q + rr
// (q = 0..3, one pointer each) at k = kk and kk + 8 (immediates): a warp copy is 4 rows x 8 k, 32 banks. B: rows
// 4w + lane / 8 and that + 8 (two pointers), columns (lane % 8) x 4 + 32j (immediates): 4 rows x 128 bytes, 32 banks.
template <int P = 0>
__device__ __forceinline__ void s18_copy_a(float* a_dst, const float* const (&a)[4]) {
  if constexpr (P < 8) {
    s18_cp4<(P % 2) * 8 * S18_LDA + (P / 2) * 4, (P % 2) * 8>(a_dst, a[P / 2]);
    s18_copy_a<P + 1>(a_dst, a);
  }
}
template <int P = 0>
__device__ __forceinline__ void s18_copy_b(float* b_dst, const float* b0, const float* b8) {
  if constexpr (P < 8) {
    s18_cp16<(P / 4) * 8 * S18_BN + (P % 4) * 32, (P % 4) * 32>(b_dst, P < 4 ? b0 : b8);
    s18_copy_b<P + 1>(b_dst, b0, b8);
  }
}

// Any k-tile of an edge block (rows past M or columns past N), a ragged last k-tile (K % 16 != 0), or any k-tile when
// N % 4 != 0: every copy guarded and zero-filled past K, M and N; rolled loops, no register held across the main loop.
template <bool VEC>
__device__ void s18_copy_guarded(float* st, const float* __restrict__ A, const float* __restrict__ B, int M, int N,
                                 int K, int brow, int bcol, int k0, int tid) {
  const int w = tid / 32, lane = tid % 32, rr = lane / 8, kk = lane % 8;
#pragma unroll 1
  for (int p = 0; p < 8; ++p) {
    const int r = w * 16 + (p / 2) * 4 + rr, k = (p % 2) * 8 + kk, gr = brow + r, gk = k0 + k;
    const bool ok = gr < M && gk < K;
    s18_cp4_zfill(&st[k * S18_LDA + r], ok ? A + (size_t)gr * K + gk : A, ok);
  }
  float* const bs = st + S18_A_STAGE;
#pragma unroll 1
  for (int p = 0; p < 8; ++p) {
    const int k = w * 4 + rr + (p / 4) * 8, c = kk * 4 + (p % 4) * 32, gk = k0 + k, gc = bcol + c;
    if (VEC) {
      const bool ok = gk < K && gc < N;
      s18_cp16_zfill(&bs[k * S18_BN + c], ok ? B + (size_t)gk * N + gc : B, ok);
    } else {
#pragma unroll 1
      for (int x = 0; x < 4; ++x) {
        const bool ok = gk < K && gc + x < N;
        s18_cp4_zfill(&bs[k * S18_BN + c + x], ok ? B + (size_t)gk * N + gc + x : B, ok);
      }
    }
  }
}

// The 16 k-steps of one staged k-tile: s9's fragment code (k+1's LDS.128 issued before k's 64 FFMA) on a 32 x 64 warp
// tile: rows trow..trow+7, columns tcol..tcol+3 and tcol+32..tcol+35.
__device__ __forceinline__ void s18_multiply(const float* as, const float* bs, int trow, int tcol,
                                             float (&acc)[S18_TM][S18_TN]) {
  float fa[2][S18_TM], fb[2][S18_TN];
  {
    const float4 a0 = *reinterpret_cast<const float4*>(&as[trow]);
    const float4 a1 = *reinterpret_cast<const float4*>(&as[trow + 4]);
    const float4 b0 = *reinterpret_cast<const float4*>(&bs[tcol]);
    const float4 b1 = *reinterpret_cast<const float4*>(&bs[tcol + 32]);
    fa[0][0] = a0.x; fa[0][1] = a0.y; fa[0][2] = a0.z; fa[0][3] = a0.w;
    fa[0][4] = a1.x; fa[0][5] = a1.y; fa[0][6] = a1.z; fa[0][7] = a1.w;
    fb[0][0] = b0.x; fb[0][1] = b0.y; fb[0][2] = b0.z; fb[0][3] = b0.w;
    fb[0][4] = b1.x; fb[0][5] = b1.y; fb[0][6] = b1.z; fb[0][7] = b1.w;
  }
#pragma unroll
  for (int k = 0; k < S18_BK; ++k) {
    const int cur = k & 1, nxt = cur ^ 1;
    if (k + 1 < S18_BK) {
      const float* ak = as + (k + 1) * S18_LDA;
      const float* bk = bs + (k + 1) * S18_BN;
      const float4 a0 = *reinterpret_cast<const float4*>(&ak[trow]);
      const float4 a1 = *reinterpret_cast<const float4*>(&ak[trow + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bk[tcol]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bk[tcol + 32]);
      fa[nxt][0] = a0.x; fa[nxt][1] = a0.y; fa[nxt][2] = a0.z; fa[nxt][3] = a0.w;
      fa[nxt][4] = a1.x; fa[nxt][5] = a1.y; fa[nxt][6] = a1.z; fa[nxt][7] = a1.w;
      fb[nxt][0] = b0.x; fb[nxt][1] = b0.y; fb[nxt][2] = b0.z; fb[nxt][3] = b0.w;
      fb[nxt][4] = b1.x; fb[nxt][5] = b1.y; fb[nxt][6] = b1.z; fb[nxt][7] = b1.w;
    }
#pragma unroll
    for (int i = 0; i < S18_TM; ++i)
#pragma unroll
      for (int j = 0; j < S18_TN; ++j) acc[i][j] += fa[cur][i] * fb[cur][j];
  }
}

// Wait for the stage holding tile t, multiply it, leave through the barrier that frees it for tile t+2's copies.
__device__ __forceinline__ void s18_consume(const float* st, int trow, int tcol, float (&acc)[S18_TM][S18_TN]) {
  s18_commit();  // an empty group on the last tile keeps "wait until 1 group is pending" exact
  s18_wait_1();  // this thread's copies of tile t have landed ...
  __syncthreads();  // ... and so have everyone else's
  s18_multiply(st, st + S18_A_STAGE, trow, tcol, acc);
  __syncthreads();
}

// k-tiles [t0, t1) of this block's split. Tiles [t0, lean) are whole k-tiles of a whole block tile with N % 4 == 0:
// the main loop copies them unguarded; the rest (a ragged last k-tile, every tile of an edge block) are guarded.
template <bool VEC>
__device__ __forceinline__ void s18_pipeline(float* smem, int M, int N, int K, const float* __restrict__ A,
                                             const float* __restrict__ B, float (&acc)[S18_TM][S18_TN], int brow,
                                             int bcol, int t0, int t1, int lean, int trow, int tcol, int tid) {
  int t = t0;
  if (VEC && lean - t0 > 1) {  // the main loop (N % 4 == 0 only)
    const int w = tid / 32, lane = tid % 32, rr = lane / 8, kk = lane % 8;
    const float* a[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) a[q] = A + (size_t)(brow + w * 16 + q * 4 + rr) * K + t0 * S18_BK + kk;
    const float* b0 = B + (size_t)(t0 * S18_BK + w * 4 + rr) * N + bcol + kk * 4;
    const float* b8 = b0 + (size_t)8 * N;
    const size_t b_step = (size_t)S18_BK * N;
    float* const a_dst = smem + kk * S18_LDA + w * 16 + rr;
    float* const b_dst = smem + S18_A_STAGE + (w * 4 + rr) * S18_BN + kk * 4;
    s18_copy_a(a_dst, a);
    s18_copy_b(b_dst, b0, b8);
    s18_commit();  // tile t0's copies are a group of their own: the first wait_group 1 waits for them
    for (; t + 1 < lean; ++t) {
      const int cur = ((t - t0) & 1) * S18_STAGE, nxt = S18_STAGE - cur;
#pragma unroll
      for (int q = 0; q < 4; ++q) a[q] += S18_BK;
      b0 += b_step;
      b8 += b_step;
      s18_copy_a(a_dst + nxt, a);
      s18_copy_b(b_dst + nxt, b0, b8);
      s18_consume(smem + cur, trow, tcol, acc);
    }
  } else if (t0 < t1) {
    s18_copy_guarded<VEC>(smem, A, B, M, N, K, brow, bcol, t0 * S18_BK, tid);
    s18_commit();
  }
  for (; t < t1; ++t) {  // the last one or two k-tiles of the split (all of them in an edge block)
    const int cur = ((t - t0) & 1) * S18_STAGE, nxt = S18_STAGE - cur;
    if (t + 1 < t1) s18_copy_guarded<VEC>(smem + nxt, A, B, M, N, K, brow, bcol, (t + 1) * S18_BK, tid);
    s18_consume(smem + cur, trow, tcol, acc);
  }
}

// grid (ceil(N / 128), ceil(M / 32), S): block z sums k-tiles [T z / S, T (z+1) / S) of the T = ceil(K / 16) and
// writes its 32 x 128 partial to P + z M N (P is C itself when S = 1).
extern "C" __global__ void __launch_bounds__(S18_THREADS, S18_MINB)
sgemm_fp32_small_m_splitk(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                          float* __restrict__ P) {
  __shared__ __align__(16) float smem[2 * S18_STAGE];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int trow = (lane / 8) * S18_TM;                  // 8 consecutive rows
  const int tcol = warp * S18_WN + (lane % 8) * 4;       // columns tcol..tcol+3 and tcol+32..tcol+35
  const int brow = blockIdx.y * S18_BM, bcol = blockIdx.x * S18_BN;
  const int splits = gridDim.z, z = blockIdx.z;
  const int tiles = (K + S18_BK - 1) / S18_BK;
  const int t0 = (int)((long long)tiles * z / splits), t1 = (int)((long long)tiles * (z + 1) / splits);
  const bool vec = (N % 4) == 0;
  const bool whole = brow + S18_BM <= M && bcol + S18_BN <= N;
  const int whole_k = K / S18_BK;
  const int lean = vec && whole ? (t1 < whole_k ? t1 : whole_k) : t0;

  float acc[S18_TM][S18_TN] = {{0.0f}};
  if (vec)
    s18_pipeline<true>(smem, M, N, K, A, B, acc, brow, bcol, t0, t1, lean, trow, tcol, tid);
  else
    s18_pipeline<false>(smem, M, N, K, A, B, acc, brow, bcol, t0, t1, lean, trow, tcol, tid);
  float* const out = P + (size_t)z * M * N;
#pragma unroll
  for (int i = 0; i < S18_TM; ++i) {
    const int r = brow + trow + i;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = bcol + tcol + h * 32;
      if (vec && c < N) {
        *reinterpret_cast<float4*>(&out[(size_t)r * N + c]) =
            make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (c + e < N) out[(size_t)r * N + c + e] = acc[i][h * 4 + e];
      }
    }
  }
}

// C = P[0] + P[1] + ... + P[S-1], summed in that order for every element (the same bits on every run), four
// consecutive elements per thread (one float4 per partial when N % 4 == 0).
extern "C" __global__ void __launch_bounds__(S18_REDUCE_THREADS)
sgemm_splitk_reduce(int M, int N, int S, const float* __restrict__ P, float* __restrict__ C) {
  const size_t n = (size_t)M * N, e0 = ((size_t)blockIdx.x * S18_REDUCE_THREADS + threadIdx.x) * 4;
  if (e0 >= n) return;
  const float* p = P + e0;
  if (N % 4 == 0) {
    float4 s = *reinterpret_cast<const float4*>(p);
#pragma unroll 1
    for (int z = 1; z < S; ++z) {
      p += n;
      const float4 v = *reinterpret_cast<const float4*>(p);
      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    *reinterpret_cast<float4*>(&C[e0]) = s;
    return;
  }
  const int m = n - e0 < 4 ? (int)(n - e0) : 4;
#pragma unroll 1
  for (int e = 0; e < m; ++e) {
    float s = p[e];
#pragma unroll 1
    for (int z = 1; z < S; ++z) s += p[(size_t)z * n + e];
    C[e0 + e] = s;
  }
}
