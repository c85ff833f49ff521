"""Attention forward (FlashAttention-2 and flash-decoding) as Predictions: FLOPs, HBM bytes, time.

Pure functions of a shape, a tiling, hardware facts and *measured ceilings* passed in as numbers
(theory never imports measure). Conventions:

- FLOPs count the two GEMMs only (QK^T and PV, 2 FLOP per multiply-add): 4*B*H*Nq*Nkv*D for a
  full mask. Softmax's exp/max/sum are not counted (as in the FlashAttention papers); they are
  part of what a stated efficiency absorbs.
- *Useful* causal FLOPs count the visible (query, key) pairs exactly: N(N+1)/2 per head for
  Nq = Nkv = N. *Executed* FLOPs count whole tiles: every tile a kernel computes costs
  4*BLOCK_M*BLOCK_N*D, masked or not, so they depend on the tiling (causal_blocks).
- HBM bytes: *compulsory* = Q, K, V read once (K, V once per KV head: GQA shares them), O written
  once, plus the fp32 log-sum-exp. *Tiled* = what the loads ask for when each query block
  re-reads its head's K and V: (N/BLOCK_M) * 2*N*D*bytes per query head. Which of the two DRAM
  sees depends on whether the K/V of the heads in flight fit in L2 (l2_absorbs).
- Time = max(compute, memory) with compute = executed FLOPs / (efficiency * measured GEMM peak),
  memory = DRAM bytes / measured read bandwidth. The efficiency is a stated range, never fitted
  on the kernel it predicts; its range is the prediction's uncertainty (Efficiency.ratio_band).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_anatomy.theory.prediction import Prediction, Term

LSE_BYTES = 4  # the log-sum-exp is written in fp32, one per query row and head
PARTIAL_BYTES = 4  # flash-decoding's partial outputs and LSEs are fp32


class AttentionShapeError(ValueError):
    """A shape or tiling no kernel can have (non-positive sizes, heads not divisible, ...)."""


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class AttentionShape:
    """One attention call. kv_heads < heads is GQA (kv_heads must divide heads)."""

    batch: int
    heads: int
    seq_q: int
    seq_kv: int
    head_dim: int
    causal: bool = False
    kv_heads: int | None = None
    dtype_bytes: int = 2

    def __post_init__(self) -> None:
        for name in ("batch", "heads", "seq_q", "seq_kv", "head_dim", "dtype_bytes"):
            if getattr(self, name) <= 0:
                raise AttentionShapeError(f"attention shape needs {name} > 0, got {getattr(self, name)!r}")
        if self.heads % self.kv:
            raise AttentionShapeError(f"kv_heads={self.kv} must divide heads={self.heads} (GQA groups are whole)")
        if self.causal and self.seq_q != self.seq_kv:
            raise AttentionShapeError(f"causal prefill needs seq_q == seq_kv, got {self.seq_q} and {self.seq_kv}; "
                                      "model a decode step with seq_q=1 and causal=False")

    @property
    def kv(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def group(self) -> int:
        return self.heads // self.kv

    @classmethod
    def prefill(cls, batch: int, heads: int, n: int, head_dim: int, *, causal: bool = False,
                kv_heads: int | None = None, dtype_bytes: int = 2) -> "AttentionShape":
        return cls(batch, heads, n, n, head_dim, causal, kv_heads, dtype_bytes)

    def inputs(self) -> dict[str, object]:
        return {"B": self.batch, "H": self.heads, "H_kv": self.kv, "N_q": self.seq_q, "N_kv": self.seq_kv,
                "D": self.head_dim, "causal": self.causal, "bytes_per_element": self.dtype_bytes}


@dataclass(frozen=True)
class Tiling:
    """A forward kernel's tile: BLOCK_M query rows per program, BLOCK_N keys per inner step."""

    block_m: int
    block_n: int

    def __post_init__(self) -> None:
        if self.block_m <= 0 or self.block_n <= 0:
            raise AttentionShapeError(f"tile sizes must be > 0, got {self.block_m}x{self.block_n}")


@dataclass(frozen=True)
class Efficiency:
    """A stated fraction of a measured ceiling, with the range the author believes it lies in.

    The prediction uses `mid`; a measurement is consistent with the statement when its
    implied efficiency lies in [lo, hi], i.e. measured/predicted time in [mid/hi, mid/lo]."""

    lo: float
    mid: float
    hi: float
    why: str

    def __post_init__(self) -> None:
        if not (0 < self.lo <= self.mid <= self.hi <= 1):
            raise ValueError(f"efficiency needs 0 < lo <= mid <= hi <= 1, got ({self.lo}, {self.mid}, {self.hi})")
        if not self.why.strip():
            raise ValueError("an efficiency needs why=...: where the assumed range comes from")

    def ratio_band(self) -> tuple[float, float]:
        """measured/predicted time band implied by the efficiency range (time ~ 1/efficiency)."""
        return (self.mid / self.hi, self.mid / self.lo)


# --- FLOPs ---------------------------------------------------------------------------------
def visible_pairs(shape: AttentionShape) -> int:
    """(query, key) pairs one head computes with: Nq*Nkv, or N(N+1)/2 under a causal mask.
    No recording can see it: these useful FLOPs are reported beside each rung, while the time prediction runs on the
    executed tiles (theory mutation flashattn-causal-flops-x2 survives; test_flashattn_theory.py holds it exactly)."""
    if shape.causal:
        return shape.seq_q * (shape.seq_q + 1) // 2
    return shape.seq_q * shape.seq_kv


def attention_flops(shape: AttentionShape) -> Prediction:
    """Useful FLOPs: 4*B*H*D per visible (query, key) pair (QK^T and PV, 2 FLOP per MAC each)."""
    pairs = visible_pairs(shape)
    value = 4.0 * shape.batch * shape.heads * shape.head_dim * pairs
    formula = "4*B*H*D*N(N+1)/2 (causal: visible pairs only)" if shape.causal else "4*B*H*N_q*N_kv*D"
    return Prediction(value, "FLOP", formula, shape.inputs(), (
        Term("QK^T", value / 2, "FLOP", "2*D FLOP per visible pair"),
        Term("PV", value / 2, "FLOP", "2*D FLOP per visible pair")))


def causal_blocks(n: int, tiling: Tiling) -> tuple[int, int]:
    """(unmasked, masked) KV tiles one causal head computes, for a kernel that splits each query
    block's loop into off-diagonal tiles (keys < the block's first query row, no mask) and the
    diagonal band (keys in the block's own rows, masked).

    Query block i covers rows [i*BM, min((i+1)*BM, N)); it visits KV tiles 0..ceil(end_i/BN)-1,
    of which the first floor(i*BM/BN) lie entirely left of its first row. Exact for any N."""
    if tiling.block_m % tiling.block_n:
        raise AttentionShapeError(f"the causal split needs BLOCK_M a multiple of BLOCK_N, got "
                                  f"{tiling.block_m} and {tiling.block_n}")
    unmasked = masked = 0
    for i in range(cdiv(n, tiling.block_m)):
        end = min((i + 1) * tiling.block_m, n)
        visited = cdiv(end, tiling.block_n)
        full = (i * tiling.block_m) // tiling.block_n
        unmasked += full
        masked += visited - full
    return unmasked, masked


def kv_tiles_per_head(shape: AttentionShape, tiling: Tiling) -> int:
    """KV tiles one query head's programs compute in total (full: every tile of every block)."""
    if shape.causal:
        return sum(causal_blocks(shape.seq_q, tiling))
    return cdiv(shape.seq_q, tiling.block_m) * cdiv(shape.seq_kv, tiling.block_n)


def executed_flops(shape: AttentionShape, tiling: Tiling) -> Prediction:
    """FLOPs the tensor cores execute: 4*BM*BN*D per computed tile, masked and edge tiles whole."""
    tiles = kv_tiles_per_head(shape, tiling)
    per_tile = 4.0 * tiling.block_m * tiling.block_n * shape.head_dim
    value = shape.batch * shape.heads * tiles * per_tile
    terms = [Term("tiles_per_head", tiles, "tiles", f"BLOCK_M={tiling.block_m}, BLOCK_N={tiling.block_n}"),
             Term("flops_per_tile", per_tile, "FLOP", "4*BM*BN*D")]
    if shape.causal:
        unmasked, masked = causal_blocks(shape.seq_q, tiling)
        terms += [Term("unmasked_tiles", unmasked, "tiles", "left of the block's first row"),
                  Term("masked_tiles", masked, "tiles", "the diagonal band")]
    return Prediction(value, "FLOP", "B*H*tiles_per_head*4*BM*BN*D",
                      {**shape.inputs(), "BLOCK_M": tiling.block_m, "BLOCK_N": tiling.block_n}, tuple(terms))


# --- bytes ---------------------------------------------------------------------------------
def compulsory_bytes(shape: AttentionShape) -> Prediction:
    """Q, K, V read once (K and V once per KV head), O written once, LSE written once."""
    b = shape.dtype_bytes
    q = shape.batch * shape.heads * shape.seq_q * shape.head_dim * b
    kv = 2 * shape.batch * shape.kv * shape.seq_kv * shape.head_dim * b
    o = q
    lse = shape.batch * shape.heads * shape.seq_q * LSE_BYTES
    return Prediction(q + kv + o + lse, "B", "Q + 2*B*H_kv*N_kv*D*bytes + O + B*H*N_q*4", shape.inputs(), (
        Term("Q", q, "B"), Term("K+V", kv, "B", f"once per KV head ({shape.kv} of {shape.heads} heads)"),
        Term("O", o, "B"), Term("LSE", lse, "B", "fp32")))


def tiled_bytes(shape: AttentionShape, tiling: Tiling) -> Prediction:
    """What the loads ask for: each query block reads its KV head's tiles (all of them, or up to
    the diagonal), so K+V traffic per query head is tiles*BN*D*2*bytes, about
    (N/BLOCK_M)*2*N*D*bytes; Q read once, O and LSE written once. GQA does not reduce it: every
    query head's blocks re-read the shared K/V (the sharing shows up only where L2 absorbs it)."""
    b = shape.dtype_bytes
    tiles = kv_tiles_per_head(shape, tiling)
    kv = shape.batch * shape.heads * tiles * tiling.block_n * shape.head_dim * 2 * b
    q = shape.batch * shape.heads * shape.seq_q * shape.head_dim * b
    lse = shape.batch * shape.heads * shape.seq_q * LSE_BYTES
    return Prediction(q + kv + q + lse, "B", "Q + B*H*tiles_per_head*BN*D*2*bytes + O + LSE",
                      {**shape.inputs(), "BLOCK_M": tiling.block_m, "BLOCK_N": tiling.block_n}, (
                          Term("Q", q, "B"), Term("K+V re-reads", kv, "B", f"{tiles} KV tiles per query head"),
                          Term("O", q, "B"), Term("LSE", lse, "B", "fp32")))


def l2_working_set(shape: AttentionShape, tiling: Tiling, sm_count: int, ctas_per_sm: int = 1) -> Prediction:
    """K+V bytes of the KV heads whose programs run at once.

    Programs are launched query-block-fastest (grid axis 0 = query blocks of one head), so the
    programs in flight (SMs x CTAs per SM) cover resident/blocks_per_head query heads, i.e.
    the KV heads of those query heads (q consecutive heads span at most ceil((q-1)/group)+1 groups)."""
    blocks = cdiv(shape.seq_q, tiling.block_m)
    resident = sm_count * ctas_per_sm
    q_heads = min(shape.batch * shape.heads, cdiv(resident, blocks) + 1)
    kv_heads = min(shape.batch * shape.kv, cdiv(q_heads - 1, shape.group) + 1)  # groups q consecutive heads span
    per_head = 2 * shape.seq_kv * shape.head_dim * shape.dtype_bytes
    return Prediction(kv_heads * per_head, "B", "kv_heads_in_flight * 2*N_kv*D*bytes",
                      {**shape.inputs(), "BLOCK_M": tiling.block_m, "sm_count": sm_count, "ctas_per_sm": ctas_per_sm},
                      (Term("kv_heads_in_flight", kv_heads, "heads",
                            f"{resident} programs / {blocks} query blocks per head (+1 straddling), in groups of {shape.group}"),
                       Term("kv_bytes_per_head", per_head, "B")))


def l2_absorbs(shape: AttentionShape, tiling: Tiling, l2_bytes: int, sm_count: int,
               ctas_per_sm: int = 1) -> bool:
    """True when the in-flight K/V fit in half the L2 (the other half holds Q/O streams and
    lines of other heads; half is this model's stated margin, not a measured split)."""
    return l2_working_set(shape, tiling, sm_count, ctas_per_sm).value <= l2_bytes / 2


def dram_bytes(shape: AttentionShape, tiling: Tiling, l2_bytes: int, sm_count: int,
               ctas_per_sm: int = 1) -> Prediction:
    """DRAM bytes: compulsory where L2 absorbs the re-reads, else the tiled count."""
    absorbed = l2_absorbs(shape, tiling, l2_bytes, sm_count, ctas_per_sm)
    src = compulsory_bytes(shape) if absorbed else tiled_bytes(shape, tiling)
    ws = l2_working_set(shape, tiling, sm_count, ctas_per_sm)
    note = (f"K/V in flight {ws.value / 2**20:.1f} MiB {'<=' if absorbed else '>'} L2/2 = "
            f"{l2_bytes / 2**21:.1f} MiB: DRAM sees the {'compulsory' if absorbed else 'tiled'} count")
    return Prediction(src.value, "B", src.formula, {**src.inputs, "l2_bytes": l2_bytes}, src.terms,
                      (note,))


def streamed_kv_reads(shape: AttentionShape, tiling: Tiling, resident_programs: int) -> Prediction:
    """DRAM reads when one KV head's K/V exceed the L2: Q once, and each KV head's K/V once per
    *wave* of co-resident programs that runs any of its query heads' blocks.

    The programs of a wave start together and walk the KV tiles in the same order at about the
    same rate (full mask), so a tile one of them fetched is still in L2 when the others ask for
    it; the next wave starts the walk again from tile 0, which the walk has long evicted. Programs
    are launched query-block-fastest (grid axis 0 = query blocks of one head), so wave w covers
    programs [w*R, (w+1)*R) and the KV heads of the query heads those span. Between compulsory
    (one wave per KV head) and the tiled count (every program its own pass)."""
    if resident_programs <= 0:
        raise AttentionShapeError(f"resident programs must be > 0, got {resident_programs}")
    blocks = cdiv(shape.seq_q, tiling.block_m)
    total = shape.batch * shape.heads * blocks
    pairs = 0
    for first in range(0, total, resident_programs):
        last = min(first + resident_programs, total) - 1
        kv_first, kv_last = (first // blocks) // shape.group, (last // blocks) // shape.group
        pairs += kv_last - kv_first + 1  # query heads (b, h) in order: their KV heads b*H_kv + h//group rise
    b = shape.dtype_bytes
    per_kv_head = 2 * shape.seq_kv * shape.head_dim * b
    q = shape.batch * shape.heads * shape.seq_q * shape.head_dim * b
    kv_heads = shape.batch * shape.kv
    return Prediction(q + pairs * per_kv_head, "B", "Q + (wave, KV head) pairs * 2*N_kv*D*bytes",
                      {**shape.inputs(), "BLOCK_M": tiling.block_m, "resident_programs": resident_programs},
                      (Term("Q", q, "B"),
                       Term("kv_passes", pairs / kv_heads, "passes per KV head",
                            f"{pairs} (wave, KV head) pairs over {kv_heads} KV heads; {total} programs, "
                            f"{resident_programs} at a time"),
                       Term("K+V", pairs * per_kv_head, "B")))


# --- time ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ceilings:
    """Measured in the session: bf16 tensor-core GEMM rate and read bandwidth, with their source."""

    gemm_flops: float  # FLOP/s
    read_bandwidth: float  # B/s
    source: str

    def __post_init__(self) -> None:
        if self.gemm_flops <= 0 or self.read_bandwidth <= 0:
            raise ValueError(f"ceilings must be > 0, got gemm={self.gemm_flops!r} read={self.read_bandwidth!r}")


def forward_time(shape: AttentionShape, tiling: Tiling, ceilings: Ceilings, efficiency: Efficiency, *,
                 l2_bytes: int, sm_count: int, extra_bytes: float = 0.0, extra_note: str = "") -> Prediction:
    """max(executed FLOPs / (eff*peak), (DRAM bytes + extra) / read bandwidth)."""
    flops = executed_flops(shape, tiling)
    dram = dram_bytes(shape, tiling, l2_bytes, sm_count)
    t_compute = flops.value / (efficiency.mid * ceilings.gemm_flops)
    t_memory = (dram.value + extra_bytes) / ceilings.read_bandwidth
    terms = [Term("t_compute", t_compute, "s", f"{flops.value:.4g} FLOP / ({efficiency.mid} x "
                                                f"{ceilings.gemm_flops / 1e12:.4g} TFLOP/s): {efficiency.why}"),
             Term("t_memory", t_memory, "s", f"{dram.value:.4g} B DRAM"
                  + (f" + {extra_bytes:.4g} B {extra_note}" if extra_bytes else "")
                  + f" / {ceilings.read_bandwidth / 1e12:.4g} TB/s read"),
             *flops.terms]
    return Prediction(max(t_compute, t_memory), "s", "max(FLOP_exec / (eff*peak_gemm), bytes_DRAM / BW_read)",
                      {**flops.inputs, "efficiency": (efficiency.lo, efficiency.mid, efficiency.hi),
                       "peak_gemm": ceilings.gemm_flops, "bw_read": ceilings.read_bandwidth,
                       "ceilings": ceilings.source}, tuple(terms), dram.notes)


def materialized_s_bytes(shape: AttentionShape, passes: int = 3, s_bytes: int = 4) -> Prediction:
    """Bytes of a kernel that writes S = QK^T to HBM and reads it back: passes * B*H*Nq*Nkv*4
    (write once, read for the row max, read again for exp/sum/PV = 3 passes). Every element is
    written, masked ones included, so causal does not halve it."""
    elems = shape.batch * shape.heads * shape.seq_q * shape.seq_kv
    value = passes * elems * s_bytes
    return Prediction(value, "B", f"{passes} * B*H*N_q*N_kv*{s_bytes}", shape.inputs(),
                      (Term("S_elements", elems, "elements"), Term("passes", passes, "", "write, max read, PV read")))


def naive_time(shape: AttentionShape, tiling: Tiling, ceilings: Ceilings, efficiency: Efficiency, *,
               l2_bytes: int, sm_count: int) -> Prediction:
    """The materialising rung: its kernels are serial, so compute and S traffic add, each at its
    own ceiling (the S round trip far exceeds any L2)."""
    flops = executed_flops(_unmasked(shape), tiling)
    s_bytes = materialized_s_bytes(shape)
    compulsory = compulsory_bytes(shape)
    t_compute = flops.value / (efficiency.mid * ceilings.gemm_flops)
    t_memory = (s_bytes.value + compulsory.value) / ceilings.read_bandwidth
    return Prediction(t_compute + t_memory, "s", "FLOP_exec/(eff*peak_gemm) + (S round trip + compulsory)/BW_read",
                      {**flops.inputs, "efficiency": (efficiency.lo, efficiency.mid, efficiency.hi),
                       "peak_gemm": ceilings.gemm_flops, "bw_read": ceilings.read_bandwidth,
                       "ceilings": ceilings.source},
                      (Term("t_compute", t_compute, "s", efficiency.why),
                       Term("t_memory", t_memory, "s", f"{s_bytes.value:.4g} B of S + {compulsory.value:.4g} B "
                            "compulsory, at the read bandwidth (writes priced as reads)"),
                       *s_bytes.terms),
                      ("S is written for every (query, key) pair, so a causal mask saves compute only",))


def _unmasked(shape: AttentionShape) -> AttentionShape:
    """The naive rung computes every tile of S (it masks by writing -inf), causal or not."""
    return AttentionShape(shape.batch, shape.heads, shape.seq_q, shape.seq_kv, shape.head_dim, False,
                          shape.kv_heads, shape.dtype_bytes)


# --- flash-decoding ------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeShape:
    """A batch of single-token queries over contexts of `context` tokens each."""

    batch: int
    heads: int
    kv_heads: int
    context: int
    head_dim: int
    dtype_bytes: int = 2

    def __post_init__(self) -> None:
        for name in ("batch", "heads", "kv_heads", "context", "head_dim", "dtype_bytes"):
            if getattr(self, name) <= 0:
                raise AttentionShapeError(f"decode shape needs {name} > 0, got {getattr(self, name)!r}")
        if self.heads % self.kv_heads:
            raise AttentionShapeError(f"kv_heads={self.kv_heads} must divide heads={self.heads}")

    def inputs(self) -> dict[str, object]:
        return {"B": self.batch, "H": self.heads, "H_kv": self.kv_heads, "L": self.context, "D": self.head_dim,
                "bytes_per_element": self.dtype_bytes}


def decode_splits(shape: DecodeShape, sm_count: int, block_n: int, waves: int = 4) -> int:
    """Split-K count: enough (batch, KV head, split) programs for `waves` programs per SM, never
    a split shorter than one KV tile."""
    programs = shape.batch * shape.kv_heads
    return max(1, min(cdiv(shape.context, block_n), cdiv(waves * sm_count, programs)))


def launched_splits(context: int, splits: int, block_n: int) -> int:
    """The split count the kernel launches when asked for `splits`: each split a whole number of KV tiles, all of one
    length (kernels.flashattn.decode rounds the chunk up to a tile), so fewer can run than were asked. At B=8 H_kv=8
    on 132 SMs the rule asks 9 at every context; 1k-4k launch 8 (chunks of 2, 4 and 8 tiles of 64), 8k-128k launch 9.
    test_flashattn_interpreter checks it against the kernel's own config."""
    return cdiv(context, launched_chunk(context, splits, block_n))


def launched_chunk(context: int, splits: int, block_n: int) -> int:
    """Tokens in each split the kernel launches when asked for `splits` (the last split's may be fewer): the context
    over the splits, rounded up to whole KV tiles. The kernel's own rule mirrored: the interpreter and runner tests
    check it against the launched config; as a prediction it moves only one split's partials (theory mutation
    flashattn-launched-chunk-untiled survives)."""
    if splits < 1 or context < 1 or block_n < 1:
        raise ValueError(f"launched_splits needs context, splits and block_n >= 1, got {context}, {splits}, {block_n}")
    return cdiv(cdiv(context, splits), block_n) * block_n


def decode_kv_bytes(shape: DecodeShape) -> Prediction:
    """K and V of every context token, once per KV head (a program serves its whole query group)."""
    value = 2 * shape.batch * shape.kv_heads * shape.context * shape.head_dim * shape.dtype_bytes
    return Prediction(value, "B", "2*B*H_kv*L*D*bytes", shape.inputs())


def decode_time(shape: DecodeShape, splits: int, ceilings: Ceilings, *, launch_s: float,
                bandwidth_fraction: float = 1.0) -> Prediction:
    """KV bytes / read bandwidth + the split-K reduction: its partial outputs and LSEs
    (B*H*splits*(D+1) fp32) written by the first kernel and read by the second, plus one
    extra kernel boundary `launch_s` (a stated constant, the gap between back-to-back kernels). The partials are
    0.6-0.8 us at 8-9 splits, inside every recorded check's band (theory mutation flashattn-decode-partials-dropped
    survives): no timing has shown them; they are carried because the kernels write and read them."""
    kv = decode_kv_bytes(shape)
    partial = shape.batch * shape.heads * splits * (shape.head_dim + 1) * PARTIAL_BYTES
    q_o = 2 * shape.batch * shape.heads * shape.head_dim * shape.dtype_bytes
    t_kv = kv.value / (bandwidth_fraction * ceilings.read_bandwidth)
    t_reduce = 2 * partial / ceilings.read_bandwidth + launch_s
    t_qo = q_o / ceilings.read_bandwidth
    return Prediction(t_kv + t_reduce + t_qo, "s", "KV/(f*BW_read) + (2*partials)/BW_read + t_launch + (Q+O)/BW_read",
                      {**shape.inputs(), "splits": splits, "bw_read": ceilings.read_bandwidth,
                       "bandwidth_fraction": bandwidth_fraction, "launch_s": launch_s, "ceilings": ceilings.source},
                      (Term("t_kv", t_kv, "s", f"{kv.value:.4g} B of K+V"),
                       Term("t_reduce", t_reduce, "s", f"{partial:.4g} B of fp32 partials written + read, "
                            f"+ {launch_s * 1e6:.3g} us kernel boundary"),
                       Term("t_q_o", t_qo, "s")))
