/*
SGEMM ladder, tensor-core rung s14 · TMA loads, mbarrier pipeline, warp-specialised wgmma (sm_90a), issue 17.

What changes: s12 fed wgmma from tiles its own 256 threads copied with cp.async (8 copies per thread per
k-tile, a barrier for everyone, wait_group 0 after every k-tile's 2 wgmma). s14 splits the block's 384 threads
by role. A producer warpgroup gives registers away (setmaxnreg.dec to 40) and one of its threads issues, per
k-tile, two TMA copies (cp.async.bulk.tensor.2d: A's 128 x 64 box and Bt's 256 x 64 box, 48 KB, 128-byte swizzle)
into a ring of 4 stages of dynamic shared memory (192 KB + barriers; the runner's opt-in above 48 KB), each stage
guarded by a "full" mbarrier (the copy's bytes complete it: arrive.expect_tx + complete_tx) and an "empty"
mbarrier (one arrival per consumer warp). Two consumer warpgroups take the registers (setmaxnreg.inc to 232) and
each computes 64 x 256 of the 128 x 256 block tile with 4 wgmma.mma_async.m64n256k16 per 64-deep k-tile, both
operands read by descriptor from the 128-byte-swizzled tiles (layout type 1, 1,024 bytes between 8-row groups,
the k16 steps 32 bytes apart inside the swizzle's width), and keeps one wgmma group in flight: wait_group 1 after
committing k-tile t means t-1 is done, whose stage is then handed back to the producer. No thread of the block
waits at a block barrier after the prologue. Why 128 x 256 x 64 and not 128 x 128 x 64: per k-tile the tensor
pipe reads A and B from shared memory for every wgmma (2 warpgroups x 4 x (2 + 8) KB = 80 KB in 1,024 cycles of
4,096 FLOP, ~80 B/cycle) while the TMA writes 48 KB (~48 B/cycle): ~128 B/cycle, the SM's shared-memory width;
a 128 x 128 tile writes 32 KB per 512 cycles and reads 48 KB (2 x 4 x (2 + 4) KB): ~160 B/cycle, over it. The
32-row FFN shape also gets 74 blocks (one wave) instead of 148 (1.1 waves).
Divisibility: TMA needs a row stride that is a multiple of 16 bytes, so K % 8 == 0 (the registry refuses other
K, Variant.k_multiple); M and N are free: the TMA zero-fills rows and columns outside the tensor (the 32-row
shape's 96 missing rows and every partial tile), the epilogue stores only rows < M and columns < N. The output is
bf16, row-major M x N, with s12's fragment layout (32 n8 blocks per warp instead of 16): s12's check applies.
Predicted effect: H200, 4096^3: 0.1805 ms. 2048 x 18944 x 3584: 0.3553 ms. 32 x 18944 x 3584: 0.0395 ms.
Not the mma issue ledger's number: the compiled consumer K loop (sm_90a) is 87 instructions per warp and k-tile
around 4 HGMMA.64x256x16, which that ledger (c = 3.41 + 75.0 / 32 = 5.75 cycles per issue at a warp's 32 m16n8
accumulator tiles, 8 consumer warps: 1.39 per SM-cycle) prices at 8 x 64 x 87 / 1.39 = 32,000 cycles per 4096-deep
tile, half the tensor pipe's 65,536 for the same tile, and wgmma runs beside the issue: the tensor pipe binds. The
price is the busiest SM's tiles at the tensor pipe's 4,096 bf16 FLOP per SM-cycle (Hopper whitepaper;
specs/architectures), at the efficiency and clock cuBLAS bf16 reached on this card, both from recordings
(sgemm.TENSOR_PIPE_FIT; a CPU test recomputes the three numbers): Nsight Compute counted cuBLAS's 4096^3 kernel
(nvjet 256x128, persistent) at 283,218 elapsed cycles (2026-12-02 00:18), 2 x 4096^3 / (132 x 4096) = 254,200 cycles
of tensor work: 89.75% efficient; the live run just before it timed that kernel at 0.17501 ms, 283,218 cycles /
0.17501 ms = 1.618 GHz (the clock under a full tensor load, the power limit's). s14 at 4096^3: 512 tiles of 128 x
256, 4 on the busiest SM x 2 x 128 x 256 x 4096 / 4,096 = 262,144 cycles / 0.8975 / 1.618 GHz = 0.1805 ms (97% of
cuBLAS: its tile quantisation, 512 tiles on 528 slots, costs 3%); 2048 x 18944 x 3584: 1,184 tiles, 9 on the busiest
SM, 516,096 cycles: 0.3553 ms; 32 x 18944 x 3584: 74 tiles (each computes 128 rows of which 32 exist), one per SM,
57,344 cycles: 0.0395 ms, above the shape's byte floor (137 MB at the 4.39 TB/s read ceiling: 0.031 ms). Known bias,
stated before any run: s14 is not persistent and holds one block per SM, so every tile's pipeline fill (a DRAM round
trip before its first k-tile lands) and its epilogue (64 KB of bf16 stores) are exposed, where cuBLAS's persistent
kernel overlaps them: ~3-5 us per tile, up to +8% over these numbers, inside the 15%. Issue 17's target, 80% of
cuBLAS bf16 (0.1754 / 0.8 = 0.219 ms at 4096^3), is met with 18% to spare if the price holds; a miss past 0.219 ms
says the pipeline, not the tensor pipe, binds. Written before any measurement of this rung.
Measured outcome: H200, kernels plan run of 2026-12-04T16:38:02Z (batch 20261204T163802Z, results/h200/kernels),
correct at every checked shape. 4096^3: 0.2006 ms, 1.11x the prediction (inside the 15%, outside the timing noise:
the exposed fill and epilogue the header stated, 4 tiles x ~5 us; finding h200-s14-fill-and-epilogue-per-tile);
rung 0 0.1770 ms: s14 is 88% of cuBLAS bf16, issue 17's 80% target met (0.2213 ms); 2048 x 18944 x 3584:
0.5344 ms, 1.50x (the N-fastest launch order re-reads B's 136 MB from DRAM for each of the 16 row tiles, 2.27 GB:
the DRAM, not the tensor pipe, binds; finding h200-s14-row-tiles-reread-b-from-dram); rung 0 0.3444 ms;
32 x 18944 x 3584: 0.0472 ms, 1.20x (cause not established; finding h200-s14-32-rows-slower-than-its-price);
rung 0 0.0401 ms.
Seed: no tensor-core rung.
*/
// requires: sm_90a (wgmma.mma_async, setmaxnreg: arch-specific target only)
typedef unsigned short bf16_t;
#define S14_BM 128
#define S14_BN 256
#define S14_BK 64                      // 64 bf16 = 128 bytes: one row of a box is the 128-byte swizzle's width
#define S14_STAGES 4
#define S14_THREADS 384                // warpgroup 0: producer; warpgroups 1-2: consumers
#define S14_CONSUMER_WARPS 8
#define S14_SBO 1024                   // bytes between 8-row groups: 8 rows x 128 B, one swizzle atom
#define S14_A_BYTES (S14_BM * S14_BK * 2)  // 16 KB per stage
#define S14_B_BYTES (S14_BN * S14_BK * 2)  // 32 KB per stage
#define S14_STAGE_TX (S14_A_BYTES + S14_B_BYTES)

struct S14Smem {  // the dynamic window, placed on a 1,024-byte boundary: every swizzle atom starts on its pattern
  bf16_t a[S14_STAGES][S14_BM * S14_BK];
  bf16_t b[S14_STAGES][S14_BN * S14_BK];
  unsigned long long full[S14_STAGES];   // completed by the producer's copies (expect_tx + complete_tx)
  unsigned long long empty[S14_STAGES];  // completed by one arrival of each consumer warp
};
// dynamic shared memory the launch asks for: the window plus the slack to round its start up to 1,024 bytes
#define S14_SMEM_BYTES (sizeof(S14Smem) + 1024)

#ifdef CUDA_EMULATOR
typedef emu::TensorMap2D S14TensorMap;
static inline unsigned s14_smem_addr(const void* p, const void* window) {
  return unsigned(static_cast<const char*>(p) - static_cast<const char*>(window));
}
static inline void s14_bar_init(unsigned long long* bar, unsigned count) { emu::mbar_init(bar, count); }
static inline void s14_fence_barrier_init() {}
static inline void s14_bar_expect_tx(unsigned long long* bar, unsigned bytes) {
  emu::mbar_expect_tx(bar, bytes);
  emu::mbar_arrive(bar);
}
static inline void s14_bar_arrive(unsigned long long* bar) { emu::mbar_arrive(bar); }
static inline void s14_bar_wait(unsigned long long* bar, unsigned parity) { emu::mbar_wait_parity(bar, parity); }
static inline void s14_tma_load(void* dst, const S14TensorMap& map, int c0, int c1, unsigned long long* bar) {
  emu::mbar_complete_tx(bar, emu::tma_load_2d(dst, map, c0, c1));
}
static inline void s14_setmaxnreg_producer() {}
static inline void s14_setmaxnreg_consumer() {}
static inline void s14_wgmma_fence() {}
static inline void s14_wgmma_commit() { emu::async_commit(); }
static inline void s14_wgmma_wait1(float*) { emu::async_wait(1); }
static inline void s14_wgmma_wait0(float*) { emu::async_wait(0); }
// wgmma.mma_async m64n256k16 f32 += bf16 x bf16, both operands K-major in shared memory, 128-byte swizzle, decoded
// from the descriptors as the PTX ISA lays them out: start address >> 4 in bits 0-13, stride byte offset >> 4 in
// bits 32-45, layout type in 62-63 (1: 128-byte swizzle). Element (row, k) of an operand is at start + (row / 8) SBO
// + (row % 8) 128 + 2k, swizzled on the address (16-byte chunk bits 4-6 XOR row bits 7-9); thread (warp w of the
// warpgroup, lane g*4+q) owns rows 16w+g, 16w+g+8 and columns 8i+2q, +1 of every n8 block i: d[4i..4i+3].
// The product is computed when the thread waits on its group (emu::async_wait), not when it is issued.
static inline const bf16_t* s14_at(unsigned long long desc, int row, int k, const void* window) {
  if ((desc >> 62) != 1ull) { std::fprintf(stderr, "cuda_emu: s14 descriptor not 128-byte swizzled\n"); std::abort(); }
  const unsigned start = unsigned(desc & 0x3fffull) << 4, sbo = unsigned((desc >> 32) & 0x3fffull) << 4;
  unsigned x = start + unsigned(row / 8) * sbo + unsigned(row % 8) * 128u + unsigned(k) * 2u;
  x ^= ((x >> 7) & 7u) << 4;
  return reinterpret_cast<const bf16_t*>(static_cast<const char*>(window) + x);
}
static inline void s14_wgmma(float d[128], unsigned long long da, unsigned long long db, const void* window) {
  const int t = threadIdx.x % 128, w = t / 32, g = (t % 32) / 4, q = t % 4;
  emu::async_issue([=] {
    for (int i = 0; i < 32; ++i)
      for (int e = 0; e < 4; ++e) {
        const int m = 16 * w + g + (e >> 1) * 8, n = 8 * i + 2 * q + (e & 1);
        float acc = d[4 * i + e];
        for (int k = 0; k < 16; ++k)
          acc += emu::bf16_to_f32(*s14_at(da, m, k, window)) * emu::bf16_to_f32(*s14_at(db, n, k, window));
        d[4 * i + e] = acc;
      }
  });
}
static inline unsigned s14_pack_bf16(float lo, float hi) {
  return unsigned(emu::f32_to_bf16_rn(lo)) | (unsigned(emu::f32_to_bf16_rn(hi)) << 16);
}
static inline bf16_t s14_to_bf16(float x) { return emu::f32_to_bf16_rn(x); }
#else
// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, built on the host by cuTensorMapEncodeTiled and
// passed by value as a __grid_constant__ parameter (NVRTC has no cuda.h, so the type is spelled here).
struct __align__(64) S14TensorMap { unsigned long long opaque[16]; };
__device__ __forceinline__ unsigned s14_smem_addr(const void* p, const void*) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void s14_bar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(s14_smem_addr(bar, 0)), "r"(count) : "memory");
}
// The initialised barriers become visible to the async proxy (the TMA's complete_tx) and to the other threads.
__device__ __forceinline__ void s14_fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void s14_bar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(s14_smem_addr(bar, 0)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void s14_bar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(s14_smem_addr(bar, 0)) : "memory");
}
__device__ __forceinline__ void s14_bar_wait(unsigned long long* bar, unsigned parity) {
  const unsigned addr = s14_smem_addr(bar, 0);
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(addr), "r"(parity) : "memory");
  }
}
// One box of the tensor map at (c0: column = k, c1: row) into `dst`, completing its bytes on `bar`.
__device__ __forceinline__ void s14_tma_load(void* dst, const S14TensorMap& map, int c0, int c1,
                                             unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(s14_smem_addr(dst, 0)), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1),
        "r"(s14_smem_addr(bar, 0))
      : "memory");
}
__device__ __forceinline__ void s14_setmaxnreg_producer() { asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::); }
__device__ __forceinline__ void s14_setmaxnreg_consumer() { asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::); }
__device__ __forceinline__ void s14_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void s14_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// After a wait the accumulators may have changed under the compiler: say so, register by register.
__device__ __forceinline__ void s14_touch(float* d) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void s14_wgmma_wait1(float* d) {
  asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  s14_touch(d);
}
__device__ __forceinline__ void s14_wgmma_wait0(float* d) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  s14_touch(d);
}
__device__ __forceinline__ void s14_wgmma(float d[128], unsigned long long da, unsigned long long db, const void*) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db));
}
__device__ __forceinline__ unsigned s14_pack_bf16(float lo, float hi) {
  unsigned out;  // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half, b in the lower
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ bf16_t s14_to_bf16(float x) { return (bf16_t)(s14_pack_bf16(x, 0.0f) & 0xffffu); }
#endif

// A K-major operand's descriptor: start address, LBO unused under a swizzle whose width (128 B) covers the
// instruction's 32 bytes of K (encoded 1), SBO = 1,024 B between 8-row groups, layout type 1 (128-byte swizzle).
__device__ __forceinline__ unsigned long long s14_desc(unsigned smem_addr) {
  return (unsigned long long)((smem_addr & 0x3ffffu) >> 4) | (1ull << 16) |
         ((unsigned long long)(S14_SBO >> 4) << 32) | (1ull << 62);
}
static_assert(S14_SMEM_BYTES == 197696, "the registry's Launch.shmem (sgemm.S14_SMEM_BYTES) spells this number");

// Producer: one thread walks the k-tiles, waits for the stage's previous round to be released, announces the
// stage's bytes and issues its two boxes. Round 0 waits on parity 1: a fresh barrier's phase "-1" has completed.
__device__ __forceinline__ void s14_produce(S14Smem& sm, const S14TensorMap& tma_a, const S14TensorMap& tma_b,
                                            int brow, int bcol, int ntiles) {
  for (int kt = 0; kt < ntiles; ++kt) {
    const int s = kt % S14_STAGES;
    const unsigned round = unsigned(kt / S14_STAGES);
    s14_bar_wait(&sm.empty[s], (round & 1u) ^ 1u);
    s14_bar_expect_tx(&sm.full[s], S14_STAGE_TX);  // the whole boxes, zero-filled parts included
    s14_tma_load(sm.a[s], tma_a, kt * S14_BK, brow, &sm.full[s]);
    s14_tma_load(sm.b[s], tma_b, kt * S14_BK, bcol, &sm.full[s]);
  }
}

// Consumer warpgroup cw: rows [64 cw, 64 cw + 64) of the tile, all 256 columns, 4 k16 steps per k-tile. One group
// stays in flight: after committing k-tile kt, wait_group 1 retires kt - 1, whose stage each warp then releases.
__device__ __forceinline__ void s14_consume(S14Smem& sm, float d[128], int cw, int lane, int ntiles) {
  for (int kt = 0; kt < ntiles; ++kt) {
    const int s = kt % S14_STAGES;
    s14_bar_wait(&sm.full[s], unsigned(kt / S14_STAGES) & 1u);
    s14_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {  // +32 bytes per k16 step, inside the 128-byte swizzle width
      const unsigned long long da = s14_desc(s14_smem_addr(&sm.a[s][64 * cw * S14_BK + 16 * ks], &sm));
      const unsigned long long db = s14_desc(s14_smem_addr(&sm.b[s][16 * ks], &sm));
      s14_wgmma(d, da, db, &sm);
    }
    s14_wgmma_commit();
    s14_wgmma_wait1(d);
    if (kt > 0 && lane == 0) s14_bar_arrive(&sm.empty[(kt - 1) % S14_STAGES]);
  }
  s14_wgmma_wait0(d);
}

extern "C" __global__ void __launch_bounds__(S14_THREADS, 1)
sgemm_bf16_wgmma_tma(int M, int N, int K, const __grid_constant__ S14TensorMap tma_a,
                     const __grid_constant__ S14TensorMap tma_b, bf16_t* __restrict__ C) {
#ifdef CUDA_EMULATOR
  __shared__ __align__(1024) char s14_dyn[S14_SMEM_BYTES];
#else
  extern __shared__ __align__(1024) char s14_dyn[];
#endif
  const unsigned base = s14_smem_addr(s14_dyn, s14_dyn);  // round the window up to a 1,024-byte boundary
  S14Smem& sm = *reinterpret_cast<S14Smem*>(s14_dyn + (((base + 1023u) & ~1023u) - base));
  const int tid = threadIdx.x, wg = tid / 128;
  const int brow = blockIdx.y * S14_BM, bcol = blockIdx.x * S14_BN;
  const int ntiles = (K + S14_BK - 1) / S14_BK;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S14_STAGES; ++s) {
      s14_bar_init(&sm.full[s], 1);
      s14_bar_init(&sm.empty[s], S14_CONSUMER_WARPS);
    }
    s14_fence_barrier_init();
  }
  __syncthreads();  // the only block barrier: the mbarriers exist before anyone uses them
  if (wg == 0) {
    s14_setmaxnreg_producer();
    if (tid == 0) s14_produce(sm, tma_a, tma_b, brow, bcol, ntiles);
    return;
  }
  s14_setmaxnreg_consumer();
  const int cw = wg - 1, w = (tid % 128) / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  s14_consume(sm, d, cw, lane, ntiles);
#pragma unroll
  for (int i = 0; i < 32; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = brow + 64 * cw + 16 * w + g + 8 * h, c = bcol + 8 * i + 2 * q;
      const float v0 = d[4 * i + 2 * h], v1 = d[4 * i + 2 * h + 1];
      if (r < M && c + 1 < N && (N % 2) == 0) {
        *reinterpret_cast<unsigned*>(&C[(size_t)r * N + c]) = s14_pack_bf16(v0, v1);
      } else if (r < M) {
        if (c < N) C[(size_t)r * N + c] = s14_to_bf16(v0);
        if (c + 1 < N) C[(size_t)r * N + c + 1] = s14_to_bf16(v1);
      }
    }
}
