/*
SGEMM ladder, tensor-core rung s8 · bf16 mma.sync (m16n8k16), fp32 accumulate, bf16 out.

What changes: the FMAs move from the fp32 pipes to the tensor cores. C = A * B^T with A (MxK)
and Bt (NxK) both K-contiguous ("TN", the layout mma.sync's row.col fragments want). A 128x128
block tile, BK=32, 8 warps each owning 64x32 = 4x4 m16n8 tiles; tiles stream into shared memory
with cp.async (16-byte, zero-filled past the edges), double-buffered so the next tile loads
while this one multiplies. Rows are padded to 40 bf16 (80 B), which puts the 8 rows x 4 words a
fragment load touches in 32 different banks. Fragments are read with 32-bit LDS (no ldmatrix),
and mma.sync is Ampere's instruction: Hopper's full rate needs wgmma (sm_90a), so this rung
is expected to stay well under cuBLAS, which uses wgmma.
When K is not a multiple of 8 the 16-byte copies would be misaligned; the kernel then stages
tiles with scalar loads (a uniform branch), so odd sizes stay correct.
Predicted effect: H200, 4096^3: 0.45 ms (~300 TFLOP/s), ~45% of cuBLAS bf16 (~0.19 ms at ~720 TFLOP/s, wgmma), under issue 5's 80% target. Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 0.5598 ms, 1.24x
the prediction (finding h200-mma-sync-below-wgmma); rung 0 0.1763 ms.
Seed: no tensor-core rung.
*/
// requires: sm_80 (bf16 mma.sync.m16n8k16 tensor-core MMAs, cp.async)
typedef unsigned short bf16_t;
#define S8_BM 128
#define S8_BN 128
#define S8_BK 32
#define S8_LD (S8_BK + 8)

#ifdef CUDA_EMULATOR
static inline void s8_cp_async16(void* dst, const void* src, int src_bytes) {
  std::memset(dst, 0, 16);
  if (src_bytes) std::memcpy(dst, src, src_bytes);
}
static inline void s8_cp_async_commit() {}
static inline void s8_cp_async_wait_1() {}
static inline void s8_mma(float d[4], const unsigned a[4], const unsigned b[2]) { emu::mma_16816(d, a, b, d); }
static inline unsigned s8_pack_bf16(float lo, float hi) {
  return unsigned(emu::f32_to_bf16_rn(lo)) | (unsigned(emu::f32_to_bf16_rn(hi)) << 16);
}
static inline bf16_t s8_to_bf16(float x) { return emu::f32_to_bf16_rn(x); }
#else
__device__ __forceinline__ void s8_cp_async16(void* dst, const void* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void s8_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void s8_cp_async_wait_1() { asm volatile("cp.async.wait_group 1;\n" ::); }
__device__ __forceinline__ void s8_mma(float d[4], const unsigned a[4], const unsigned b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ unsigned s8_pack_bf16(float lo, float hi) {
  unsigned out;  // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half, b in the lower
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ bf16_t s8_to_bf16(float x) { return (bf16_t)(s8_pack_bf16(x, 0.0f) & 0xffffu); }
#endif


// Stage rows [r0, r0+128) x k-range [k0, k0+32) of a K-contiguous matrix into dst[128][S8_LD].
__device__ __forceinline__ void s8_load_tile(bf16_t* dst, const bf16_t* __restrict__ src, int rows,
                                             int K, int r0, int k0, bool aligned, int tid) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int c = tid + i * 256, r = c >> 2, kc = (c & 3) * 8;
    const int gr = r0 + r, gk = k0 + kc;
    bf16_t* d = &dst[r * S8_LD + kc];
    if (aligned) {
      const bool ok = gr < rows && gk < K;  // K % 8 == 0: the whole 16-byte chunk is in range
      s8_cp_async16(d, ok ? (const void*)&src[(size_t)gr * K + gk] : (const void*)src, ok ? 16 : 0);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] = (gr < rows && gk + e < K) ? src[(size_t)gr * K + gk + e] : (bf16_t)0;
    }
  }
}

extern "C" __global__ void __launch_bounds__(256)
sgemm_bf16_mma(int M, int N, int K, const bf16_t* __restrict__ A, const bf16_t* __restrict__ Bt,
               bf16_t* __restrict__ C) {
  __shared__ __align__(16) bf16_t As[2][S8_BM * S8_LD];
  __shared__ __align__(16) bf16_t Bs[2][S8_BN * S8_LD];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;
  const int brow = blockIdx.y * S8_BM, bcol = blockIdx.x * S8_BN;
  const bool aligned = (K % 8) == 0;
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int ntiles = (K + S8_BK - 1) / S8_BK;
  s8_load_tile(As[0], A, M, K, brow, 0, aligned, tid);
  s8_load_tile(Bs[0], Bt, N, K, bcol, 0, aligned, tid);
  s8_cp_async_commit();
  for (int kt = 0; kt < ntiles; ++kt) {
    const int cur = kt & 1;
    if (kt + 1 < ntiles) {  // prefetch the next tile into the other buffer
      s8_load_tile(As[cur ^ 1], A, M, K, brow, (kt + 1) * S8_BK, aligned, tid);
      s8_load_tile(Bs[cur ^ 1], Bt, N, K, bcol, (kt + 1) * S8_BK, aligned, tid);
    }
    s8_cp_async_commit();  // possibly empty group: keeps "wait until 1 pending" uniform
    s8_cp_async_wait_1();  // this thread's copies of tile kt have landed
    __syncthreads();       // ... and everyone else's
    const bf16_t* as = As[cur];
    const bf16_t* bs = Bs[cur];
#pragma unroll
    for (int kk = 0; kk < S8_BK; kk += 16) {
      unsigned af[4][4], bfr[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const bf16_t* p = &as[(wm + mi * 16 + g) * S8_LD + kk + 2 * t];
        af[mi][0] = *reinterpret_cast<const unsigned*>(p);
        af[mi][1] = *reinterpret_cast<const unsigned*>(p + 8 * S8_LD);
        af[mi][2] = *reinterpret_cast<const unsigned*>(p + 8);
        af[mi][3] = *reinterpret_cast<const unsigned*>(p + 8 * S8_LD + 8);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const bf16_t* p = &bs[(wn + ni * 8 + g) * S8_LD + kk + 2 * t];
        bfr[ni][0] = *reinterpret_cast<const unsigned*>(p);
        bfr[ni][1] = *reinterpret_cast<const unsigned*>(p + 8);
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) s8_mma(acc[mi][ni], af[mi], bfr[ni]);
    }
    __syncthreads();  // the buffer read here is the one the next iteration's prefetch overwrites
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
          *reinterpret_cast<unsigned*>(&C[(size_t)r * N + c]) = s8_pack_bf16(v0, v1);
        } else if (r < M) {
          if (c < N) C[(size_t)r * N + c] = s8_to_bf16(v0);
          if (c + 1 < N) C[(size_t)r * N + c + 1] = s8_to_bf16(v1);
        }
      }
}
