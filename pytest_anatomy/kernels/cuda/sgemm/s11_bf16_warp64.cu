/*
SGEMM ladder, tensor-core rung s11 · 64 x 64 warp tiles, both k-steps' fragments in flight, no per-tile index arithmetic.

What changes: s10 already has ldmatrix, XOR-swizzled shared memory and a three-stage cp.async
pipeline (issue 17's list for this rung); what it lacks is fewer instructions per mma. Its ncu
counters (2026-12-01 11:11) count 184.8 instructions per warp per 32-deep k-tile for 32 mma (5.8 per
mma) at 8.1 warp cycles per issue, and its compiled K loop is 157 instructions: 45 IMAD, 18 VIADD,
8 LEA of index arithmetic around 32 HMMA + 12 LDSM + 4 LDGSTS. s11 keeps C = A * B^T, the 128x128x32
block tile, the swizzle and three stages (48 KB static shared memory: a fourth stage needs 64 KB, above
the 48 KB a kernel gets without the dynamic-shared-memory opt-in the device runner does not make yet)
and changes (1) 4 warps of 64 x 64 (2 x 2) instead of 8 of 64 x 32: per 16-deep step a warp issues 8
ldmatrix.x4 for 32 mma (s10: 6 for 16), 32 independent accumulator tiles (s10: 16); (2) both 16-deep
steps' fragments (64 registers) are loaded before the first mma of a k-tile, so the second step's
ldmatrix latency hides behind 32 mma; (3) the copy and ldmatrix addresses are computed once: every
chunk and every 16-row fragment group keeps its thread's swizzle, so they are immediate offsets from
fixed bases, stages rotate by counters, not kt % 3. Compiled K loop (sm_90, K % 8 == 0 side): 168
instructions per warp per k-tile for 64 HMMA + 16 LDSM + 8 LDGSTS (2.6 per mma; s10 4.9). The cost:
216 registers, 2 blocks of 4 warps per SM = 8 warps (s10: 16).
Predicted effect: H200, 4096^3: 0.294 ms (61% of cuBLAS bf16's 0.179 ms: short of the 80% target,
which needs wgmma). 2048 x 18944 x 3584: 0.579 ms. 32 x 18944 x 3584: 0.064 ms. From the issue ledger
(theory/kernel_issue.mma_issue_time, sgemm.MMA_ISSUE_PREREGISTERED; a CPU test recomputes these from
the recordings): instructions per warp per k-tile = s11's compiled loop (168) x s10's counted / compiled
ratio (184.8 / 157 = 1.177: prologue, epilogue and the pipeline's tail) = 197.8; warp cycles per issue
c = c0 + L / ilp with c0 = 3.41 (the fp32 fit on s5-s7) and L = (8.1 - 3.41) x 16 = 75.0 cycles from
s10's counted pace at its 16 accumulator tiles: at s11's 32, c = 5.76 and the SM issues
min(4, 8 warps / 5.76) = 1.39 per cycle (s10: 1.97); the busiest SM runs 8 of the 1,024 blocks x 4
warps x 128 k-tiles x 197.8 / 1.39 / 1.98 GHz. The tensor pipe is not the bound at that rate: 262,144
HMMA on the busiest SM in 583 k cycles is 0.45 per cycle, under the ~0.6 mma.sync sustains on Hopper.
Known bias: the same ledger on s10's own counters gives 0.387 ms against its measured 0.442 ms (ncu
ran at 1.78 GHz, the ledger prices the 1.98 GHz boost clock); if that holds here too, s11 lands near
0.33 ms, still inside the 15% band. Written before any measurement of this rung.
Measured outcome: H200, live pytest run of 2026-12-03T14:25:36Z (NVML-spec session, card GPU-0a76d8fe,
results/h200/kernels): 4096^3: 0.4295 ms, 1.47x the prediction; rung 0 0.1757 ms; 2048 x 18944 x 3584:
0.9008 ms, 1.56x; 32 x 18944 x 3584: 0.1021 ms, 1.60x (finding h200-warp64-kept-s10s-time) at a 1,859 MHz
SM clock probe (NVML 1,845 MHz, power-capped). The 12:16 session's 32-row run took 0.1216 ms at a 1,560 MHz
probe reading after the power-capped FFN shapes; 0.1087 ms in the 2026-12-02 00:17 session. The first run (kernels plan,
2026-12-01 21:51) gave 0.4330 / 0.9828 / 0.0968 ms at the three shapes: s10's time at every shape (0.4422 /
0.9739 / 0.0957 ms in the 11:09 run) with about half its instructions per mma, so instruction issue is not
what binds s10 and s11. Nsight Compute at 4096^3 (00:18): 8 resident warps at 6.25 cycles per issued
instruction (s10: 16 at 8.1), 30% of issue slots busy (s10: 47%). The FFN shapes moved -9% and +12% between
the plan run and the live runs, with steps inside single timing blocks (SM clock levels; the clock is not locked).
Seed: no tensor-core rung.
*/
// requires: sm_80 (bf16 mma.sync tensor-core MMAs fed by ldmatrix, cp.async)
typedef unsigned short bf16_t;
#define S11_BM 128
#define S11_BN 128
#define S11_BK 32
#define S11_STAGES 3
#define S11_THREADS 128  // 4 warps, 2 x 2, each a 64 x 64 warp tile
#define S11_TILE (S11_BM * S11_BK)  // bf16 per operand per stage: 8 KB

// Element offset of (row r, k) in a swizzled [rows][32] bf16 tile: 4 chunks of 8 per row.
__device__ __forceinline__ int s11_swz(int r, int k) { return r * S11_BK + ((((k >> 3) ^ ((r >> 1) & 3))) << 3) + (k & 7); }

#ifdef CUDA_EMULATOR
static inline void s11_cp_async16(void* dst, const void* src, int src_bytes) {
  std::memset(dst, 0, 16);
  if (src_bytes) std::memcpy(dst, src, src_bytes);
}
static inline void s11_cp_async_commit() {}
static inline void s11_cp_async_wait_stages() {}
// ldmatrix.x4: lane l supplies the row address of matrix l/8, row l%8; lane l receives, from each matrix j,
// row l/4's elements 2(l%4), 2(l%4)+1. The emulator moves the 32-bit offsets through the warp's shuffle
// slots (the base is the stage buffer, the same for the whole warp).
static inline void s11_ldsm_x4(unsigned r[4], const bf16_t* base, int off) {
  const int lane = emu::lane();
  for (int j = 0; j < 4; ++j) {
    const int src = __shfl_sync(0xffffffffu, off, j * 8 + lane / 4);
    const bf16_t* p = base + src + 2 * (lane % 4);
    r[j] = unsigned(p[0]) | (unsigned(p[1]) << 16);
  }
}
static inline void s11_mma(float d[4], const unsigned a[4], const unsigned b[2]) { emu::mma_16816(d, a, b, d); }
static inline unsigned s11_pack_bf16(float lo, float hi) {
  return unsigned(emu::f32_to_bf16_rn(lo)) | (unsigned(emu::f32_to_bf16_rn(hi)) << 16);
}
static inline bf16_t s11_to_bf16(float x) { return emu::f32_to_bf16_rn(x); }
#else
__device__ __forceinline__ void s11_cp_async16(void* dst, const void* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void s11_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// At most STAGES-2 groups may still be in flight: the oldest tile (the one about to be read) has landed.
__device__ __forceinline__ void s11_cp_async_wait_stages() { asm volatile("cp.async.wait_group %0;\n" ::"n"(S11_STAGES - 2)); }
__device__ __forceinline__ void s11_ldsm_x4(unsigned r[4], const bf16_t* base, int off) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(base + off));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void s11_mma(float d[4], const unsigned a[4], const unsigned b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ unsigned s11_pack_bf16(float lo, float hi) {
  unsigned out;  // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half, b in the lower
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ bf16_t s11_to_bf16(float x) { return (bf16_t)(s11_pack_bf16(x, 0.0f) & 0xffffu); }
#endif

// One operand's k-tile copies for this thread: 4 chunks of 16 bytes, rows tid/4 + 32 i, k chunk tid % 4.
// Every chunk shares the thread's swizzle ((r >> 1) & 3 does not change when r moves by 32), so the
// destination is dst0 + i * 32 rows and the source src0 + i * 32 K: no per-chunk index arithmetic.
__device__ __forceinline__ void s11_load_tile(bf16_t* dst0, const bf16_t* __restrict__ src0, size_t stride32,
                                              unsigned row_ok, bool k_ok, bool aligned, int k_left) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    bf16_t* d = dst0 + i * 32 * S11_BK;
    const bf16_t* g = src0 + i * stride32;
    const bool ok = ((row_ok >> i) & 1u) && k_ok;
    if (aligned) {
      s11_cp_async16(d, ok ? (const void*)g : (const void*)src0, ok ? 16 : 0);
    } else {  // K % 8 != 0: element-wise, k_left (K - the chunk's first k) bounds the chunk
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] = ((row_ok >> i) & 1u) && e < k_left ? g[e] : (bf16_t)0;
    }
  }
}

extern "C" __global__ void __launch_bounds__(S11_THREADS, 2)
sgemm_bf16_warp64(int M, int N, int K, const bf16_t* __restrict__ A, const bf16_t* __restrict__ Bt,
                  bf16_t* __restrict__ C) {
  __shared__ __align__(128) bf16_t As[S11_STAGES][S11_TILE];
  __shared__ __align__(128) bf16_t Bs[S11_STAGES][S11_TILE];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / 2) * 64, wn = (warp % 2) * 64;
  const int brow = blockIdx.y * S11_BM, bcol = blockIdx.x * S11_BN;
  const bool aligned = (K % 8) == 0;
  // ldmatrix row addresses, as in s10: A matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) in a0..a3 order;
  // B matrices (n 0-7, k 0-7 | 8-15), (n 8-15, ...).
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_kc = (lane >> 4) * 8;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_kc = ((lane >> 3) & 1) * 8;
  float acc[4][8][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int ntiles = (K + S11_BK - 1) / S11_BK;
  // Copy-side facts fixed for the whole K loop: the thread's row pointers, which of its 4 rows exist,
  // its swizzled destination and k chunk.
  const int cr = tid >> 2, ck = (tid & 3) * 8;
  const size_t stride32 = (size_t)32 * K;
  const bf16_t* a_src = A + (size_t)(brow + cr) * K + ck;
  const bf16_t* b_src = Bt + (size_t)(bcol + cr) * K + ck;
  unsigned a_ok = 0u, b_ok = 0u;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    a_ok |= (brow + cr + 32 * i < M ? 1u : 0u) << i;
    b_ok |= (bcol + cr + 32 * i < N ? 1u : 0u) << i;
  }
  const int dst0 = s11_swz(cr, ck);
  // ldmatrix offsets for the two 16-deep steps at mi = 0 / np = 0; further 16-row groups keep the
  // swizzle and sit 16 rows further on (an immediate offset).
  const int a_off0 = s11_swz(wm + a_row, a_kc), a_off1 = s11_swz(wm + a_row, 16 + a_kc);
  const int b_off0 = s11_swz(wn + b_row, b_kc), b_off1 = s11_swz(wn + b_row, 16 + b_kc);
#pragma unroll
  for (int s = 0; s < S11_STAGES - 1; ++s) {
    if (s < ntiles) {
      const int k0 = s * S11_BK;
      s11_load_tile(&As[s][dst0], a_src + k0, stride32, a_ok, ck + k0 < K, aligned, K - k0 - ck);
      s11_load_tile(&Bs[s][dst0], b_src + k0, stride32, b_ok, ck + k0 < K, aligned, K - k0 - ck);
    }
    s11_cp_async_commit();  // empty groups past the last tile keep the wait count uniform
  }
  int rs = 0, ws = S11_STAGES - 1;  // the stage read this tile, the stage refilled this tile
  for (int kt = 0; kt < ntiles; ++kt) {
    s11_cp_async_wait_stages();  // this thread's copies of tile kt have landed ...
    __syncthreads();             // ... everyone's have, and everyone has finished reading tile kt-1
    {
      const int nt = kt + S11_STAGES - 1;
      if (nt < ntiles) {
        const int k0 = nt * S11_BK;
        s11_load_tile(&As[ws][dst0], a_src + k0, stride32, a_ok, ck + k0 < K, aligned, K - k0 - ck);
        s11_load_tile(&Bs[ws][dst0], b_src + k0, stride32, b_ok, ck + k0 < K, aligned, K - k0 - ck);
      }
      s11_cp_async_commit();
    }
    const bf16_t* as = As[rs];
    const bf16_t* bs = Bs[rs];
    rs = (rs + 1 == S11_STAGES) ? 0 : rs + 1;
    ws = (ws + 1 == S11_STAGES) ? 0 : ws + 1;
    // Both 16-deep steps' fragments first (64 registers): the second step's ldmatrix latency hides behind
    // the first step's 32 mma instead of stalling the warp between them.
    unsigned af[2][4][4], bfr[2][8][2];
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      const int ao = ks ? a_off1 : a_off0, bo = ks ? b_off1 : b_off0;
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) s11_ldsm_x4(af[ks][mi], as, ao + mi * 16 * S11_BK);
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        unsigned r[4];
        s11_ldsm_x4(r, bs, bo + np * 16 * S11_BK);
        bfr[ks][2 * np][0] = r[0]; bfr[ks][2 * np][1] = r[1];
        bfr[ks][2 * np + 1][0] = r[2]; bfr[ks][2 * np + 1][1] = r[3];
      }
    }
#pragma unroll
    for (int ks = 0; ks < 2; ++ks)
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 8; ++ni) s11_mma(acc[mi][ni], af[ks][mi], bfr[ks][ni]);
  }
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 8; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = brow + wm + mi * 16 + g + h * 8, c = bcol + wn + ni * 8 + 2 * t;
        const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
        if (r < M && c + 1 < N && (N % 2) == 0) {
          *reinterpret_cast<unsigned*>(&C[(size_t)r * N + c]) = s11_pack_bf16(v0, v1);
        } else if (r < M) {
          if (c < N) C[(size_t)r * N + c] = s11_to_bf16(v0);
          if (c + 1 < N) C[(size_t)r * N + c + 1] = s11_to_bf16(v1);
        }
      }
}
