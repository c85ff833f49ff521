/*
Softmax rung x10 · every SM a 1,152-column tile of every row: a persistent cooperative grid, (max, sum) through L2.

What changes: rows of 2,048 columns or fewer keep x7's warp-row kernel (softmax/x7_pipelined.cu, unchanged).
Longer rows take softmax_grid_tiles (softmax_grid_tiles_scalar where N % 4 != 0): a row is cut into T = ceil(N /
1,152) tiles of 1,152 columns (32 lanes x 9 float4), and the M x T tiles are dealt to the warps of a persistent grid
of G blocks of 16 warps, one block per SM (G = the SM count; launched cooperatively, so every block is resident or
the launch is refused), tile q to warp q mod 16G, block q mod G: at 152,064 columns T = 132, the H200's SM count, so
SM t holds tile t of every row and warp w of every SM takes rows w, w + 16, ..., 8 tiles each. A warp holds two tiles
in registers (36 floats per lane each). Per tile: warp max and sum of 2^(x log2e - m log2e) by shuffles (no block
barrier anywhere); lane 0 stores the tile's (m, d) in a workspace and counts it on the row's counter
(atom.release.gpu.inc); the warp then issues its previous tile's stores and its next tile's loads, polls the counter
(ld.acquire.gpu) until the row's T pairs are in, reads them (three 16-byte loads of 2 pairs per lane, issued
together: 192 pairs per round trip), merges them online, and keeps the scale e 2^((m - M) log2e) / D for the stores
it issues after publishing its next tile, so the release's fence (MEMBAR.ALL.GPU) finds no load and no recent store
of the warp in flight. Why: x9's counters (Nsight Compute, 2026-12-04 20:38) put the vocabulary row's loss in waves:
62 clusters of 4 co-reside (not 66), 128 rows take 3 waves, and each wave costs a fixed ~1.4 us plus SM work (EX2,
shared passes) that cannot overlap DRAM, because every block of a wave loads, then reduces, then writes. x10 has no
waves: every SM moves exactly 1/132 of the bytes (152,064 = 132 x 1,152), its 16 warps are at different points of
their tiles, so one warp's exponentials, exchange and stores run while the other warps' loads are in flight, and no
cluster placement decides how many SMs work. On chip at once: at most 32 rows' tiles (16 warps x 2 x 4.6 KB = 147 KB
of registers per SM, 19.5 MB in all) of the 128, each row from its load until its (max, sum) is known, as one DRAM
pass needs. Deadlock-free: a warp's tiles rise in row and no warp holds two tiles of one row (T <= 16G: G = max(SMs,
ceil(T / 16))), so the lowest unfinished row's tiles are all published; a grid that cannot be co-resident is refused
by the cooperative launch, not left to hang. The row counters cycle through T x 65,536 values (atom.inc's wrap): a
launch adds T to each and waits for the multiple of T above the value its own increment returned, so a workspace
zeroed once (Variant.workspace_zeroed) serves every later launch, with no reset and no second kernel.
Predicted effect: H200, 8192 x 2048: 0.034 ms. x7's warp-row kernel unchanged: x5's median 33.65 us (32 sessions;
x7, x8 and x9 ran it at 0.0339 ms). H200, 128 x 152,064: 0.041 ms. Named inputs (recordings up to
20261204T203849): the byte ledger, 155.7 MB (one read, one write) at the median copy bandwidth (4.265 TB/s, 42
kernels-ceilings sessions) = 36.51 us; x9's per-wave model (a fixed cost F per wave + the wave's SM work at 16 EX2
and 128 shared bytes per clk per SM, 1.98 GHz), whose exposure x10 pays once, at its head and tail: F = 1.52 us,
fitted by least squares on x6 (median 49.34 us, 30 sessions, 5 waves, 1.20 us of SM work each) and x9 (53.17 us, one
session, held in: 3 waves at the 62 clusters Nsight Compute counted, 3.59 us of SM work each; x6 alone gives 1.37
us, x9 alone 1.97 us); the last tile generation's SM work, 16 warps x 1,152 EX2 per SM = 1,152 clk = 0.58 us; the L2
exchange that replaces x6's DSMEM one, 3 round trips (the counting atomic, the poll that sees the row complete, the
pairs' read), each at the 0.8 us DRAM round trip x5's to x7's headers used (an L2 hit is no slower) = 2.40 us:
36.51 + 1.52 + 0.58 + 2.40 = 41.01 us = 86.6% of the read ceiling (4.386 TB/s, 42 sessions) on read + write bytes
(target 85%: 41.77 us). Between head and tail nothing is exposed: a warp's 8 tiles have 36.51 / 8 = 4.56 us of DRAM
time each, and a tile's chain (0.58 us of SM work + 3 round trips) is 2.98 us, its next tile's loads in flight
through it. Alternative outcomes, pre-registered: (a) the SMs pace as x7's did (a persistent grid of one 480-thread
block per SM with the next row's loads in registers: its busiest SMs moved 10 rows x 152,064 B in 53.87 us, 28.2
GB/s each): 1,179,648 B per SM at 28.2 GB/s = 41.79 us, 84.95%, the target missed by 0.02 us (at x8's pace, 27.7
GB/s: 42.54 us); (b) the exchange sets the pace: if an L2 round trip under this load exceeds 1.33 us, a tile's chain
passes the 4.56 us a warp has per tile and the time is 8 chains + F (at 2 us per round trip: 8 x 6.58 + 1.52 = 54.2
us, slower than x6); (c) fewer than G blocks co-resident: the cooperative launch is refused, an error, no time. The
headline and (a) are 0.8 us apart on either side of the target: these numbers do not say which is likelier.
Written before any measurement of this rung.
Measured outcome: H200, kernels batch 20261205T025617Z (2026-12-05 02:56), correct at every odd shape (the
cooperative launches in a child process first); 8,192 x 2,048: 0.0344 ms, 1.01x the prediction (0.034); rung 0 0.0410
ms; that call stopped making progress after the timing shapes and was killed at its 420 s limit, the vocabulary row
untimed. Kernels batch 20261205T035220Z (03:52), after a probe in a separate process a minute before (x10_probe.log:
repeat launches on one workspace, the row counters k x 132 after k launches, the outputs correct, so the 02:56 stall
is not reproduced and its cause is not established): 8,192 x 2,048: 0.0342 ms; 128 x 152,064: 0.0751 ms (second block
0.0746), 1.83x the prediction, 47% of the read ceiling, outside every outcome written above (the headline, (a), (b)'s
54.2 us at 2 us per round trip, (c)); x6 beside it 0.0490 ms, torch 0.0896 ms (rung 0); the probe's own x10 medians
0.0746 and 0.0761 ms. Nsight Compute (03:54, same card): DRAM at 35.6% of peak, issue slots 16% busy, 64.7% of a
warp's cycles waiting on global loads (the polls and the pairs): form (b), larger than its example, because row r is
held by warp r mod 16 of every SM and each of a warp's 8 rows waits for the slowest of 132 SMs; in (b)'s form the
time implies ~9.2 us per tile, ~2.9 us per round trip. Finding h200-grid-tiles-rows-wait-for-the-slowest-sm
(tests_kernels/kernel_s18_x10_findings.py). x6 stays the best rung at the vocabulary row.
Seed: no such rung.
*/
#ifndef INFINITY  // NVRTC has no math.h; nvcc and the CPU emulator do
#define INFINITY __int_as_float(0x7f800000)
#endif
#define X10_WARPS 16                  // warps per block, one block per SM
#define X10_PER4 9                    // float4 per lane per tile
#define X10_TILE (32 * 4 * X10_PER4)  // 1,152 columns per tile
#define X10_PAIRS4 3                  // 16-byte pair loads per lane per round trip: 192 pairs
#define X10_WRAP 65536u               // a row counter cycles through T x 65,536 values
#define X10_LOG2E 1.4426950408889634f

#ifdef CUDA_EMULATOR
// The emulator runs a cooperative grid's blocks in one fiber pool; a spin hands the CPU to the others.
static inline float x10_ex2(float v) { return std::exp2(v); }
static inline float4 x10_ld4(const float4* p) { return *p; }
static inline float x10_ld1(const float* p) { return *p; }
static inline void x10_st4(float4* p, float4 v) { *p = v; }
static inline void x10_st1(float* p, float v) { *p = v; }
static inline unsigned x10_publish(float* slot, float m, float d, unsigned* count, unsigned lim) {
  slot[0] = m;
  slot[1] = d;
  return atomicInc(count, lim);
}
static inline void x10_wait(const unsigned* count, unsigned target) {
  emu_spin_until([=] { return *static_cast<const volatile unsigned*>(count) == target; });
}
static inline float4 x10_pairs(const float4* p) { return *p; }
#else
__device__ __forceinline__ float x10_ex2(float v) {  // MUFU.EX2, as x5
  float out;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(out) : "f"(v));
  return out;
}
__device__ __forceinline__ float4 x10_ld4(const float4* p) { return __ldcs(p); }  // x is read once
__device__ __forceinline__ float x10_ld1(const float* p) { return __ldcs(p); }
__device__ __forceinline__ void x10_st4(float4* p, float4 v) { __stcs(p, v); }    // y is written once
__device__ __forceinline__ void x10_st1(float* p, float v) { __stcs(p, v); }
// The tile's (m, d) into its slot, then counted on its row's counter with release semantics (the slot is visible
// GPU-wide before the count is); returns the counter's value before this increment.
__device__ __forceinline__ unsigned x10_publish(float* slot, float m, float d, unsigned* count, unsigned lim) {
  unsigned old;
  asm volatile("st.relaxed.gpu.global.v2.f32 [%0], {%1, %2};\n" ::"l"(slot), "f"(m), "f"(d) : "memory");
  asm volatile("atom.release.gpu.global.inc.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(count), "r"(lim) : "memory");
  return old;
}
// Poll the row's counter until this launch's T pairs are counted; acquire: the pairs read after it are current.
__device__ __forceinline__ void x10_wait(const unsigned* count, unsigned target) {
  unsigned v;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(count) : "memory");
  } while (v != target);
}
__device__ __forceinline__ float4 x10_pairs(const float4* p) {  // two (m, d) pairs, read at L2 (GPU scope)
  float4 v;
  asm volatile("ld.relaxed.gpu.global.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
  return v;
}
#endif

// Online-softmax merge of (m, d) with (m2, d2); an empty part (d == 0: padding, a slot read past the row) contributes
// nothing, its m included (a stale max above the row's would scale d toward underflow).
__device__ __forceinline__ void x10_merge(float& m, float& d, float m2, float d2) {
  m2 = (d2 == 0.0f) ? -INFINITY : m2;
  const float mn = fmaxf(m, m2);
  const float a = (d == 0.0f) ? 0.0f : d * x10_ex2((m - mn) * X10_LOG2E);
  const float b = (d2 == 0.0f) ? 0.0f : d2 * x10_ex2((m2 - mn) * X10_LOG2E);
  m = mn;
  d = a + b;
}

// Tile q (row q / T, columns from (q % T) x 1,152) into this lane's 36 values, -inf past the row's end. float4 path:
// v[4i + e] is column 4 (lane + 32 i) + e; scalar path (N % 4 != 0, rows not 16-byte aligned): v[k] is lane + 32 k.
__device__ __forceinline__ void x10_load(float* v, const float* x, int q, int T, int N, int lane, bool vec) {
  const int r = q / T, c0 = (q - r * T) * X10_TILE;
  const int n = (N - c0 < X10_TILE) ? N - c0 : X10_TILE;
  const float* src = x + (size_t)r * N + c0;
  if (vec) {
#pragma unroll
    for (int i = 0; i < X10_PER4; ++i) {
      const int j = lane + 32 * i;
      const float4 f = (4 * j < n) ? x10_ld4(reinterpret_cast<const float4*>(src) + j)
                                   : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      v[4 * i] = f.x; v[4 * i + 1] = f.y; v[4 * i + 2] = f.z; v[4 * i + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < 4 * X10_PER4; ++k) v[k] = (32 * k < n - lane) ? x10_ld1(src + lane + 32 * k) : -INFINITY;
  }
}

// The row's T pairs merged: lanes read pairs (2i, 2i + 1) as one float4, 3 per lane per round trip, then 5 xor
// shuffles leave the row's (M, D) in every lane. Pairs sit at a row stride of TP = T rounded up to even.
__device__ __forceinline__ void x10_row_stats(const float* part, int r, int T, int lane, float& pm, float& pd) {
  const int TP = (T + 1) & ~1;
  const float4* pairs = reinterpret_cast<const float4*>(part + 2 * (size_t)r * TP);
  pm = -INFINITY;
  pd = 0.0f;
  for (int i0 = 0; 2 * i0 < T; i0 += 32 * X10_PAIRS4) {
    const int last = TP / 2 - 1;  // a slot past the row reads the row's last (its pairs are dropped below)
    const int i = i0 + lane;
    float4 p[X10_PAIRS4];  // all loaded before the first merge: one round trip (test_kernels_x10 reads the SASS)
#pragma unroll
    for (int u = 0; u < X10_PAIRS4; ++u) p[u] = x10_pairs(pairs + (i + 32 * u < last ? i + 32 * u : last));
#pragma unroll
    for (int u = 0; u < X10_PAIRS4; ++u) {
      x10_merge(pm, pd, p[u].x, (2 * (i + 32 * u) < T) ? p[u].y : 0.0f);
      x10_merge(pm, pd, p[u].z, (2 * (i + 32 * u) + 1 < T) ? p[u].w : 0.0f);  // an odd T's last slot is padding
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, pm, off), d2 = __shfl_xor_sync(0xffffffffu, pd, off);
    x10_merge(pm, pd, m2, d2);
  }
}

// Tile q's (max, sum of 2^(x log2e - max log2e)) by warp shuffles, the exponentials left in v, the pair published
// and counted; returns, in lane 0, the row's count before this increment (m: the tile's max).
__device__ __forceinline__ unsigned x10_publish_tile(float* v, float* part, unsigned* count, int q, int T, int lane,
                                                     float& m) {
  const int r = q / T, t = q - r * T;
  m = -INFINITY;
#pragma unroll
  for (int k = 0; k < 4 * X10_PER4; ++k) m = fmaxf(m, v[k]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  const float mb = m * X10_LOG2E;  // finite: a tile holds at least one column
  float d = 0.0f;
#pragma unroll
  for (int k = 0; k < 4 * X10_PER4; ++k) {
    v[k] = x10_ex2(fmaf(v[k], X10_LOG2E, -mb));  // padding: 2^-inf = 0
    d += v[k];
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
  unsigned old = 0u;
  if (lane == 0) old = x10_publish(part + 2 * ((size_t)r * ((T + 1) & ~1) + t), m, d, count + r, T * X10_WRAP - 1u);
  return old;
}

// Tile q's scale once its row's pairs are in, 2^((m - M) log2e) / D. `old`: lane 0's count before its increment, read
// here and not at the publish, so that the stores and loads issued between the two do not wait for the atomic.
__device__ __forceinline__ float x10_scale(const float* part, const unsigned* count, int q, int T, int lane, float m,
                                           unsigned old) {
  const int r = q / T;
  const unsigned uT = (unsigned)T;
  old = __shfl_sync(0xffffffffu, old, 0);
  const unsigned base = old - old % uT;  // this launch's T increments of the row start here
  x10_wait(count + r, (base + uT == uT * X10_WRAP) ? 0u : base + uT);
  float rowm, rowd;
  x10_row_stats(part, r, T, lane, rowm, rowd);
  return x10_ex2((m - rowm) * X10_LOG2E) / rowd;
}

// Tile q's exponentials in v, scaled, into y (evict-first); nothing past the row's end.
__device__ __forceinline__ void x10_store(const float* v, float* y, int q, int T, int N, int lane, bool vec,
                                          float scale) {
  const int r = q / T, c0 = (q - r * T) * X10_TILE;
  const int n = (N - c0 < X10_TILE) ? N - c0 : X10_TILE;
  float* dst = y + (size_t)r * N + c0;
  if (vec) {
#pragma unroll
    for (int i = 0; i < X10_PER4; ++i) {
      const int j = lane + 32 * i;
      if (4 * j < n)
        x10_st4(reinterpret_cast<float4*>(dst) + j,
                make_float4(v[4 * i] * scale, v[4 * i + 1] * scale, v[4 * i + 2] * scale, v[4 * i + 3] * scale));
    }
  } else {
#pragma unroll
    for (int k = 0; k < 4 * X10_PER4; ++k)
      if (32 * k < n - lane) x10_st1(dst + lane + 32 * k, v[k] * scale);
  }
}

// Per warp, tiles q, q + S, q + 2S, ... (S = 16G) through two register sets. A tile is published before anything else
// is issued after its loads landed, and its stores wait until the next tile is published: the release's fence
// (MEMBAR.ALL.GPU) then finds no load and no recent store of the warp in flight. The next tile's loads are issued
// right after the publish, in flight through the poll, the pairs' read and the merge. VEC: rows of a multiple of 4
// columns (float4 loads and stores). Each path is its own kernel: with both in one, NVRTC 13.0.88 took 128 registers
// and issued the three pair loads a round trip apart (each waited on by the merge before the next was issued).
template <bool VEC>
__device__ __forceinline__ void x10_tiles(const float* x, float* y, float* part, unsigned* count, int M, int N) {
  const int lane = threadIdx.x & 31;
  const int G = gridDim.x, stride = G * (blockDim.x >> 5);
  const int T = (N + X10_TILE - 1) / X10_TILE, total = M * T;
  int qa = (threadIdx.x >> 5) * G + blockIdx.x;  // consecutive tiles of a row on consecutive blocks
  if (qa >= total) return;                       // a whole warp; there is no block barrier
  float a[4 * X10_PER4], b[4 * X10_PER4];
  x10_load(a, x, qa, T, N, lane, VEC);
  int qb = -1;  // b's tile, exponentials awaiting their stores; -1: none yet
  float ma, mb, sa, sb = 0.0f;
  for (;;) {
    const unsigned olda = x10_publish_tile(a, part, count, qa, T, lane, ma);
    if (qb >= 0) x10_store(b, y, qb, T, N, lane, VEC, sb);
    qb = qa + stride;
    if (qb < total) x10_load(b, x, qb, T, N, lane, VEC);
    sa = x10_scale(part, count, qa, T, lane, ma, olda);
    if (qb >= total) {
      x10_store(a, y, qa, T, N, lane, VEC, sa);
      break;
    }
    const unsigned oldb = x10_publish_tile(b, part, count, qb, T, lane, mb);
    x10_store(a, y, qa, T, N, lane, VEC, sa);
    qa = qb + stride;
    if (qa < total) x10_load(a, x, qa, T, N, lane, VEC);
    sb = x10_scale(part, count, qb, T, lane, mb, oldb);
    if (qa >= total) {
      x10_store(b, y, qb, T, N, lane, VEC, sb);
      break;
    }
  }
}

// Rows of a multiple of 4 columns (16-byte aligned rows and tiles), the vocabulary row among them.
extern "C" __global__ void __launch_bounds__(X10_WARPS * 32, 1)
softmax_grid_tiles(const float* __restrict__ x, float* __restrict__ y, float* __restrict__ part,
                   unsigned* __restrict__ count, int M, int N) {
  x10_tiles<true>(x, y, part, count, M, N);
}

// Other rows: 32-bit loads and stores.
extern "C" __global__ void __launch_bounds__(X10_WARPS * 32, 1)
softmax_grid_tiles_scalar(const float* __restrict__ x, float* __restrict__ y, float* __restrict__ part,
                          unsigned* __restrict__ count, int M, int N) {
  x10_tiles<false>(x, y, part, count, M, N);
}
