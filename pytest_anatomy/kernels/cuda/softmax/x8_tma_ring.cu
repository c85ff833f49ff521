/*
Softmax rung x8 · the vocabulary row through a ring of TMA bulk copies: two rows always in flight per SM.

What changes: rows of 2,048 columns or fewer keep x7's warp-row kernel (softmax/x7_pipelined.cu, unchanged).
Longer rows take softmax_cluster_ring. Why x6 (49.3 us, 72% of the read ceiling) and x7 (53.9 us, 66%) stop short,
by Little's law: the copy bandwidth (4.265 TB/s, median of 39 kernels-ceilings sessions) times a loaded DRAM
latency of ~1.5 us is 6.4 MB that must be in flight at every instant, 48 KB per SM on 132 SMs, 57 KB on 112. x6
issues 154 KB per SM at the start of each of its 4.27 rounds of 30 clusters (Nsight Compute: Max Active Clusters
30, 56% DRAM throughput) and then nothing while it reduces, exchanges (max, sum) over DSMEM and writes: its 3.16 TB/s
means 4.7 MB, 36 KB per SM, in flight on average. x7 loads the next row into registers, but `cur = nxt` at the end
of every row waits for all of it, so in flight falls from 77 KB per SM to 0 at every row boundary: its 2.89 TB/s
means 39 KB per SM on its 112 SMs, about half of the 77 KB peak. Neither is short of bytes per request; both stop
requesting for part of every row. x8 keeps requests outstanding across row boundaries: a persistent grid of x7's
G = SMs / 8 - 2 clusters of 8 blocks (one block per SM, cluster c doing rows c, c + G, ...), each block owning a
ring of up to 3 stages of dynamic shared memory (3 x 76,032 B = 228,096 B of the 227 KB opt-in at 152,064
columns; 2 stages at the longest rows held, 163,840 columns), each stage its slice of one row. One thread requests
a whole slice with one cp.async.bulk (the TMA engine, completion counted in bytes on the stage's mbarrier), the
first 3 rows at launch. Per row the block waits on the stage's mbarrier, copies the slice into registers (10
float4 per thread, x6's layout), and after one __syncthreads the same thread re-arms the stage with the slice 3
rows ahead, before the row is reduced, exchanged over DSMEM (one barrier.cluster, pairs double-buffered as x7's)
and written with evict-first stores from registers: 2 slices (152 KB per SM, 17 MB in all) stay in flight while a
row is worked on, never fewer than 1 (76 KB) once the ring is full. Rows not a multiple of 4 columns (no 16-byte
aligned slice for a bulk copy) are filled by each thread's own scalar loads, in the layout it reads back.
Predicted effect: H200, 8192 x 2048: 0.034 ms. x7's warp-row kernel unchanged: x5's median 33.65 us over 32
sessions (x7's one run 33.92 us), 93.5% of the copy bandwidth, 91% of the read ceiling on read + write bytes.
H200, 128 x 152,064: 0.040 ms. Byte ledger: 155.7 MB (one read, one write) at the median copy bandwidth
(4.265 TB/s) = 36.51 us, DRAM busy throughout, plus a head of one exposed DRAM round trip before the first slices
land (0.8 us, the latency x5's and x6's headers used) and a tail: 128 rows over 14 clusters leave 2 clusters a
tenth row whose loads landed long before but whose SM work is alone at the end, one row's work per SM: the slice
out of shared memory (76,032 B at 128 B/clk, 594 clk), 19,008 EX2 at 16 per clk (1,188 clk), 76 KB of stores at
64 B/clk (1,188 clk), two block reductions (~600 clk) and one cluster exchange (~1,000 clk): 4,570 clk = 2.31 us at
1.98 GHz; 36.51 + 0.8 + 2.31 = 39.62 us, 89.6% of the read ceiling (4.386 TB/s) on read + write bytes (target 85%).
In steady state a row's SM work (2.31 us) is under a round's DRAM time (14 rows, 17.0 MB: 4.0 us), so the SMs wait
on the ring, not the ring on the SMs. Risks: fewer than 14 one-block-per-SM clusters co-resident (x7's unconfirmed
risk; a late cluster does its rows after another: up to ~2x); the TMA path never run on this project's GPU with a
1D bulk copy. Written before any measurement of this rung.
Measured outcome: H200, kernels plan run of 2026-12-04T18:46:32Z (batch 20261204T184632Z, results/h200/kernels),
correct at every checked shape. 8,192 x 2,048: 0.0339 ms, 1.00x the prediction (x7's kernel, agrees); rung 0
0.0415 ms; 128 x 152,064: 0.0548 ms, 1.37x the prediction, 65% of the run's read ceiling (target 85%), slower than
x6 (~0.049 ms, 72%, still the best vocabulary rung) and within 2% of x7 (0.0539 ms), the same grid without the ring;
rung 0 0.0899 ms. The device's ptxas: 120 registers, no spill; the SASS holds the ring (2 UBLKCP). Keeping rows'
slices requested across row boundaries did not move the time, so bytes in flight per SM are not what holds the
14-cluster grid; candidates, both named before the run: the per-row SM work and cluster exchange (~5.5 us per row
against the 2.31 us priced) or fewer than 14 co-resident clusters; unconfirmed without Nsight Compute (finding
h200-tma-ring-vocab-no-faster-than-x7).
Seed: no such rung.
*/
// requires: sm_90 (thread-block clusters and TMA bulk copies, cp.async.bulk with mbarriers)
#ifndef INFINITY  // NVRTC has no math.h; nvcc and the CPU emulator do
#define INFINITY __int_as_float(0x7f800000)
#endif
#define X8_CLUSTER 8     // blocks per row (the portable cluster size)
#define X8_THREADS 512   // largest block; the launch sizes it to the slice as x6 (480 threads at 152,064 columns)
#define X8_SLOT4 10      // float4 per thread: 8 x 512 x 40 = 163,840 columns at most
#define X8_MAX_STAGES 3  // ring depth; the launch passes min(3, what 227 KB holds)
#define X8_MAX_SLICE (X8_THREADS * X8_SLOT4 * 4)  // floats in one stage at most (81,920 B)
#define X8_LOG2E 1.4426950408889634f

#ifdef CUDA_EMULATOR
// The emulator runs a cluster's 8 blocks in one fiber pool: each rank gets its own ring and barriers.
alignas(16) static float x8_emu_ring[X8_CLUSTER][X8_MAX_STAGES * X8_MAX_SLICE];
static unsigned long long x8_emu_full[X8_CLUSTER][X8_MAX_STAGES];
static inline float x8_ex2(float v) { return std::exp2(v); }
static inline float x8_ld1(const float* p) { return *p; }
static inline void x8_st4(float4* p, float4 v) { *p = v; }
static inline void x8_st1(float* p, float v) { *p = v; }
static inline unsigned x8_rank() { return emu_cluster_ctarank(); }
static inline void x8_cluster_sync() { emu_cluster_sync(); }
static inline void x8_cluster_sync_relaxed() { emu_cluster_sync(); }
static inline float x8_remote(float* p, unsigned rank) { return *emu::dsmem(p, int(rank)); }
static inline void x8_bar_init(unsigned long long* bar) { emu::mbar_init(bar, 1); }
static inline void x8_fence_init() {}
static inline void x8_bar_wait(unsigned long long* bar, unsigned parity) { emu::mbar_wait_parity(bar, parity); }
// The bulk copy completes at once here: expect the bytes, arrive, copy, complete them.
static inline void x8_bulk_load(float* dst, const float* src, unsigned bytes, unsigned long long* bar) {
  emu::mbar_expect_tx(bar, bytes);
  emu::mbar_arrive(bar);
  if (bytes == 0) return;
  std::memcpy(dst, src, bytes);
  emu::mbar_complete_tx(bar, bytes);
}
#else
__device__ __forceinline__ float x8_ex2(float v) {  // MUFU.EX2, as x5
  float out;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(out) : "f"(v));
  return out;
}
__device__ __forceinline__ float x8_ld1(const float* p) { return __ldcs(p); }
__device__ __forceinline__ void x8_st4(float4* p, float4 v) { __stcs(p, v); }  // evict-first: y is written once
__device__ __forceinline__ void x8_st1(float* p, float v) { __stcs(p, v); }
__device__ __forceinline__ unsigned x8_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void x8_cluster_sync() {  // release this block's shared writes, acquire everyone's
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void x8_cluster_sync_relaxed() {  // only the blocks' lifetimes are guarded
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
__device__ __forceinline__ float x8_remote(float* p, unsigned rank) {  // same shared offset in block `rank`
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
__device__ __forceinline__ unsigned x8_smem(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void x8_bar_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(x8_smem(bar)) : "memory");
}
// The initialised barriers become visible to the async proxy (the bulk copies' complete_tx).
__device__ __forceinline__ void x8_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void x8_bar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(x8_smem(bar)), "r"(parity) : "memory");
  }
}
// Arm `bar` for `bytes` and request them with one bulk copy global -> this block's shared memory (16-byte aligned
// addresses, a multiple of 16 bytes). The generic-proxy reads of the stage's previous row (ordered before this by
// the caller's __syncthreads) are ordered before the async proxy's writes by the proxy fence.
__device__ __forceinline__ void x8_bulk_load(float* dst, const float* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(x8_smem(bar)), "r"(bytes) : "memory");
  if (bytes == 0) return;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(x8_smem(dst)), "l"(src), "r"(bytes), "r"(x8_smem(bar)) : "memory");
}
#endif

// Online-softmax merge of (m, d) with (m2, d2); an empty part (d == 0, m = -inf) contributes nothing.
__device__ __forceinline__ void x8_merge(float& m, float& d, float m2, float d2) {
  const float mn = fmaxf(m, m2);
  const float a = (d == 0.0f) ? 0.0f : d * x8_ex2((m - mn) * X8_LOG2E);
  const float b = (d2 == 0.0f) ? 0.0f : d2 * x8_ex2((m2 - mn) * X8_LOG2E);
  m = mn;
  d = a + b;
}

// Request this block's slice [0, w) of a row (src: its first column) into the stage `buf`. Rows of a multiple of 4
// columns: thread 0's one bulk copy, counted on `bar`. Otherwise every thread loads the values it will read back
// (floats 4 (tid + i T) .. + 3), so program order alone makes them visible to it; `bar` is not used.
__device__ __forceinline__ void x8_fill(float* buf, const float* src, int w, bool vec, unsigned long long* bar,
                                        int tid, int T) {
  if (vec) {
    if (tid == 0) x8_bulk_load(buf, src, 4u * (unsigned)w, bar);
    return;
  }
#pragma unroll
  for (int i = 0; i < X8_SLOT4; ++i) {
    const int j = 4 * (tid + i * T);
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (j + q < w) buf[j + q] = x8_ld1(src + j + q);
  }
}

extern "C" __global__ void __cluster_dims__(X8_CLUSTER, 1, 1) __launch_bounds__(X8_THREADS, 1)
softmax_cluster_ring(const float* __restrict__ x, float* __restrict__ y, int M, int N, int stages) {
  __shared__ float wmax[X8_THREADS / 32], wsum[X8_THREADS / 32];
  __shared__ float part[4];  // this block's (m_b, d_b) for even rows [0, 1] and odd rows [2, 3]
#ifdef CUDA_EMULATOR
  EMU_BLOCK_SHARED(wmax);
  EMU_BLOCK_SHARED(wsum);
  EMU_BLOCK_SHARED(part);
  float* ring = x8_emu_ring[x8_rank()];
  unsigned long long* full = x8_emu_full[x8_rank()];
#else
  extern __shared__ __align__(128) float ring[];  // `stages` slices of S floats: the launch's dynamic window
  __shared__ __align__(8) unsigned long long full[X8_MAX_STAGES];
#endif
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  const int T = blockDim.x;
  const unsigned rank = x8_rank();
  const int G = gridDim.x / X8_CLUSTER;   // clusters in the grid
  const int c = blockIdx.x / X8_CLUSTER;  // this cluster: rows c, c + G, ...
  const int S = ((N + 31) / 32) * 4;      // slice width, a multiple of 4: every slice and stage 16-byte aligned
  const int c0 = (int)rank * S;
  const int w = (c0 + S < N) ? S : (N > c0 ? N - c0 : 0);  // this block's columns (0: a short row's empty slice)
  const bool vec = (N % 4) == 0;
  const int rows = (c < M) ? (M - 1 - c) / G + 1 : 0;  // uniform over the cluster
  if (tid == 0) {
    for (int s = 0; s < stages; ++s) x8_bar_init(&full[s]);
    x8_fence_init();
  }
  __syncthreads();
  for (int k = 0; k < stages && k < rows; ++k)  // the first rows' slices, all requested at once
    x8_fill(ring + k * S, x + (size_t)(c + k * G) * N + c0, w, vec, &full[k], tid, T);
  float v[4 * X8_SLOT4];
  for (int k = 0; k < rows; ++k) {
    const int s = k % stages, par = k & 1;
    float* buf = ring + s * S;
    if (vec) x8_bar_wait(&full[s], (unsigned)((k / stages) & 1));
#pragma unroll
    for (int i = 0; i < X8_SLOT4; ++i) {
      const int j = 4 * (tid + i * T);
      if (j + 3 < w) {
        const float4 q = *reinterpret_cast<const float4*>(buf + j);
        v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[4 * i + e] = (j + e < w) ? buf[j + e] : -INFINITY;
      }
    }
    __syncthreads();  // every thread holds its values: the stage may take the row `stages` ahead
    if (k + stages < rows) x8_fill(buf, x + (size_t)(c + (k + stages) * G) * N + c0, w, vec, &full[s], tid, T);
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < 4 * X8_SLOT4; ++i) m = fmaxf(m, v[i]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) wmax[warp] = m;
    __syncthreads();
    m = -INFINITY;
    for (int q = 0; q < nwarps; ++q) m = fmaxf(m, wmax[q]);
    const float mb = (m == -INFINITY) ? 0.0f : m * X8_LOG2E;  // an empty slice: no 2^(-inf - -inf)
    float d = 0.0f;
#pragma unroll
    for (int i = 0; i < 4 * X8_SLOT4; ++i) {
      v[i] = x8_ex2(fmaf(v[i], X8_LOG2E, -mb));  // padding: 2^-inf = 0
      d += v[i];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
    if (lane == 0) wsum[warp] = d;
    __syncthreads();  // also: every thread has read wmax before the next row writes it
    if (tid == 0) {
      float db = 0.0f;
      for (int q = 0; q < nwarps; ++q) db += wsum[q];
      part[2 * par] = m;
      part[2 * par + 1] = db;
    }
    x8_cluster_sync();  // every block's pair for this row is visible cluster-wide
    float pm = -INFINITY, pd = 0.0f;
    if (lane < X8_CLUSTER) {
      pm = x8_remote(&part[2 * par], (unsigned)lane);
      pd = x8_remote(&part[2 * par + 1], (unsigned)lane);
    }
#pragma unroll
    for (int off = 4; off > 0; off >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, pm, off), d2 = __shfl_xor_sync(0xffffffffu, pd, off);
      x8_merge(pm, pd, m2, d2);
    }
    const float rowm = __shfl_sync(0xffffffffu, pm, 0), rowd = __shfl_sync(0xffffffffu, pd, 0);
    const float scale = (m == -INFINITY) ? 0.0f : x8_ex2((m - rowm) * X8_LOG2E) / rowd;
    float* out = y + (size_t)(c + k * G) * N + c0;
#pragma unroll
    for (int i = 0; i < X8_SLOT4; ++i) {
      const int j = 4 * (tid + i * T);
      if (vec && j + 3 < w) {
        x8_st4(reinterpret_cast<float4*>(out + j), make_float4(v[4 * i] * scale, v[4 * i + 1] * scale,
                                                               v[4 * i + 2] * scale, v[4 * i + 3] * scale));
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (j + e < w) x8_st1(out + j + e, v[4 * i + e] * scale);
      }
    }
  }
  x8_cluster_sync_relaxed();  // no block leaves (freeing its pairs) while another may still read them
}
