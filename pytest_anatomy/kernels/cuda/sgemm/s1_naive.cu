/*
SGEMM rung s1 · naive: one thread per output, consecutive threads walk down a column of C.

What changes: nothing yet -- the textbook triple loop. threadIdx.x indexes the ROW, so the 32
lanes of a warp read A[row..row+31][k]: 32 addresses K*4 bytes apart, 32 separate memory
transactions per load instruction, while B[k][col] is one address for the whole warp.
Request ledger: 32 + 1 = 33 transactions per warp-FMA. Byte ledger: 2 loads x 4 B per FMA,
arithmetic intensity 0.25 FLOP/B if no cache helped.
Predicted effect: H200, 4096^3: 260 ms (the 4090's 31.8 cycles per warp-FMA carried over -- this rung is bound by L1 line lookups, which the request ledger prices -- on 132 SMs at 1.98 GHz, 0.81x the 4090's SM-cycles per second). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 276.3 ms, 1.06x
the prediction (within the ladders' 15% acceptance band); rung 0 2.69 ms.
Seed (RTX 4090, same kernel shape): 211.9 ms at 4096^3 -- faster than its own byte ledger
allows (258% "roofline attainment"): the strided rows come back from L1/L2, not DRAM.
*/
extern "C" __global__ void sgemm_naive(int M, int N, int K, const float* __restrict__ A,
                                       const float* __restrict__ B, float* __restrict__ C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;  // lanes -> rows: uncoalesced A
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
  }
}
