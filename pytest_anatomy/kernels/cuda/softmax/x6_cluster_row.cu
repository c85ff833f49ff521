/*
Softmax rung x6 · a row per 8-block thread-block cluster: the vocabulary row read once, from registers.

What changes: x5 keeps a row in one warp's registers (2,048 columns at most) and refuses the
128 x 152,064 vocabulary row; x2 holds any row but reads it twice, and at 128 rows x 594 KB = 78 MB
(> the 60 MB L2) the second read reaches DRAM. x6 splits each row over a cluster of 8 blocks
(__cluster_dims__(8,1,1), Hopper's portable cluster size): block rank b holds columns
[b S, (b+1) S), S = 4 ceil(N / 32), in registers, at most 10 float4 per thread and 512 threads
(163,840 columns), the launch sizing the block to the row (480 threads for 152,064; 32 for 2,048).
Each block reduces its slice to (max m_b, sum d_b of exp(x - m_b)) (warp shuffles, one shared
exchange across its warps), publishes the pair in shared memory, and after one barrier.cluster
every warp reads the 8 pairs through distributed shared memory (mapa + ld.shared::cluster) and
merges them: M = max m_b, D = sum d_b 2^((m_b - M) log2e). The exponentials stay in registers and
are scaled once, y = e 2^((m_b - M) log2e) / D: one EX2 per element, one DRAM read of x, one write of
y. A second barrier.cluster keeps every block alive until the others have read its pair.
Predicted effect: H200, 128 x 152,064: 0.040 ms. Byte ledger: 77.9 MB read once + 77.9 MB written =
155.7 MB at the recorded copy bandwidth (4.27 TB/s, kernels-ceilings 2026-12-01) = 36.5 us; 1,024
blocks of 480 threads at 2 blocks per SM (ptxas must keep it at 64 registers or fewer, a CPU test
checks) are 264 resident blocks, 3.9 waves, and within a wave a block's read, exchange and write do
not overlap each other: each wave exposes about one DRAM round trip plus two cluster barriers that the
other resident block cannot cover when both started together (~0.8 us, the latency x5's header used),
4 x 0.8 = 3.2 us, 39.7 us in all = 89% of the 4.38 TB/s read ceiling on the read + write bytes
(target 85%). 8192 x 2048: 0.045 ms: the same 134.2 MB as x5 (31.4 us at copy bandwidth) but 65,536
blocks of 32 threads, 32 blocks per SM by block slots = 15.5 waves of blocks whose 1 KB each does
not cover a round trip plus the cluster exchange (~0.9 us per wave: 14 us), about 1.3x x5's 34 us:
the cluster pays off only when a row is too long for one SM. Written before any measurement of this rung.
Measured outcome: H200, run of 2026-12-01T21:51:10Z (results/h200/kernels): 128 x 152,064: 0.0490 ms,
1.22x the prediction, 72% of the read ceiling (target 85%; finding h200-cluster-row-vocab-short-of-its-ledger);
rung 0 0.0898 ms; 8,192 x 2,048: 0.1577 ms, 3.5x the prediction (finding
h200-cluster-row-short-rows-pay-per-cluster): 8,192 clusters of 8 one-warp blocks pay a per-cluster cost.
Seed: no such rung.
*/
// requires: sm_90 (thread-block clusters: __cluster_dims__, distributed shared memory)
#ifndef INFINITY  // NVRTC has no math.h; nvcc and the CPU emulator do
#define INFINITY __int_as_float(0x7f800000)
#endif
#define X6_CLUSTER 8   // blocks per row (the portable maximum cluster size)
#define X6_THREADS 512 // largest block; the launch picks the smallest multiple of 32 that holds the slice
#define X6_PER4 10     // float4 per thread: 8 x 512 x 40 = 163,840 columns at most
#define X6_LOG2E 1.4426950408889634f

#ifdef CUDA_EMULATOR
static inline float x6_ex2(float v) { return std::exp2(v); }
static inline unsigned x6_rank() { return emu_cluster_ctarank(); }
static inline void x6_cluster_sync() { emu_cluster_sync(); }
static inline void x6_cluster_sync_relaxed() { emu_cluster_sync(); }
static inline float x6_remote(float* p, unsigned rank) { return *emu::dsmem(p, int(rank)); }
#else
__device__ __forceinline__ float x6_ex2(float v) {  // MUFU.EX2, as x5
  float out;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(out) : "f"(v));
  return out;
}
__device__ __forceinline__ unsigned x6_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Release this block's shared writes to the cluster, then wait for (and acquire) everyone else's.
__device__ __forceinline__ void x6_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Arrive without a release fence: only the block's lifetime is guarded (its pair already read into registers).
__device__ __forceinline__ void x6_cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
// The float at the same shared-memory offset in block `rank` of this cluster.
__device__ __forceinline__ float x6_remote(float* p, unsigned rank) {
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
#endif

// Online-softmax merge of (m, d) with (m2, d2); an empty part (d == 0, m = -inf) contributes nothing.
__device__ __forceinline__ void x6_merge(float& m, float& d, float m2, float d2) {
  const float mn = fmaxf(m, m2);
  const float a = (d == 0.0f) ? 0.0f : d * x6_ex2((m - mn) * X6_LOG2E);
  const float b = (d2 == 0.0f) ? 0.0f : d2 * x6_ex2((m2 - mn) * X6_LOG2E);
  m = mn;
  d = a + b;
}

extern "C" __global__ void __cluster_dims__(X6_CLUSTER, 1, 1) __launch_bounds__(X6_THREADS, 2)
softmax_cluster_row(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ float wmax[X6_THREADS / 32], wsum[X6_THREADS / 32];
  __shared__ float part[2];  // this block's (m_b, d_b): read by the cluster's other blocks
#ifdef CUDA_EMULATOR
  EMU_BLOCK_SHARED(wmax);
  EMU_BLOCK_SHARED(wsum);
  EMU_BLOCK_SHARED(part);
#endif
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  const int T = blockDim.x;
  const unsigned rank = x6_rank();
  const int r = blockIdx.x / X6_CLUSTER;  // the grid is M x 8 blocks: every cluster has a row
  const int S = ((N + 31) / 32) * 4;      // slice width: a multiple of 4 so every slice starts 16-byte aligned
  const int c0 = (int)rank * S;
  const int c1 = (c0 + S < N) ? c0 + S : N;
  const float* row = x + (size_t)r * N;
  float* out = y + (size_t)r * N;
  float v[4 * X6_PER4];
  const bool vec = (N % 4) == 0;  // uniform: rows (and so slices) 16-byte aligned
  if (vec) {
    const float4* s4 = reinterpret_cast<const float4*>(row + c0);
    const int n4 = (c1 - c0) / 4;  // c1 - c0 is a multiple of 4 when N is
#pragma unroll
    for (int i = 0; i < X6_PER4; ++i) {
      const int j = tid + i * T;
      const float4 q = (j < n4) ? s4[j] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
    }
  } else {
    // The float4 path's layout with four scalar loads per slot: one address per slot, as above (a
    // column-per-lane layout needs 40 addresses and spilled at the 64-register cap).
    const float* s1 = row + c0;
#pragma unroll
    for (int i = 0; i < X6_PER4; ++i) {
      const int j = 4 * (tid + i * T);
#pragma unroll
      for (int q = 0; q < 4; ++q) v[4 * i + q] = (c0 + j + q < c1) ? s1[j + q] : -INFINITY;
    }
  }
  // Block max: the slice's values, 5 shuffles, then the warps' maxima through shared memory.
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < 4 * X6_PER4; ++i) m = fmaxf(m, v[i]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (lane == 0) wmax[warp] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < nwarps; ++w) m = fmaxf(m, wmax[w]);
  // An empty slice (short rows: N < 8 S) has m = -inf; subtract 0 there so 2^(-inf - -inf) is not NaN.
  const float mb = (m == -INFINITY) ? 0.0f : m * X6_LOG2E;
  float d = 0.0f;
#pragma unroll
  for (int i = 0; i < 4 * X6_PER4; ++i) {
    v[i] = x6_ex2(fmaf(v[i], X6_LOG2E, -mb));  // padding: 2^-inf = 0
    d += v[i];
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
  x6_cluster_sync();  // every block's pair is written and visible cluster-wide
  // Lanes 0-7 of every warp fetch one block's pair each and merge them with 3 xor-shuffles.
  float pm = -INFINITY, pd = 0.0f;
  if (lane < X6_CLUSTER) {
    pm = x6_remote(&part[0], (unsigned)lane);
    pd = x6_remote(&part[1], (unsigned)lane);
  }
#pragma unroll
  for (int off = 4; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, pm, off), d2 = __shfl_xor_sync(0xffffffffu, pd, off);
    x6_merge(pm, pd, m2, d2);
  }
  const float rowm = __shfl_sync(0xffffffffu, pm, 0), rowd = __shfl_sync(0xffffffffu, pd, 0);
  // y = 2^(x log2e - m_b log2e) x 2^((m_b - M) log2e) / D; an empty slice writes nothing.
  const float scale = (m == -INFINITY) ? 0.0f : x6_ex2((m - rowm) * X6_LOG2E) / rowd;
  x6_cluster_sync_relaxed();  // no block leaves (freeing its shared memory) while another may still read its pair
  if (vec) {
    float4* o4 = reinterpret_cast<float4*>(out + c0);
    const int n4 = (c1 - c0) / 4;
#pragma unroll
    for (int i = 0; i < X6_PER4; ++i) {
      const int j = tid + i * T;
      if (j < n4) o4[j] = make_float4(v[4 * i] * scale, v[4 * i + 1] * scale, v[4 * i + 2] * scale, v[4 * i + 3] * scale);
    }
  } else {
    float* o1 = out + c0;
#pragma unroll
    for (int i = 0; i < X6_PER4; ++i) {
      const int j = 4 * (tid + i * T);
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (c0 + j + q < c1) o1[j + q] = v[4 * i + q] * scale;
    }
  }
}
