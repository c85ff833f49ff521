/*
SGEMM ladder, tensor-core rung s10 · bf16 mma.sync fed by ldmatrix from swizzled shared memory, three-stage cp.async.

What changes: s8 read every mma fragment with 32-bit shared loads (per warp and 16-deep k-step: 16
LDS for A, 8 for B, against 16 mma) from a pipeline of two stages, and ran latency-bound (ncu: 16
warps per SM, 10.1 cycles per issued instruction, 36% of issue slots busy, DRAM 11%). s10 keeps
C = A * B^T (A: M x K, Bt: N x K, both K-contiguous), the 128x128 block tile, BK=32 and 8 warps of
64x32, and changes how operands reach the tensor cores: (1) ldmatrix.x4 loads four 8x8 bf16
matrices per instruction, so a warp's k-step needs 4 (A) + 2 (B) LDSM instead of 24 LDS;
(2) shared memory rows are not padded but XOR-swizzled (16-byte chunk c of row r lives at chunk
c ^ ((r >> 1) & 3)), which puts the 8 rows an ldmatrix phase reads, and the 32 chunks a warp's
cp.async writes, in distinct banks, in exactly 16 KB per stage; (3) three stages (48 KB): tile
kt+2 is in flight while kt is multiplied, and one barrier per k-tile instead of two.
When K is not a multiple of 8 the tiles are staged with scalar loads into the same swizzled
places (a uniform branch), so odd sizes stay correct.
Predicted effect: H200, 4096^3: 0.34 ms (~400 TFLOP/s, ~52% of cuBLAS bf16's 0.176 ms; under the
80% target, which needs wgmma). Arithmetic, from s8's measured 0.560 ms: s8 is issue-latency bound
(16 warps / 10.1 cycles = 1.58 instructions per cycle, ncu's 1.5), so its time scales with the
instructions it issues per mma. Per warp and 32-deep k-tile s8 issues 32 HMMA + 48 LDS.32 + 8
LDGSTS + ~40 address, loop and barrier instructions = ~128; s10 issues 32 HMMA + 12 LDSM + 4 LDGSTS
+ ~32 others = ~80, i.e. 0.63 x, and one barrier instead of two per tile: 0.560 x 0.63 = 0.35 ms;
the third stage removes the wait on a tile that s8's second buffer had not hidden (assumed small:
DRAM 11%, L2-resident operands), 0.34 ms. mma.sync's own ceiling on Hopper is not the limit at this
rate (it stays under ~60% of the 989 TFLOP/s dense bf16 peak in published microbenchmarks).
Written before any measurement of this rung.
Measured outcome: H200, run of 2026-12-01T11:09:05Z (results/h200/kernels): 4096^3: 0.4422 ms, 1.30x
the prediction (finding h200-ldmatrix-kept-the-instruction-count); rung 0 0.1788 ms; 2048x18944x3584:
0.9739 ms; 32x18944x3584: 0.0957 ms. 0.79x s8's time where 0.63x was predicted: ncu counts a faster
pace per issue (8.1 warp cycles per issued instruction against s8's 10.1) but about as many instructions.
Seed: no tensor-core rung.
*/
// requires: sm_80 (bf16 mma.sync tensor-core MMAs fed by ldmatrix, cp.async)
typedef unsigned short bf16_t;
#define S10_BM 128
#define S10_BN 128
#define S10_BK 32
#define S10_STAGES 3
#define S10_TILE (S10_BM * S10_BK)  // bf16 per operand per stage: 8 KB

// Element offset of (row r, k) in a swizzled [rows][32] bf16 tile: 4 chunks of 8 per row.
__device__ __forceinline__ int s10_swz(int r, int k) { return r * S10_BK + ((((k >> 3) ^ ((r >> 1) & 3))) << 3) + (k & 7); }

#ifdef CUDA_EMULATOR
static inline void s10_cp_async16(void* dst, const void* src, int src_bytes) {
  std::memset(dst, 0, 16);
  if (src_bytes) std::memcpy(dst, src, src_bytes);
}
static inline void s10_cp_async_commit() {}
static inline void s10_cp_async_wait_stages() {}
// ldmatrix.x4: lane l supplies the row address of matrix l/8, row l%8; lane l receives, from each matrix j,
// row l/4's elements 2(l%4), 2(l%4)+1. The emulator moves the 32-bit offsets through the warp's shuffle
// slots (the base is the stage buffer, the same for the whole warp).
static inline void s10_ldsm_x4(unsigned r[4], const bf16_t* base, int off) {
  const int lane = emu::lane();
  for (int j = 0; j < 4; ++j) {
    const int src = __shfl_sync(0xffffffffu, off, j * 8 + lane / 4);
    const bf16_t* p = base + src + 2 * (lane % 4);
    r[j] = unsigned(p[0]) | (unsigned(p[1]) << 16);
  }
}
static inline void s10_mma(float d[4], const unsigned a[4], const unsigned b[2]) { emu::mma_16816(d, a, b, d); }
static inline unsigned s10_pack_bf16(float lo, float hi) {
  return unsigned(emu::f32_to_bf16_rn(lo)) | (unsigned(emu::f32_to_bf16_rn(hi)) << 16);
}
static inline bf16_t s10_to_bf16(float x) { return emu::f32_to_bf16_rn(x); }
#else
__device__ __forceinline__ void s10_cp_async16(void* dst, const void* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void s10_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// At most STAGES-2 groups may still be in flight: the oldest tile (the one about to be read) has landed.
__device__ __forceinline__ void s10_cp_async_wait_stages() { asm volatile("cp.async.wait_group %0;\n" ::"n"(S10_STAGES - 2)); }
__device__ __forceinline__ void s10_ldsm_x4(unsigned r[4], const bf16_t* base, int off) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(base + off));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void s10_mma(float d[4], const unsigned a[4], const unsigned b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ unsigned s10_pack_bf16(float lo, float hi) {
  unsigned out;  // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half, b in the lower
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ bf16_t s10_to_bf16(float x) { return (bf16_t)(s10_pack_bf16(x, 0.0f) & 0xffffu); }
#endif

// Stage rows [r0, r0+128) x k [k0, k0+32) of a K-contiguous matrix into a swizzled tile: 512 chunks of
// 16 bytes, 2 per thread; a warp's 32 chunks are 8 whole rows, written to 32 distinct bank groups.
__device__ __forceinline__ void s10_load_tile(bf16_t* dst, const bf16_t* __restrict__ src, int rows, int K, int r0,
                                              int k0, bool aligned, int tid) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int c = tid + i * 256, r = c >> 2, kc = (c & 3) * 8;
    const int gr = r0 + r, gk = k0 + kc;
    bf16_t* d = &dst[s10_swz(r, kc)];
    if (aligned) {
      const bool ok = gr < rows && gk < K;  // K % 8 == 0: the whole 16-byte chunk is in range
      s10_cp_async16(d, ok ? (const void*)&src[(size_t)gr * K + gk] : (const void*)src, ok ? 16 : 0);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] = (gr < rows && gk + e < K) ? src[(size_t)gr * K + gk + e] : (bf16_t)0;
    }
  }
}

extern "C" __global__ void __launch_bounds__(256)
sgemm_bf16_ldmatrix(int M, int N, int K, const bf16_t* __restrict__ A, const bf16_t* __restrict__ Bt,
                    bf16_t* __restrict__ C) {
  __shared__ __align__(128) bf16_t As[S10_STAGES][S10_TILE];
  __shared__ __align__(128) bf16_t Bs[S10_STAGES][S10_TILE];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;
  const int brow = blockIdx.y * S10_BM, bcol = blockIdx.x * S10_BN;
  const bool aligned = (K % 8) == 0;
  // The rows and chunk this lane addresses for ldmatrix (see s10_ldsm_x4): A matrices j = lane/8 are
  // (rows 0-7 | 8-15) x (k 0-7 | 8-15) in mma's a0..a3 order; B matrices are (n 0-7, k 0-7 | 8-15), (n 8-15, ...).
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_kc = (lane >> 4) * 8;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_kc = ((lane >> 3) & 1) * 8;
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int ntiles = (K + S10_BK - 1) / S10_BK;
#pragma unroll
  for (int s = 0; s < S10_STAGES - 1; ++s) {
    if (s < ntiles) {
      s10_load_tile(As[s], A, M, K, brow, s * S10_BK, aligned, tid);
      s10_load_tile(Bs[s], Bt, N, K, bcol, s * S10_BK, aligned, tid);
    }
    s10_cp_async_commit();  // empty groups past the last tile keep the wait count uniform
  }
  for (int kt = 0; kt < ntiles; ++kt) {
    s10_cp_async_wait_stages();  // this thread's copies of tile kt have landed ...
    __syncthreads();             // ... everyone's have, and everyone has finished reading tile kt-1
    {
      // Refill the stage tile kt-1 used: every warp left it before the barrier above.
      const int nt = kt + S10_STAGES - 1, ns = nt % S10_STAGES;
      if (nt < ntiles) {
        s10_load_tile(As[ns], A, M, K, brow, nt * S10_BK, aligned, tid);
        s10_load_tile(Bs[ns], Bt, N, K, bcol, nt * S10_BK, aligned, tid);
      }
      s10_cp_async_commit();
    }
    const bf16_t* as = As[kt % S10_STAGES];
    const bf16_t* bs = Bs[kt % S10_STAGES];
#pragma unroll
    for (int kk = 0; kk < S10_BK; kk += 16) {
      unsigned af[4][4], bfr[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) s10_ldsm_x4(af[mi], as, s10_swz(wm + mi * 16 + a_row, kk + a_kc));
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        unsigned r[4];
        s10_ldsm_x4(r, bs, s10_swz(wn + np * 16 + b_row, kk + b_kc));
        bfr[2 * np][0] = r[0]; bfr[2 * np][1] = r[1];
        bfr[2 * np + 1][0] = r[2]; bfr[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) s10_mma(acc[mi][ni], af[mi], bfr[ni]);
    }
  }
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = brow + wm + mi * 16 + g + h * 8, c = bcol + wn + ni * 8 + 2 * t;
        const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
        if (r < M && c + 1 < N && (N % 2) == 0) {
          *reinterpret_cast<unsigned*>(&C[(size_t)r * N + c]) = s10_pack_bf16(v0, v1);
        } else if (r < M) {
          if (c < N) C[(size_t)r * N + c] = s10_to_bf16(v0);
          if (c + 1 < N) C[(size_t)r * N + c + 1] = s10_to_bf16(v1);
        }
      }
}
