"""Flash-decoding's partial last wave: what a grid that does not fill its last wave of resident programs costs.

Split-K flash-decoding launches B x H_kv x splits programs of equal work (one chunk of K/V each; the last split's chunk
may be shorter). With R programs resident per SM (theory.kernel_occupancy) the card holds S = SMs x R at once, so the
programs run in waves; the last one holds `tail` = programs mod S (0: whole waves). Two models of what that costs:
- lockstep waves: every wave lasts one program's time at the saturated rate's share (stream / S), so a tail of 48 of
  264 slots costs a whole wave. At the 2 programs an SM of decode_split's compile record that predicts 9 splits 33%
  slower than 8 on the H100 at 64k; they measured 1.6-1.7% (2026-12-07 09:13 and 09:49);
- the one kept here: while enough programs are in flight, K/V streams at the saturated rate; a tail too small to
  saturate it runs each program at its own uncontended rate r (one program's loads in flight over the memory
  latency), so the last wave lasts max(chunk / r, tail x chunk / stream) where streaming its bytes would take
  tail x chunk / stream. The excess is chunk x max(0, 1/r - tail/stream): zero once tail >= stream / r programs.
r is not a spec: it is FITTED, from one pair of calls at the same context that differ only in their tail (the launch
rule's grid and a grid with a nearly whole last wave), and the other grids are predicted from it
(test_flashattn_waves). Assumed, not measured: programs are dispatched in launch order (grid axis 0 fastest), so the
tail is the last `tail` programs, those of the last split first.
No run has judged it yet. The launched kernel holds 5 programs an SM (72 registers, 38,912 B shared, recorded
2026-12-07 12:56), not the plain compile's 2, so on the H100 the launch rule's 9 splits fill one wave 87% and leave
no tail to fit r from: test_flashattn_waves skipped there. A term with no evidence, so no theory mutation of it is
caught (flashattn-tail-chunk-always-whole survives; test_flashattn_waves_plan.py's synthetic cases hold it), nor of the
partials a grid adds (flashattn-grid-partials-dropped: 2 splits' partials are 0.03% of 64k's time in the per-SM test).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_anatomy.theory.attention import PARTIAL_BYTES, DecodeShape, launched_chunk, launched_splits


@dataclass(frozen=True)
class DecodeGrid:
    """One launched split-K grid: `splits` chunks of `chunk` tokens (the last one `context - (splits-1) x chunk`)
    for each of `per_split` (batch, KV head) programs, on `slots` resident program slots."""

    shape: DecodeShape
    splits: int
    chunk: int  # tokens in every split but the last
    slots: int

    def __post_init__(self) -> None:
        if self.splits < 1 or self.chunk < 1 or self.slots < 1:
            raise ValueError(f"a decode grid needs splits, chunk and slots >= 1, got {self.splits}, {self.chunk}, "
                             f"{self.slots}")
        if not (self.splits - 1) * self.chunk < self.shape.context <= self.splits * self.chunk:
            raise ValueError(f"{self.splits} splits of {self.chunk} tokens do not cover {self.shape.context} tokens")

    @property
    def per_split(self) -> int:
        return self.shape.batch * self.shape.kv_heads

    @property
    def programs(self) -> int:
        return self.per_split * self.splits

    @property
    def waves(self) -> float:
        return self.programs / self.slots

    @property
    def tail(self) -> int:
        """Programs in the partial last wave; 0 where the waves are whole."""
        return self.programs % self.slots

    @property
    def tail_fill(self) -> float:
        """The last wave's share of the slots (1.0 where the waves are whole)."""
        return self.tail / self.slots if self.tail else 1.0

    def token_bytes(self) -> int:
        return 2 * self.shape.head_dim * self.shape.dtype_bytes  # one token's K and V row of one KV head

    def tail_chunk_bytes(self) -> int:
        """The longest chunk in the tail (the wave lasts as long as its longest program): the last split's shorter
        chunk where the tail lies within the last split, else a whole chunk."""
        last = self.shape.context - (self.splits - 1) * self.chunk
        tokens = last if self.tail <= self.per_split else self.chunk
        return tokens * self.token_bytes()

    def partial_bytes(self) -> int:
        """The split-K partials (fp32 outputs and LSEs), written by the split kernel and read by the reduction."""
        return 2 * self.shape.batch * self.shape.heads * self.splits * (self.shape.head_dim + 1) * PARTIAL_BYTES


def grid(shape: DecodeShape, splits: int, block_n: int, slots: int) -> DecodeGrid:
    """The grid kernels.flashattn.decode launches when asked for `splits` (chunks rounded up to whole tiles)."""
    chunk = launched_chunk(shape.context, splits, block_n)
    return DecodeGrid(shape, launched_splits(shape.context, splits, block_n), chunk, slots)


def excess_s(g: DecodeGrid, stream_bytes_per_s: float, program_bytes_per_s: float) -> float:
    """The partial last wave's time beyond streaming its bytes at the saturated rate."""
    if not g.tail:
        return 0.0
    return g.tail_chunk_bytes() * max(0.0, 1.0 / program_bytes_per_s - g.tail / stream_bytes_per_s)


def program_rate(g: DecodeGrid, measured_excess_s: float, stream_bytes_per_s: float) -> float:
    """r, FITTED: the uncontended program rate that makes excess_s(g) equal the measured excess (the inverse of
    excess_s where the tail is too small to saturate)."""
    if not g.tail or measured_excess_s <= 0:
        raise ValueError(f"no rate to fit: {g.splits} splits leave a tail of {g.tail} programs and an excess of "
                         f"{measured_excess_s * 1e6:.3g} us (the fit needs a partial wave that costs time)")
    return 1.0 / (measured_excess_s / g.tail_chunk_bytes() + g.tail / stream_bytes_per_s)


def saturating_tail(stream_bytes_per_s: float, program_bytes_per_s: float) -> float:
    """How many programs in flight saturate the stream: a tail at least this large costs nothing."""
    return stream_bytes_per_s / program_bytes_per_s
