"""The fixtures: `reconcile`, `measured`, `hardware`, `model_spec`.

Heavy imports stay inside functions: collecting a suite on a CPU-only machine imports no
torch, vllm or triton."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.gpu_arch import NotOnThisGPU
from pytest_anatomy.findings import BAND_REQUIRED, carried_to_another_card, mark_for, parse_finding_marks
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.option_names import HARDWARE_OPTION, RECORD_OPTION, SOURCE_OPTION
from pytest_anatomy.outcome import RECONCILED
from pytest_anatomy.reconcile import Reconciliation, Tolerance, Verdict, compare
from pytest_anatomy.session import USER_PROPERTY, get_session
from pytest_anatomy.theory.prediction import Prediction

LiveFn = Callable[[], Mapping[str, Any]]


def suite_of(item: pytest.Item) -> str:
    """'tests_capacity/test_x.py::t' -> 'capacity'; anything else -> the top folder name."""
    parts = Path(item.nodeid.split("::", 1)[0]).parts if item.nodeid else ()
    top = parts[0] if len(parts) > 1 else ""
    return top[len("tests_"):] if top.startswith("tests_") else (top or "default")


class Reconciler:
    """Callable behind the `reconcile` fixture; one per test."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self._marks = parse_finding_marks(item)
        # Shared with the makereport hook (outcome.py): findings and resolved findings are
        # settled after the call, so every reconciliation of the test runs first.
        self.results: list[Reconciliation] = item.stash.setdefault(RECONCILED, [])

    def __call__(
        self,
        name: str,
        predicted: Prediction | float,
        measured: Measurement | float,
        *,
        rel: float = 0.0,
        abs: float = 0.0,  # noqa: A002 - mirrors pytest.approx's keyword
        ratio: tuple[float, float] | None = None,
        why: str = "",
        model: str | None = None,
        hardware: str | None = None,
        kind: str = "prediction",
        budget: Mapping[str, float] | None = None,
        finding_band: tuple[float, float] | None = None,
    ) -> Reconciliation:
        """kind   -- what the check is evidence of (reconcile.RECONCILIATION_KINDS): "prediction"
                     unless it checks the engine's own arithmetic ("identity"), the point a constant
                     was fitted on ("fit"), another tool's computed columns ("replay") or an echoed
                     setting ("setting").
        budget -- the tolerance as named relative terms ({"repeat_scatter": 0.01, ...}); rel is
                  their sum, and the report shows the sum. Give either budget or rel/abs/ratio.
        finding_band -- the covering finding's band (measured/predicted), computed at run time from runs other
                  than the one checked (e.g. earlier sessions' ratios carried into this run's calibration); it
                  replaces the mark's static `expected`, and is refused where no finding covers `name`."""
        __tracebackhide__ = True
        if budget is not None:
            if rel or abs or ratio is not None:
                raise ValueError(f"{name}: give either budget= or rel/abs/ratio, not both")
            tolerance = Tolerance.from_budget(why, **budget)
        else:
            tolerance = Tolerance(rel, abs, ratio, why)
        config = self._item.config
        target = _param(self._item, "target")
        hardware = hardware or getattr(target, "name", None) or _provenance_hardware(measured)
        mark = mark_for(self._marks, name, hardware)
        if finding_band is not None and mark is None and any(m.names_another_card(name, hardware) for m in self._marks):
            # The band belongs to a finding recorded on another card (a mark's hardware): on this one the
            # quantity is held to its own tolerance, as every quantity no finding covers.
            finding_band = None
        if finding_band is not None:
            if mark is None:
                raise ValueError(f"{name}: finding_band={finding_band} but no finding mark covers it on "
                                 f"{hardware or 'this target'}: remove finding_band or mark the finding")
            lo, hi = (float(x) for x in finding_band)
            if not 0 <= lo <= hi:
                raise ValueError(f"{name}: finding_band={finding_band} needs 0 <= lo <= hi")
            mark = dataclasses.replace(mark, expected=(round(lo, 4), round(hi, 4)))
        if mark is not None:
            mark = carried_to_another_card(mark, hardware, tolerance)
        recon = compare(
            name, predicted, measured, tolerance,
            finding=mark.to_dict() if mark else None,
            suite=suite_of(self._item), test_id=self._item.nodeid,
            hardware=hardware or UNSPECIFIED_HARDWARE, model=model, kind=kind,
        )
        if recon.verdict is Verdict.FINDING and mark is not None and mark.expected is None:
            # A finding without a band accepts any gap: refused, not recorded (issue 10 item 3).
            raise ValueError(f"{name}: finding {mark.id!r} judged without a band: {BAND_REQUIRED}")
        self.results.append(recon)
        self._item.user_properties.append((USER_PROPERTY, json.dumps(recon.to_dict(), default=str)))
        config.hook.pytest_anatomy_reconciled(config=config, reconciliation=recon)
        if recon.verdict is Verdict.DIVERGE:
            extra = ""
            if mark is not None:
                extra = (f"\n  finding {mark.id!r} expected measured/predicted in {mark.expected}, "
                         f"got {recon.ratio:.4g}: the recorded explanation no longer covers this gap")
            raise AssertionError(f"reconciliation diverged\n{recon.explain()}{extra}")
        return recon


# The ledger's `hardware` when neither reconcile(hardware=...) nor the measurement's provenance
# names one (a plain number): stated as unknown rather than left null or guessed.
UNSPECIFIED_HARDWARE = "unspecified"


def _provenance_hardware(measured: Any) -> str | None:
    prov = getattr(measured, "provenance", None) or {}
    return prov.get("hardware")


class Measured:
    """Callable behind the `measured` fixture: a live measurement or its recording."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self._session = get_session(item.config)

    def __call__(
        self,
        name: str,
        *,
        live: LiveFn | None = None,
        hardware: str | None = None,
        suite: str | None = None,
        recorded_at: str | None = None,
        target: Any = None,
        beside: recordings.Recording | None = None,
        not_after: str | None = None,
        measured_by: str | None = None,
    ) -> recordings.Recording:
        """Return measurement `name` of this test's suite on this test's target.

        live     -- zero-argument callable that measures on the local GPU and returns
                    {"measurements": {q: {value, unit, samples?}}, "provenance": {...}, "data": {...}};
                    omitted for data that only exists as a recording (e.g. the seed's 4090 runs).
                    Called at most once per session per (target, suite, name): every test reading
                    the same measurement shares it, and --anatomy-record writes it once.
        target   -- the Target (default: the test's `target` parameter). A live target measures,
                    a recorded one replays results/<target>/<suite>/<name>@<newest>.json.
        hardware -- replay this hardware's recordings instead (tests without a target)
        recorded_at -- replay the recording of that time instead of the newest; live runs ignore it
        beside   -- replay what was measured in the same session as this other recording (same
                    stamp, or same batch start for a live plan run's one-by-one stamps); live runs
                    ignore it (a live measurement is of this session by construction)
        not_after -- replay the newest recording stamped at or before this recorded_at (what was known
                    when another run was measured); live runs ignore it
        measured_by -- live, the measurement is another suite's (its name): this session's measurement of it
                    when that suite made it (it runs first), else a skip naming the suite; replays as usual
        """
        __tracebackhide__ = True
        suite = suite or suite_of(self._item)
        target = target if target is not None else _param(self._item, "target")
        if target is not None:
            if beside is not None and not target.live:
                return self._replay_beside(name, suite, target.name, beside)
            if not_after is not None and not target.live:
                return self._replay_not_after(name, suite, target.name, not_after)
            if measured_by is not None and target.live:
                return self._made_by(name, suite, target.name, measured_by)
            return self._for_target(name, suite, target, live, recorded_at)
        return self._untargeted(name, suite, live, hardware, recorded_at)

    def _made_by(self, name: str, suite: str, hardware: str, other: str) -> recordings.Recording:
        """This session's live measurement that the `other` suite made, or a skip saying so."""
        __tracebackhide__ = True
        made = self._session.live_cache.get((hardware, suite, name))
        if made is None:
            pytest.skip(f"{suite}/{name} is measured live by {other}, which did not measure it in this session "
                        f"(not selected, or not in its plan for this card and subset)")
        if isinstance(made, BaseException):
            raise made
        return made

    def _for_target(self, name: str, suite: str, target: Any, live: LiveFn | None,
                    recorded_at: str | None) -> recordings.Recording:
        __tracebackhide__ = True
        if target.live:
            if live is None:
                pytest.skip(f"{suite}/{name}: recorded data only, nothing to measure live on {target.name}")
            return self._run_live(name, suite, target.name, live)
        return self._replay(name, suite, target.name, recorded_at, live is not None)

    def _untargeted(self, name: str, suite: str, live: LiveFn | None, hardware: str | None,
                    recorded_at: str | None) -> recordings.Recording:
        """Tests that take no `target` (the plugin's own tests, explicit `hardware=`)."""
        __tracebackhide__ = True
        s = self._session
        settings = s.settings
        live_hw = s.live_hardware_name() if settings.source != "recorded" else None
        want_hw = hardware or s.target_hardware() or settings.replay_hardware
        can_live = live is not None and live_hw is not None and live_hw == want_hw
        if settings.source == "live" and not can_live:
            why = ("no GPU detected" if live_hw is None else
                   f"the live GPU is {live_hw!r} but this measurement is for {want_hw!r}" if live is not None else
                   "this test has no live measurement (recorded data only)")
            pytest.skip(f"{SOURCE_OPTION}=live: {why}")
        if can_live and settings.source in ("live", "auto"):
            return self._run_live(name, suite, want_hw, live)  # type: ignore[arg-type]
        return self._replay(name, suite, want_hw, recorded_at, live is not None)

    def _replay_beside(self, name: str, suite: str, hardware: str, other: recordings.Recording) -> recordings.Recording:
        __tracebackhide__ = True
        try:
            return recordings.load_beside(self._session.settings.results_dir, hardware, suite, name, other)
        except recordings.MissingRecording as exc:
            pytest.skip(f"no recording {_rel(exc.args[0])}")

    def _replay_not_after(self, name: str, suite: str, hardware: str, when: str) -> recordings.Recording:
        __tracebackhide__ = True
        try:
            return recordings.load_not_after(self._session.settings.results_dir, hardware, suite, name, when)
        except recordings.MissingRecording as exc:
            pytest.skip(f"no recording {_rel(exc.args[0])}")

    def _replay(self, name: str, suite: str, hardware: str, recorded_at: str | None,
                has_live: bool) -> recordings.Recording:
        __tracebackhide__ = True
        try:
            return recordings.load_latest(self._session.settings.results_dir, hardware, suite, name, recorded_at)
        except recordings.MissingRecording as exc:
            live_hw = self._session.live_hardware_name() if self._session.settings.source != "recorded" else None
            gpu = "no live GPU" if live_hw is None else f"live GPU is {live_hw}"
            hint = (f"run `pytest -m gpu {RECORD_OPTION}` on a {hardware} to record it"
                    if has_live else "this data only exists as a recording")
            pytest.skip(f"no recording {_rel(exc.args[0])} and {gpu}; {hint}")

    def _run_live(self, name: str, suite: str, hardware: str, live: LiveFn) -> recordings.Recording:
        """Measure once per session (the session cache), record once under --anatomy-record."""
        key = (hardware, suite, name)
        cache = self._session.live_cache
        if key in cache:
            cached = cache[key]
            if isinstance(cached, BaseException):  # a measurement that failed fails every reader alike
                raise cached
            return cached
        started = time.monotonic()
        progress(self._item.config, f"measuring {suite}/{name} on {hardware} ...")
        try:
            result = live()
        except pytest.skip.Exception:
            raise
        except NotOnThisGPU as exc:  # not applicable on this card's architecture: a skip saying so, not a failure
            pytest.skip(str(exc))
        except Exception as exc:
            cache[key] = exc
            raise
        gpu = self._session.live_gpu
        prov = {"source": "live", "hardware": hardware, **dict(result.get("provenance", {}))}
        if gpu is not None and hasattr(gpu, "to_dict"):
            prov.setdefault("gpu", gpu.to_dict())
        target = self._session.live_target()
        if target is not None:
            prov.setdefault("hardware_spec_source", target.spec_source)
        # A live plan run measures many quantities at once; it stamps them all with its own start so
        # that its recordings stay one session (`beside`) and in time order with other sessions.
        recording = recordings.Recording(
            suite=suite, name=name, hardware=hardware, recorded_at=result.get("recorded_at") or recordings.utc_now(),
            provenance=prov, measurements=result["measurements"], data=result.get("data", {}),
            source="live",
        )
        if self._session.settings.record:
            # "_" data keys are this session's own (a live plan's temporary file paths): never recorded
            kept = {k: v for k, v in recording.data.items() if not str(k).startswith("_")}
            path = recordings.save(self._session.settings.results_dir,
                                   recordings.Recording(**{**recording.__dict__, "data": kept}))
            recording = recordings.Recording(**{**recording.__dict__, "path": path})
        cache[key] = recording
        progress(self._item.config, f"measured {suite}/{name} on {hardware} in {time.monotonic() - started:.1f} s"
                 + (f" -> {_rel(str(recording.path))}" if recording.path else ""))
        return recording


def _param(item: pytest.Item, name: str) -> Any:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get(name)


def progress(config: pytest.Config, message: str) -> None:
    """One progress line on the terminal, outside pytest's output capture (a long live run must
    say what it is doing): '[anatomy +12.3s] message'."""
    session = get_session(config)
    line = f"[anatomy +{time.monotonic() - session.started:6.1f}s] {message}"
    capman = config.pluginmanager.getplugin("capturemanager")
    writer = config.pluginmanager.getplugin("terminalreporter")
    if writer is None:
        return
    if capman is not None:
        with capman.global_and_fixture_disabled():
            writer.write_line(line)
    else:
        writer.write_line(line)


def _rel(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


@pytest.fixture
def reconcile(request: pytest.FixtureRequest) -> Reconciler:
    """Compare a prediction with a measurement, record it in the ledger, and assert.

    Example::

        def test_kv_tokens(reconcile, measured):
            rec = measured("seed-r2-vllm-kv-pool", hardware="rtx4090")
            reconcile("kv_tokens", predict_tokens(...), rec["kv_tokens"],
                      rel=8e-4, why="the log rounds available GiB to 2 decimals")
    """
    return Reconciler(request.node)


@pytest.fixture
def measured(request: pytest.FixtureRequest) -> Measured:
    """Get a measurement: live on a matching GPU, else the newest recording, else skip.

    Example::

        rec = measured("vllm-ledger.qwen2.5-7b.u0.90", live=lambda: run_engine(cfg))
        rec["num_gpu_blocks"]  # -> Measurement with provenance
    """
    return Measured(request.node)


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Any:
    """The card this test reconciles (targets.Target: name, live, spec, spec_source). The plugin
    parametrizes every test that takes it over the session's targets: the live GPU and every
    hardware folder of recordings under results/ (see --anatomy-source). A module that needs
    (target, case) pairs parametrizes "target" itself in pytest_generate_tests.

    Example::

        @pytest.mark.gpu
        def test_bandwidth(target, measured, reconcile):
            rec = measured("kernels-ceilings", live=measure_ceilings)   # live on a live target
            reconcile("copy_bandwidth", target.require_spec().memory_bandwidth, rec["copy_bandwidth"], ...)
    """
    param = getattr(request, "param", None)
    if param is None:
        raise pytest.UsageError(f"{request.node.nodeid}: the target fixture is parametrized by the plugin; "
                                "do not request it from a fixture of another scope")
    return param


@pytest.fixture(scope="session")
def hardware(request: pytest.FixtureRequest) -> Any:
    """The HardwareSpec predictions use: --anatomy-hardware, else the detected GPU, else skip.

    Example::

        def test_ridge(hardware):
            assert hardware.memory_bandwidth > 0
    """
    from pytest_anatomy.specs.hardware import get_hardware, spec_for_detected

    s = get_session(request.config)
    if s.settings.hardware != "auto":
        return get_hardware(s.settings.hardware)
    if s.live_gpu is not None:
        return spec_for_detected(s.live_gpu)
    pytest.skip(f"no hardware selected and no GPU detected: pass {HARDWARE_OPTION}=NAME "
                "(rtx4090, h100-sxm, h100-pcie, h200, a100-80gb, a100-40gb, l40s, b200, b300, gb200)")


@pytest.fixture(scope="session")
def model_spec(request: pytest.FixtureRequest) -> Any:
    """The ModelSpec from --anatomy-model (catalog name, HF id or config.json path).

    Example::

        def test_gqa(model_spec):
            assert model_spec.num_attention_heads % model_spec.num_kv_heads == 0
    """
    from pytest_anatomy.specs.model import load_model

    return load_model(get_session(request.config).settings.model)
