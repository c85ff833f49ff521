"""The latency plan's batched-prefill part (scripts/device/latency_plan.py, kind prefill_batch), on the CPU: planned
only where --only names it, run against a fake engine (every round's prompts at once, the engine and client spans per
round, the warm-up round discarded), and its result imported into a recording with the engine span's rounds as the
samples of its median (`pytest-anatomy import-device`)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, AsyncIterator

import device_scripts
import pytest

from pytest_anatomy import recordings
from pytest_anatomy.importers import device
from pytest_anatomy.measure.load_driver import LoadDriver
from pytest_anatomy.specs.hardware import get_hardware

plan = device_scripts.load("latency_plan")
CARD = get_hardware(device_scripts.load("quant_decode").HARDWARE)  # the card the batched part was written for
ONLY = ["--only", "prefill,prefill_batch", "--prefill-lens", "512", "--second-model", "none",
        "--overhead-models", "none"]


def _parts(argv: list[str]) -> dict[str, Any]:
    args = plan.parse_args(argv)
    cost = plan.CostModel.from_config(plan.load_model_config(None)[0])
    return {p.id: p for p in plan.build_plan(args, cost)}


def test_the_part_is_planned_only_where_it_is_asked_for() -> None:
    assert not any(p.kind == "prefill_batch" for p in _parts([]).values())
    assert not any(p.kind == "prefill_batch" for p in _parts(["--only", "prefill"]).values())
    parts = _parts(ONLY)
    part = parts[f"{plan.MODEL}.prefill.b{plan.PREFILL_BATCH}.L{plan.PREFILL_BATCH_LEN}"]
    assert part.settings == {"batch": 64, "input_len": 512, "output_len": 1, "repeats": 3, "seed": 664}
    cost = plan.CostModel.from_config(plan.load_model_config(None)[0])
    assert part.estimate_s == pytest.approx(4 * 64 * cost.prefill_s(512) + 100 * cost.request_s)
    assert f"{plan.MODEL}.prefill.L512" in parts
    assert f"{plan.MODEL}.prefill.b8.L512" in _parts([*ONLY, "--prefill-batch", "8"])


def test_the_dry_run_lists_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert plan.main(["--dry-run", *ONLY]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if ".prefill.b64.L512 " in x)
    assert "[SKIP" not in line


class BatchEngine:
    """Schedules every request `lag_s` after it arrives and emits its one token `step_s` later."""

    def __init__(self, step_s: float = 0.003, lag_s: float = 0.001) -> None:
        self.step_s, self.lag_s = step_s, lag_s

    async def generate(self, prompt: dict[str, Any], params: int, rid: str) -> AsyncIterator[Any]:
        m = SimpleNamespace(arrival_time=time.time(), queued_ts=time.monotonic(), scheduled_ts=0.0,
                            first_token_ts=0.0, last_token_ts=0.0, num_generation_tokens=0)
        await asyncio.sleep(self.lag_s)
        m.scheduled_ts = time.monotonic()
        await asyncio.sleep(self.step_s)
        m.first_token_ts = m.last_token_ts = time.monotonic()
        m.num_generation_tokens = 1
        yield SimpleNamespace(outputs=[SimpleNamespace(token_ids=[7])], metrics=m, num_cached_tokens=0)

    def shutdown(self) -> None:
        pass


class FakeDriver(LoadDriver):
    def sampling_params(self, output_len: int) -> int:
        return output_len


def _run(batch: int = 4) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    part = _parts([*ONLY, "--prefill-batch", str(batch)])[f"{plan.MODEL}.prefill.b{batch}.L512"]
    driver = FakeDriver(BatchEngine(), timeline=[], startup_s=0.0, log=lambda s: None)
    body, raw = asyncio.run(plan.run_prefill_batch(driver, part, time.monotonic() + 30, 1000))
    return part, body, raw


def test_each_round_sends_its_own_prompts_at_once_and_keeps_the_spans() -> None:
    part, body, raw = _run()
    r = body["result"]
    assert all(body["checks"].values()), body["checks"]
    assert len(raw["requests"]) == 4 * 4 and len(r["rounds"]) == 4 and r["warmup_discarded"] == 1
    spans = r["samples"]["engine_span_s"]
    assert len(spans) == 3 == r["engine_span_s"]["n"] and all(0.003 <= s < 0.5 for s in spans)
    assert r["engine_span_s"]["median"] == sorted(spans)[1]
    assert all(c >= 0.003 for c in r["samples"]["span_s"])  # the client's span holds the engine's step too
    kept = r["rounds"][1:]
    assert r["engine_tokens_per_s"]["median"] == pytest.approx(sorted(4 * 512 / k["engine_span_s"] for k in kept)[1])
    assert r["queued_after_first_schedule_max"] is not None


def test_the_importer_names_its_measurements(tmp_path: Path) -> None:
    part, body, _ = _run()
    doc = {"schema": device.BATCH_SCHEMA,
           "provenance": {"date_utc": "2026-11-30T00:00:00+00:00", "command": "plan", "versions": {"vllm": "0.26.0"},
                          "nvidia_smi": {"summary": {"name": CARD.nvml_names[0], "driver": "580.159.04"}}},
           "runs": [{"id": part.id, "kind": part.kind, "settings": part.settings, **body}]}
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(doc))
    device.import_files([path], tmp_path / "results")
    rec = recordings.load_latest(tmp_path / "results", CARD.name, "latency", f"{plan.MODEL}.prefill.b4.l512")
    span = rec["engine_span_s.median"]
    assert span.unit == "s" and list(span.samples) == body["result"]["samples"]["engine_span_s"]
    assert rec["span_s.median"].unit == "s"
    assert rec["engine_tokens_per_s.median"].unit == "tokens/s" and rec["tokens_per_s.median"].unit == "tokens/s"
    assert rec.provenance["kind"] == "prefill_batch" and rec.provenance["checks"] == body["checks"]
