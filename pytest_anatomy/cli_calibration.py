"""`predict latency`'s calibrated default: the typical recorded session of a GPU, fitted.

For a --hardware with recordings under results/<hw>/latency and results/<hw>/ceilings, the
answer uses the session, among those that measured Qwen2.5-7B's b=1 decode step, whose b=1 residual was the
median when PINNED_SESSION pinned it, else the median one (typical_session_b1: each visit draws another card, and
neither one card nor one more session should move every answer): that session's
ceilings (read bandwidth, bf16 matmul) and the overhead and efficiency fitted on it by the
latency suite's own recipe (theory/calibration.py): t_overhead from the session's tiny-hidden
overhead models (c0 + c_layer x layers) where it ran them, else Qwen's b=1 residual; eta from the
8,192-token prefill, or from the session's GEMM timings at each step's token count where it has them.
Without such a session the datasheet roofline stays, and the notes say why."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pytest_anatomy import recordings
from pytest_anatomy.specs.catalog import CONFIG_DIR
from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import calibration as cal
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.calibration import SessionPoints, fit_engine

# The model every recorded calibration session ran (tests_latency: engine_setup).
CALIBRATION_MODEL = "qwen2.5-7b"
DECODE, ENGINE, PREFILL = (f"{CALIBRATION_MODEL}.decode.b1", f"{CALIBRATION_MODEL}.engine",
                           f"{CALIBRATION_MODEL}.prefill.l8192")
PREFILL_TOKENS = 8192


@dataclass(frozen=True)
class RecordedCalibration:
    ceilings: lat.Ceilings
    calib: lat.EngineCalibration
    recordings: tuple[str, ...]  # the files the numbers came from

    def note(self) -> str:
        return (f"calibrated from the typical recorded session ({', '.join(self.recordings)}): ceilings "
                f"{self.ceilings.bandwidth / 1e9:.4g} GB/s read, {self.ceilings.peak / 1e12:.4g} TFLOP/s bf16 matmul, "
                f"t_overhead {self.calib.step_overhead_s * 1e3:.4g} ms, eta {self.calib.compute_efficiency:.3f}, "
                f"fitted on {CALIBRATION_MODEL} under vLLM 0.26.0; --uncalibrated for the datasheet roofline")


def recorded_calibration(results: Path, hw: HardwareSpec) -> RecordedCalibration | str:
    """The typical session's calibration for `hw` (typical_session_b1), or the reason there is none (for the notes)."""
    key = (Path(results).resolve(), hw.name)
    if key not in _CACHE:  # reading and fitting four recordings per answer would dominate its time
        _CACHE[key] = _fit(Path(results), hw)
    return _CACHE[key]


_CACHE: dict[tuple[Path, str], RecordedCalibration | str] = {}


def refit_calibration(results: Path, hw: HardwareSpec) -> RecordedCalibration | str:
    """recorded_calibration without its cache: the fit again, as a theory changed in-process gives it (the checks
    that mutate a term and refit, tests_latency/test_latency_preregistered.py)."""
    return _fit(Path(results), hw)


def session_calibration(results: Path, hw: HardwareSpec, b1: recordings.Recording) -> RecordedCalibration | str:
    """The same recipe on one named session (its Qwen2.5-7B b=1 recording) instead of the median one: what the theory
    predicts for another model measured in that session, with that session's own ceilings and calibration."""
    return _fit(Path(results), hw, b1)


def _fit(results: Path, hw: HardwareSpec, session: recordings.Recording | None = None) -> RecordedCalibration | str:
    where = results / hw.name
    try:
        b1 = session or typical_session_b1(results, hw)
        engine = recordings.load_beside(results, hw.name, "latency", ENGINE, b1)
        l8192 = recordings.load_beside(results, hw.name, "latency", PREFILL, b1)
        ceil = recordings.load_beside(results, hw.name, "ceilings", "ceilings", b1)
    except recordings.MissingRecording:
        return (f"no recorded calibration session for {hw.name} (a {DECODE} run with its ceilings, engine and "
                f"{PREFILL} under {where}): datasheet roofline, a lower bound on time")
    except (recordings.RecordingError, OSError) as exc:
        return f"the recordings under {where} cannot be read ({exc}): datasheet roofline, a lower bound on time"
    try:
        used = tuple(str(r[q].provenance.get("recording", r.name)) for r, q in (
            (ceil, "read_bandwidth.value"), (b1, "step_time_s"), (engine, "resolved.max_num_batched_tokens"),
            (l8192, "engine_prefill_s.median")))
        ceilings = lat.Ceilings.measured(hw, bandwidth=ceil["read_bandwidth.value"].value,
                                         peak=ceil["matmul_bf16.value"].value,
                                         source=f"read_bandwidth (4 GiB sum) and matmul_bf16 (8192^3), {used[0]}")
        settings = b1.data["run"]["settings"]
        points = SessionPoints(
            b1["step_time_s"].value, settings["input_len"] + settings["output_len"] / 2, f"{DECODE}:step_time_s",
            PREFILL_TOKENS, l8192["engine_prefill_s.median"].value, f"{PREFILL}:engine_prefill_s.median",
            int(engine["resolved.max_num_batched_tokens"].value))
        name = f"vllm-0.26.0@{hw.name} (CUDA graphs, async scheduling), recorded {b1.recorded_at}"
        qwen = load_model(CALIBRATION_MODEL)
        measured_apart = _tiny_overhead(results, hw, b1, ceilings)
        overhead = measured_apart if cal.TINY_OVERHEAD_IS_ADDITIVE else None
        if overhead is None:
            calib = fit_engine(qwen, ceilings, points, name=name)
            counts = _tiny_layer_counts(results, hw, b1)
            if measured_apart is not None:
                calib = replace(calib, notes=(*calib.notes, cal.TINY_OVERHEAD_NOT_USED))
            elif len(counts) == 1:  # no slope from one point, and none is assumed
                calib = replace(calib, notes=(*calib.notes, (
                    f"t_overhead is not from the tiny-hidden models: this session ran them at {counts[0]} layers "
                    "only, and c0 + c_layer x layers needs two layer counts; Qwen2.5-7B's b=1 residual stays the "
                    "calibration")))
        else:  # the overhead measured apart; eta still from the prefill, overhead kept
            calib = lat.fit_compute_efficiency(qwen, ceilings, lat.prefill_work(PREFILL_TOKENS, points.max_num_batched_tokens),
                                               points.prefill_s, cal.engine_from_overhead(qwen, overhead, name=name),
                                               fitted_on=points.prefill_name)
            used += tuple(overhead.fitted_on)
        # eta at the step's own token count from the session's GEMM timings, where it has them
        calib = cal.with_gemm_efficiency(calib, qwen, cal.gemm_seconds(ceil.measurements), ceilings.peak)
    # A quantity the session lacks, or a fit that has nothing to fit (a step faster than its roofline).
    except (KeyError, TypeError, ValueError) as exc:
        return (f"the {'named' if session else 'typical'} session under {where} ({b1.recorded_at}) gives no usable "
                f"calibration ({exc}): "
                "datasheet roofline, a lower bound on time")
    return RecordedCalibration(ceilings, calib, used)


def typical_session_b1(results: Path, hw: HardwareSpec) -> recordings.Recording:
    """The b=1 decode recording of `hw`'s typical session: the one PINNED_SESSION names where it is among the card's
    complete recorded sessions, else the one whose b=1 residual (the step less its bare roofline at that session's read
    ceiling) is the median over every complete session of `hw` (middle_session). Why not the newest: each visit draws
    a different card, and the tenth H200 card's residual (1.358-1.384 ms) lay below the nine before it (1.485-1.551),
    so a default taken from whichever card came last moves every answer with that card. Why pinned, not the median of
    the day: each new session moves the median by half a rank, and the session a rank away has its own ceilings and
    efficiency (12-01 04:47 to 06:53 moved a B200 transfer's predicted TPOT by 2%), so every recording would move
    every default answer. MissingRecording when there is no session."""
    ranked, pinned = ranked_sessions(results, hw), PINNED_SESSION.get(hw.name)
    hit = None if not pinned else next(
        (b1 for _, _, b1 in ranked if recordings.same_instant(pinned, b1.recorded_at)), None)
    return hit if hit is not None else _middle(results, hw, ranked)


def middle_session(results: Path, hw: HardwareSpec) -> recordings.Recording:
    """The b=1 recording of the session whose b=1 residual is the median over `hw`'s complete sessions that
    NOT_A_CALIBRATION does not name (the newer of two at the middle): what PINNED_SESSION pins, when it is pinned."""
    return _middle(results, hw, ranked_sessions(results, hw))


def _middle(results: Path, hw: HardwareSpec,
            ranked: list[tuple[float, str, recordings.Recording]]) -> recordings.Recording:
    if not ranked:
        return recordings.load_latest(results, hw.name, "latency", DECODE)  # raises, or the one there is
    return ranked[len(ranked) // 2][2]


def ranked_sessions(results: Path, hw: HardwareSpec) -> list[tuple[float, str, recordings.Recording]]:
    """b1_residuals less the sessions NOT_A_CALIBRATION names: the sessions a default calibration may come from."""
    left_out = NOT_A_CALIBRATION.get(hw.name, {})
    return [r for r in b1_residuals(results, hw)
            if not any(recordings.same_instant(at, r[2].recorded_at) for at in left_out)]


# The session each recorded card's default calibration comes from: the median session (middle_session) on the day it
# was pinned. A new session of the card leaves it, and so every default answer, where it was; the suite checks that
# it still ranks in the middle third of the card's sessions (tests_plugin/test_cli_latency.py:
# test_the_calibration_session_is_a_typical_card) and names the median to pin when it does not, a deliberate change
# whose moved answers are reviewed in the same commit. A card not pinned (a user's own recordings) takes the
# median of its sessions.
PINNED_SESSION: dict[str, str] = {
    "h200": "2026-12-01T04:47:39.125311Z",  # pinned 2026-12-06, rank 19 of 37 (the 09:41 session left out)
    "h100-sxm": "2026-12-05T21:36:27Z",  # pinned 2026-12-06, rank 4 of 7
}


# Sessions that never become the default calibration (neither pinned nor the median), by card and recorded_at, each
# with why: a session whose host-side times ran beyond every other session's (tests_latency:
# h200-one-session-above-every-other) would carry that anomaly into every answer the day it became the median, and
# admitting it moved the median session by one rank (12-01 04:47 to 06:53), moving a B200 transfer's predicted TPOT by
# 2% (tests_validation, aiconfigurator c64). Its runs stay recorded and checked; only the default calibration leaves
# it out.
NOT_A_CALIBRATION: dict[str, dict[str, str]] = {
    "h200": {"2026-12-06T09:41:35Z": "its Qwen2.5-7B b=128 step and 128-token lone prompt ran above every other H200 "
                                     "session's (h200-one-session-above-every-other)"},
}


def b1_residuals(results: Path, hw: HardwareSpec) -> list[tuple[float, str, recordings.Recording]]:
    """(b=1 step less its bare roofline at that session's read ceiling, stamp, b=1 recording) of every complete
    recorded session of `hw`, smallest residual first: the step overhead each session measured."""
    qwen = load_model(CALIBRATION_MODEL)
    ranked = []
    for path in recordings.candidates(results, hw.name, "latency", DECODE):
        b1 = recordings.load_file(path)
        try:
            ceil = recordings.load_beside(results, hw.name, "ceilings", "ceilings", b1)
            for name in (ENGINE, PREFILL):
                recordings.load_beside(results, hw.name, "latency", name, b1)
            s = b1.data["run"]["settings"]
            ceilings = lat.Ceilings.measured(hw, bandwidth=ceil["read_bandwidth.value"].value,
                                             peak=ceil["matmul_bf16.value"].value, source="typical_session_b1")
            roofline = lat.decode_step_time(qwen, ceilings, lat.UNCALIBRATED, 1, s["input_len"] + s["output_len"] / 2)
            ranked.append((b1["step_time_s"].value - roofline.value, recordings.stamp_of(b1.recorded_at), b1))
        except (recordings.MissingRecording, KeyError, TypeError, ValueError):
            continue  # an incomplete session calibrates nothing
    ranked.sort(key=lambda r: (r[0], r[1]))
    return ranked


# Tiny-hidden twins of the calibration model (scripts/device/latency_plan.py --overhead-models).
OVERHEAD_MODELS = ("qwen2.5-7b-tiny-l28", "qwen2.5-7b-tiny-l2")
OVERHEAD_BATCHES = (1, 16, 64, 128)


def _tiny_layer_counts(results: Path, hw: HardwareSpec, b1: recordings.Recording) -> list[int]:
    """The layer counts of the tiny models b1's session ran at b=1."""
    counts = []
    for model_name in OVERHEAD_MODELS:
        try:
            recordings.load_beside(results, hw.name, "latency", f"{model_name}.decode.b1", b1)
        except recordings.MissingRecording:
            continue
        counts.append(load_model(CONFIG_DIR / "overhead" / f"{model_name}.json").num_layers)
    return counts


def _tiny_overhead(results: Path, hw: HardwareSpec, b1: recordings.Recording,
                   ceilings: lat.Ceilings) -> cal.LayerOverhead | None:
    """The layer overhead of b1's session from its tiny models' decode steps, or None without them."""
    steps = []
    for model_name in OVERHEAD_MODELS:
        tiny = load_model(CONFIG_DIR / "overhead" / f"{model_name}.json")
        for b in OVERHEAD_BATCHES:
            try:
                r = recordings.load_beside(results, hw.name, "latency", f"{model_name}.decode.b{b}", b1)
            except recordings.MissingRecording:
                continue
            s = r.data["run"]["settings"]
            steps.append(cal.overhead_step(tiny, b, r["step_time_s"].value, s["input_len"], s["output_len"], ceilings,
                                           f"{model_name}.decode.b{b}:step_time_s"))
    try:
        return cal.fit_layer_overhead(steps) if steps else None
    except ValueError:  # one layer count only
        return None
