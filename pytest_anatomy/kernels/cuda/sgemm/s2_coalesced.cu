/*
SGEMM rung s2 · coalesced: swap the thread-to-output mapping.

What changes: threadIdx.x now indexes the COLUMN. A warp reads one A element (a broadcast, one
transaction) and 32 consecutive B elements (128 B, one transaction). Same instructions, same
FLOPs, same bytes in the byte ledger -- only the request ledger moves: 33 -> 2 per warp-FMA.
Predicted effect: H200, 4096^3: 32 ms (instruction ledger with the 4090's prices, 2 LDG per FMA at 1.94 cycles; slower than the 4090's 25.8 ms because the H200 has fewer SM-cycles per second). Written before any H200 measurement.
Measured outcome: H200, run of 2026-11-30T02:02:10Z (results/h200/kernels): 4096^3: 23.97 ms, 0.75x
the prediction (finding h200-4090-load-prices-too-high); rung 0 2.69 ms.
Seed (RTX 4090): 25.8 ms, 8.2x faster than s1 (the request ledger alone says 16.5x).
*/
extern "C" __global__ void sgemm_coalesced(int M, int N, int K, const float* __restrict__ A,
                                           const float* __restrict__ B, float* __restrict__ C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;  // lanes -> columns: coalesced B
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
  }
}
