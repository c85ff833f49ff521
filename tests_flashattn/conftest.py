"""Fixtures of the FlashAttention suite: the target GPU, the session's ceilings, the sweep.

`target` and `session_ceilings` are TEMPORARY here: the plugin is getting a session-level
`target` fixture (and `measured` will default its hardware to `target.name`); until then these
two give the GPU tests the same interface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pytest

from pytest_anatomy.specs.hardware import HardwareSpec, get_hardware, spec_for_detected

DEFAULT_HARDWARE = "h200"


@dataclass(frozen=True)
class Target:  # TEMP: replaced by the plugin's target fixture
    name: str
    live: bool
    spec: HardwareSpec


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest) -> Target:  # TEMP: replaced by the plugin's target fixture
    """The hardware the GPU tests are about: --anatomy-hardware, else the live GPU, else the
    h200 recordings. live is True when that hardware is the GPU in this machine."""
    from pytest_anatomy.session import get_session

    s = get_session(request.config)
    live_name = s.live_hardware_name() if s.settings.source != "recorded" else None
    name = s.settings.hardware if s.settings.hardware != "auto" else (live_name or DEFAULT_HARDWARE)
    live = live_name is not None and live_name == name
    spec = spec_for_detected(s.live_gpu) if live else get_hardware(name)
    return Target(name, live, spec)


@dataclass(frozen=True)
class SessionCeilings:
    """Measured bf16 GEMM rate and read bandwidth, and the recording they came from."""

    gemm_flops: float
    read_bandwidth: float
    recorded_at: str
    source: str


def _ceilings_of(rec: Any) -> SessionCeilings:
    gemm, read = rec["matmul_bf16.value"], rec["read_bandwidth.value"]
    where = gemm.provenance.get("recording", f"results/{rec.hardware}/ceilings ({rec.source})")
    return SessionCeilings(gemm.value, read.value, rec.recorded_at,
                           f"matmul_bf16 8192^3 and read_bandwidth, {where} @ {rec.recorded_at}")


@pytest.fixture(scope="session")
def session_ceilings(request: pytest.FixtureRequest, target: Target) -> SessionCeilings | None:  # TEMP
    """Live: measured once per session (and recorded under results/<gpu>/ceilings with
    --anatomy-record). Replayed recordings use the ceilings of their own session instead
    (ceilings_for); this is None then."""
    if not target.live:
        return None
    from pytest_anatomy.fixtures import Measured
    from pytest_anatomy.measure.flashattn_runner import live_ceilings

    rec = Measured(request.node)("ceilings", live=live_ceilings, hardware=target.name, suite="ceilings")
    return _ceilings_of(rec)


@pytest.fixture
def ceilings_for(measured: Any, target: Target,
                 session_ceilings: SessionCeilings | None) -> Callable[[Any], SessionCeilings]:
    """ceilings_for(rec) -> the ceilings measured in the session that measured `rec`."""
    def get(rec: Any) -> SessionCeilings:
        if rec.source == "live" and session_ceilings is not None:
            return session_ceilings
        stamp = rec.provenance.get("ceilings_recorded_at")
        if stamp is None:
            pytest.skip(f"recording {rec.name} names no ceilings_recorded_at: its session's ceilings are unknown")
        return _ceilings_of(measured("ceilings", hardware=target.name, suite="ceilings", recorded_at=stamp))
    return get


@pytest.fixture
def live_with_ceilings(session_ceilings: SessionCeilings | None) -> Callable[[Callable[[], Mapping[str, Any]]], Any]:
    """Wrap a live measurement so its provenance names the ceilings measured beside it."""
    def wrap(fn: Callable[[], Mapping[str, Any]]) -> Callable[[], Mapping[str, Any]]:
        def run() -> Mapping[str, Any]:
            out = dict(fn())
            if session_ceilings is not None:
                out["provenance"] = {**out.get("provenance", {}), "ceilings_recorded_at": session_ceilings.recorded_at}
            return out
        return run
    return wrap


_MEASURED_ONCE: dict[tuple[str, str], Any] = {}


@pytest.fixture
def measured_once(measured: Any, target: Target, live_with_ceilings: Any) -> Callable[..., Any]:
    """measured_once(name, fn) -> the recording of `name` for the target, measured live at most once
    per session (a rung's own test and the target tests share one GPU run and one file)."""
    def get(name: str, fn: Callable[[], Mapping[str, Any]]) -> Any:
        key = (target.name, name)
        if key not in _MEASURED_ONCE:
            _MEASURED_ONCE[key] = measured(name, live=live_with_ceilings(fn), hardware=target.name)
        return _MEASURED_ONCE[key]
    return get
