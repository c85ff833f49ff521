"""The byte ledger's byte counts against the DRAM bytes Nsight Compute counted, per rung.

Recordings: results/<card>/kernels/ncu.<ladder>.<rung>.<shape>@<stamp>.json (scripts/device/
kernels_profile.sh, imported with `pytest-anatomy import-ncu`). The timings in test_kernels_h200
say how long a rung took; these say whether the bytes the byte ledger prices are the bytes that
moved. A rung can be slower than its floor with the right byte count (then the floor's
*bandwidth* is not reached: occupancy, issue or latency limits, which the same recordings
show); a wrong byte count is the ledger's own error.

Reads are counted exactly by the ledger (every input pass that reaches DRAM, per-row side
traffic, the weight vector). Writes cannot be: DRAM writes during a kernel omit the output's
dirty lines still in L2 when it ends, so the measured writes are a lower bound of the output
size, short by at most the L2 capacity.
"""

from __future__ import annotations

import pytest

import kernel_first_run_findings as first_run

from pytest_anatomy.kernels import fused, reduction
from pytest_anatomy.kernels.ladders import LADDERS
from pytest_anatomy.kernels.registry import DeviceFacts, Variant, shape_label
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy import session as anatomy_session
from pytest_anatomy import targets as tg
from pytest_anatomy.theory.kernels import reduction_dram_traffic, stream_dram_traffic
from pytest_anatomy.theory.prediction import Prediction, Term

SHAPES = {"reduction": [reduction.TIMING_SHAPE], "rmsnorm": [fused.RMSNORM_TIMING_SHAPE],
          "softmax": [fused.SOFTMAX_TIMING_SHAPE, fused.VOCAB_SHAPE]}
READ_WHY = ("the reductions read within 0.006% of 4N; the fused rungs' re-reads of their own rows come back "
            "from L2 all but rarely (largest excess: n2-fused +0.81%); 1% keeps that and still separates the "
            "ledger from a missing or extra pass (>= 50%)")

# Findings of the counters of one card's run: {(test, case id): mark}, each mark for that card only.


FINDINGS = {("test_dram_reads_are_the_ledgers_passes", "x2-online-128x152064"): first_run.VOCAB_ROWS_EXCEED_L2}


def _rungs() -> list[tuple[Variant, dict[str, int]]]:
    out = []
    for ladder, shapes in SHAPES.items():
        for shape in shapes:
            for v in LADDERS[ladder]:
                if v.is_baseline or (v.max_cols is not None and shape["N"] > v.max_cols):
                    continue
                out.append((v, shape))
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" not in metafunc.fixturenames:
        return
    targets, results = anatomy_session.of_config(metafunc.config, "kernels")
    name = metafunc.function.__name__
    rungs = _rungs() if name != "test_dram_writes_never_exceed_the_output" else \
        [(v, s) for v, s in _rungs() if v.ladder != "reduction"]
    params = []
    for t in targets:
        for v, shape in rungs:
            rec = f"ncu.{v.ladder}.{v.id}.{shape_label(shape)}"
            if t.live or not tg.has_recording(results, t, "kernels", rec):
                continue  # counters come from Nsight Compute runs (scripts/device/kernels_profile.sh), never live here
            cid = f"{v.id}-{shape_label(shape)}"
            mark = FINDINGS.get((name, cid))
            params.append(pytest.param(t, v, shape, id=f"{t.name}-{cid}", marks=(mark,) if mark else ()))
    metafunc.parametrize("target,v,shape", params)


def _traffic(v: Variant, shape: dict[str, int], sm_count: int) -> tuple[float, float, str]:
    if v.ladder == "reduction":
        partials = reduction.partials_of(v.calls(shape, DeviceFacts(sm_count=sm_count)))
        read, written = reduction_dram_traffic(shape["n"], partials)
        return read, written, f"4N + 4 x {partials:,} partials read back"
    read, written = stream_dram_traffic(v.theory, shape["M"], shape["N"])
    return read, written, (f"{v.theory.dram_reads:g} DRAM read pass(es) of 4MN + side traffic "
                           f"({v.theory.aux_bytes_row:g} B/row) + weight")


def _counter(rec, name: str) -> Measurement:
    return rec[name]


@pytest.mark.gpu
def test_dram_reads_are_the_ledgers_passes(target, v, shape, measured, reconcile):
    rec = measured(f"ncu.{v.ladder}.{v.id}.{shape_label(shape)}")
    read, _, formula = _traffic(v, shape, target.require_spec().sm_count)
    pred = Prediction(read, "B", formula, {"rung": v.id, "shape": shape_label(shape)},
                      notes=("the byte ledger's DRAM model: a block's re-read of its own data stays on chip",))
    reconcile("dram_read_bytes", pred, _counter(rec, "dram_read_bytes"), rel=0.01, why=READ_WHY)


# Mainly an upper bound: writes can fall short of the output by up to the L2 capacity (60 MiB,
# most of a 67 MB softmax output), so the lower end says little. The reductions write 4 KB-4 MB of partials, below the ~2.4 MB of DRAM writes ncu counts even for
# r5-r7, whose output is 4,224 B: writes are checked where the output is tens of MB.
@pytest.mark.gpu
def test_dram_writes_never_exceed_the_output(target, v, shape, card, measured, reconcile):
    rec = measured(f"ncu.{v.ladder}.{v.id}.{shape_label(shape)}")
    _, written, _ = _traffic(v, shape, card.sm_count)
    l2 = card.l2_bytes or 0
    pred = Prediction(written, "B", "output passes x 4MN (+ side traffic, partials)",
                      {"rung": v.id, "l2_bytes": l2},
                      terms=(Term("output", written, "B"), Term("L2 capacity", l2, "B", f"{card.name} spec")))
    lo = max(0.0, 1.0 - l2 / written) if written else 0.0
    reconcile("dram_write_bytes", pred, _counter(rec, "dram_write_bytes"), ratio=(round(lo, 3), 1.01),
              why=f"a kernel's DRAM writes exclude output lines still dirty in L2 when it ends: at most the "
                  f"{l2 / 2**20:.0f} MiB L2 short (lower bound {lo:.3f}), never more than the output (+1% sectors)")
