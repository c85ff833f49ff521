/*
SGEMM ladder, tensor-core rung s12 · wgmma.mma_async from swizzled shared memory (sm_90a), cp.async three-stage.

What changes: s10 and s11 feed mma.sync through registers: every 16x8x16 product needs its A and B
fragments loaded by ldmatrix into the warp's registers first. s12 moves the operands out of the
registers: a warpgroup (4 warps, 128 threads) issues wgmma.mma_async.m64n128k16, whose A and B are
read by the tensor cores straight from shared memory through 64-bit descriptors (start address,
512-byte stride between 8-row groups, 64-byte swizzle). s10's swizzle already is the hardware's
64-byte pattern (chunk c of row r at c ^ ((r >> 1) & 3) is address bits 4-5 XOR bits 7-8), so the
tiles keep s10's cp.async copies, 128x128x32 block tile and three stages (48 KB, 1 KB-aligned), and
each of the block's 2 warpgroups computes 64 x 128 with 2 wgmma per k-tile (the second 16-deep step is
the first's descriptor + 32 bytes). Per k-tile: cp.async wait, fence.proxy.async (the copies were
generic-proxy writes, wgmma reads through the async proxy), one barrier, the next tile's copies,
wgmma.fence, 2 wgmma, commit, wait_group 0. Compiled K loop (sm_90a, K % 8 == 0 side): 133
instructions per warp per k-tile around 2 HGMMA.64x128x16; 99 registers, 2 blocks = 16 warps per SM.
Not yet the Hopper rung issue 17 asks for: no TMA, no warp specialisation, and wait_group 0 every
k-tile drains the wgmma pipe (docs/RECORDING.md says what TMA needs that the runner lacks).
Predicted effect: H200, 4096^3: 0.328 ms. 2048 x 18944 x 3584: 0.646 ms. 32 x 18944 x 3584: 0.072 ms.
From the mma issue ledger as it stands (theory/kernel_issue.mma_issue_time, sgemm.MMA_ISSUE_PREREGISTERED;
a CPU test recomputes them): 133 x 1.177 (s10's counted / compiled ratio) = 156.6 instructions per warp
per k-tile, at c = 3.41 + 75.0 / 16 = 8.1 warp cycles per issue (s10's latency term at a warp's 16
m16n8 accumulator tiles) with 16 warps: 1.98 per SM-cycle; busiest SM 8 blocks x 8 warps x 128 k-tiles
x 156.6 / 1.98 / 1.98 GHz. The ledger says issue-bound, over twice the tensor pipe's floor (0.143 ms:
the busiest SM's 8 tiles at 989.5 TFLOP/s / 132 SMs). This pre-registration tests whether the mma.sync
latency term transfers to an asynchronous MMA: if wgmma's asynchrony hides the latency the ledger charges
per instruction, s12 lands well under 0.328 ms (toward ~0.16-0.2 ms) and the miss is a finding against
the ledger, not the rung. Written before any measurement of this rung.
Measured outcome: H200, live pytest run of 2026-12-02T00:17:46Z (NVML-spec session, results/h200/kernels):
4096^3: 0.3698 ms, 1.13x the prediction (inside the 15%); rung 0 0.1754 ms; 2048 x 18944 x 3584: 0.7745 ms,
1.20x; 32 x 18944 x 3584: 0.0928 ms, 1.29x (finding h200-wgmma-ffn-shapes-slower-than-the-ledger). The first
run (kernels plan, 2026-12-01 21:51) gave 0.3734 / 0.8684 / 0.0835 ms. 47% of cuBLAS bf16 at 4096^3: wgmma's
asynchrony did not take it toward 0.16-0.2 ms; the ledger's number held there. At 2048 rows the live runs'
first timing block ran 11% under their second (0.774 vs 0.858-0.868 ms, the plan run's level), stepping up
inside the block: SM clock levels (power limit), not the kernel.
Seed: no tensor-core rung.
*/
// requires: sm_90a (wgmma.mma_async exists only on the arch-specific target)
typedef unsigned short bf16_t;
#define S12_BM 128
#define S12_BN 128
#define S12_BK 32
#define S12_STAGES 3
#define S12_TILE (S12_BM * S12_BK)  // bf16 per operand per stage: 8 KB
#define S12_SBO 512                 // bytes between 8-row groups: 8 rows x 64 B

// s10's swizzle is the hardware's 64-byte swizzle: in a 512-byte atom of 8 rows x 64 B, the 16-byte chunk
// (address bits 4-5) is XORed with address bits 7-8, i.e. chunk c of row r sits at c ^ ((r >> 1) & 3).
__device__ __forceinline__ int s12_swz(int r, int k) { return r * S12_BK + ((((k >> 3) ^ ((r >> 1) & 3))) << 3) + (k & 7); }

struct S12Smem {  // one shared window: the emulator decodes descriptors relative to it
  bf16_t a[S12_STAGES][S12_TILE];
  bf16_t b[S12_STAGES][S12_TILE];
};

#ifdef CUDA_EMULATOR
static inline void s12_cp_async16(void* dst, const void* src, int src_bytes) {
  std::memset(dst, 0, 16);
  if (src_bytes) std::memcpy(dst, src, src_bytes);
}
static inline void s12_cp_async_commit() {}
static inline void s12_cp_async_wait_stages() {}
static inline unsigned s12_smem_addr(const void* p, const void* window) {
  return unsigned(static_cast<const char*>(p) - static_cast<const char*>(window));
}
static inline void s12_fence_proxy_async() {}
static inline void s12_wgmma_fence() {}
static inline void s12_wgmma_commit() {}
static inline void s12_wgmma_wait0(float*) {}
// wgmma.mma_async m64n128k16 f32 += bf16 x bf16, both operands K-major in shared memory, 64-byte swizzle,
// decoded from the descriptors as the PTX ISA lays them out: start address >> 4 in bits 0-13, stride byte
// offset >> 4 in bits 32-45, swizzle mode in 62-63 (2: 64 B). Element (row, k) of an operand is at
// start + (row / 8) SBO + (row % 8) 64 + 2k, swizzled on the address; thread (warp w of the warpgroup,
// lane g*4+q) owns rows 16w+g, 16w+g+8 and columns 8i+2q, +1 of every n8 block i: d[4i..4i+3].
static inline const bf16_t* s12_at(unsigned long long desc, int row, int k, const void* window) {
  if ((desc >> 62) != 2ull) { std::fprintf(stderr, "cuda_emu: s12 descriptor without 64-byte swizzle\n"); std::abort(); }
  const unsigned start = unsigned(desc & 0x3fffull) << 4, sbo = unsigned((desc >> 32) & 0x3fffull) << 4;
  unsigned x = start + unsigned(row / 8) * sbo + unsigned(row % 8) * 64u + unsigned(k) * 2u;
  x ^= ((x >> 7) & 3u) << 4;
  return reinterpret_cast<const bf16_t*>(static_cast<const char*>(window) + x);
}
static inline void s12_wgmma(float d[64], unsigned long long da, unsigned long long db, const void* window) {
  const int t = threadIdx.x % 128, w = t / 32, g = (t % 32) / 4, q = t % 4;
  for (int i = 0; i < 16; ++i)
    for (int e = 0; e < 4; ++e) {
      const int m = 16 * w + g + (e >> 1) * 8, n = 8 * i + 2 * q + (e & 1);
      float acc = d[4 * i + e];
      for (int k = 0; k < 16; ++k)
        acc += emu::bf16_to_f32(*s12_at(da, m, k, window)) * emu::bf16_to_f32(*s12_at(db, n, k, window));
      d[4 * i + e] = acc;
    }
}
static inline unsigned s12_pack_bf16(float lo, float hi) {
  return unsigned(emu::f32_to_bf16_rn(lo)) | (unsigned(emu::f32_to_bf16_rn(hi)) << 16);
}
static inline bf16_t s12_to_bf16(float x) { return emu::f32_to_bf16_rn(x); }
#else
__device__ __forceinline__ void s12_cp_async16(void* dst, const void* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void s12_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void s12_cp_async_wait_stages() { asm volatile("cp.async.wait_group %0;\n" ::"n"(S12_STAGES - 2)); }
__device__ __forceinline__ unsigned s12_smem_addr(const void* p, const void*) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// cp.async wrote the tiles through the generic proxy; wgmma reads them through the async proxy.
__device__ __forceinline__ void s12_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void s12_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void s12_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Wait for every committed wgmma, then tell the compiler the accumulators changed under it.
__device__ __forceinline__ void s12_wgmma_wait0(float* d) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  asm volatile("" : "+f"(d[0]) :: "memory");
  asm volatile("" : "+f"(d[1]) :: "memory");
  asm volatile("" : "+f"(d[2]) :: "memory");
  asm volatile("" : "+f"(d[3]) :: "memory");
  asm volatile("" : "+f"(d[4]) :: "memory");
  asm volatile("" : "+f"(d[5]) :: "memory");
  asm volatile("" : "+f"(d[6]) :: "memory");
  asm volatile("" : "+f"(d[7]) :: "memory");
  asm volatile("" : "+f"(d[8]) :: "memory");
  asm volatile("" : "+f"(d[9]) :: "memory");
  asm volatile("" : "+f"(d[10]) :: "memory");
  asm volatile("" : "+f"(d[11]) :: "memory");
  asm volatile("" : "+f"(d[12]) :: "memory");
  asm volatile("" : "+f"(d[13]) :: "memory");
  asm volatile("" : "+f"(d[14]) :: "memory");
  asm volatile("" : "+f"(d[15]) :: "memory");
  asm volatile("" : "+f"(d[16]) :: "memory");
  asm volatile("" : "+f"(d[17]) :: "memory");
  asm volatile("" : "+f"(d[18]) :: "memory");
  asm volatile("" : "+f"(d[19]) :: "memory");
  asm volatile("" : "+f"(d[20]) :: "memory");
  asm volatile("" : "+f"(d[21]) :: "memory");
  asm volatile("" : "+f"(d[22]) :: "memory");
  asm volatile("" : "+f"(d[23]) :: "memory");
  asm volatile("" : "+f"(d[24]) :: "memory");
  asm volatile("" : "+f"(d[25]) :: "memory");
  asm volatile("" : "+f"(d[26]) :: "memory");
  asm volatile("" : "+f"(d[27]) :: "memory");
  asm volatile("" : "+f"(d[28]) :: "memory");
  asm volatile("" : "+f"(d[29]) :: "memory");
  asm volatile("" : "+f"(d[30]) :: "memory");
  asm volatile("" : "+f"(d[31]) :: "memory");
  asm volatile("" : "+f"(d[32]) :: "memory");
  asm volatile("" : "+f"(d[33]) :: "memory");
  asm volatile("" : "+f"(d[34]) :: "memory");
  asm volatile("" : "+f"(d[35]) :: "memory");
  asm volatile("" : "+f"(d[36]) :: "memory");
  asm volatile("" : "+f"(d[37]) :: "memory");
  asm volatile("" : "+f"(d[38]) :: "memory");
  asm volatile("" : "+f"(d[39]) :: "memory");
  asm volatile("" : "+f"(d[40]) :: "memory");
  asm volatile("" : "+f"(d[41]) :: "memory");
  asm volatile("" : "+f"(d[42]) :: "memory");
  asm volatile("" : "+f"(d[43]) :: "memory");
  asm volatile("" : "+f"(d[44]) :: "memory");
  asm volatile("" : "+f"(d[45]) :: "memory");
  asm volatile("" : "+f"(d[46]) :: "memory");
  asm volatile("" : "+f"(d[47]) :: "memory");
  asm volatile("" : "+f"(d[48]) :: "memory");
  asm volatile("" : "+f"(d[49]) :: "memory");
  asm volatile("" : "+f"(d[50]) :: "memory");
  asm volatile("" : "+f"(d[51]) :: "memory");
  asm volatile("" : "+f"(d[52]) :: "memory");
  asm volatile("" : "+f"(d[53]) :: "memory");
  asm volatile("" : "+f"(d[54]) :: "memory");
  asm volatile("" : "+f"(d[55]) :: "memory");
  asm volatile("" : "+f"(d[56]) :: "memory");
  asm volatile("" : "+f"(d[57]) :: "memory");
  asm volatile("" : "+f"(d[58]) :: "memory");
  asm volatile("" : "+f"(d[59]) :: "memory");
  asm volatile("" : "+f"(d[60]) :: "memory");
  asm volatile("" : "+f"(d[61]) :: "memory");
  asm volatile("" : "+f"(d[62]) :: "memory");
  asm volatile("" : "+f"(d[63]) :: "memory");
}
__device__ __forceinline__ void s12_wgmma(float d[64], unsigned long long da, unsigned long long db, const void*) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db));
}
__device__ __forceinline__ unsigned s12_pack_bf16(float lo, float hi) {
  unsigned out;  // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half, b in the lower
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ bf16_t s12_to_bf16(float x) { return (bf16_t)(s12_pack_bf16(x, 0.0f) & 0xffffu); }
#endif

// A K-major operand's descriptor: start address, SBO = 512 B between 8-row groups, LBO unused under a
// swizzle whose width (64 B) covers the instruction's 32 bytes of K (encoded 1), 64-byte swizzle (2).
__device__ __forceinline__ unsigned long long s12_desc(unsigned smem_addr) {
  return (unsigned long long)((smem_addr & 0x3ffffu) >> 4) | (1ull << 16) |
         ((unsigned long long)(S12_SBO >> 4) << 32) | (2ull << 62);
}

// s10's copy: rows [r0, r0+128) x k [k0, k0+32) into a swizzled tile, 2 chunks of 16 bytes per thread.
__device__ __forceinline__ void s12_load_tile(bf16_t* dst, const bf16_t* __restrict__ src, int rows, int K, int r0,
                                              int k0, bool aligned, int tid) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int c = tid + i * 256, r = c >> 2, kc = (c & 3) * 8;
    const int gr = r0 + r, gk = k0 + kc;
    bf16_t* d = &dst[s12_swz(r, kc)];
    if (aligned) {
      const bool ok = gr < rows && gk < K;
      s12_cp_async16(d, ok ? (const void*)&src[(size_t)gr * K + gk] : (const void*)src, ok ? 16 : 0);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] = (gr < rows && gk + e < K) ? src[(size_t)gr * K + gk + e] : (bf16_t)0;
    }
  }
}

extern "C" __global__ void __launch_bounds__(256)
sgemm_bf16_wgmma(int M, int N, int K, const bf16_t* __restrict__ A, const bf16_t* __restrict__ Bt,
                 bf16_t* __restrict__ C) {
  __shared__ __align__(1024) S12Smem sm;  // 1 KB-aligned: every 512-byte swizzle atom starts on its pattern
  const int tid = threadIdx.x, wg = tid / 128, w = (tid % 128) / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  const int brow = blockIdx.y * S12_BM, bcol = blockIdx.x * S12_BN;
  const bool aligned = (K % 8) == 0;
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  const int ntiles = (K + S12_BK - 1) / S12_BK;
#pragma unroll
  for (int s = 0; s < S12_STAGES - 1; ++s) {
    if (s < ntiles) {
      s12_load_tile(sm.a[s], A, M, K, brow, s * S12_BK, aligned, tid);
      s12_load_tile(sm.b[s], Bt, N, K, bcol, s * S12_BK, aligned, tid);
    }
    s12_cp_async_commit();
  }
  for (int kt = 0; kt < ntiles; ++kt) {
    s12_cp_async_wait_stages();  // this thread's copies of tile kt have landed ...
    s12_fence_proxy_async();     // ... are visible to the async proxy ...
    __syncthreads();             // ... and so are everyone's; every wgmma on tile kt-1 has completed (wait below)
    {
      const int nt = kt + S12_STAGES - 1, ns = nt % S12_STAGES;
      if (nt < ntiles) {
        s12_load_tile(sm.a[ns], A, M, K, brow, nt * S12_BK, aligned, tid);
        s12_load_tile(sm.b[ns], Bt, N, K, bcol, nt * S12_BK, aligned, tid);
      }
      s12_cp_async_commit();
    }
    const int st = kt % S12_STAGES;
    s12_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {  // two 16-deep steps: +32 bytes inside the 64-byte swizzle width
      const unsigned long long da = s12_desc(s12_smem_addr(&sm.a[st][(64 * wg) * S12_BK + 16 * ks], &sm));
      const unsigned long long db = s12_desc(s12_smem_addr(&sm.b[st][16 * ks], &sm));
      s12_wgmma(d, da, db, &sm);
    }
    s12_wgmma_commit();
    s12_wgmma_wait0(d);
  }
#pragma unroll
  for (int i = 0; i < 16; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = brow + 64 * wg + 16 * w + g + 8 * h, c = bcol + 8 * i + 2 * q;
      const float v0 = d[4 * i + 2 * h], v1 = d[4 * i + 2 * h + 1];
      if (r < M && c + 1 < N && (N % 2) == 0) {
        *reinterpret_cast<unsigned*>(&C[(size_t)r * N + c]) = s12_pack_bf16(v0, v1);
      } else if (r < M) {
        if (c < N) C[(size_t)r * N + c] = s12_to_bf16(v0);
        if (c + 1 < N) C[(size_t)r * N + c + 1] = s12_to_bf16(v1);
      }
    }
}
