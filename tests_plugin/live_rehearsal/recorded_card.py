"""A pytest plugin that makes a CPU machine look like any card with recorded vLLM ledgers, for rehearsing the
capacity and latency suites' live path on it (fake_h200.py does the same for the H200 from its first device batches).

ANATOMY_REHEARSE_CARD names a folder under results/ (ANATOMY_REHEARSE_RESULTS, default the repository's). NVML
detection answers with the GPU the card's newest ledger recording made by a live session names in its provenance
(its CUDA total, SMs and L2 as the driver reported them; a device program's ledger names the GPU only); each engine start returns the newest recording of the same model and
settings on that card, the one the replay reads (recordings.load_latest). Everything between those measurements
and the verdicts runs for real, so a live session on the card can be checked on CPU against the replay of the
same recordings. The latency plan (latency_live.run_plan) is answered from one of the card's recorded plan runs:
the folder under results/<card>/batches/ that ANATOMY_REHEARSE_LATENCY names, else the newest whose latency*.json
hold every part the plan (as fitted to the card) runs; it writes that folder's files to the plan's out_dir as the
device program does, keeping only the models and parts the plan runs.
Use: `ANATOMY_REHEARSE_CARD=<card> PYTHONPATH=tests_plugin/live_rehearsal pytest -p recorded_card -m gpu
--anatomy-source=live tests_capacity tests_latency`.
"""
from __future__ import annotations

import dataclasses
import json
import lzma
import os
from pathlib import Path
from typing import Any, Callable

from pytest_anatomy import gpu_query, recordings
from pytest_anatomy.specs import hardware

REPO = Path(__file__).resolve().parents[2]
PREFIX = "vllm-ledger."
MATCHED_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size")


def _card() -> tuple[Path, str]:
    card = os.environ.get("ANATOMY_REHEARSE_CARD")
    if not card:
        raise RuntimeError("recorded_card: set ANATOMY_REHEARSE_CARD to a folder under results/")
    return Path(os.environ.get("ANATOMY_REHEARSE_RESULTS") or REPO / "results"), card


def _ledgers() -> list[recordings.Recording]:
    results, card = _card()
    recs = [recordings.load_latest(results, card, "capacity", n)
            for n in recordings.list_recordings(results, card, "capacity", PREFIX)]
    if not recs:
        raise RuntimeError(f"recorded_card: no {PREFIX}* recordings under {results}/{card}/capacity")
    return recs


def _detected_gpu_ledgers() -> list[recordings.Recording]:
    """The ledgers whose provenance holds the GPU as a live session detected it (hardware.DetectedGPU's fields). A
    device program's ledger (scripts/device/capacity_plan.py, e.g. the H200's V1-runner starts) names the GPU only
    ("NVIDIA H200"): it has no facts to answer NVML with, so it is no source for them, however new."""
    return [r for r in _ledgers() if isinstance(r.provenance.get("gpu"), dict)]


def pytest_configure(config: Any) -> None:
    detected_by_sessions = _detected_gpu_ledgers()
    if not detected_by_sessions:
        _, card = _card()
        raise RuntimeError(f"recorded_card: no {card} {PREFIX}* recording holds the detected GPU's facts")
    newest = max(detected_by_sessions, key=lambda r: r.recorded_at)
    gpu = dict(newest.provenance["gpu"])
    known = {f.name for f in dataclasses.fields(hardware.DetectedGPU)}
    gpu = {k: v for k, v in gpu.items() if k in known}
    gpu["compute_capability"] = tuple(gpu["compute_capability"])
    gpu["backend"] = "nvml"
    detected = hardware.DetectedGPU(**gpu)
    hardware.detect = lambda *a, **k: detected
    facts = {"sm_count": gpu["sm_count"], "l2_bytes": gpu["l2_bytes"],
             "cuda_memory_total_bytes": gpu["cuda_memory_total_bytes"],
             "compute_capability": list(gpu["compute_capability"])}
    gpu_query.cuda_device_facts = lambda *a, **k: facts
    hardware.visible_gpu_count = lambda: 1


def fake_measure_memory_ledger(config: dict, settings: Any, timeout_s: int = 600, workdir: Any = None,
                               model_dir: Any = None) -> dict:
    from pytest_anatomy.specs import catalog

    tag = settings.tag()
    for rec in _ledgers():
        model = str(rec.provenance["model"])
        recorded = catalog.load_config(model)
        if rec.name == f"{PREFIX}{model}.{tag}" and all(recorded.get(k) == config.get(k) for k in MATCHED_KEYS):
            return dict(rec.data["run"]["result"])
    _, card = _card()
    return {"status": "error", "error_class": "not-recorded", "error_message": f"no {card} ledger for {tag}",
            "log_tail": []}


# a run of the plan that is one of its parts (the others, "ceilings", "<model>.engine", warmups, ride along)
PART_KINDS = (".decode.", ".prefill.", ".closed.", ".poisson.", ".overload")


def plan_runs(plan: Any) -> set[str]:
    """The run ids of the parts a latency plan (measure/latency_live.LatencyLivePlan) measures."""
    m = plan.model
    ids = {f"{m}.decode.b{b}" for b in plan.decode_batches} | {f"{m}.prefill.L{n}" for n in plan.prefill_lens}
    ids |= {f"{m}.closed.c{c}" for c in plan.closed} | {f"{m}.poisson.f{f:g}" for f in plan.poisson_factors}
    ids |= {f"{m}.overload"} if plan.overload else set()
    if plan.second_model:
        s = plan.second_model
        second = plan.decode_batches if plan.second_decode_batches is None else plan.second_decode_batches
        ids |= {f"{s}.decode.b{b}" for b in second} | {f"{s}.prefill.L{n}" for n in plan.prefill_lens}
    return ids


def _model_id(doc: dict) -> Any:
    model = (doc.get("provenance") or {}).get("model")
    return model.get("id") if isinstance(model, dict) else model


def batch_docs(folder: Path) -> dict[str, dict]:
    """A batch folder's latency documents by the name the plan wrote them under (latency*.json, xz or not)."""
    docs = {}
    for path in sorted(folder.glob("latency*.json")) + sorted(folder.glob("latency*.json.xz")):
        raw = path.read_bytes()
        docs[path.name.removesuffix(".xz")] = json.loads(lzma.decompress(raw) if path.name.endswith(".xz") else raw)
    return docs


def latency_batch(results: Path, card: str, plan: Any) -> Path | None:
    """The card's recorded plan run that answers `plan`: the newest folder under results/<card>/batches/ whose
    latency documents hold a run of every part the plan measures (the models beside them are left out)."""
    wanted = plan_runs(plan)
    for folder in sorted((results / card / "batches").glob("*/"), reverse=True):
        if not any(folder.glob("latency*.json*")):
            continue
        ran = {run["id"] for doc in batch_docs(folder).values() for run in doc.get("runs", [])}
        if wanted <= ran:
            return folder
    return None


def fake_run_plan(plan: Any, config: Path, out_dir: Path, log: Callable[[str], None] = print) -> list[dict]:
    results, card = _card()
    named = os.environ.get("ANATOMY_REHEARSE_LATENCY")
    folder = results / card / "batches" / named if named else latency_batch(results, card, plan)
    if folder is None or not any(folder.glob("latency*.json*")):
        raise RuntimeError(f"recorded_card: no recorded {card} latency batch answers the plan {sorted(plan_runs(plan))}"
                           + (f" (ANATOMY_REHEARSE_LATENCY={named})" if named else ""))
    log(f"recorded_card: latency plan {plan.kinds} from {folder.relative_to(results)}")
    ran = {plan.model, *(plan.overhead_models or ()), *([plan.second_model] if plan.second_model else [])}
    wanted = plan_runs(plan)
    out_dir.mkdir(parents=True, exist_ok=True)
    main, others = [], []
    for name, doc in batch_docs(folder).items():
        if _model_id(doc) not in ran:  # a model the recorded session ran and this plan does not (a twin, the second)
            log(f"recorded_card: not replaying {_model_id(doc)} ({name}, not in this plan)")
            continue
        # the parts this plan does not run are not in its batch either (the device program runs the plan's only)
        runs = [r for r in doc["runs"] if r["id"] in wanted or not any(k in r["id"] for k in PART_KINDS)]
        doc = {**doc, "runs": runs}
        (out_dir / name).write_text(json.dumps(doc))
        raw = name.removesuffix(".json") + "-raw.jsonl"
        for kept in (folder / raw, folder / f"{raw}.xz"):  # the raw step timelines, as the plan leaves them
            if kept.is_file():
                (out_dir / kept.name).write_bytes(kept.read_bytes())
        (others if (doc.get("provenance") or {}).get("second_model_of") else main).append(doc)
    for side in ("ceilings.json", "gemm-shapes.json"):  # the ceilings subprocess's files, kept beside the batch
        if (folder / side).is_file():
            (out_dir / side).write_bytes((folder / side).read_bytes())
    return main + others


def pytest_sessionstart(session: Any) -> None:
    import importlib.machinery
    import sys
    import types

    from pytest_anatomy.measure import latency_live, vllm_engine

    vllm_engine.measure_memory_ledger = fake_measure_memory_ledger
    latency_live.run_plan = fake_run_plan
    mod = types.ModuleType("vllm")
    mod.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    sys.modules["vllm"] = mod
