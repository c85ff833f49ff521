"""The live runner's code paths on the CPU: kernels in the interpreter, the timing layer faked.

What the GPU visit would otherwise test first: poison -> run -> check -> time -> the dict the
`measured` fixture records (schema-valid), provenance with the chosen config, and a wrong
kernel refused before it is timed.
"""

from __future__ import annotations

from typing import Any

import pytest
from flashattn_interp import interpreted_rungs, use_interpreter_or_skip

from pytest_anatomy import recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.measure import flashattn_runner as fr
from pytest_anatomy.theory import attention as at


@pytest.fixture(autouse=True, scope="module")
def _interpreter() -> None:
    use_interpreter_or_skip()  # imports torch and triton at run time, not at collection

SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1}


@pytest.fixture
def fake_timing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def fake(fn: Any, flush: Any, *, runs: int, warmup: int, max_seconds: float = 3.0) -> dict[str, Any]:
        fn()  # the callable must run as it would under CUDA events
        calls.append(getattr(fn, "__name__", "?"))
        ms = [1.0 + len(calls), 2.0 + len(calls), 1.5 + len(calls)]
        return {"ms_median": sorted(ms)[1], "ms_min": min(ms), "ms_max": max(ms), "runs": 3, "warmup": warmup,
                "samples_ms": ms, "l2_flush_bytes": flush.numel() * 4}
    monkeypatch.setattr(fr, "time_flushed", fake)
    return calls


def _recordable(out: dict[str, Any], name: str) -> recordings.Recording:
    rec = recordings.Recording(suite="flashattn", name=name, hardware="h200", recorded_at=recordings.utc_now(),
                               provenance={"source": "live", **out["provenance"]}, measurements=out["measurements"],
                               data=out["data"], source="live")
    recordings.validate(rec.to_json(), name)
    return rec


@pytest.mark.parametrize("r", interpreted_rungs())
def test_live_case_runs_checks_times_and_records(r: registry.Rung, fake_timing: list[str]) -> None:
    import importlib

    cfg = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}").INTERPRETER_CONFIG
    out = fr.live_case(r.id, batch=1, heads=4, kv_heads=2, n=37, head_dim=16, causal=True, dtype="fp16",
                       device="cpu", config=cfg)
    assert fake_timing == ["run", "default", "flash", "run"]
    assert out["data"]["correctness"]["status"] == "ok"
    assert out["provenance"]["config"] == cfg and out["provenance"]["rung"] == r.id
    rec = _recordable(out, fr.case_name(r.id, 1, 4, 37, 16, True, kv_heads=2, dtype="fp16"))
    t = rec["time"]
    assert t.unit == "s" and t.value == pytest.approx(2.5e-3) and len(t.samples) == 3
    assert {"sdpa_default_time", "sdpa_flash_time", "time_repeat"} <= set(rec.measurements)


def test_live_decode_runs_checks_times_and_records(fake_timing: list[str]) -> None:
    out = fr.live_decode(batch=2, heads=8, kv_heads=2, context=150, head_dim=32, dtype="fp16", device="cpu",
                         block_n=16)
    assert out["data"]["correctness"]["status"] == "ok"
    assert out["provenance"]["settings"]["splits"] == out["provenance"]["config"]["splits"] >= 1
    _recordable(out, fr.decode_name(2, 8, 2, 150, 32))["sdpa_flash_time"]


def test_live_decode_with_forced_splits_launches_whole_tiles_and_records_apart(fake_timing: list[str]) -> None:
    """Asked for 6 splits of 150 tokens in tiles of 16, the kernel launches 5 (chunks of 2 tiles): the recording says
    both, and its name carries the count asked, apart from the launch rule's call."""
    out = fr.live_decode(batch=2, heads=8, kv_heads=2, context=150, head_dim=32, dtype="fp16", device="cpu",
                         block_n=16, splits=6)
    assert out["data"]["correctness"]["status"] == "ok"
    assert out["provenance"]["config"]["splits"] == at.launched_splits(150, 6, 16) == 5
    assert out["provenance"]["settings"]["splits_forced"] is True
    name = fr.decode_name(2, 8, 2, 150, 32, splits=6)
    assert name == fr.decode_name(2, 8, 2, 150, 32) + ".s6"
    _recordable(out, name)


def test_live_decode_of_fd2_checks_its_counters_and_records_apart(fake_timing: list[str]) -> None:
    """The fused reduction through the runner: checked after its compile call and a poisoned second call on the same
    workspace, its counters back at 0, recorded as `fd2.` with its variant in the provenance."""
    fused = registry.DECODE_VARIANTS[1].id
    out = fr.live_decode(batch=2, heads=8, kv_heads=2, context=150, head_dim=32, dtype="fp16", device="cpu",
                         block_n=16, variant=fused)
    check = out["data"]["correctness"]
    assert check["status"] == "ok" and check["counters_reset"] is True
    assert out["provenance"]["variant"] == fused and out["provenance"]["config"]["fused_reduce"] is True
    assert _recordable(out, fr.decode_name(2, 8, 2, 150, 32, fused)).name.startswith("fd2.")


def test_a_wrong_kernel_is_refused_before_timing(monkeypatch: pytest.MonkeyPatch, fake_timing: list[str]) -> None:
    from pytest_anatomy.kernels.flashattn import launch

    def leaves_a_row(rung: Any, q: Any, k: Any, v: Any, o: Any, lse: Any, **kw: Any) -> dict[str, int]:
        o.zero_()  # O = 0 everywhere: wrong wherever the true output is not ~0
        lse.zero_()
        return SMALL
    monkeypatch.setattr(launch, "forward", leaves_a_row)
    with pytest.raises(fr.WrongOutput, match="r3-fa2 gave a wrong result .* not timed"):
        fr.live_case("r3-fa2", batch=1, heads=2, n=20, head_dim=16, causal=False, dtype="fp16", device="cpu")
    assert fake_timing == []


def test_recording_names() -> None:
    assert fr.case_name("r6-tma-pipelined", 4, 32, 4096, 128, True) == "fa2.r6-tma-pipelined.b4h32n4096d128.causal"
    assert fr.case_name("r3-fa2", 4, 32, 4096, 128, False, kv_heads=8) == "fa2.r3-fa2.b4h32kv8n4096d128.full"
    assert fr.decode_name(8, 32, 8, 65536, 128) == "fd.b8h32kv8l65536d128"


def test_gpu_cases_refuse_fp32() -> None:
    import torch

    with pytest.raises(ValueError, match="bf16 or fp16"):
        fr._torch_dtype(torch, "fp32", "cuda")


def test_warnings_land_in_provenance_instead_of_aborting(monkeypatch: pytest.MonkeyPatch,
                                                         fake_timing: list[str]) -> None:
    import warnings

    real = fr._sdpa_callables

    def advising(*a: Any, **kw: Any) -> Any:
        warnings.warn("Flash attention kernel not used because: an advisory", UserWarning, stacklevel=1)
        return real(*a, **kw)
    monkeypatch.setattr(fr, "_sdpa_callables", advising)
    out = fr.live_case("r3-fa2", batch=1, heads=2, n=20, head_dim=16, causal=False, dtype="fp16", device="cpu",
                       config={"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1})
    assert "UserWarning: Flash attention kernel not used because: an advisory" in out["provenance"]["warnings"]


def test_a_gluon_rung_failing_its_preflight_fails_each_case_without_a_second_run(monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """A hang (the child's timeout) is r7's failure, reported by every r7 case; the child runs once per session."""
    import subprocess

    calls: list[list[str]] = []

    def hangs(cmd: list[str], **kw: Any) -> Any:
        calls.append(cmd)
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])
    monkeypatch.setattr(fr.subprocess, "run", hangs)
    monkeypatch.setattr(fr, "_PREFLIGHT", {})
    for _ in range(2):
        with pytest.raises(fr.PreflightFailed, match="r7-warp-specialized failed its child-process preflight.*hang"):
            fr.preflight("r7-warp-specialized", timeout_s=1)
    assert calls == [[fr.sys.executable, "-m", "pytest_anatomy.measure.flashattn_preflight", "r7-warp-specialized"]]


def test_the_preflight_verdict_reads_the_childs_json_line() -> None:
    import json
    import subprocess

    def child(rc: int, rows: list[dict[str, Any]] | None, err: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([], rc, "" if rows is None else "log line\n" + json.dumps(rows), err)
    ok, wrong = {"status": "ok"}, {"status": "wrong", "o_max_abs_error": 3.0}
    assert fr._preflight_verdict(child(0, [ok, ok])) is None
    assert "wrong result" in str(fr._preflight_verdict(child(1, [ok, wrong])))
    assert "illegal memory access" in str(fr._preflight_verdict(child(1, None, "RuntimeError: illegal memory access")))
    assert fr._preflight_verdict(child(0, [])) is not None  # nothing checked is no pass


@pytest.mark.parametrize("rung_id", [r.id for r in registry.LADDER if r.dialect == "gluon"])
def test_the_gluon_rungs_refuse_the_interpreter_in_one_line(rung_id: str) -> None:
    import torch

    from pytest_anatomy.kernels.flashattn import launch

    q = torch.zeros(1, 2, 8, 64, dtype=torch.float16)
    with pytest.raises(launch.BadAttentionInput, match="interpreter .* runs triton.language kernels only"):
        launch.forward(registry.rung(rung_id), q, q, q, torch.empty_like(q), torch.empty(1, 2, 8),
                       causal=False, sm_scale=0.125)
