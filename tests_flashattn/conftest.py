"""Fixtures of the FlashAttention suite: the session's ceilings and the cases' recordings.

The GPU tests take the plugin's `target` (the live GPU, or a card with flashattn recordings);
`measured` makes each live measurement once per session, whichever test reads it first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pytest


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


@pytest.fixture
def session_ceilings(measured: Any, target: Any) -> SessionCeilings | None:
    """Live: the session's ceilings, measured once per session (shared with every suite that reads
    them, recorded under results/<gpu>/ceilings with --anatomy-record). Replayed recordings use the
    ceilings of their own session instead (ceilings_for); this is None then."""
    if not target.live:
        return None
    from pytest_anatomy.measure.flashattn_runner import live_ceilings

    return _ceilings_of(measured("ceilings", live=live_ceilings, suite="ceilings"))


@pytest.fixture
def ceilings_for(measured: Any, target: Any,
                 session_ceilings: SessionCeilings | None) -> Callable[[Any], SessionCeilings]:
    """ceilings_for(rec) -> the ceilings measured in the session that measured `rec`."""
    def get(rec: Any) -> SessionCeilings:
        if rec.source == "live" and session_ceilings is not None:
            return session_ceilings
        stamp = rec.provenance.get("ceilings_recorded_at")
        if stamp is None:
            pytest.skip(f"recording {rec.name} names no ceilings_recorded_at: its session's ceilings are unknown")
        return _ceilings_of(measured("ceilings", suite="ceilings", recorded_at=stamp))
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


@pytest.fixture
def measured_once(measured: Any, live_with_ceilings: Any) -> Callable[..., Any]:
    """measured_once(name, fn) -> the recording of `name` for this test's target; `measured`'s
    session cache makes the GPU run once (a rung's own test and the target tests share it)."""
    def get(name: str, fn: Callable[[], Mapping[str, Any]], beside: Any = None) -> Any:
        return measured(name, live=live_with_ceilings(fn), beside=beside)
    return get


def pytest_anatomy_live_plan(config: pytest.Config, items: list[pytest.Item]) -> list[dict]:
    """The attention cases the selected tests read, each compiled, checked and timed once; the N sweep's
    cases beyond them (its own entry, marked slow); a Gluon rung's preflight and compiles
    (flashattn_cases.live_plan)."""
    from flashattn_cases import live_plan

    def cases_of(sweep: bool) -> set[Any]:
        return {key for i in items if "tests_flashattn" in i.nodeid and getattr(i, "callspec", None)
                and ("test_flashattn_sweep.py" in i.nodeid) == sweep for key in _measured_keys(i.callspec.params)}

    return live_plan(cases_of(False), cases_of(True))


def _measured_keys(params: Mapping[str, Any]) -> set[Any]:
    """What one test measures: its attention case; or its decode shape once per flash-decoding variant it times (its
    `variant` and the one it is timed `beside`, by recording prefix; the two-kernel `fd` where it names none); or,
    for the partial-last-wave test, its role's forced 64k call (test_flashattn_waves; the reference's is one more,
    counted with the first role); or, for the per-SM test, its forced call one count past the launch rule's (its
    reference, one count below, is the own-grid line's 64k call where that test runs, so it is not counted again)."""
    if params.get("case") is not None:
        return {params["case"]}
    if params.get("role") is not None:
        return {("fd-waves", params["role"])} | ({("fd-waves", "reference")} if params["role"] == "whole-1" else set())
    if params.get("step") is not None:
        return {("fd-per-sm", params["step"])}
    if params.get("d") is None:
        return set()
    variants = [params[k] for k in ("variant", "beside") if k in params] or [None]
    return {(params["d"], getattr(v, "prefix", "fd")) for v in variants}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A live card's skip of each attention case whose rung its architecture cannot run (a Gluon rung, written for
    Hopper's wgmma, on an A100 or a 4090): decided here, so `--anatomy-plan` leaves it out and no compile (for Gluon
    an LLVM abort) is spent on it. The targets' best-of tests pass such a rung by (flashattn_runner checks too)."""
    from pytest_anatomy import gpu_arch
    from pytest_anatomy.kernels.flashattn import registry

    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        case, target = params.get("case"), params.get("target")
        if "tests_flashattn" not in item.nodeid or case is None or target is None:
            continue
        why = gpu_arch.skip_reason(f"attention rung {case.rung}", registry.rung(case.rung).requires, target)
        if why:
            item.add_marker(pytest.mark.skip(reason=why))
