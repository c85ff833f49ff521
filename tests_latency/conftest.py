"""Fixtures of the latency suite; the setups themselves are built in latency_setups.py.

On the live target every latency recording comes from one run of the device plan's program per
session (`latency_lab`, plan in latency_live_plan.py); a replay target reads its recordings."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

import latency_live_plan as live_plan
import pytest

from pytest_anatomy import recordings
from latency_setups import (  # noqa: I001
    SEED_BATCHED_TOKENS,
    SEED_MAX_NUM_SEQS,
    SEED_SHAPE,
    FitPoint,
    Setup,
    ceiling_scatter,
    h200_workload,
    mean_context,
    median_scatter,
    seed_workload,
)

from pytest_anatomy.fixtures import progress
from pytest_anatomy.session import get_session
from pytest_anatomy.specs.model import ModelSpec, load_model
from pytest_anatomy.theory import calibration as cal
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.flops import StepWork


@pytest.fixture
def seed_setup(qwen: ModelSpec, measured: Any, target: Any, card: Any) -> Setup:
    """The seed's card (an RTX 4090) + vLLM 0.27.1. No ceilings were measured there: datasheet bandwidth
    (1008 GB/s) and bf16 peak (165.2 TFLOP/s). Calibration, both points from round 1's first sweep:
    t_overhead from seed-r1-01-c001 (C=1, pure decode: median ITL), eta from seed-r1-01-c064's
    p99 ITL, which is a step filled to the 2048-token budget (63 decodes + 1,985 prompt tokens)."""
    ceilings = lat.Ceilings.datasheet(card)
    c1 = measured("seed-r1-01-c001")
    calib = lat.fit_step_overhead(
        qwen, ceilings, 1, mean_context(*SEED_SHAPE), c1["median_itl"].value,
        name=f"vllm-0.27.1@{target.name} (CUDA graphs, chunked prefill 2048)", fitted_on="seed-r1-01-c001:median_itl")
    c64 = measured("seed-r1-01-c064")
    decodes = 63
    full = StepWork(decode_tokens=decodes, decode_context_sum=decodes * mean_context(*SEED_SHAPE),
                    prefill=((1024, 0), (SEED_BATCHED_TOKENS - decodes - 1024, 0)))
    calib = lat.fit_compute_efficiency(qwen, ceilings, [full], c64["p99_itl"].value, calib,
                                       fitted_on="seed-r1-01-c064:p99_itl")
    sched = sv.SchedulerConfig(SEED_MAX_NUM_SEQS, SEED_BATCHED_TOKENS, None)
    fits = (
        # At C=1 every ITL is the fitted decode step (no other request's prompt to share a step
        # with), and throughput is O / (TTFT + (O - 1) x ITL), 97% ITL: all pinned by the fit.
        FitPoint("t_overhead", "seed-r1-01-c001", "median_itl", seed_workload(c1),
                 frozenset({"median_itl", "mean_itl", "p99_itl", "output_throughput"})),
        FitPoint("eta", "seed-r1-01-c064", "p99_itl", seed_workload(c64), frozenset({"p99_itl"})),
    )
    return Setup(target.name, qwen, ceilings, calib, sched, fits)


class LatencyLab:
    """The live target's latency recordings: the plan runs once, at the first test that reads one."""

    def __init__(self, request: pytest.FixtureRequest, workdir: Path) -> None:
        self._config = request.config
        self._items = request.session.items
        self._workdir = workdir
        self._results: dict[tuple[str, str], dict[str, Any]] | None = None
        self._error: BaseException | None = None
        self.plan: Any = None
        self.dropped: dict[str, str] = {}  # run name -> why this card's KV pool leaves it out of the plan
        self.unstartable: dict[str, str] = {}  # model -> why the card cannot start its engine (latency_fit)

    def live(self, name: str, suite: str = "latency") -> Any:
        return lambda: self._result(suite, name)

    def has(self, suite: str, name: str) -> bool:
        """Whether this session's plan returned `name` (runs the plan if it has not run yet)."""
        if self._results is None and self._error is None:
            self._run()
        return self._results is not None and (suite, name) in self._results and name not in self.dropped

    def _wanted_plan(self) -> Any:
        slow = any(it.get_closest_marker("slow") and "tests_latency" in it.nodeid
                   and getattr(getattr(it, "callspec", None), "params", {}).get("target") is not None
                   and it.callspec.params["target"].live for it in self._items)
        return live_plan.FULL if slow else live_plan.FAST

    def _result(self, suite: str, name: str) -> dict[str, Any]:
        if self._results is None and self._error is None:
            self._run()
        if self._error is not None:
            raise self._error
        assert self._results is not None
        refused = next((why for model, why in self.unstartable.items() if name.startswith(f"{model}.")), None)
        if refused:
            pytest.skip(f"{suite}/{name}: {refused}")
        if name in self.dropped:  # before the results: a part the device program skipped is still a (bare) run there
            pytest.skip(f"{suite}/{name}: {self.dropped[name]}")
        if (suite, name) not in self._results:
            model = name.split(".")[0]
            if model in self.plan.overhead_models or model == self.plan.second_model:
                pytest.skip(f"{suite}/{name}: the live latency plan ran {model} but returned no such run (the device "
                            "skipped it for budget or failed it: see the plan's log; a CPU rehearsal's recorded batches "
                            "have no overhead models, and none is ever synthesized)")
            pytest.skip(f"{suite}/{name} is not in this session's live latency plan ({', '.join(self.plan.kinds)}): "
                        "scripts/device/latency_plan.py measures it")
        return self._results[(suite, name)]

    def _fit(self, plan: Any) -> Any:
        """The plan as it runs on this card (latency_fit.fit_to_card, from the predicted ledger): its pinned
        12 GiB pool dropped where it does not fit beside the weights, and the decode parts whose sequences the
        engine's predicted pool cannot hold at once left out; their tests skip with the reason (self.dropped)."""
        from pytest_anatomy.latency_fit import fit_to_card, unstartable

        target = get_session(self._config).live_target()
        plan, self.unstartable = unstartable(plan, target.spec, target.name)
        plan, self.dropped = fit_to_card(plan, target.spec, target.name)
        return plan

    def _run(self) -> None:
        if importlib.util.find_spec("vllm") is None:
            pytest.skip("a live GPU was detected but vLLM is not importable here: `pip install -e '.[gpu]'`, or replay "
                        "the recordings with --anatomy-source=recorded")
        from pytest_anatomy.importers.device import keep_raw, latency_live_results
        from pytest_anatomy.measure.latency_live import run_plan
        from pytest_anatomy.specs import catalog

        self.plan = self._fit(self._wanted_plan())
        if self.plan.model in self.unstartable:  # nothing to run: every test skips with the reason (_result)
            self._results = {}
            return
        config_path = self._workdir / f"{self.plan.model}.json"
        config = {k: v for k, v in catalog.load_config(self.plan.model).items() if not k.startswith("_")}
        config_path.write_text(json.dumps(config, indent=1))
        try:
            docs = run_plan(self.plan, config_path, self._workdir / "out", log=lambda m: progress(self._config, m))
        except Exception as exc:  # every reader of a failed plan fails alike, with its message
            self._error = exc
            raise
        self._results = {}
        # a decode part the engine's own pool could not hold (the device program's check, where the prediction
        # said it fits): its tests skip with the program's reason too
        self.dropped.update({run["id"]: run["skipped"] for doc in docs for run in doc.get("runs", [])
                             if str(run.get("skipped", "")).startswith("pool: ")})
        started = _stamp_of_date(docs[0].get("provenance", {}).get("date_utc"))
        # the plan's raw files (step timelines), so a live run's validity checks read them as a replay reads the
        # session's kept batch (latency_setups.kept_timeline), recorded or not; "_" keys stay out of recordings
        raw = [str(p) for p in sorted((self._workdir / "out").glob("latency*-raw.jsonl*"))]
        for doc in docs:
            for key, result in latency_live_results(doc).items():
                result["data"]["_raw_files"] = raw
                self._results[key] = {**result, "recorded_at": started} if started else result
        state = get_session(self._config)
        target = state.live_target()
        if state.settings.record and target is not None:  # the plan's own files, byte for byte, as provenance
            from pytest_anatomy.recordings import utc_now

            stamp = utc_now()  # one folder for the plan's files
            for path in sorted((self._workdir / "out").glob("*")):
                keep_raw(path, state.settings.results_dir, target.name, stamp)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A live latency test that needs the slow plan (load runs, the second model) is marked slow,
    so `-m "gpu and not slow"` keeps the live session to the fast plan."""
    for item in items:
        target = getattr(getattr(item, "callspec", None), "params", {}).get("target")
        module = getattr(item, "module", None)
        if not getattr(target, "live", False) or module is None:
            continue
        if getattr(module, "LIVE_SLOW", False) or item.name.split("[")[0] in getattr(module, "LIVE_SLOW_TESTS", ()):
            item.add_marker(pytest.mark.slow)


def _stamp_of_date(date_utc: str | None) -> str | None:
    """'2026-12-01T04:42:48+00:00' -> '2026-12-01T04:42:48.000000Z' (a live recording's stamp)."""
    if not date_utc:
        return None
    from datetime import datetime, timezone

    return datetime.fromisoformat(date_utc).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture(scope="session")
def latency_lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> LatencyLab:
    return LatencyLab(request, tmp_path_factory.mktemp("latency-live"))


def build_engine_setup(qwen: ModelSpec, rec: Any, target: Any, beside: Any = None, not_after: str | None = None,
                       *, eta_from_gemms: bool = True) -> Setup:
    """The target's GPU + vLLM 0.26.0 (CUDA graphs, async scheduling, max_num_batched_tokens 8192),
    from one session's recordings (the newest, or those of the session that measured `beside`):
    its ceilings (read_bandwidth, matmul_bf16) and, by what the session measured:
    - t_overhead from its tiny-hidden overhead models (c0 + c_layer x layers, never Qwen's own
      steps) where it ran them at two layer counts or more (one_layer_count_note says why one is not enough); else Qwen's b=1 decode residual, a fit point (kind "fit");
    - eta from its GEMM timings at each step's token count (the linear shapes it runs) where it has
      them (and eta_from_gemms); else from the lone 8,192-token prefill, a fit point. eta_from_gemms=False
      gives the calibration the earlier sessions had, to carry their finding bands over to this one."""
    b1 = rec("qwen2.5-7b.decode.b1", beside=beside, not_after=not_after)
    ceilings = rec_ceilings(rec, target, b1)
    s = b1.data["run"]["settings"]
    engine = rec("qwen2.5-7b.engine", beside=b1)
    budget = int(engine["resolved.max_num_batched_tokens"].value)
    name = f"vllm-0.26.0@{target.name} (CUDA graphs, async scheduling)"
    measured_apart = session_overhead(rec, target, b1)
    overhead = measured_apart if cal.TINY_OVERHEAD_IS_ADDITIVE else None
    ceil = rec("ceilings", suite="ceilings", beside=b1)
    gemm = cal.gemm_seconds(ceil.measurements)
    noise = {"bandwidth": ceiling_scatter(ceil, "read_bandwidth"), "peak": ceiling_scatter(ceil, "matmul_bf16")}
    fits: list[FitPoint] = []
    if overhead is not None:
        calib = cal.engine_from_overhead(qwen, overhead, name=name)
        noise["t_overhead_s"] = overhead.spread_s
    else:  # every session recorded before the overhead models: Qwen's own b=1 residual, a fit point
        calib = lat.fit_step_overhead(qwen, ceilings, 1, mean_context(s["input_len"], s["output_len"]),
                                      b1["step_time_s"].value, name=name, fitted_on="qwen2.5-7b.decode.b1:step_time_s")
        fits.append(FitPoint("t_overhead", "qwen2.5-7b.decode.b1", "step_time_s", h200_workload(b1),
                             frozenset({"step_time_s"})))
        noise["t_overhead_s"] = median_scatter(b1, "itl_steady_engine_clock_s") * b1["step_time_s"].value
        why_not_tiny = cal.TINY_OVERHEAD_NOT_USED if measured_apart is not None else one_layer_count_note(rec, target, b1)
        if why_not_tiny:
            calib = dataclasses.replace(calib, notes=(*calib.notes, why_not_tiny))
    gemm_calib = cal.with_gemm_efficiency(calib, qwen, gemm, ceilings.peak)
    if gemm_calib.efficiency_by_tokens and eta_from_gemms:  # eta measured at the step's own shapes: nothing fitted
        calib = gemm_calib
        noise["eta"] = max(ceiling_scatter(ceil, f"gemm.{cal.gemm_key(m, k, n)}")
                           for m, _ in calib.efficiency_by_tokens for _, k, n in cal.linear_shapes(qwen))
    else:  # the same recipe `predict latency` calibrates with (theory/calibration.py): the 8,192 prefill
        l8192 = rec("qwen2.5-7b.prefill.l8192", beside=b1)
        calib = lat.fit_compute_efficiency(qwen, ceilings, lat.prefill_work(8192, budget),
                                           l8192["engine_prefill_s.median"].value, calib,
                                           fitted_on="qwen2.5-7b.prefill.l8192:engine_prefill_s.median")
        fits.append(FitPoint("eta", "qwen2.5-7b.prefill.l8192", "engine_prefill_s.median", h200_workload(l8192),
                             frozenset({"engine_prefill_s.median"})))
        noise["eta"] = median_scatter(l8192, "engine_prefill_s")
    # The pool is the engine's own (memory profiling); an input here, predicted in tests_capacity.
    sched = sv.SchedulerConfig(int(engine["resolved.max_num_seqs"].value), budget,
                               int(engine["resolved.num_gpu_blocks"].value), int(engine["resolved.block_size"].value))
    return Setup(target.name, qwen, ceilings, calib, sched, tuple(fits), kv_pinned=_pinned(engine), noise=noise,
                 overhead=overhead, anchor=b1)


OVERHEAD_MODELS = live_plan.OVERHEAD  # tiny-hidden twins of Qwen2.5-7B (pytest_anatomy/specs/configs/overhead/)


def session_overhead(rec: Any, target: Any, beside: Any) -> cal.LayerOverhead | None:
    """The layer overhead fitted on the tiny models' decode steps of `beside`'s session, or None when
    the session did not run them (every session recorded before 2026-12-01 07:35)."""
    steps: list[cal.OverheadStep] = []
    ceilings = None
    for model_name in OVERHEAD_MODELS:
        for b in live_plan.OVERHEAD_BATCHES:
            name = f"{model_name}.decode.b{b}"
            if not getattr(rec, "has", lambda _: True)(name):  # no such run at all: nothing to read
                continue
            try:
                r = rec(name, beside=beside)
            except (pytest.skip.Exception, recordings.MissingRecording):  # not in this session: the b=1 residual stays
                continue
            if ceilings is None:
                ceilings = rec_ceilings(rec, target, r)
            s = r.data["run"]["settings"]
            steps.append(cal.overhead_step(_tiny_model(model_name), b, r["step_time_s"].value, s["input_len"], s["output_len"], ceilings,
                                           f"{model_name}.decode.b{b}:step_time_s",
                                           median_scatter(r, "itl_steady_engine_clock_s") * r["step_time_s"].value))
    try:
        return cal.fit_layer_overhead(steps) if steps else None
    except ValueError:  # one layer count only: no layer term (one_layer_count_note says what happens instead)
        return None


@functools.lru_cache(maxsize=None)
def _tiny_model(model_name: str) -> ModelSpec:
    """A tiny-hidden overhead model's config, read once per process (every engine setup asked for both again, with or
    without recordings of them)."""
    from pytest_anatomy.specs import catalog

    return load_model(catalog.CONFIG_DIR / "overhead" / f"{model_name}.json")


def one_layer_count_note(rec: Any, target: Any, beside: Any) -> str | None:
    """Why the tiny models of `beside`'s session calibrate nothing when they ran at one layer count only
    (the 2026-12-01 sessions: the 28-layer twin; the 2-layer one was cut by the plan's budget): None
    when they ran at two or more, or not at all."""
    counts = sorted({int(name.rsplit("-l", 1)[1]) for name in OVERHEAD_MODELS
                     if getattr(rec, "has", lambda _: True)(f"{name}.decode.b1") and _beside_or_none(rec, f"{name}.decode.b1", beside)})
    if len(counts) != 1:
        return None
    return (f"t_overhead is NOT from the tiny-hidden models: this session ran them at {counts[0]} layers only, and "
            "c0 + c_layer x layers needs two layer counts (no slope is assumed); besides, the tiny model's b=1 step is "
            "the async engine's CPU loop, which a GPU step longer than it hides (finding "
            "h200-tiny-model-step-is-the-cpu-loop): Qwen's own b=1 residual stays the calibration, a fit point")


def _beside_or_none(rec: Any, name: str, beside: Any) -> Any:
    try:
        return rec(name, beside=beside)
    except (pytest.skip.Exception, recordings.MissingRecording):
        return None


def build_transfer_setup(calibrated: Setup, rec: Any, target: Any, beside: Any = None, *,
                         eta_from_gemms: bool = True) -> Setup:
    """Llama-3.1-8B on the same GPU and vLLM 0.26.0 settings, predicted with the calibration
    fitted on Qwen2.5-7B (`calibrated`: t_overhead and eta) and the engine and ceilings of Llama's
    own session: the overhead calibrated on a different model than the one tested.
    No Llama run is a fit point (fits=()), so every check on it is held out. eta_from_gemms=False keeps
    `calibrated`'s eta even where Llama's session timed GEMMs at its shapes (the earlier sessions' recipe)."""
    llama = load_model("llama-3.1-8b")
    b1 = rec("llama-3.1-8b.decode.b1", beside=beside)
    engine = rec("llama-3.1-8b.engine", beside=b1)
    name = f"{calibrated.calib.name}, transferred from {calibrated.model.name}"
    if calibrated.overhead is not None:  # measured on the tiny models: the layer term at Llama's own 32 layers
        calib = cal.engine_from_overhead(llama, calibrated.overhead, name=name,
                                         compute_efficiency=calibrated.calib.compute_efficiency)
        calib = lat.EngineCalibration(name, calib.step_overhead_s, calib.compute_efficiency,
                                      fitted_on=calibrated.calib.fitted_on, notes=calib.notes)
    else:
        calib = lat.EngineCalibration(name, step_overhead_s=calibrated.calib.step_overhead_s,
                                      compute_efficiency=calibrated.calib.compute_efficiency,
                                      fitted_on=calibrated.calib.fitted_on, notes=calibrated.calib.notes)
    ceil = rec("ceilings", suite="ceilings", beside=b1)
    if eta_from_gemms:
        calib = cal.with_gemm_efficiency(calib, llama, cal.gemm_seconds(ceil.measurements),
                                         rec_ceilings(rec, target, b1).peak)
    sched = sv.SchedulerConfig(int(engine["resolved.max_num_seqs"].value),
                               int(engine["resolved.max_num_batched_tokens"].value),
                               int(engine["resolved.num_gpu_blocks"].value), int(engine["resolved.block_size"].value))
    noise = {**calibrated.noise, "bandwidth": ceiling_scatter(ceil, "read_bandwidth"),
             "peak": ceiling_scatter(ceil, "matmul_bf16")}  # its own session's ceilings, Qwen's calibration
    return Setup(target.name, llama, rec_ceilings(rec, target, b1), calib, sched, fits=(), kv_pinned=_pinned(engine),
                 noise=noise, anchor=b1)


def _pinned(engine: Any) -> bool:
    """Whether the engine's KV pool was pinned by kv_cache_memory_bytes (its resolved settings)."""
    return "resolved.kv_cache_memory_bytes" in engine.measurements


def rec_ceilings(rec: Any, target: Any, run: Any) -> lat.Ceilings:
    """The ceilings measured in the same session as `run`: every session has its own clocks and
    thermal state, so a prediction uses its own session's."""
    ceil = rec("ceilings", suite="ceilings", beside=run)
    where = ceil["read_bandwidth.value"].provenance.get("recording", f"results/{target.name}/ceilings (live)")
    return lat.Ceilings.measured(target.require_spec(), bandwidth=ceil["read_bandwidth.value"].value,
                                 peak=ceil["matmul_bf16.value"].value,
                                 source=f"read_bandwidth (4 GiB sum) and matmul_bf16 (8192^3), {where}")


@pytest.fixture
def session_rec(request: pytest.FixtureRequest, measured: Any, target: Any, latency_lab: LatencyLab) -> Any:
    """session_rec(name, suite="latency", beside=None, not_after=None): the target's recording of
    `name`: the live plan's on a live target, else the newest recording (or the one of the session
    that measured `beside`, or the newest not after `not_after`). session_rec.has(name): whether the
    target has any (a live target: whether its plan returned it), asked before an optional read."""
    def get(name: str, suite: str = "latency", beside: Any = None, not_after: str | None = None) -> Any:
        return measured(name, suite=suite, live=latency_lab.live(name, suite), beside=beside, not_after=not_after)

    def has(name: str, suite: str = "latency") -> bool:
        if target.live:
            return latency_lab.has(suite, name)
        from pytest_anatomy.targets import has_recording

        return has_recording(get_session(request.config).settings.results_dir, target, suite, name)
    get.has = has  # type: ignore[attr-defined]
    return get


@pytest.fixture
def engine_setup(qwen: ModelSpec, session_rec: Any, target: Any) -> Setup:
    """The setup of the newest Qwen2.5-7B session (build_engine_setup)."""
    return build_engine_setup(qwen, session_rec, target)


@pytest.fixture
def transfer_setup(qwen: ModelSpec, session_rec: Any, target: Any) -> Setup:
    """Llama-3.1-8B's newest session, with the Qwen calibration known when it was measured."""
    b1 = session_rec("llama-3.1-8b.decode.b1")
    calibrated = build_engine_setup(qwen, session_rec, target, not_after=b1.recorded_at)
    return build_transfer_setup(calibrated, session_rec, target)


@pytest.fixture
def setup_beside(qwen: ModelSpec, session_rec: Any, target: Any, engine_setup: Setup) -> Any:
    """setup_beside(model, rec): the setup of the session that measured `rec` (a run is never
    predicted with another session's engine limits or clocks). Llama's carries the Qwen calibration
    that existed when the run was measured (the newest at or before it): a held-out run is predicted
    with what was known then, never with a later refit. eta_from_gemms=False: the same session calibrated as
    the sessions before GEMM timings were (eta fitted on the 8,192 prefill), to carry their bands over."""
    built: dict[tuple[str, str, str, bool], Setup] = {}  # a test's fixtures and body ask for the same run's setup

    def build(model: str, rec: Any, eta_from_gemms: bool = True) -> Setup:
        key = (model, rec.name, rec.recorded_at, eta_from_gemms)
        if key not in built:
            if model == qwen.name:
                built[key] = build_engine_setup(qwen, session_rec, target, beside=rec, eta_from_gemms=eta_from_gemms)
            else:
                calibrated = build_engine_setup(qwen, session_rec, target, not_after=rec.recorded_at,
                                                eta_from_gemms=eta_from_gemms)
                built[key] = build_transfer_setup(calibrated, session_rec, target, beside=rec,
                                                  eta_from_gemms=eta_from_gemms)
        return built[key]
    return build

def pytest_anatomy_live_plan(config: pytest.Config, items: list[pytest.Item]) -> list[dict]:
    """The latency plan's one run: FULL when a selected live latency test needs it, else FAST, as it runs on the
    live card (latency_fit.fit_to_card): a decode part the card's predicted KV pool cannot hold is neither
    counted nor described as measured, but named as left out."""
    from pytest_anatomy.latency_fit import fit_to_card, unstartable

    mine = [i for i in items if "tests_latency" in i.nodeid]
    if not mine:
        return []
    plan = live_plan.FULL if any(i.get_closest_marker("slow") for i in mine) else live_plan.FAST
    full = plan is live_plan.FULL
    target = get_session(config).live_target()
    dropped: dict[str, str] = {}
    refused: dict[str, str] = {}
    if target is not None and target.spec is not None:
        plan, refused = unstartable(plan, target.spec, target.name)
        plan, dropped = fit_to_card(plan, target.spec, target.name)
    if plan.model in refused:
        return [{"suite": "latency", "what": f"latency plan: {refused[plan.model]}", "estimate_s": 0.0}]
    what = (f"latency plan ({'full' if full else 'fast'}): {plan.model} "
            f"{', '.join(plan.kinds)}"
            + (f", then overhead models {', '.join(plan.overhead_models)} decode" if plan.overhead_models else "")
            + (f", then {plan.second_model} decode, prefill" if plan.second_model else "")
            + (f"; not run, their KV above the card's predicted pool: {', '.join(dropped)}" if dropped else "")
            + "".join(f"; {why}" for why in refused.values()))
    return [{"suite": "latency", "what": what, "estimate_s": plan.estimate_s(), "estimate_high_s": plan.estimate_high_s()}]


@pytest.fixture
def latency_recording(session_rec: Any) -> Any:
    """latency_recording(name, suite="latency"): this test's target's recording of `name`."""
    return session_rec


@pytest.fixture
def setup_builders() -> tuple[Any, Any]:
    """(build_engine_setup, build_transfer_setup), for tests that rebuild another session's setup
    (a test module cannot import this conftest by name: every suite has one)."""
    return build_engine_setup, build_transfer_setup


@pytest.fixture
def tiny_overhead_fit() -> Any:
    """session_overhead: the tiny-hidden twins' c0 + c_layer x layers of a session (None without two layer counts),
    for the test that checks it as an additive term."""
    return session_overhead
