"""The instruction ledger's latency / occupancy term (theory/kernel_issue.py), on the CPU.

Fitted on s5-s7's Nsight Compute counters from the first H200 run (warp cycles per issued
instruction against each rung's accumulators), never on a time. These tests show (1) the fit is
what it says: two parameters over three rungs, each rung's counted pace reproduced within 5%;
(2) fed the same rungs' counted FFMA share and warps, the ledger's time formula lands within 15%
of their recorded times -- in-sample, so a check of the formula (busiest SM, clock, share), not of
its predictive power; (3) the numbers pre-registered for the rungs written after the fit
(sgemm.ISSUE_PREREGISTERED) are what the ledger gives from the recorded counters, so they cannot
drift after those rungs are measured. The out-of-sample check is test_kernels_ladders's
test_sgemm_issue_ledger_preregistered, once the new rungs are recorded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.kernels import nvrtc_facts, sgemm
from pytest_anatomy.kernels.ladders import LADDERS
from pytest_anatomy.kernels.registry import DeviceFacts
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.kernel_issue import fit_issue, issue_time

RESULTS = Path(__file__).resolve().parents[1] / "results"
CARD = "h200"
SHAPE = "4096x4096x4096"
# The ncu run the fit and the pre-registered numbers come from: later profiles of the same rungs must
# not move a pre-registration, so the fit reads this run, not the newest.
FIT_NCU_STAMP = "20261130T021700Z"


def _rung(rid: str):
    return next(v for v in LADDERS["sgemm"] if v.id == rid)


def _ncu(rid: str) -> dict:
    name = f"ncu.sgemm.{rid}.{SHAPE}"
    paths = [p for p in recordings.candidates(RESULTS, CARD, "kernels", name) if f"@{FIT_NCU_STAMP}." in p.name]
    assert paths, f"results/{CARD}/kernels/{name}@{FIT_NCU_STAMP}.json is gone: recordings are never deleted"
    return recordings.load_file(paths[0]).data["kernels"][0]["metrics"]


def _fit():
    rows = {r: (_rung(r).theory.accumulators, _ncu(r)["Warp Cycles Per Issued Instruction"]) for r in sgemm.ISSUE_FIT}
    return fit_issue(rows, sgemm.ISSUE_FIT)


def test_fit_reproduces_its_own_rungs_counted_pace():
    fit = _fit()
    assert fit.c0 > 0 and fit.latency > 0, fit
    assert all(abs(r) <= 0.05 for r in fit.residuals.values()), \
        f"c = c0 + L/ilp misses its own rungs' counted pace by more than 5%: {fit.residuals}"


@pytest.mark.parametrize("rid", sgemm.ISSUE_FIT)
def test_time_formula_in_sample(rid):
    fit, m, spec = _fit(), _ncu(rid), get_hardware(CARD)
    ffma_per_sm = 4096**3 / 32 / spec.sm_count
    share = ffma_per_sm / (m["Executed Ipc Elapsed"] * m["Elapsed Cycles"])  # counted FFMA share of instructions
    pred = issue_time(fit, ilp=_rung(rid).theory.accumulators, warps_per_sm=m["Theoretical Active Warps per SM"],
                      ffma_share=share, m=4096, n=4096, k=4096, sm_count=spec.sm_count,
                      clock_hz=spec.boost_clock_hz, rung=rid, block_tile=sgemm.BLOCK_TILES[rid])
    rec = recordings.load_latest(RESULTS, CARD, "kernels", f"sgemm.{rid}.{SHAPE}")
    measured = rec.measurements["time"]["value"]
    assert pred.value == pytest.approx(measured, rel=0.15), f"{rid}: {pred.value * 1e3:.3f} ms vs {measured * 1e3:.3f} ms"


@pytest.mark.parametrize("rid,label", list(sgemm.ISSUE_PREREGISTERED))
def test_preregistered_numbers_are_the_ledgers(rid, label):
    v, spec = _rung(rid), get_hardware(CARD)
    m, n, k = (int(x) for x in label.split("x"))
    pred = issue_time(_fit(), ilp=v.theory.accumulators, warps_per_sm=v.theory.warps_per_sm,
                      ffma_share=v.theory.ffma_share, m=m, n=n, k=k, sm_count=spec.sm_count,
                      clock_hz=spec.boost_clock_hz, rung=rid, block_tile=sgemm.BLOCK_TILES[rid])
    assert pred.inputs["held_out"], f"{rid} must be outside the fit it is predicted from"
    assert pred.value * 1e3 == pytest.approx(sgemm.ISSUE_PREREGISTERED[(rid, label)], abs=0.005), \
        f"{rid} at {label}: the ledger now gives {pred.value * 1e3:.3f} ms, pre-registered " \
        f"{sgemm.ISSUE_PREREGISTERED[(rid, label)]} ms: the fit's inputs changed after the pre-registration"


def test_fit_needs_two_ilp_values():
    with pytest.raises(ValueError, match="two different ilp"):
        fit_issue({"a": (64, 6.7), "b": (64, 7.1)}, ("a", "b"))


def test_no_latency_band_is_the_ledger_without_its_latency_term():
    """kernel_first_run_findings.ISSUE_LEDGER_NO_LATENCY_RATIO: the s9 finding's lower band edge is the ledger's
    time with
    c = c0 (every staged load hidden) over its time with the fitted c0 + L / ilp, from the same fit."""
    import kernel_first_run_findings as first_run

    fit, t = _fit(), _rung("s9-cp-async-pipeline").theory
    full = min(4.0, t.warps_per_sm / fit.cycles_per_issue(t.accumulators))
    no_latency = min(4.0, t.warps_per_sm / fit.c0)
    assert first_run.ISSUE_LEDGER_NO_LATENCY_RATIO["s9-cp-async-pipeline"] == pytest.approx(full / no_latency, abs=5e-5)


# --- the mma issue ledger: tensor-core rungs priced by their compiled K loop ------------------------
def _mma_fit():
    from pytest_anatomy.theory.kernel_issue import refit_latency

    rid = sgemm.MMA_ISSUE_FIT
    m = _ncu_at(rid, sgemm.MMA_FIT_NCU_STAMP)
    return refit_latency(_fit(), rid, m["Warp Cycles Per Issued Instruction"], _rung(rid).theory.accumulators)


def _ncu_at(rid: str, stamp: str) -> dict:
    name = f"ncu.sgemm.{rid}.{SHAPE}"
    paths = [p for p in recordings.candidates(RESULTS, CARD, "kernels", name) if f"@{stamp}." in p.name]
    assert paths, f"results/{CARD}/kernels/{name}@{stamp}.json is gone: recordings are never deleted"
    return recordings.load_file(paths[0]).data["kernels"][0]["metrics"]


def _counted_over_compiled() -> float:
    """The fit rung's instructions per warp per k-tile as ncu counted them (whole kernel: prologue, epilogue,
    the pipeline's tail) over its compiled loop body's."""
    rid, spec = sgemm.MMA_ISSUE_FIT, get_hardware(CARD)
    m = _ncu_at(rid, sgemm.MMA_FIT_NCU_STAMP)
    bm, bn, bk = sgemm.MMA_BLOCK_TILES[rid]
    warp_ktiles = (4096 // bm) * (4096 // bn) * sgemm.MMA_WARPS_PER_BLOCK[rid] * (4096 // bk)
    counted = m["Executed Ipc Elapsed"] * m["Elapsed Cycles"] * spec.sm_count / warp_ktiles
    return counted / sgemm.MMA_LOOP_BODY[rid][0]


@pytest.mark.parametrize("rid", list(sgemm.MMA_LOOP_BODY))
def test_mma_loop_body_is_the_registrys(rid):
    """The compiled K loop (sm_90, the K % 8 == 0 side) under the device's NVRTC: its instructions per k-tile and
    mmas are nvrtc_facts.MMA_LOOPS's; the mma ledger's pre-registrations priced nvcc's counts (MMA_LOOP_BODY, kept):
    a kernel edit or a compiler that changes the loop changes the count, and this test says so."""
    from pytest_anatomy.kernels import compile as kc

    try:
        for tool in ("nvrtc", "cuobjdump", "nvdisasm"):
            kc.find_tool(tool)
    except kc.ToolMissing as exc:
        pytest.skip(str(exc))
    (call,) = _rung(rid).calls({"M": 4096, "N": 4096, "K": 4096}, DeviceFacts(132))
    loops = kc.loop_bodies(call.source, "sm_90", sgemm.MMA_LOOP_SIDE)[call.kernel]
    main = [lp for lp in loops if lp.get("HMMA") or lp.get("HGMMA")]  # mma.sync, or wgmma (s12)
    assert len(main) == 1, f"{rid}: expected one K loop with HMMA or HGMMA, found {main}"
    mma = main[0].get("HMMA", 0) + main[0].get("HGMMA", 0)
    assert (sum(main[0].values()), mma) == nvrtc_facts.MMA_LOOPS[rid], main[0]
    assert sgemm.MMA_LOOP_BODY[rid][1] == mma


def test_mma_counted_over_compiled_ratio_is_overhead_not_a_second_loop():
    """The ratio carries prologue and epilogue only: above 1 (they exist), under 1.5 (a loop twice as long
    as the compiled one would mean the other branch side runs)."""
    assert 1.0 < _counted_over_compiled() < 1.5


@pytest.mark.parametrize("rid,label", list(sgemm.MMA_ISSUE_PREREGISTERED))
def test_mma_preregistered_numbers_are_the_ledgers(rid, label):
    from pytest_anatomy.theory.kernel_issue import mma_issue_time

    v, spec = _rung(rid), get_hardware(CARD)
    m, n, k = (int(x) for x in label.split("x"))
    pred = mma_issue_time(_mma_fit(), ilp=v.theory.accumulators, warps_per_sm=v.theory.warps_per_sm,
                          warps_per_block=sgemm.MMA_WARPS_PER_BLOCK[rid],
                          issue_per_ktile=sgemm.MMA_LOOP_BODY[rid][0] * _counted_over_compiled(), m=m, n=n, k=k,
                          sm_count=spec.sm_count, clock_hz=spec.boost_clock_hz, rung=rid,
                          block_tile=sgemm.MMA_BLOCK_TILES[rid])
    assert pred.inputs["held_out"], f"{rid} must be outside the fit it is predicted from"
    assert pred.value * 1e3 == pytest.approx(sgemm.MMA_ISSUE_PREREGISTERED[(rid, label)], abs=0.0005), \
        f"{rid} at {label}: the ledger now gives {pred.value * 1e3:.4f} ms, pre-registered " \
        f"{sgemm.MMA_ISSUE_PREREGISTERED[(rid, label)]} ms: the fit's inputs changed after the pre-registration"


# --- the tensor-pipe ledger: a warp-specialised TMA rung, priced by its tiles on the tensor pipe -------------------
def _tensor_pipe_fit():
    from pytest_anatomy.specs.architectures import architecture
    from pytest_anatomy.theory.kernel_issue import fit_tensor_pipe

    spec, rid = get_hardware(CARD), sgemm.TENSOR_PIPE_FIT
    ncu = _ncu_at(rid, sgemm.TENSOR_PIPE_FIT_NCU_STAMP)
    name = f"sgemm.{rid}.{SHAPE}"
    paths = [p for p in recordings.candidates(RESULTS, CARD, "kernels", name)
             if f"@{sgemm.TENSOR_PIPE_FIT_TIMING_STAMP}." in p.name]
    assert paths, f"results/{CARD}/kernels/{name}@{sgemm.TENSOR_PIPE_FIT_TIMING_STAMP}.json is gone"
    timed = recordings.load_file(paths[0]).measurements["time"]["value"]
    flop = architecture(spec.compute_capability).ops("bf16", consumer=False)
    m, n, k = (int(x) for x in SHAPE.split("x"))
    return fit_tensor_pipe(elapsed_cycles=ncu["Elapsed Cycles"], timed_s=timed, m=m, n=n, k=k, sm_count=spec.sm_count,
                           flop_per_sm_cycle=flop, fitted_on=f"{rid} at {SHAPE}"), flop


def test_tensor_pipe_fit_is_cublas_counted_efficiency_and_loaded_clock():
    """The fit's two numbers are physical: cuBLAS's counted cycles hold more than its tensor work (efficiency under
    1) and most of it (over 0.7), and the clock they imply lies between the card's idle floor and its boost clock."""
    fit, _ = _tensor_pipe_fit()
    assert 0.7 < fit.efficiency < 1.0, fit
    assert 1e9 < fit.clock_hz <= get_hardware(CARD).boost_clock_hz, fit


@pytest.mark.parametrize("rid,label", list(sgemm.TENSOR_PIPE_PREREGISTERED))
def test_tensor_pipe_preregistered_numbers_are_the_ledgers(rid, label):
    """s14's pre-registered times (its header, Variant.h200_ms) are what the tensor-pipe ledger gives from the
    recorded cuBLAS counters and time: they cannot drift after s14 is measured."""
    from pytest_anatomy.kernels.registry import shape_label
    from pytest_anatomy.theory.kernel_issue import tensor_pipe_time

    fit, flop = _tensor_pipe_fit()
    m, n, k = (int(x) for x in label.split("x"))
    pred = tensor_pipe_time(fit, m=m, n=n, k=k, sm_count=get_hardware(CARD).sm_count, flop_per_sm_cycle=flop, rung=rid,
                            block_tile=sgemm.TENSOR_PIPE_TILES[rid])
    assert pred.value * 1e3 == pytest.approx(sgemm.TENSOR_PIPE_PREREGISTERED[(rid, label)], abs=0.0005), \
        f"{rid} at {label}: the ledger now gives {pred.value * 1e3:.4f} ms, pre-registered " \
        f"{sgemm.TENSOR_PIPE_PREREGISTERED[(rid, label)]} ms: the fit's inputs changed after the pre-registration"
    shape = {"M": m, "N": n, "K": k}
    assert _rung(rid).preregistered_ms(shape) == sgemm.TENSOR_PIPE_PREREGISTERED[(rid, label)], shape_label(shape)
