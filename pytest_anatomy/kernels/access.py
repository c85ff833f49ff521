"""Access patterns of the hand-written kernels' rungs: facts about a kernel, not theory.

A rung's load instructions per FMA, the cache lines its warps touch, the passes a streaming rung
makes over its tensor: the registries (sgemm.py, fused.py, seed_ladder.py) state them for each rung,
and theory/kernels.py reads them to build its byte, request and instruction ledgers. Kept here so
the dependency runs kernels -> access <- theory: a registry never imports theory.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GemmAccess:
    """Per-thread load instructions per FMA, by kind, for one GEMM rung (all rungs have one
    FMA per (row, col, k) triple, so these are also per-warp counts per warp-FMA).

    ldg / lds_*   -- instructions per FMA; a float4 load counts once (vector=4)
    requests      -- distinct 128-byte lines per warp-FMA touched by the global loads
    vector        -- elements per load instruction (1 or 4): issued bytes = ldg * 4 * vector
    accumulators  -- independent FMA chains per thread (its output tile): the instruction-level
                     parallelism the issue ledger's latency term divides by (0: not stated)
    warps_per_sm  -- resident warps per SM the rung is built for (blocks/SM x warps/block; a
                     compiled-rung test checks ptxas agrees), 0: not stated
    ffma_share    -- FFMA share of the instructions the main loop issues, counted from the loop
                     body (0: not stated)
    """

    name: str
    ldg: float
    lds_distinct: float
    lds_broadcast: float
    requests: float
    vector: int = 1
    tensor_core: bool = False
    accumulators: int = 0
    warps_per_sm: int = 0
    ffma_share: float = 0.0

    def counts(self) -> dict[str, float]:
        return {"lds_distinct": self.lds_distinct, "lds_broadcast": self.lds_broadcast, "ldg": self.ldg}

    @property
    def issued_bytes_per_fma(self) -> float:
        return self.ldg * 4.0 * self.vector


def naive_access() -> GemmAccess:
    """threadIdx.x -> row: A read 32 rows apart (32 lines), B one address (1 line)."""
    return GemmAccess("naive", ldg=2.0, lds_distinct=0.0, lds_broadcast=0.0, requests=33.0)


def coalesced_access() -> GemmAccess:
    """threadIdx.x -> column: A one address (1 line), B 32 consecutive floats (1 line)."""
    return GemmAccess("coalesced", ldg=2.0, lds_distinct=0.0, lds_broadcast=0.0, requests=2.0)


def tiled_access(name: str, bm: int, bn: int, tm: int = 1, tn: int = 1, vector: int = 1,
                 coarsen: int = 1, a_loads_per_k: int | None = None, b_loads_per_k: int | None = None,
                 warps_per_sm: int = 0, ffma_share: float = 0.0) -> GemmAccess:
    """A block tile bm x bn staged through shared memory; each thread computes tm x tn outputs.

    Per k a thread loads tm A values (broadcast: lanes of a warp share rows) and tn B values
    (distinct addresses), or the given counts, each `vector` wide. Global loads per FMA:
    (bm + bn) / (bm * bn), divided by vector; `coarsen` = c reuses one A tile for c B tiles
    (PMPP's thread coarsening): (1 + c) / (c * bm) for square bm x bm tiles. Requests assume
    each warp load covers whole 128-byte lines (one line per 32 floats)."""
    a = tm if a_loads_per_k is None else a_loads_per_k
    b = tn if b_loads_per_k is None else b_loads_per_k
    fma_per_k = tm * tn
    if coarsen > 1:
        if bm != bn or tm != 1 or tn != 1:
            raise ValueError("coarsening is modelled for square one-output-per-thread tiles only")
        ldg = (1 + coarsen) / (coarsen * bm)
        a_lds, b_lds = 1.0, 1.0  # PMPP re-reads both operands from shared memory for every output
    else:
        ldg = (bm + bn) / (bm * bn)
        a_lds, b_lds = a / fma_per_k, b / fma_per_k
    return GemmAccess(name, ldg=ldg / vector, lds_distinct=b_lds / vector, lds_broadcast=a_lds / vector,
                      requests=ldg, vector=vector, accumulators=fma_per_k if coarsen == 1 else 1,
                      warps_per_sm=warps_per_sm, ffma_share=ffma_share)


def tensor_core_access(name: str, bm: int, bn: int, mma_tiles: int = 0, warps_per_sm: int = 0) -> GemmAccess:
    """bf16 mma.sync rung: only global traffic is comparable with the fp32 rungs (16-byte
    cp.async of 8 bf16: ldg counts 16-byte copies per FMA). mma_tiles: independent m16n8 accumulator
    tiles per warp (the mma issue ledger's ilp), warps_per_sm as for the fp32 rungs; 0 = not stated."""
    per_fma = (bm + bn) / (bm * bn) / 8
    return GemmAccess(name, ldg=per_fma, lds_distinct=0.0, lds_broadcast=0.0, requests=per_fma * 4,
                      vector=4, tensor_core=True, accumulators=mma_tiles, warps_per_sm=warps_per_sm)


@dataclass(frozen=True)
class StreamAccess:
    """A memory-bound rung over an M x N fp32 tensor, in passes over it.

    reads / writes  -- passes the load / store instructions issue over the whole tensor
    dram_reads      -- passes that reach DRAM if a block's re-read of its own row stays on chip
    aux_bytes_row   -- per-row side traffic (a 1/rms or a row max written and read back)
    weight          -- a length-N weight vector read once per row (from cache after the first)
    """

    name: str
    reads: float
    writes: float
    dram_reads: float
    aux_bytes_row: float = 0.0
    weight: bool = False
