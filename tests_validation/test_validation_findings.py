"""The validation findings' reasons quote the numbers their bands are computed from
(validation_findings.py), and a miss whose cause is not established is grouped with its
observed range stated as such."""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest
from sweeps import (CALIBRATION_CARD, CALIBRATION_SPREAD, allreduce_s_per_token, closed_loop, deployment, h200_transfer,
                    serial_allreduce_band, serial_allreduce_steps)
from validation_findings import (
    CUDA_TOTAL_GIB,
    KV_QUEUE_REASON,
    MIN_REPEAT_PAIRS,
    OLD_VLLM_CPU,
    OLD_VLLM_REASON,
    Apart,
    Route,
    cuda_total_reason,
    experiment,
    finding_marks,
    other_runs_band,
    repeat_band,
    route,
    set_apart,
)

from pytest_anatomy.reconcile import Tolerance, Verdict, compare
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import transfer as tr
from pytest_anatomy.units import MiB

# The synthetic routes' card: a label in finding ids, no catalog entry read
SYNTHETIC_CARD = "card-x"


def test_the_pre_0_6_band_factor_is_the_reasons_arithmetic() -> None:
    assert OLD_VLLM_CPU == 1 / (1 - 0.29 / 0.67)
    assert "0.29 / 0.67 = 43%" in OLD_VLLM_REASON and f"= {OLD_VLLM_CPU:.2f}x" in OLD_VLLM_REASON


def test_the_cuda_total_reason_quotes_the_catalog() -> None:
    nvml = get_hardware("h100-sxm").require("nvml_memory_bytes")
    reason = cuda_total_reason("h100-sxm")
    assert f"NVML's {nvml / MiB:,.0f} MiB" in reason
    assert f"{CUDA_TOTAL_GIB[0]:.2f}-{CUDA_TOTAL_GIB[1]:.2f} GiB" in reason


def test_the_calibration_spread_quoted_is_the_one_the_bands_use() -> None:
    """Every reason that names the calibration spread prints sweeps.CALIBRATION_SPREAD, the constant the bands add."""
    quoted = f"+-{CALIBRATION_SPREAD:.0%} calibration spread"
    assert quoted in OLD_VLLM_REASON and quoted in KV_QUEUE_REASON
    marks = finding_marks(SYNTHETIC_CARD, "src", "vllm", [[route(2.0, 1.0, (0.9, 1.1), "latency")]], "Candidates: none.")
    assert quoted in marks[0][0].kwargs["reason"]


def test_a_sourced_cause_keeps_its_band_and_unexplained_misses_share_their_observed_range() -> None:
    sourced = route(1.5, 1.0, (0.9, 1.1), "latency", (("cause", "why", (1.2, 1.8)),))
    assert sourced == Route("latency", 1.5, (0.9, 1.1), ("cause", "why", (1.2, 1.8)))
    misses = [[route(2.0, 1.0, (0.9, 1.1), "latency")], [route(3.0, 1.0, (0.9, 1.1), "latency")], [sourced], [None]]
    marks = finding_marks(SYNTHETIC_CARD, "src", "vllm", misses, "Candidates: none.")
    open_ = marks[0][0].kwargs
    assert marks[1][0].kwargs == open_ and marks[3] == []
    assert open_["expected"] == (2.0, 3.0)
    assert "measured/predicted 2 to 3, median 2.5 (1 other misses have a sourced cause)" in open_["reason"]
    assert marks[2][0].args == ("cause",) and marks[2][0].kwargs["expected"] == (1.2, 1.8)


def _open_misses(ratios: dict[str, list[float]]) -> tuple[list[list[Route | None]], list[str]]:
    """One latency miss without a sourced cause per ratio, each case named by its recording."""
    cases = [(run, x) for run, xs in ratios.items() for x in xs]
    return [[route(x, 1.0, (0.9, 1.1), "latency")] for _, x in cases], [run for run, _ in cases]


def test_an_open_miss_is_banded_by_the_other_recordings_never_its_own() -> None:
    """The band of a miss in recording c is a's and b's range (1.5-1.7) widened by the most one of them reached
    outside the other (a's 1.6 lies 1.6/1.5 - 1 beyond b's 1.5 at the top, b's 1.5 is 1 - 1.5/1.6 below a's): c's
    own 1.9 is not in it."""
    ratios = {"a": [1.6, 1.7], "b": [1.5], "c": [1.9]}
    routes, runs = _open_misses(ratios)
    marks = finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.", runs)
    kw = marks[3][0].kwargs
    scatter = max(1.7 / 1.5 - 1, 1 - 1.5 / 1.6)
    assert kw["band_from"] == "other-runs"
    assert kw["expected"] == pytest.approx((1.5 * (1 - scatter), 1.7 * (1 + scatter)), abs=1e-4)
    assert other_runs_band(ratios, "c") == kw["expected"]


@pytest.mark.parametrize(("mutated", "verdict"), [(1.65, Verdict.FINDING), (1.2, Verdict.DIVERGE),
                                                (2.5, Verdict.DIVERGE), (1.8, Verdict.FINDING)])
def test_the_checked_recordings_value_moves_its_verdict_and_not_its_band(mutated: float, verdict: Verdict) -> None:
    """Mutating the checked recording's ratio leaves its band where it was (a's and b's 1.5-1.7 widened by a's
    1.7 / 1.55 - 1 reach above b, 1.3548-1.8646 rounded outward), so the band cannot follow it, and moves the
    verdict: inside it a finding, outside it a divergence."""
    ratios = {"a": [1.6, 1.7], "b": [1.5, 1.55], "c": [1.65]}
    band = other_runs_band(ratios, "c")
    assert band == (1.3548, 1.8646)
    routes, runs = _open_misses({**ratios, "c": [mutated]})
    mark = finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.", runs)[-1][0].kwargs
    assert mark["expected"] == band
    got = compare("latency", 1.0, mutated, Tolerance(ratio=(0.9, 1.1), why="the declared band"),
                  finding={"id": "f", "reason": mark["reason"], "expected": mark["expected"]}).verdict
    assert got is verdict


def test_fewer_than_two_other_recordings_keep_the_observed_range_and_say_checked_run() -> None:
    """With one other recording no scatter between runs is measured: the band stays the observed range, the case's
    own ratio in it, and says so."""
    routes, runs = _open_misses({"a": [1.6], "b": [1.8]})
    marks = finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.", runs)
    assert {m[0].kwargs["band_from"] for m in marks} == {"checked-run"}
    assert marks[0][0].kwargs["expected"] == (1.6, 1.8)
    assert other_runs_band({"a": [1.6], "b": [1.8]}, "b") is None


def test_misses_above_and_below_their_bands_are_separate_findings() -> None:
    """A finding whose reason covered misses on both sides would explain both signs: each side is its own id."""
    routes = [[route(2.0, 1.0, (0.9, 1.1), "latency")], [route(0.5, 1.0, (0.9, 1.1), "latency")],
              [route(3.0, 1.0, (0.9, 1.1), "throughput")]]
    ids = [m[0].args[0] for m in finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.")]
    assert ids == ["src-card-x-vllm-latency-above-cause-not-established",
                   "src-card-x-vllm-latency-below-cause-not-established",
                   "src-card-x-vllm-throughput-cause-not-established"]
    marks = finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.")
    assert marks[0][0].kwargs["expected"] == (2.0, 2.0) and marks[1][0].kwargs["expected"] == (0.5, 0.5)
    assert "lie above their declared bands" in marks[0][0].kwargs["reason"]
    assert "1 misses on the other side are a finding of their own" in marks[1][0].kwargs["reason"]


def test_a_group_of_its_own_is_banded_by_its_own_recordings_only() -> None:
    """Misses routed with a group (the TP 1 rows, which no all-reduce cause can reach) form their own finding, and
    their band comes from that group's other recordings only: the other group's misses never enter it."""
    rows = {"a": 1.2, "b": 1.25, "c": 1.3, "x": 2.0, "y": 2.2, "z": 2.4}
    routes = [[route(x, 1.0, (0.9, 1.1), "latency", group="tp1" if run in "abc" else "")] for run, x in rows.items()]
    marks = [m[0].kwargs | {"id": m[0].args[0]} for m in
             finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.", list(rows))]
    assert {m["id"] for m in marks[:3]} == {"src-card-x-vllm-latency-tp1-cause-not-established"}
    assert {m["id"] for m in marks[3:]} == {"src-card-x-vllm-latency-cause-not-established"}
    assert marks[0]["expected"] == other_runs_band({"b": [1.25], "c": [1.3]}, "a")
    assert marks[0]["band_from"] == "other-runs" and marks[0]["expected"][1] < 2.0
    assert "3 other misses on this side are a finding of their own" in marks[0]["reason"]


def test_named_rows_beyond_every_other_recording_are_set_apart_and_nothing_else_is() -> None:
    """A named row whose miss lies outside what every other recording's misses span becomes its own finding, banded by
    its observed range (checked-run); a named row inside that span stays with its group, and an unnamed row beyond it
    is not set apart (set_apart is no catch-all: it would hide every future divergence)."""
    ratios = {"a": [1.5, 1.7], "b": [1.4, 1.6], "c": [2.7, 1.55], "d": [1.2]}
    routes, runs = _open_misses(ratios)
    ids = [f"{run}:{i}" for run, xs in ratios.items() for i in range(len(xs))]
    named = Apart("extreme", "latency", ("c:0", "c:1"), "Why: none computed.")
    out = set_apart(SYNTHETIC_CARD, "src", "vllm", routes, ids, runs, [named])
    extreme, inside, unnamed = out[4][0], out[5][0], out[6][0]
    assert extreme is not None and inside is not None and unnamed is not None
    assert extreme.band_from == "checked-run" and extreme.finding is not None
    fid, reason, band = extreme.finding
    assert fid == "src-card-x-vllm-latency-above-extreme-cause-not-established" and band == (2.7, 2.7)
    assert "beyond the 1.2-1.7 that this metric's other misses above their bands span" in reason
    assert inside.finding is None and unnamed.finding is None
    marks = finding_marks(SYNTHETIC_CARD, "src", "vllm", out, "Candidates: none.", runs)
    assert marks[4][0].kwargs["band_from"] == "checked-run" and marks[4][0].args == (fid,)
    assert "(1 other misses have a sourced cause)" not in marks[0][0].kwargs["reason"]


def test_a_named_row_inside_the_other_recordings_span_stays_in_its_group() -> None:
    routes, runs = _open_misses({"a": [1.5, 2.0], "b": [1.4], "c": [1.8]})
    out = set_apart(SYNTHETIC_CARD, "src", "vllm", routes, ["a:0", "a:1", "b:0", "c:0"], runs,
                    [Apart("extreme", "latency", ("c:0",), "Why.")])
    assert out == routes


def test_the_serialized_all_reduce_is_the_step_models_own_traffic_as_time_after_the_step() -> None:
    """sweeps.allreduce_s_per_token is step_model's all-reduce bytes over one NVLink direction of the catalog's card,
    and SerialAllReduceSteps adds exactly new tokens x that to the step without those bytes in its roofline."""
    transfer = h200_transfer()
    model = load_model("llama-3.1-70b")
    nvlink, _ = tr.NVLINK_TOTAL_BPS[CALIBRATION_CARD]
    per_token = allreduce_s_per_token(CALIBRATION_CARD, "llama-3.1-70b", 8)
    assert per_token == pytest.approx(2 * model.num_layers * model.hidden_size * 2 * 2 * 7 / 8 / (nvlink / 2))
    dep = deployment(CALIBRATION_CARD, "llama-3.1-70b", "fp8", 8, tr.ALLREDUCE_LATENCY_S[1])
    serial = serial_allreduce_steps(transfer, dep)
    plain = dataclasses.replace(tr.step_model(transfer, dep), kv_token_bytes=serial.kv_token_bytes)
    prefill = ((512, 0),)
    assert serial.seconds(32, 32 * 8704.0, prefill) == pytest.approx(
        plain.seconds(32, 32 * 8704.0, prefill) + (32 + 512) * per_token)


def test_the_serialized_all_reduce_band_only_adds_and_is_the_plain_band_at_tp1() -> None:
    """A cost that only adds time: the band lies at or above closed_loop's (the finding catches misses above their
    bands only), and at TP 1, with no all-reduce, it is closed_loop's band itself."""
    transfer = h200_transfer()
    for tp in (1, 8):
        args = (CALIBRATION_CARD, "llama-3.1-70b", "fp8", tp, 32, 8192, 1024)
        _, lo, hi = closed_loop(transfer, *args)["tpot_mean"]
        s_lo, s_hi = serial_allreduce_band(transfer, *args)
        if tp == 1:
            assert (s_lo, s_hi) == pytest.approx((lo, hi))
        else:
            assert s_lo >= lo and s_hi > hi


def _repeated(ratios: dict[str, list[float]]) -> tuple[list[list[Route | None]], list[str], list[str]]:
    """One latency miss per ratio, all in one recording; an experiment's second ratio is its repeat (id key.r2)."""
    cases = [(key if i == 0 else f"{key}.r{i + 1}", x) for key, xs in ratios.items() for i, x in enumerate(xs)]
    return [[route(x, 1.0, (0.9, 1.1), "latency")] for _, x in cases], ["rec"] * len(cases), [c for c, _ in cases]


# Six repeated experiments whose first run is 1-3% slower than the second, and one judged experiment "j"
_PAIRS = {"a": [2.02, 2.0], "b": [2.04, 2.0], "c": [2.06, 2.0], "d": [2.03, 2.0], "e": [2.05, 2.0], "f": [2.02, 2.0]}


def test_a_repeat_bands_a_miss_that_no_other_recording_holds() -> None:
    """One recording holds every miss, so other_runs_band has nothing; the source's repeat of the judged experiment
    bands it: the repeat's ratio times the 99% prediction interval of ln(first / later) over the other pairs (their
    mean carries the first run's drift). The judged run's own value never enters its band."""
    routes, runs, ids = _repeated({**_PAIRS, "j": [2.3, 2.25]})
    marks = finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.", runs, ids)
    first, repeat = marks[-2][0].kwargs, marks[-1][0].kwargs
    diffs = [math.log(a / b) for a, b in _PAIRS.values()]
    half = 4.032 * statistics.stdev(diffs) * math.sqrt(1 + 1 / 6)  # t(0.995, 5 degrees of freedom)
    mean = statistics.fmean(diffs)
    assert first["band_from"] == repeat["band_from"] == "other-runs"
    assert first["expected"] == pytest.approx((2.25 * math.exp(mean - half), 2.25 * math.exp(mean + half)), abs=1e-4)
    assert repeat["expected"] == pytest.approx((2.3 * math.exp(-mean - half), 2.3 * math.exp(-mean + half)), abs=1e-4)
    assert "repeat row" in first["reason"]
    moved = finding_marks(SYNTHETIC_CARD, "src", "vllm", _repeated({**_PAIRS, "j": [2.6, 2.25]})[0],
                          "Candidates: none.", runs, ids)
    assert moved[-2][0].kwargs["expected"] == first["expected"]  # the judged run moved, its band did not


def test_no_repeat_or_too_few_pairs_keep_checked_run() -> None:
    """An experiment run once has no other run; with fewer than MIN_REPEAT_PAIRS pairs elsewhere no spread is
    measured: both stay banded by their own range (checked-run), as before repeats counted."""
    routes, runs, ids = _repeated({**_PAIRS, "j": [2.3]})
    assert finding_marks(SYNTHETIC_CARD, "src", "vllm", routes, "Candidates: none.", runs, ids)[-1][0].kwargs[
        "band_from"] == "checked-run"
    few = {k: _PAIRS[k] for k in list(_PAIRS)[:MIN_REPEAT_PAIRS - 1]}
    routes, runs, ids = _repeated({**few, "j": [2.3, 2.25]})
    assert {m[0].kwargs["band_from"] for m in finding_marks(SYNTHETIC_CARD, "src", "vllm", routes,
                                                            "Candidates: none.", runs, ids)} == {"checked-run"}
    assert repeat_band({"j": {1: 2.3, 2: 2.25}}, "j", 1) is None
    assert experiment("qwen.n4:l128.b64.r2") == ("qwen.n4:l128.b64", 2) and experiment("x:l1") == ("x:l1", 1)
