"""The fixtures: `reconcile`, `measured`, `hardware`, `model_spec`.

Heavy imports stay inside functions: collecting a suite on a CPU-only machine imports no
torch, vllm or triton."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from pytest_anatomy import recordings
from pytest_anatomy.findings import mark_for, parse_finding_marks
from pytest_anatomy.measure.measurement import Measurement
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
        self.results: list[Reconciliation] = []

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
    ) -> Reconciliation:
        __tracebackhide__ = True
        config = self._item.config
        mark = mark_for(self._marks, name)
        rec = compare(
            name, predicted, measured, Tolerance(rel, abs, ratio, why),
            finding=mark.to_dict() if mark else None,
            suite=suite_of(self._item), test_id=self._item.nodeid,
            hardware=hardware or _provenance_hardware(measured), model=model,
        )
        self.results.append(rec)
        self._item.user_properties.append((USER_PROPERTY, json.dumps(rec.to_dict(), default=str)))
        config.hook.pytest_anatomy_reconciled(config=config, reconciliation=rec)
        if rec.verdict is Verdict.DIVERGE:
            extra = ""
            if mark is not None:
                extra = (f"\n  finding {mark.id!r} expected measured/predicted in {mark.expected}, "
                         f"got {rec.ratio:.4g}: the recorded explanation no longer covers this gap")
            raise AssertionError(f"reconciliation diverged\n{rec.explain()}{extra}")
        if rec.verdict is Verdict.RESOLVED and get_session(config).settings.strict_findings:
            pytest.fail(
                f"finding {mark.id!r} is resolved: {name} now agrees "  # type: ignore[union-attr]
                f"(measured/predicted {rec.ratio}); remove the finding mark\n{rec.explain()}",
                pytrace=False,
            )
        return rec


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
    ) -> recordings.Recording:
        """Return recording `name` for this test's suite.

        live     -- zero-argument callable that measures on the local GPU and returns
                    {"measurements": {q: {value, unit, samples?}}, "provenance": {...}, "data": {...}};
                    omitted for data that only exists as a recording (e.g. the seed's 4090 runs)
        hardware -- pin the hardware (seed data is 'rtx4090'); default: --anatomy-hardware, else the
                    live GPU, else ini anatomy_replay_hardware
        recorded_at -- replay the recording of that time instead of the newest: what was measured in
                    the same session as another recording (`other.recorded_at`); live runs ignore it
        """
        __tracebackhide__ = True
        s = self._session
        settings = s.settings
        suite = suite or suite_of(self._item)
        live_hw = s.live_hardware_name() if settings.source != "recorded" else None
        want_hw = hardware or s.target_hardware() or settings.replay_hardware
        can_live = live is not None and live_hw is not None and live_hw == want_hw
        if settings.source == "live" and not can_live:
            why = ("no GPU detected" if live_hw is None else
                   f"the live GPU is {live_hw!r} but this measurement is for {want_hw!r}" if live is not None else
                   "this test has no live measurement (recorded data only)")
            pytest.skip(f"--anatomy-source=live: {why}")
        if can_live and settings.source in ("live", "auto"):
            return self._run_live(name, suite, want_hw, live)  # type: ignore[arg-type]
        try:
            return recordings.load_latest(settings.results_dir, want_hw, suite, name, recorded_at)
        except recordings.MissingRecording as exc:
            gpu = "no live GPU" if live_hw is None else f"live GPU is {live_hw}"
            hint = (f"run `pytest -m gpu --anatomy-record` on a {want_hw} to record it"
                    if live is not None else "this data only exists as a recording")
            pytest.skip(f"no recording {_rel(exc.args[0])} and {gpu}; {hint}")

    def _run_live(self, name: str, suite: str, hardware: str, live: LiveFn) -> recordings.Recording:
        result = live()
        gpu = self._session.live_gpu
        prov = {"source": "live", "hardware": hardware, **dict(result.get("provenance", {}))}
        if gpu is not None and hasattr(gpu, "to_dict"):
            prov.setdefault("gpu", gpu.to_dict())
        rec = recordings.Recording(
            suite=suite, name=name, hardware=hardware, recorded_at=recordings.utc_now(),
            provenance=prov, measurements=result["measurements"], data=result.get("data", {}),
            source="live",
        )
        if self._session.settings.record:
            path = recordings.save(self._session.settings.results_dir, rec)
            rec = recordings.Recording(**{**rec.__dict__, "path": path})
        return rec


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
    pytest.skip("no hardware selected and no GPU detected: pass --anatomy-hardware=NAME "
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
