// cuda_emu.h -- run the ladder kernels on a CPU, to prove indexing and arithmetic without a GPU.
//
// Every CUDA thread is a ucontext fiber; the blocks of a launch run one after another on one OS
// thread, so a function-local `__shared__` array (made `static` here) is exactly one block's
// shared memory. __syncthreads() parks a fiber until every live fiber of the block has arrived;
// __syncwarp() and the shuffles park it until every live fiber of its warp has. A barrier that
// cannot complete (threads of one warp waiting at different barriers) fails the launch with a message
// (the Python side raises): that is a real bug on a GPU too. A launch with a thread-block cluster
// (cluster > 1 blocks) runs the cluster's blocks together, one fiber pool: barrier.cluster parks a fiber until every live fiber of
// the cluster has arrived, and shared arrays the kernel registers with EMU_BLOCK_SHARED are swapped
// in and out on every switch between blocks, so each block keeps its own copy and another block's
// copy is what distributed shared memory (mapa + ld.shared::cluster) reads. Otherwise, as before,
// the blocks run one after another and a `static` shared array is one block's own. A barrier that
// cannot complete fails the launch likewise, and so does a spin (an mbarrier wait, a cooperative
// grid's wait on global memory) that stops making progress. A cooperative launch (Launch.cooperative:
// every block resident) runs all the grid's blocks in one pool, so a block may spin on another's global-memory writes (emu_spin_until).
// What this cannot show: races whose outcome depends on timing
// (fibers run in a fixed order), memory-model bugs, and speed. Inline PTX has C++ stand-ins
// (cp.async, mma.sync m16n8k16 bf16, cvt to bf16) that follow the PTX ISA's fragment layouts,
// so a kernel that loads the wrong fragment computes the wrong product here as on the device.
// Switching: a fiber is entered the first time through its ucontext (makecontext gives it its own stack), and every
// switch after that is _setjmp/_longjmp, which leave the signal mask alone: swapcontext saved and restored it with a
// system call on every switch, two per park, most of a fiber's cost (tests_kernels warm on 2 cores: ~11 s of its
// ~37 s of CPU was that kernel time). _FORTIFY_SOURCE's checked longjmp refuses a jump to another stack, which is
// the point here, so it is off for the units that include this header.
#pragma once
#undef _FORTIFY_SOURCE
#include <setjmp.h>
#include <ucontext.h>
#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#define CUDA_EMULATOR 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

namespace emu {
// STUCK: a spin that stopped making progress (no mbarrier event or atomic anywhere in the launch for 20,000 parks);
// never resumed, so the scheduler finds the launch deadlocked and returns -1 (a failed test, not an abort).
enum State { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, AT_CLUSTER_BARRIER, DONE, STUCK };
// linear: the thread's index in its block; block: its block's rank in the cluster (0 without one)
// groups: the fiber's committed asynchronous operations (wgmma stand-ins), oldest first, run when it waits on them
struct Fiber {
  ucontext_t ctx; jmp_buf jb; bool started; State state; dim3 tid; dim3 bid; int linear; int block;
  std::vector<char> stack;
  std::vector<std::function<void()>> open_group;
  std::vector<std::vector<std::function<void()>>> groups;
};

struct Block {  // the fibers of one block, or of one cluster's blocks
  std::vector<Fiber> fibers;
  ucontext_t sched;  // written by a fiber's first entry only; the scheduler is resumed through sched_jb
  jmp_buf sched_jb;
  Fiber* cur = nullptr;
  int warps_per_block = 0, nblocks = 1;
  // per-warp exchange slots for shuffles and mma stand-ins (32 lanes x 16 words)
  std::vector<uint32_t> slots;
  // registered shared arrays (address, bytes), each block's saved copy, and whose copy is live
  std::vector<std::pair<char*, size_t>> shared;
  std::vector<std::vector<std::vector<char>>> saved;
  int loaded = 0;
};
inline Block& blk() { static Block b; return b; }
inline dim3& block_idx() { static dim3 d; return d; }
inline dim3& block_dim() { static dim3 d; return d; }
inline dim3& grid_dim() { static dim3 d; return d; }
inline std::function<void()>& body() { static std::function<void()> f; return f; }

inline void fiber_main() {
  body()();
  blk().cur->state = DONE;
  _longjmp(blk().sched_jb, 1);  // never resumed
}
// Out of line, as resume is: the kernel that parks keeps no value across a _setjmp of its own frame.
__attribute__((noinline)) inline void park(State s) {
  Fiber* f = blk().cur;
  f->state = s;
  if (_setjmp(f->jb) == 0) _longjmp(blk().sched_jb, 1);
}
// Runs fiber f until it parks or ends: its first entry through its ucontext, later ones back into its park.
__attribute__((noinline)) inline void resume(Block& b, Fiber& f) {
  if (_setjmp(b.sched_jb) != 0) return;
  if (f.started) _longjmp(f.jb, 1);
  f.started = true;
  swapcontext(&b.sched, &f.ctx);
}
inline int lane() { return blk().cur->linear & 31; }
inline int warp() { return blk().cur->block * blk().warps_per_block + (blk().cur->linear >> 5); }

// Make block `b`'s shared arrays the live ones (a no-op without a cluster: one block at a time).
inline void load_shared(int b) {
  Block& k = blk();
  if (k.loaded == b) return;
  for (size_t i = 0; i < k.shared.size(); ++i) {
    std::memcpy(k.saved[k.loaded][i].data(), k.shared[i].first, k.shared[i].second);
    std::memcpy(k.shared[i].first, k.saved[b][i].data(), k.shared[i].second);
  }
  k.loaded = b;
}
// EMU_BLOCK_SHARED(arr): from here on every block of the cluster has its own copy of `arr`.
inline void register_shared(void* p, size_t bytes) {
  Block& k = blk();
  for (auto& r : k.shared) if (r.first == p) return;
  k.shared.emplace_back(static_cast<char*>(p), bytes);
  k.saved.resize(k.nblocks);
  for (auto& per_block : k.saved) per_block.emplace_back(static_cast<char*>(p), static_cast<char*>(p) + bytes);
}
// Block `rank`'s copy of the registered shared object at `p` (p: the calling block's address of it).
template <typename T> T* dsmem(T* p, int rank) {
  Block& k = blk();
  char* c = reinterpret_cast<char*>(p);
  for (size_t i = 0; i < k.shared.size(); ++i) {
    char* base = k.shared[i].first;
    if (c >= base && c < base + k.shared[i].second)
      return rank == k.loaded ? p : reinterpret_cast<T*>(k.saved[rank][i].data() + (c - base));
  }
  std::fprintf(stderr, "cuda_emu: distributed shared memory access to an unregistered address\n");
  std::abort();
}

// Runs the `nblocks` blocks starting at `first` (a cluster, or one block) to completion; returns 0,
// or -1 after printing why a barrier deadlocked.
inline int run_block(int nthreads, dim3 first = block_idx(), int nblocks = 1) {
  Block& b = blk();
  const dim3 bd = block_dim();
  const int wpb = (nthreads + 31) / 32;
  b.fibers.resize(size_t(nthreads) * nblocks);
  b.warps_per_block = wpb;
  b.nblocks = nblocks;
  b.slots.assign(size_t(wpb) * nblocks * 32 * 16, 0u);
  b.shared.clear();
  b.saved.clear();
  b.loaded = 0;
  for (int i = 0; i < nthreads * nblocks; ++i) {
    Fiber& f = b.fibers[i];
    f.linear = i % nthreads;
    f.block = i / nthreads;
    f.bid = {first.x + unsigned(f.block), first.y, first.z};
    f.tid = {unsigned(f.linear % bd.x), unsigned((f.linear / bd.x) % bd.y), unsigned(f.linear / (bd.x * bd.y))};
    f.state = RUNNABLE;
    f.started = false;
    f.open_group.clear();
    f.groups.clear();
    if (f.stack.empty()) f.stack.resize(64 * 1024);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, (void (*)())fiber_main, 0);
  }
  for (;;) {
    bool ran = false;
    for (auto& f : b.fibers) {
      if (f.state != RUNNABLE) continue;
      load_shared(f.block);
      b.cur = &f;
      ran = true;
      resume(b, f);
    }
    int live = 0, at_block = 0, at_cluster = 0;
    bool released = false;
    for (auto& f : b.fibers) {
      if (f.state != DONE) ++live;
      if (f.state == AT_CLUSTER_BARRIER) ++at_cluster;
    }
    if (live == 0) return 0;
    if (at_cluster == live) {
      for (auto& f : b.fibers) f.state = f.state == AT_CLUSTER_BARRIER ? RUNNABLE : f.state;
      released = true;
    }
    for (int blk_i = 0; blk_i < nblocks; ++blk_i) {
      Fiber* bf = &b.fibers[size_t(blk_i) * nthreads];
      int bl = 0, bb = 0;
      for (int i = 0; i < nthreads; ++i) {
        if (bf[i].state != DONE) ++bl;
        if (bf[i].state == AT_BLOCK_BARRIER) ++bb;
      }
      at_block += bb;
      if (bl > 0 && bb == bl) {
        for (int i = 0; i < nthreads; ++i) bf[i].state = RUNNABLE;
        released = true;
      }
      for (int w = 0; w < wpb; ++w) {
        int wl = 0, ww = 0;
        for (int i = w * 32; i < std::min(nthreads, w * 32 + 32); ++i) {
          if (bf[i].state != DONE) ++wl;
          if (bf[i].state == AT_WARP_BARRIER) ++ww;
        }
        if (wl > 0 && ww == wl) {
          for (int i = w * 32; i < std::min(nthreads, w * 32 + 32); ++i) bf[i].state = RUNNABLE;
          released = true;
        }
      }
    }
    if (!ran && !released) {
      std::fprintf(stderr, "cuda_emu: deadlock in block (%u,%u,%u) (+%d in its cluster): %d live threads, %d at "
                   "__syncthreads, %d at barrier.cluster, the rest at a warp barrier that not all of their warp "
                   "reached\n", first.x, first.y, first.z, nblocks - 1, live, at_block, at_cluster);
      return -1;
    }
  }
}

// cluster: blocks per thread-block cluster along x (the kernel's __cluster_dims__; 1 = none).
inline int launch(const int* g, const int* bdim, const std::function<void()>& fn, int cluster = 1) {
  grid_dim() = {unsigned(g[0]), unsigned(g[1]), unsigned(g[2])};
  block_dim() = {unsigned(bdim[0]), unsigned(bdim[1]), unsigned(bdim[2])};
  body() = fn;
  const int nthreads = bdim[0] * bdim[1] * bdim[2];
  for (int z = 0; z < g[2]; ++z)
    for (int y = 0; y < g[1]; ++y)
      for (int x = 0; x < g[0]; x += cluster) {
        if (g[0] % cluster != 0) {
          std::fprintf(stderr, "cuda_emu: grid x %d is not a multiple of the cluster size %d\n", g[0], cluster);
          return -1;
        }
        block_idx() = {unsigned(x), unsigned(y), unsigned(z)};
        if (run_block(nthreads, block_idx(), cluster) != 0) return -1;
      }
  return 0;
}

template <typename T> T arg(void* p) { return *static_cast<T*>(p); }
template <typename... P, size_t... I>
void call_impl(void (*k)(P...), void** a, std::index_sequence<I...>) { k(arg<P>(a[I])...); }
template <typename... P> void call_with(void (*k)(P...), void** a) { call_impl(k, a, std::index_sequence_for<P...>{}); }

// Exchange one 32-bit word per lane through the warp's slots: write, wait, read, wait.
inline uint32_t* warp_slots() { return &blk().slots[size_t(warp()) * 32 * 16]; }
inline void warp_barrier() { park(AT_WARP_BARRIER); }
template <typename T> T shfl(T v, int src_lane, bool valid) {
  static_assert(sizeof(T) == 4, "shuffles move 32-bit values");
  uint32_t* s = warp_slots();
  uint32_t bits; std::memcpy(&bits, &v, 4);
  s[lane()] = bits;
  warp_barrier();
  uint32_t got = valid ? s[src_lane] : bits;
  warp_barrier();
  T out; std::memcpy(&out, &got, 4);
  return out;
}

inline float bf16_to_f32(uint16_t h) { uint32_t u = uint32_t(h) << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline uint16_t f32_to_bf16_rn(float f) {  // round to nearest even, as cvt.rn.bf16.f32
  uint32_t u; std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 with the PTX ISA fragment layout:
// group g = lane/4, t = lane%4. A regs: {a(g,2t..2t+1), a(g+8,2t..), a(g,2t+8..), a(g+8,2t+8..)};
// B regs: {b(k=2t..2t+1, n=g), b(k=2t+8.., n=g)}; C/D: {c(g,2t), c(g,2t+1), c(g+8,2t), c(g+8,2t+1)}.
inline void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
  uint32_t* s = warp_slots();
  const int ln = lane();
  for (int i = 0; i < 4; ++i) s[ln * 16 + i] = a[i];
  for (int i = 0; i < 2; ++i) s[ln * 16 + 4 + i] = b[i];
  warp_barrier();
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    const uint32_t* r = &s[l * 16];
    auto lo = [](uint32_t w) { return bf16_to_f32(uint16_t(w & 0xffff)); };
    auto hi = [](uint32_t w) { return bf16_to_f32(uint16_t(w >> 16)); };
    A[g][2 * t] = lo(r[0]); A[g][2 * t + 1] = hi(r[0]);
    A[g + 8][2 * t] = lo(r[1]); A[g + 8][2 * t + 1] = hi(r[1]);
    A[g][2 * t + 8] = lo(r[2]); A[g][2 * t + 9] = hi(r[2]);
    A[g + 8][2 * t + 8] = lo(r[3]); A[g + 8][2 * t + 9] = hi(r[3]);
    B[2 * t][g] = lo(r[4]); B[2 * t + 1][g] = hi(r[4]);
    B[2 * t + 8][g] = lo(r[5]); B[2 * t + 9][g] = hi(r[5]);
  }
  warp_barrier();
  const int g = ln / 4, t = ln % 4;
  const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
  for (int i = 0; i < 4; ++i) {
    float acc = c[i];
    for (int k = 0; k < 16; ++k) acc += A[rows[i]][k] * B[k][cols[i]];
    d[i] = acc;
  }
}

// --- Hopper's asynchronous machinery: mbarriers, TMA tile loads, asynchronous MMA groups ---------------------------
// An mbarrier lives in its 8 bytes of shared memory as on the device: bits 0-15 the arrivals a phase expects, 16-31
// the arrivals still pending, 32-62 the transaction bytes still pending, bit 63 the phase's parity. A phase completes
// when no arrival and no byte is pending: the parity flips and the pending arrivals reset (PTX ISA, mbarrier).
inline unsigned long long& mbar_events() { static unsigned long long n = 0; return n; }
inline void mbar_init(unsigned long long* b, unsigned count) { *b = (unsigned long long)(count) | ((unsigned long long)(count) << 16); }
inline void mbar_settle(unsigned long long* b) {
  const unsigned long long v = *b, expected = v & 0xffffu, pending = (v >> 16) & 0xffffu, tx = (v >> 32) & 0x7fffffffu;
  if (pending == 0 && tx == 0) *b = expected | (expected << 16) | ((~v) & (1ull << 63));
  ++mbar_events();
}
inline void mbar_arrive(unsigned long long* b) {
  if (((*b >> 16) & 0xffffu) == 0) { std::fprintf(stderr, "cuda_emu: mbarrier arrive beyond its count\n"); std::abort(); }
  *b -= 1ull << 16;
  mbar_settle(b);
}
inline void mbar_expect_tx(unsigned long long* b, unsigned bytes) { *b += (unsigned long long)(bytes) << 32; }
inline void mbar_complete_tx(unsigned long long* b, unsigned bytes) {
  if (((*b >> 32) & 0x7fffffffu) < bytes) { std::fprintf(stderr, "cuda_emu: TMA bytes not expected\n"); std::abort(); }
  *b -= (unsigned long long)(bytes) << 32;
  mbar_settle(b);
}
// try_wait.parity: true once the phase of that parity has completed (a fresh barrier's phase "-1", parity 1, has).
inline bool mbar_test_parity(const unsigned long long* b, unsigned parity) { return (*b >> 63) != (parity & 1u); }
// Spin as the device does, handing the CPU to the other fibers; stuck when the whole launch stops moving.
inline void mbar_wait_parity(const unsigned long long* b, unsigned parity) {
  unsigned long long seen = mbar_events();
  long idle = 0;
  while (!mbar_test_parity(b, parity)) {
    park(RUNNABLE);
    if (mbar_events() != seen) { seen = mbar_events(); idle = 0; continue; }
    if (++idle > 20000) {
      std::fprintf(stderr, "cuda_emu: mbarrier wait (parity %u) never completes: deadlock\n", parity);
      for (;;) park(STUCK);
    }
  }
}
// A 2D TMA tensor map as the emulator reads it (the driver's CUtensorMap is 128 opaque bytes; this one is readable,
// built by emulator.tensor_map): dim0 the contiguous dimension, stride1 the bytes between rows, the box in elements.
struct alignas(64) TensorMap2D {
  const char* base; long long dim0, dim1, stride1, box0, box1, elem, swizzle; long long pad[8];
};
static_assert(sizeof(TensorMap2D) == 128, "a tensor map parameter is 128 bytes");
// cp.async.bulk.tensor.2d: the box at (c0, c1) into `dst`, elements outside the tensor zero-filled, rows of the
// 128-byte swizzle placed as the hardware places them (16-byte chunk j of row r at j ^ (r % 8) within each
// 1,024-byte atom; `dst` 1,024-aligned); returns the bytes the copy completes on its mbarrier (the whole box).
inline unsigned tma_load_2d(void* dst, const TensorMap2D& m, int c0, int c1) {
  const long long row_bytes = m.box0 * m.elem;
  if (m.swizzle != 0 && row_bytes != m.swizzle) {
    std::fprintf(stderr, "cuda_emu: a swizzled TMA box row must be the swizzle's width\n");
    std::abort();
  }
  char* d = static_cast<char*>(dst);
  for (long long r = 0; r < m.box1; ++r)
    for (long long c = 0; c < m.box0; ++c) {
      long long off = r * row_bytes + c * m.elem;
      if (m.swizzle == 128) off ^= ((off >> 7) & 7) << 4;
      const long long gr = c1 + r, gc = c0 + c;
      if (gr >= 0 && gr < m.dim1 && gc >= 0 && gc < m.dim0) std::memcpy(d + off, m.base + gr * m.stride1 + gc * m.elem, m.elem);
      else std::memset(d + off, 0, m.elem);
    }
  return unsigned(m.box0 * m.box1 * m.elem);
}
// wgmma.mma_async's asynchrony: an issued operation joins the fiber's open group, commit_group closes it, and
// wait_group N runs the oldest groups until N remain -- so shared memory is read as late as the device may read it,
// and a stage released before its wgmma is waited on shows as a wrong product here too.
inline void async_issue(std::function<void()> op) { blk().cur->open_group.push_back(std::move(op)); }
inline void async_commit() {
  Fiber& f = *blk().cur;
  f.groups.push_back(std::move(f.open_group));
  f.open_group.clear();
}
inline void async_wait(int pending) {
  Fiber& f = *blk().cur;
  while (int(f.groups.size()) > pending) {
    for (auto& op : f.groups.front()) op();
    f.groups.erase(f.groups.begin());
  }
}
}  // namespace emu

#define threadIdx (emu::blk().cur->tid)
#define blockIdx (emu::blk().cur->bid)
#define blockDim (emu::block_dim())
#define gridDim (emu::grid_dim())
#define warpSize 32
inline void __syncthreads() { emu::park(emu::AT_BLOCK_BARRIER); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp_barrier(); }
inline void __threadfence() {}
template <typename T> T __shfl_down_sync(unsigned, T v, int d) { int l = emu::lane(); return emu::shfl(v, l + d, l + d < 32); }
template <typename T> T __shfl_xor_sync(unsigned, T v, int m) { int l = emu::lane(); return emu::shfl(v, l ^ m, true); }
template <typename T> T __shfl_sync(unsigned, T v, int src) { return emu::shfl(v, src & 31, true); }
template <typename T> T __ldg(const T* p) { return *p; }
namespace emu {
inline unsigned long long& atomic_events() { static unsigned long long n = 0; return n; }
}  // namespace emu
inline float atomicAdd(float* p, float v) { ++emu::atomic_events(); float o = *p; *p = o + v; return o; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { ++emu::atomic_events(); unsigned o = *p; *p = o + v; return o; }
inline unsigned atomicInc(unsigned* p, unsigned lim) {
  ++emu::atomic_events();
  unsigned o = *p; *p = (o >= lim) ? 0 : o + 1; return o;
}
// A cooperative grid's spin on global memory (the launch runs all its blocks in one fiber pool): park until `done()`,
// handing the CPU to the other fibers; stuck (the launch fails) when 20,000 parks pass with no atomic counted
// anywhere in the grid.
template <typename F> void emu_spin_until(F done) {
  unsigned long long seen = emu::atomic_events();
  long idle = 0;
  while (!done()) {
    emu::park(emu::RUNNABLE);
    if (emu::atomic_events() != seen) { seen = emu::atomic_events(); idle = 0; continue; }
    if (++idle > 20000) {
      std::fprintf(stderr, "cuda_emu: a spin on global memory never ends: deadlock\n");
      for (;;) emu::park(emu::STUCK);
    }
  }
}
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float a, float b) { return a / b; }

#define __cluster_dims__(...)
#define __grid_constant__
// The cluster's own rank of the calling block and barrier.cluster (arrive.release + wait.acquire).
inline unsigned emu_cluster_ctarank() { return unsigned(emu::blk().cur->block); }
inline void emu_cluster_sync() { emu::park(emu::AT_CLUSTER_BARRIER); }
#define EMU_BLOCK_SHARED(arr) emu::register_shared(&(arr), sizeof(arr))

#define EMU_EXPORT(k) \
  extern "C" int emu_launch_##k(void** a, const int* g, const int* b, int cluster) { \
    return emu::launch(g, b, [a] { emu::call_with(k, a); }, cluster); }
