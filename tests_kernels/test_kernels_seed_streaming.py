"""The seed's reduction and fused kernels (RTX 4090) against the byte ledger, two ways:
issued bytes (every load instruction's bytes) and DRAM bytes (a block's re-read of its own row
served on chip). The 4090's achievable bandwidth was never measured in the seed, so the
ledger uses the datasheet's 1008 GB/s and the band says what streaming reaches on GDDR6X.

The main ladder (M = 8192) logged 3 rounds of each kernel: the checks replay round 3 (the last), so the
findings' bands can come from rounds 1-2 (kernel_seed_findings.py); every other row was timed once."""

from __future__ import annotations

import kernel_seed_findings as sf
import pytest

from pytest_anatomy.kernels import fused
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.theory.kernels import reduction_ledger, stream_bytes, stream_ledger

# The seed study's data exists only as recordings: replayed on the cards that hold them.
pytestmark = pytest.mark.targets(recorded="seed-")

BAND = (1.0, 1.15)
WHY = ("lower edge: DRAM bytes cannot move faster than the pin rate; upper: streaming kernels reach 87-100% of "
       "a GDDR6X card's datasheet bandwidth (refresh, read/write turnarounds), and the seed never measured the 4090's")
ACCESS = {"n1": fused.RMSNORM[1].theory, "n2": fused.RMSNORM[2].theory, "n3": fused.RMSNORM[3].theory,
          "n4": fused.RMSNORM[4].theory, "s1": fused.SOFTMAX[1].theory, "s2": fused.SOFTMAX[2].theory,
          "s3": fused.SOFTMAX[3].theory, "s4": fused.SOFTMAX[4].theory}




_ALL = [  # (op, M, N, bytes model, mark)
    *[(op, 8192, 3584, model, None) for op in ("n1", "n3", "n4") for model in ("issued", "dram")],
    ("n2", 8192, 3584, "issued", sf.L2_REREAD[("n2", 8192, 3584)]), ("n2", 8192, 3584, "dram", None),
    *[(op, 16384, 3584, model, None) for op in ("n1", "n3", "n4") for model in ("issued", "dram")],
    ("s1", 8192, 2048, "issued", sf.L2_REREAD[("s1", 8192, 2048)]), ("s1", 8192, 2048, "dram", None),
    ("s2", 8192, 2048, "issued", None), ("s2", 8192, 2048, "dram", sf.S2_DRAM),
    *[(op, 8192, 2048, model, None) for op in ("s3", "s4") for model in ("issued", "dram")],
    *[(op, 16384, 2048, model, None) for op in ("s1", "s3", "s4") for model in ("issued", "dram")],
    ("s1", 32, 152064, "issued", sf.L2_REREAD[("s1", 32, 152064)]), ("s1", 32, 152064, "dram", None),
    ("s2", 32, 152064, "issued", None), ("s2", 32, 152064, "dram", sf.FEW_ROWS),
]
# The "dram" model differs from "issued" only where a rung re-reads on chip (dram_reads < reads):
# elsewhere both count the same bytes and a second row would reconcile the same pair twice.
CASES = [c for c in _ALL if c[3] == "issued" or ACCESS[c[0]].dram_reads != ACCESS[c[0]].reads]


@pytest.mark.gpu
@pytest.mark.parametrize("op,m,n,model", [pytest.param(*c[:4], marks=c[4] or (), id=f"{c[0]}-{c[1]}x{c[2]}-{c[3]}")
                                          for c in CASES])
def test_fused_byte_ledger(op, m, n, model, measured, card, reconcile):
    rec = measured(f"seed-fused.{op}.m{m}.n{n}")
    pred = stream_ledger(ACCESS[op], m, n, bandwidth=card.memory_bandwidth, model=model,
                         bandwidth_source="datasheet (the seed's own bound)")
    reconcile(f"time_{model}_bytes", pred, last_round(rec), ratio=BAND, why=WHY)


def last_round(rec) -> Measurement:
    """The recording's last round: the round the checks replay (the recorded value is the median of all rounds)."""
    time = rec["time"]
    if len(time.samples) < 2:
        return time
    return Measurement(time.samples[-1], time.unit, source=time.source,
                       provenance={**time.provenance, "round": f"{len(time.samples)} of {len(time.samples)}",
                                   "note": "the last round; the earlier rounds band the findings"})


def _round_ratios(measured, card, op: str, m: int, n: int, model: str = "issued") -> list[float]:
    """Each round's measured / predicted time under `model`, as test_fused_byte_ledger computes round 3's."""
    pred = stream_ledger(ACCESS[op], m, n, bandwidth=card.memory_bandwidth, model=model,
                         bandwidth_source="datasheet (the seed's own bound)")
    return [t / pred.value for t in measured(f"seed-fused.{op}.m{m}.n{n}")["time"].samples]


@pytest.mark.gpu
def test_reread_finding_bands_are_the_other_rounds(measured, card):
    """kernel_seed_findings: L2_REREAD_ROUNDS_1_2 (the band) are rounds 1-2 of the 3 the main ladder logged, the
    checked round 3 apart; L2_REREAD_SINGLE is the vocab row's one run; FUSED_ROUND_SPREAD is each main-ladder kernel's
    max/min - 1 over its 3 rounds (a band's half-width leaves the checked kernel's own out: round_scatter)."""
    for (op, m, n), band in sf.L2_REREAD_ROUNDS_1_2.items():
        ratios = _round_ratios(measured, card, op, m, n)
        assert len(ratios) == 3 and band == pytest.approx(ratios[:2], rel=1e-4), (op, ratios)
    for (op, m, n), ratio in sf.L2_REREAD_SINGLE.items():
        ratios = _round_ratios(measured, card, op, m, n)
        assert len(ratios) == 1 and ratio == pytest.approx(ratios[0], rel=5e-4), (op, ratios)
    spread = {}
    for op in ACCESS:
        rounds = measured(f"seed-fused.{op}.m8192.n{3584 if op.startswith('n') else 2048}")["time"].samples
        assert len(rounds) == 3, op
        spread[op] = round(max(rounds) / min(rounds) - 1, 5)
    assert spread == sf.FUSED_ROUND_SPREAD


@pytest.mark.gpu
def test_dram_finding_bands_are_the_other_rounds(measured, card):
    """kernel_seed_findings: S2_DRAM_ROUNDS_1_2 (the band; the reason's bandwidth fraction) are s2's DRAM-byte ratios
    in rounds 1-2 of the main ladder's 3, the checked round 3 apart; S2_ISSUED_OVER_DRAM is the ledger's 12MN / 8MN;
    FEW_ROWS_OBSERVED and FEW_ROWS_ISSUED are the 32-row vocab row's one run, DRAM- and issued-byte."""
    m, n = 8192, 2048
    ratios = _round_ratios(measured, card, "s2", m, n, "dram")
    assert len(ratios) == 3 and sf.S2_DRAM_ROUNDS_1_2 == pytest.approx(ratios[:2], rel=1e-4), ratios
    issued, dram = (stream_bytes(ACCESS["s2"], m, n, model) for model in ("issued", "dram"))
    assert issued == 12 * m * n and sf.S2_ISSUED_OVER_DRAM == issued / dram
    ratios = _round_ratios(measured, card, "s2", 32, 152064, "dram")
    assert len(ratios) == 1 and sf.FEW_ROWS_OBSERVED == pytest.approx(ratios[0], rel=5e-4), ratios
    issued = _round_ratios(measured, card, "s2", 32, 152064)
    assert len(issued) == 1 and sf.FEW_ROWS_ISSUED == pytest.approx(issued[0], rel=5e-4), issued


@pytest.mark.gpu
@pytest.mark.parametrize("rung", ["r4", "r5", "r6"])
def test_reduction_streams_at_bandwidth(rung, measured, card, reconcile):
    """R4 adds one atomic per block instead of writing partials, R5/R6 too (the seed's design):
    4N bytes only. STUDY.md: 95.0-95.1% of 1008 GB/s."""
    n = 2**28
    rec = measured(f"seed-reduction.{rung}.n{n}.b256")
    pred = reduction_ledger(n, 0, read_bandwidth=card.memory_bandwidth, bandwidth_source="datasheet")
    reconcile("time", pred, rec["time"], ratio=(1.0, 1.10),
              why="lower: the pin rate; upper: GDDR6X read streams reach 90-97% of it (reads only, no turnarounds)")


@pytest.mark.gpu
def test_register_rung_refused_the_vocab_row(target, measured):
    rec = measured("seed-fused.s3.m32.n152064")
    assert rec.data["status"] == "refused" and not rec.measurements
