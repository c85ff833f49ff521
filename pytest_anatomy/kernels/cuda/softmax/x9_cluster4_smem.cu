/*
Softmax rung x9 · x6 with half of each slice in shared memory: a row per 4-block cluster, all 128 rows in 2 waves.

What changes: rows of 2,048 columns or fewer keep x7's warp-row kernel (softmax/x7_pipelined.cu, unchanged).
Longer rows take softmax_cluster4_smem, which is x6 (a row held on chip between its one read and its one write,
(max, sum) merged over DSMEM) with twice the row data per block: each thread holds x6's 10 float4 in registers
and 10 more in dynamic shared memory (at a pitch of 11 float4, so 8 threads' 128-bit accesses cover the 32 banks:
176 B per thread, 84,480 B at 480 threads), requested first with
cp.async.cg (no registers held while in flight) and then the register half with plain 128-bit loads, so a block
has its whole 152 KB slice requested before it reduces anything. A row is then 4 blocks (__cluster_dims__(4)), slice
S = 4 ceil(N / 16) columns, 480 threads at 152,064 columns, still 2 blocks per SM (64 registers, 2 x 85 KB of
shared memory). Why: x6's time is its waves. x6 fits 30 clusters of 8 at once (Nsight Compute, Max Active Clusters
30, not 33: GPCs of 14 or 18 SMs leave 2 SMs without a cluster), so 128 rows take 5 waves, the last 8 rows on 32
SMs, and each wave exposes a DRAM round trip and the cluster exchange. A 4-block cluster at 2 blocks per SM spans 2
SMs; GPCs are whole TPCs (2 SMs each), so every GPC holds S_gpc / 2 of them: 66 on 132 SMs, more than half of 128
rows, and the rows take 2 waves (66, then 62) with every SM busy in the first and 124 in the second.
Predicted effect: H200, 8192 x 2048: 0.034 ms. x7's warp-row kernel unchanged: x5's median 33.65 us (32 sessions;
x7 and x8 ran it at 0.0339 ms). H200, 128 x 152,064: 0.042 ms. Named inputs: the byte ledger, 155.7 MB (one
read, one write) at the median copy bandwidth (4.265 TB/s, 40 kernels-ceilings sessions) = 36.51 us; x6's
exposure per wave, fitted on x6 itself: its median 49.34 us (29 sessions) less the same 36.51 us, over its 5
waves (128 rows / 30 clusters) = 2.57 us per wave; x9 at 2 waves: 36.51 + 2 x 2.57 = 41.64 us = 85.3% of the read
ceiling (4.386 TB/s) on read + write bytes, just over the target (85%: 41.8 us). Alternative outcome, pre-registered:
if fewer than 64 clusters of 4 are co-resident (a GPC with an odd SM count, the shared memory window or the
cluster scheduler holding fewer than 2 blocks per SM), the rows left for a third wave run alone on 2 SMs each, at
x6's per-SM pace (3.156 TB/s on its 120 SMs = 26.3 GB/s per SM: a 1.216 MB row on 2 SMs, 23.1 us), ~0.065 ms,
slower than x6. Second alternative, pre-registered, with 2 waves: x6's 2.57 us per wave is not all fixed latency.
Its MUFU work per SM per wave (2 blocks x 19,008 EX2 at 16 per clk = 2,376 clk, 1.20 us at 1.98 GHz) cannot start
before the block's last bytes land, so it is exposed and scales with the bytes an SM holds; the rest, 1.37 us, is
fixed per wave. x9's SM work per wave: 76,032 EX2 (4,752 clk; the exponentials' shared-memory reads and writes, 2,352
clk at 128 B/clk, run beside them) plus the shared half's max pass and store pass (2 x 150,528 B per SM, 2 x 1,176
clk): 7,104 clk = 3.59 us; 36.51 + 2 x (1.37 + 3.59) = 46.42 us, ~0.046 ms (76.5%: target missed, still 3 us under
x6). I think this one the likelier; 0.042 is what the ladder's per-wave method gives.
Written before any measurement of this rung.
Measured outcome: H200, kernels plan run of 2026-12-04T20:22:16Z (batch 20261204T202216Z, results/h200/kernels),
correct at every checked shape. 8,192 x 2,048: 0.0339 ms, 1.00x the prediction (x7's kernel, agrees); rung 0
0.0409 ms; 128 x 152,064: 0.0532 ms, 1.27x the prediction, 66.8% of the run's read ceiling (target 85%), slower
than x6 beside it (0.0491 ms, 72%, still the best vocabulary rung); rung 0 0.0896 ms. Why, from Nsight Compute
(ncu.softmax.x9-cluster4-smem.128x152064@20261204T203849Z, same card): Max Active Clusters 62, not the 66 counted
above, so the rows take 3 waves (62, 62, 4): the co-residency alternative, at less than the +23.1 us it priced
(+11.5 us over the headline). The second alternative's per-wave cost (1.37 + 3.59 us) at 3 waves gives 51.39 us,
3% under the measured; the headline's fixed 2.57 us per wave gives 44.22 us. Finding
h200-cluster4-smem-62-clusters-three-waves.
Seed: no such rung.
*/
// requires: sm_90 (thread-block clusters: __cluster_dims__, distributed shared memory)
#ifndef INFINITY  // NVRTC has no math.h; nvcc and the CPU emulator do
#define INFINITY __int_as_float(0x7f800000)
#endif
#define X9_CLUSTER 4    // blocks per row
#define X9_THREADS 512  // largest block; the launch sizes it to the slice (480 threads at 152,064 columns)
#define X9_REG4 10      // float4 per thread in registers (x6's)
#define X9_SMEM4 10     // float4 per thread in dynamic shared memory: 4 x 512 x 80 = 163,840 columns at most
#define X9_PITCH4 11    // a thread's shared slots are 11 float4 apart: 8 threads' 128-bit accesses hit 32 banks
#define X9_LOG2E 1.4426950408889634f

#ifdef CUDA_EMULATOR
// The emulator runs a cluster's blocks in one fiber pool: each rank gets its own window.
alignas(16) static float4 x9_emu_held[X9_CLUSTER][X9_THREADS * X9_PITCH4];
static inline float x9_ex2(float v) { return std::exp2(v); }
static inline float4 x9_ld4(const float4* p) { return *p; }
static inline void x9_st4(float4* p, float4 v) { *p = v; }
static inline void x9_cp16(float4* dst, const float4* src) { *dst = *src; }
static inline void x9_cp_wait() {}
static inline unsigned x9_rank() { return emu_cluster_ctarank(); }
static inline void x9_cluster_sync() { emu_cluster_sync(); }
static inline void x9_cluster_sync_relaxed() { emu_cluster_sync(); }
static inline float x9_remote(float* p, unsigned rank) { return *emu::dsmem(p, int(rank)); }
#else
__device__ __forceinline__ float x9_ex2(float v) {  // MUFU.EX2, as x5
  float out;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(out) : "f"(v));
  return out;
}
__device__ __forceinline__ float4 x9_ld4(const float4* p) { return __ldcs(p); }    // x is read once
__device__ __forceinline__ void x9_st4(float4* p, float4 v) { __stcs(p, v); }      // y is written once
// 16 bytes global -> this block's shared memory, bypassing L1, no register held while in flight.
__device__ __forceinline__ void x9_cp16(float4* dst, const float4* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
// This thread's copies have landed and are visible to it (each thread reads back only its own).
__device__ __forceinline__ void x9_cp_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
__device__ __forceinline__ unsigned x9_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void x9_cluster_sync() {  // release this block's shared writes, acquire everyone's
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void x9_cluster_sync_relaxed() {  // only the blocks' lifetimes are guarded
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
__device__ __forceinline__ float x9_remote(float* p, unsigned rank) {  // same shared offset in block `rank`
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
#endif

// Online-softmax merge of (m, d) with (m2, d2); an empty part (d == 0, m = -inf) contributes nothing.
__device__ __forceinline__ void x9_merge(float& m, float& d, float m2, float d2) {
  const float mn = fmaxf(m, m2);
  const float a = (d == 0.0f) ? 0.0f : d * x9_ex2((m - mn) * X9_LOG2E);
  const float b = (d2 == 0.0f) ? 0.0f : d2 * x9_ex2((m2 - mn) * X9_LOG2E);
  m = mn;
  d = a + b;
}

// The 4 values of slot `j` (float4 index in the slice [c0, c1)); -inf past the slice. vec: one 16-byte load.
__device__ __forceinline__ float4 x9_slot(const float* row, int c0, int c1, int j, bool vec) {
  const float4 pad = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
  if (vec) return (4 * j < c1 - c0) ? x9_ld4(reinterpret_cast<const float4*>(row + c0) + j) : pad;
  const int c = c0 + 4 * j;
  return make_float4(c < c1 ? row[c] : -INFINITY, c + 1 < c1 ? row[c + 1] : -INFINITY,
                     c + 2 < c1 ? row[c + 2] : -INFINITY, c + 3 < c1 ? row[c + 3] : -INFINITY);
}

// Slot j of the slice scaled into y (evict-first); nothing past the slice's end.
__device__ __forceinline__ void x9_put(float* out, int c0, int c1, int j, float4 e, float scale, bool vec) {
  const int c = c0 + 4 * j;
  if (c >= c1) return;
  const float4 q = make_float4(e.x * scale, e.y * scale, e.z * scale, e.w * scale);
  if (vec) {
    x9_st4(reinterpret_cast<float4*>(out + c), q);
    return;
  }
  out[c] = q.x;
  if (c + 1 < c1) out[c + 1] = q.y;
  if (c + 2 < c1) out[c + 2] = q.z;
  if (c + 3 < c1) out[c + 3] = q.w;
}

extern "C" __global__ void __cluster_dims__(X9_CLUSTER, 1, 1) __launch_bounds__(X9_THREADS, 2)
softmax_cluster4_smem(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ float wmax[X9_THREADS / 32], wsum[X9_THREADS / 32];
  __shared__ float part[2];  // this block's (m_b, d_b): read by the cluster's other blocks
#ifdef CUDA_EMULATOR
  EMU_BLOCK_SHARED(wmax);
  EMU_BLOCK_SHARED(wsum);
  EMU_BLOCK_SHARED(part);
  float4* held = x9_emu_held[x9_rank()];
#else
  extern __shared__ __align__(16) float4 held[];  // thread t's slot i at held[11 t + i]: the launch's 176 T bytes
#endif
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  const int T = blockDim.x;
  const unsigned rank = x9_rank();
  const int r = blockIdx.x / X9_CLUSTER;  // the grid is M x 4 blocks: every cluster has a row
  const int S = ((N + 15) / 16) * 4;      // slice width: a multiple of 4 so every slice starts 16-byte aligned
  const int c0 = (int)rank * S;
  const int c1 = (c0 + S < N) ? c0 + S : (N > c0 ? N : c0);  // an empty slice (short rows) when c0 >= N
  const float* row = x + (size_t)r * N;
  float* out = y + (size_t)r * N;
  const bool vec = (N % 4) == 0;  // uniform: rows (and so slices) 16-byte aligned
  const int n4 = (c1 - c0 + 3) / 4;
  float4* mine = held + tid * X9_PITCH4;  // this thread's 10 shared slots, at immediate offsets from one address
  // The shared half first (slots 10..19: float4 j = t + (10 + i) T): in flight without registers.
#pragma unroll
  for (int i = 0; i < X9_SMEM4; ++i) {
    const int j = tid + (X9_REG4 + i) * T;
    if (vec && j < n4) x9_cp16(&mine[i], reinterpret_cast<const float4*>(row + c0) + j);
    else if (vec) mine[i] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);  // past the slice
    else mine[i] = x9_slot(row, c0, c1, j, false);
  }
  float v[4 * X9_REG4];
#pragma unroll
  for (int i = 0; i < X9_REG4; ++i) {
    const float4 q = x9_slot(row, c0, c1, tid + i * T, vec);
    v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
  }
  // Block max: the register half, then (once this thread's copies landed) the shared half, 5 shuffles, the warps.
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < 4 * X9_REG4; ++i) m = fmaxf(m, v[i]);
  x9_cp_wait();
#pragma unroll
  for (int i = 0; i < X9_SMEM4; ++i) {
    const float4 q = mine[i];
    m = fmaxf(fmaxf(m, fmaxf(q.x, q.y)), fmaxf(q.z, q.w));
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (lane == 0) wmax[warp] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < nwarps; ++w) m = fmaxf(m, wmax[w]);
  const float mb = (m == -INFINITY) ? 0.0f : m * X9_LOG2E;  // an empty slice: no 2^(-inf - -inf)
  float d = 0.0f;
#pragma unroll
  for (int i = 0; i < 4 * X9_REG4; ++i) {
    v[i] = x9_ex2(fmaf(v[i], X9_LOG2E, -mb));  // padding: 2^-inf = 0
    d += v[i];
  }
#pragma unroll
  for (int i = 0; i < X9_SMEM4; ++i) {  // the shared half's exponentials written back in place
    float4 q = mine[i];
    q = make_float4(x9_ex2(fmaf(q.x, X9_LOG2E, -mb)), x9_ex2(fmaf(q.y, X9_LOG2E, -mb)),
                    x9_ex2(fmaf(q.z, X9_LOG2E, -mb)), x9_ex2(fmaf(q.w, X9_LOG2E, -mb)));
    d += (q.x + q.y) + (q.z + q.w);
    mine[i] = q;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
  if (lane == 0) wsum[warp] = d;
  __syncthreads();
  if (tid == 0) {
    float db = 0.0f;
    for (int w = 0; w < nwarps; ++w) db += wsum[w];
    part[0] = m;
    part[1] = db;
  }
  x9_cluster_sync();  // every block's pair is written and visible cluster-wide
  // Lanes 0-3 of every warp fetch one block's pair each and merge them with 2 xor-shuffles.
  float pm = -INFINITY, pd = 0.0f;
  if (lane < X9_CLUSTER) {
    pm = x9_remote(&part[0], (unsigned)lane);
    pd = x9_remote(&part[1], (unsigned)lane);
  }
#pragma unroll
  for (int off = X9_CLUSTER / 2; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, pm, off), d2 = __shfl_xor_sync(0xffffffffu, pd, off);
    x9_merge(pm, pd, m2, d2);
  }
  const float rowm = __shfl_sync(0xffffffffu, pm, 0), rowd = __shfl_sync(0xffffffffu, pd, 0);
  const float scale = (m == -INFINITY) ? 0.0f : x9_ex2((m - rowm) * X9_LOG2E) / rowd;
  x9_cluster_sync_relaxed();  // no block leaves (freeing its pair) while another may still read it
#pragma unroll
  for (int i = 0; i < X9_REG4; ++i)
    x9_put(out, c0, c1, tid + i * T, make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]), scale, vec);
#pragma unroll
  for (int i = 0; i < X9_SMEM4; ++i) x9_put(out, c0, c1, tid + (X9_REG4 + i) * T, mine[i], scale, vec);
}
