/*
Reduction rung r1 · interleaved addressing (Harris #1): one element per thread, tree in shared
memory with `tid % (2*stride) == 0` deciding who adds.

What changes: nothing yet. Every block loads 256 floats (coalesced), then halves them in 8
steps; in each step the active threads are scattered across all warps (divergent branches,
and the modulo is slow), so every step costs as much as the first. The block writes one
partial; reduce_finish sums the 2^28/256 = 1,048,576 partials in two more launches.
Byte ledger: 4N bytes read (+ 8 bytes per partial) over the read bandwidth.
Predicted effect: H200, 2^28 floats: 0.90 ms (instruction-bound tree: 8 barrier steps per 256 elements with a modulo; floor 4N/4.47 TB/s = 0.240 ms). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 2^28 floats: 1.18 ms,
1.31x the prediction (finding h200-reduction-tree-bound); rung 0 0.2484 ms.
Seed: timed only single-block at N=2048 (0.0040 ms vs 0.0018 ms for an empty kernel).
*/
#define R1_BLOCK 256
extern "C" __global__ void __launch_bounds__(R1_BLOCK)
reduce_interleaved(const float* __restrict__ x, float* __restrict__ partials, int n) {
  __shared__ float s[R1_BLOCK];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * R1_BLOCK + tid;
  s[tid] = (i < (unsigned)n) ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = 1; stride < R1_BLOCK; stride *= 2) {
    if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = s[0];
}
