"""Shared pieces of the latency suite (imported by its conftest and tests): the seed's RTX 4090
and our H200, each as a `Setup` of ceilings, an engine calibration and the scheduler limits,
plus a cached simulator.

Calibration (theory/latency.py: t_step = max(bytes/BW, FLOPs/(eta x peak)) + t_overhead) is
fitted per engine and GPU on named in-sample points, listed as `FitPoint`s in `Setup.fits`:
each names the fitted recording, its workload settings (read from the recording) and the
quantities of that workload the fitted constant pins down. A check of the same workload and
quantity -- another round of the same run -- is a repeat of the fit point: it tests
reproducibility, not the model, and says so in its test id (`-fit-repeat`) and its
Prediction's notes (`Setup.check_held_out`, which fails when a declaration is wrong either
way). Both setups are for Qwen2.5-7B. The H200's t_overhead is measured apart on tiny-hidden
models where a session ran them at two layer counts or more (conftest.build_engine_setup; none has
yet: the 2026-12-01 sessions ran the 28-layer twin only); on every recorded session it is Qwen's
b=1 residual, checked on Llama-3.1-8B (test_latency_steps.py::
test_decode_overhead_transfers_to_a_second_model), which differs from Qwen in KV per token (2.3x)
and layers (32 vs 28) but not in weight scale, lm_head or FFN share.
Tolerances (step_budget) are the recordings' own noise; the 10% and 25% accuracy goals are in the docs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import held_out, recordings, run_share, stats
from pytest_anatomy.importers.xz import read_kept
from pytest_anatomy.measure import load_stats as ls
from pytest_anatomy.measure import prompt_pace as pp
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import calibration as cal
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.prediction import Prediction

SEED_SHAPE = (1024, 256)  # the seed's concurrency sweep: input, output tokens
# `vllm serve` in vLLM 0.2x defaults max_num_batched_tokens to 2048 on GPUs below 70 GiB; the
# seed inferred ~2048 from its own p99 ITL (STUDY.md claim 7). An assumption, not a log line.
SEED_BATCHED_TOKENS = 2048
SEED_MAX_NUM_SEQS = 128  # the seed's `vllm serve --max-num-seqs 128`
SEED_PROMPTS = {1: 40, 2: 60, 4: 80, 8: 120, 16: 200, 32: 320, 64: 512}  # the seed's --num-prompts per C
FIT_REPEAT = "fit-repeat"  # test-id suffix of a check that repeats a fit point's workload and quantity

# A run's workload as (setting, value) pairs, compared between a fit point and a checked point.
WorkloadKey = tuple[tuple[str, Any], ...]


def mean_context(input_len: int, output_len: int) -> float:
    """Mean KV context of a request over its decode: the seed's 1,152 tokens for 1024/256."""
    return input_len + output_len / 2


def seed_workload(rec: Any) -> WorkloadKey:
    """A seed `vllm bench serve` run's settings, from its own payload (closed loop: max_concurrency)."""
    n = int(rec["num_prompts"].value)
    return (("kind", "closed"), ("concurrency", int(rec["max_concurrency"].value)),
            ("input_len", round(rec["total_input_tokens"].value / n)),
            ("output_len", round(rec["total_output_tokens"].value / n)))


def h200_workload(rec: Any) -> WorkloadKey:
    """An H200 run's settings (data["run"]): kind, batch/concurrency/rate and lengths; seeds and
    request counts do not make a different workload."""
    run = rec.data["run"]
    keep = ("batch", "concurrency", "rate", "input_len", "output_len")
    return (("kind", run["kind"]), *((k, run["settings"][k]) for k in keep if k in run["settings"]))


@dataclass(frozen=True)
class FitPoint:
    """One in-sample point of a calibration: what was fitted, on which run and quantity."""

    constant: str  # "t_overhead" or "eta"
    recording: str
    quantity: str
    workload: WorkloadKey
    # Quantities of the same workload the fit pins down (the fitted one included), e.g. at C=1
    # every ITL is the fitted decode step and throughput is O / (TTFT + (O - 1) x ITL).
    pins: frozenset[str]

    def describe(self) -> str:
        return f"{self.constant} fitted on {self.recording}:{self.quantity} ({dict(self.workload)})"

    def as_held_out_point(self) -> held_out.FitPoint:
        """This point for the package's held-out check: its workload, and the quantities it pins."""
        return held_out.FitPoint(self.workload, self.describe(), self.pins)


def fit_param(value: Any, repeats: Iterable[Any], marks: Any = ()) -> Any:
    """pytest.param whose id says when the value is declared a repeat of a fit point."""
    return pytest.param(value, marks=marks, id=f"{value}-{FIT_REPEAT}" if value in set(repeats) else str(value))


@functools.lru_cache(maxsize=None)
def _simulate(steps: lat.StepModel, sched: sv.SchedulerConfig, work: sv.Workload,
              fixed: sv.RequestTimes = sv.NO_REQUEST_TIMES) -> sv.SimResult:
    return sv.simulate(steps, sched, work, fixed=fixed)


@functools.lru_cache(maxsize=None)
def _saturation(steps: lat.StepModel, sched: sv.SchedulerConfig, input_len: int, output_len: int) -> float:
    return float(sv.saturation(steps, sched, input_len, output_len)["request_rate"])


@dataclass(frozen=True)
class Setup:
    """Everything a prediction on one GPU + engine needs; nothing in it is the quantity tested."""

    label: str
    model: ModelSpec
    ceilings: lat.Ceilings
    calib: lat.EngineCalibration
    sched: sv.SchedulerConfig
    fits: tuple[FitPoint, ...]  # the calibration's in-sample points
    kv_pinned: bool = False  # the engine's KV pool was pinned (kv_cache_memory_bytes), not sized by utilization
    # the inputs' own scatter (step_budget): "bandwidth", "peak" (relative, the session's ceiling runs),
    # "t_overhead_s" (absolute) and "eta" (relative): the calibration's fit points' repeat scatter
    noise: Mapping[str, float] = field(default_factory=dict)
    # t_overhead = c0 + c_layer x layers when measured on tiny-hidden models (None: fitted on this model)
    overhead: cal.LayerOverhead | None = None
    # the recording the setup's session was read beside (the model's decode.b1); None for the seed's setup
    anchor: Any = None

    def priced_in_its_session(self, rec: Any) -> None:
        """Fails where `rec` was measured in another session than this setup's: a run is priced with its own
        session's ceilings, engine limits and calibration (test_prefill once priced the newest prefill with a newer
        decode-only session's ceilings, 2026-12-06). Silent where either side names no session (a live run
        without a batch stamp: one session by construction)."""
        if self.anchor is None or rec.recorded_at == self.anchor.recorded_at:
            return
        mine, theirs = recordings.session_key(self.anchor), recordings.session_key(rec)
        if mine is not None and theirs is not None and mine != theirs:
            raise AssertionError(f"{rec.name}@{rec.recorded_at} (session {theirs}) priced with the setup of "
                                 f"{self.anchor.name}@{self.anchor.recorded_at} (session {mine}): build the setup "
                                 "beside the run checked (conftest.setup_beside)")

    @property
    def steps(self) -> lat.StepModel:
        return lat.StepModel.build(self.model, self.ceilings, self.calib)

    def simulate(self, work: sv.Workload, num_gpu_blocks: int | None = None,
                 fixed: sv.RequestTimes = sv.NO_REQUEST_TIMES) -> sv.SimResult:
        """`fixed`: per-request times outside the step model (sv.RequestTimes), calibrated by the caller."""
        sched = self.sched if num_gpu_blocks is None else sv.SchedulerConfig(
            self.sched.max_num_seqs, self.sched.max_num_batched_tokens, num_gpu_blocks, self.sched.block_size)
        return _simulate(self.steps, sched, work, fixed)

    def knee_rate(self, input_len: int, output_len: int) -> float:
        """Requests/s a closed loop at max_num_seqs completes between ramp-up and drain."""
        return _saturation(self.steps, self.sched, input_len, output_len)

    def steady_rate(self, concurrency: int, input_len: int, output_len: int) -> float:
        """Requests/s a simulated closed loop of `concurrency` completes between its first and
        last wave (ramp-up and drain excluded): the steady state of that loop."""
        sched = sv.SchedulerConfig(concurrency, self.sched.max_num_batched_tokens, self.sched.num_gpu_blocks,
                                   self.sched.block_size)
        return _saturation(self.steps, sched, input_len, output_len)

    def kind_of(self, workload: WorkloadKey, quantity: str) -> str:
        """The reconciliation kind of `quantity` on a run of `workload`: "fit" where a fit point of this
        calibration pins it (the point a constant came from, or a repeat of it), else "prediction"."""
        return "fit" if any(f.workload == workload and quantity in f.pins for f in self.fits) else "prediction"

    def check_held_out(self, workload: WorkloadKey, quantity: str, *, repeat: bool | None = False) -> str:
        """The note a prediction of `quantity` on a run of `workload` carries. `repeat` is the
        test's declaration (its id): a check declared held out whose workload and quantity a fit
        point pins down fails, and so does a declared repeat that matches no fit point. repeat=None:
        the session decides (a point the calibration may or may not have been fitted on)."""
        fits = held_out.FitSet(self.calib.name, tuple(f.as_held_out_point() for f in self.fits))
        if repeat is None:  # whichever the session's calibration makes it
            repeat = fits.fit_point(workload, quantity) is not None
        return fits.check(workload, quantity, declared_held_out=not repeat, shown=str(dict(workload)),
                          how_to_declare=f"a {FIT_REPEAT} (reproducibility) in the test id")


def with_note(pred: Prediction, *notes: str) -> Prediction:
    return replace(pred, notes=(*pred.notes, *notes))


# --- error budgets: measured noise + named systematic terms -------------------------------------
# A tolerance is the sum of what the recordings themselves say about their own noise, never a target.
# Each term is a relative 2-sigma half-width (about 95%). The median of n repeats has a standard error
# of ~1.2533 sigma / sqrt(n); sigma is read robustly from the upper tail (p90 - p50) / 1.2816 where the
# recording has percentiles (decode steps: single slow steps would inflate a plain std), else its std.
# n counts independent values (independent_n): a decode run's engine steps (~110-126), not its b x steps ITLs,
# which are b copies of each step (counting them understated a b=64 run's scatter by sqrt(64), e.g. 0.03% for
# 0.23% on Qwen2.5-7B's clean 2026-12-02 02:33 run). The arithmetic lives in pytest_anatomy.stats, shared with others.


def independent_n(rec: Any, stat: str) -> float:
    """How many independent values the median of `stat` rests on. A decode run's steady ITLs (itl_steady_s,
    itl_steady_engine_clock_s) are b per engine step, one per sequence, and within a step they are the same gap: their
    count overstates the samples by the batch, so they count as the run's engine steps (its step_interval_engine_s.n,
    else ITLs / batch). Any other stat (a prefill's repeats: one lone request each) counts as recorded."""
    m = rec.measurements
    n = float(m[f"{stat}.n"]["value"])
    run = rec.data.get("run") or {}
    if stat.startswith("itl_steady") and run.get("kind") == "decode":
        steps = (m.get("step_interval_engine_s.n") or {}).get("value")
        return float(steps) if steps else n / run["settings"]["batch"]
    return n


def median_scatter(rec: Any, stat: str) -> float:
    """2 x the standard error of a recording's median `stat` (e.g. "itl_steady_engine_clock_s",
    "engine_prefill_s"), relative to it: the run's own repeat scatter, over its independent values (independent_n:
    a decode run's engine steps, not its b x steps ITLs)."""
    m = rec.measurements
    n, median = independent_n(rec, stat), m[f"{stat}.median"]["value"]
    if f"{stat}.p90" in m and n >= 20:
        return stats.tail_median_scatter(m[f"{stat}.p90"]["value"], median, n)
    return stats.sigma_median_scatter(m[f"{stat}.std"]["value"], n, median)


def samples_scatter(samples: Any) -> float:
    """2 x the standard error of the median of a list of repeats, relative to it (0 with < 2)."""
    return _samples_scatter(tuple(float(v) for v in samples or ()))


@functools.lru_cache(maxsize=None)
def _samples_scatter(values: tuple[float, ...]) -> float:
    """Cached: statistics.stdev sums exact fractions, and every engine setup of a session asks for the same
    ceilings' scatter again (a tenth of a latency replay's setup time)."""
    return stats.median_scatter(values)


def ceiling_scatter(ceil: Any, key: str) -> float:
    """The session's ceiling `key` ("read_bandwidth", "matmul_bf16", "gemm.m8192_k3584_n4608"): the scatter
    of its own runs (the ceilings part's samples, kept in the recording's data)."""
    node: Any = (ceil.data.get("run") or {}).get("result") or {}
    for part in key.split("."):
        node = (node or {}).get(part) or {}
    return samples_scatter(node.get("samples"))


def step_budget(setup: Setup, pred: Prediction, measured_scatter: float, *, compute_share: float | None = None
                ) -> dict[str, float]:
    """The error budget of a step-time prediction: the measurement's own repeat scatter, the session
    ceiling it divides by (weighted by the share of the step that ceiling sets) and the calibration's
    spread (t_overhead's absolute scatter over the step, eta's relative scatter on the compute share)."""
    share = compute_share
    if share is None:
        share = 1.0 if "compute-bound" in pred.notes else 0.0
    roof = pred.value - setup.calib.step_overhead_s
    ceiling = (share * setup.noise.get("peak", 0.0) + (1 - share) * setup.noise.get("bandwidth", 0.0)) * roof / pred.value
    calib = (setup.noise.get("t_overhead_s", 0.0) / pred.value
             + share * setup.noise.get("eta", 0.0) * roof / pred.value)
    return {"repeat_scatter": measured_scatter, "ceiling_spread": ceiling, "calibration_spread": calib}


# --- a decode run's validity (load_stats.decode_validity: was the engine core stalled?) -----------
def _batch_date(raw_path: Path) -> str | None:
    """provenance.date_utc of the batch file a raw file belongs to (latency-raw.jsonl -> latency.json[.xz])."""
    stem = raw_path.name.split("-raw.jsonl")[0]
    for doc in (raw_path.with_name(f"{stem}.json"), raw_path.with_name(f"{stem}.json.xz")):
        if doc.is_file():
            return (json.loads(read_kept(doc)).get("provenance") or {}).get("date_utc")
    return None


@functools.lru_cache(maxsize=None)
def raw_files(batches: str) -> dict[str, tuple[Path, ...]]:
    """Batch date_utc -> the latency raw files (latency*-raw.jsonl[.xz]) kept under `batches` (results/<hw>/batches)
    for that plan run: the main model's and the extra models' (each names its own batch file's date). Once per run:
    each date is read from an xz'd batch file (run_share)."""
    # keyed by the folder as given too: the paths come back spelled as the process that listed them spelled it
    key = run_share.key_of("latency-raw-files", batches, Path(batches).resolve())
    return run_share.once(key, lambda: _raw_files(batches))


def _raw_files(batches: str) -> dict[str, tuple[Path, ...]]:
    out: dict[str, tuple[Path, ...]] = {}
    for path in sorted(Path(batches).glob("*/latency*-raw.jsonl*")):
        date = _batch_date(path)
        if date is not None:
            out[date] = (*out.get(date, ()), path)
    return out


# The kinds of part whose step timelines the suite reads from a raw file (raw_run_timelines), and what it keeps of a
# line carrying GPU samples (test_latency_conditions: the requests and timelines are 99% of a line)
DIGEST_KINDS = (".decode.b", ".poisson.f")
SAMPLED_KEYS = ("id", "attempt", "gpu_samples")


@functools.lru_cache(maxsize=None)
def raw_run_timelines(path: Path, kind: str) -> dict[tuple[str, int], dict[str, Any]]:
    """(run id, attempt) -> the raw step timeline (columns "t", "ctx_tokens", "gen_requests", "engine_t", ...) of
    every run of one raw file whose id holds `kind` (one of DIGEST_KINDS). A part measured once is attempt 1."""
    return raw_digest(path)["timelines"][kind]  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=None)
def raw_digest(path: Path) -> dict[str, Any]:
    """What the suite reads of one latency raw file, once per run (run_share: the workers, the background report build
    and the mutation replays all read these files): {"timelines": {kind: {(run id, attempt): timeline}} for each of
    DIGEST_KINDS, "sampled": the SAMPLED_KEYS of each line carrying gpu_samples, in file order}. One decompression of
    the file and one parse of each line needed: the timelines of each kind and the sampled lines were read apart, each
    decompressing the file again and parsing a line that holds both twice (~10 s of CPU in a cold run, 2026-12-06)."""
    st = Path(path).stat()
    return run_share.once(run_share.key_of("latency-raw-digest", Path(path).resolve(), st.st_size, st.st_mtime_ns),
                          lambda: _raw_digest(path))


def _raw_digest(path: Path) -> dict[str, Any]:
    timelines: dict[str, dict[tuple[str, int], dict[str, Any]]] = {kind: {} for kind in DIGEST_KINDS}
    sampled: list[dict[str, Any]] = []
    for line in read_kept(path).decode("utf-8").splitlines():
        kinds = [kind for kind in DIGEST_KINDS if kind in line[:80]]
        has_samples = '"gpu_samples": {' in line or '"gpu_samples":{' in line
        if not kinds and not has_samples:
            continue
        raw = json.loads(line)
        for kind in kinds:
            timelines[kind][(raw["id"], int(raw.get("attempt", 1)))] = raw["timeline"]
        if has_samples:
            sampled.append({k: raw[k] for k in SAMPLED_KEYS if k in raw})
    return {"timelines": timelines, "sampled": sampled}


def kept_timeline(rec: Any, kind: str) -> dict[str, Any] | None:
    """A recording's raw step timeline from its session's raw file under results/<hw>/batches/ (a live session's:
    the plan's own raw files, which the live lab names in data["_raw_files"], kept out of its recordings), else None (a recording alone holds
    only the timeline's summary)."""
    run = rec.data.get("run") or {}
    key = (run.get("id", rec.name), int(run.get("attempt", 1)))
    live = tuple(Path(p) for p in rec.data.get("_raw_files", ()) if Path(p).is_file())
    if live:
        paths = live
    elif rec.path is None:
        return None
    else:
        paths = raw_files(str(Path(rec.path).parent.parent / "batches")).get(rec.provenance.get("date"), ())
    for path in paths:
        found = raw_run_timelines(path, kind).get(key)
        if found is not None:
            return found
    return None


def raw_timeline(rec: Any) -> list[ls.TimelineStep] | None:
    """A decode recording's step timeline from its session's raw file, else None."""
    tl = kept_timeline(rec, ".decode.b")
    if tl is None:
        return None
    return [ls.TimelineStep(t=t, ctx_tokens=c, gen_requests=g, engine_t=e)
            for t, c, g, e in zip(tl["t"], tl["ctx_tokens"], tl["gen_requests"], tl["engine_t"], strict=True)]


def step_intervals(rec: Any) -> list[float] | None:
    """A decode recording's engine-clock step intervals, as the plan computes step_interval_engine_s
    (ls.decode_step_intervals): its samples (plans since 2026-12-02 keep them), else from its session's raw
    timeline, else None (a summary only)."""
    samples = (rec.measurements.get("step_interval_engine_s.median") or {}).get("samples")
    if samples:
        return [float(v) for v in samples]
    steps = raw_timeline(rec)
    if steps is None:
        return None
    return ls.decode_step_intervals(steps, int(rec.data["run"]["settings"]["batch"]), engine_clock=True)


def run_validity(rec: Any) -> ls.DecodeValidity | None:
    """The run-validity check of a decode recording (ls.decode_validity), on its step intervals where they are kept,
    else on their summary alone (criterion (a)); None for a recording without decode steps."""
    intervals = step_intervals(rec)
    if intervals:
        return ls.decode_validity(intervals)
    m = rec.measurements
    return ls.decode_validity_of_summary({k: (m.get(f"step_interval_engine_s.{k}") or {}).get("value")
                                          for k in ("n", "mean", "median")})


def validity_note(rec: Any) -> tuple[str, ...]:
    """The note a decode reconciliation carries when its run is flagged, or when the plan measured it twice."""
    check = run_validity(rec)
    run = rec.data.get("run") or {}
    notes = []
    if run.get("attempts"):
        others = "; ".join(f"attempt {o.get('attempt')}: " + ("failed" if "error" in o else
                                                             "flagged" if o.get("flagged") else "clean")
                           for o in run.get("other_attempts") or ())
        notes.append(f"the plan measured this part {run['attempts']} times (the check flagged attempt 1); this is "
                     f"attempt {run.get('attempt')} ({others})")
    if check is not None and check.flagged:
        notes.append(f"this run's {check.describe()}: its median is not a clean step time")
    return tuple(notes)


# --- an open-loop run's prompt-step pace (measure/prompt_pace: did its prompt steps run at the session's pace?) ---
def prompt_pace_of(rec: Any) -> pp.PromptPace | None:
    """A Poisson recording's lone-prompt pace (pp.prompt_pace) from its session's kept raw timeline; None where the
    raw file is not kept."""
    tl = kept_timeline(rec, ".poisson.f")
    return None if tl is None else pp.prompt_pace(tl, int(rec.data["run"]["settings"]["input_len"]))


def slowed_prompts(setup: Setup, slowdown: float) -> Setup:
    """`setup` with every compute-bound step `slowdown` x longer (eta / slowdown, at every measured token count):
    the simulation of a run whose prompt steps ran at a measured slower pace (pp.PromptPaceCheck.compute_slowdown).
    Memory-bound decode steps are untouched, as they were in the runs it is for."""
    calib = replace(setup.calib, compute_efficiency=setup.calib.compute_efficiency / slowdown,
                    efficiency_by_tokens=tuple((n, e / slowdown) for n, e in setup.calib.efficiency_by_tokens))
    return replace(setup, calib=calib)


def decode_step_miss(setup: Setup, rec: Any, latency_recording: Any, b: int) -> tuple[float, float, float]:
    """(measured / predicted, noise budget, measured - predicted in s) of the isolated decode step at batch `b`
    recorded in `rec`'s session (its decode.b{b} run: a run apart from the one checked), under `setup`."""
    step = latency_recording(f"{setup.model.name}.decode.b{b}", beside=rec)
    s = step.data["run"]["settings"]
    pred = lat.decode_step_time(setup.model, setup.ceilings, setup.calib, b, mean_context(s["input_len"], s["output_len"]))
    budget = sum(step_budget(setup, pred, median_scatter(step, "itl_steady_engine_clock_s"), compute_share=0.0).values())
    measured = step["step_time_s"].value
    return measured / pred.value, budget, measured - pred.value


def moved_by_step_miss(setup: Setup, rec: Any, latency_recording: Any, b: int) -> tuple[Setup, float, float] | None:
    """`setup` with its step overhead moved by decode_step_miss at batch `b` (every step longer by measured -
    predicted), with that step's measured / predicted and its noise budget; None where the step meets its prediction
    within that budget."""
    ratio, budget, miss_s = decode_step_miss(setup, rec, latency_recording, b)
    if ratio - 1 <= budget:
        return None
    return replace(setup, calib=replace(setup.calib, step_overhead_s=setup.calib.step_overhead_s + miss_s)), ratio, budget
