"""A pytest plugin that makes a CPU machine look like the project's H200, for rehearsing the live path.

NVML detection answers with an H200; the capacity suite's engine starts return the recorded
device batches' results for the same configuration; the latency plan returns the recorded
Qwen2.5-7B batch (and Llama-3.1-8B's for the slow plan). Everything between those measurements
and the verdicts (targets, the session cache, recording, the lab's mapping, the tests) runs for
real, so a live session on the card can be checked on CPU against the replay of the same data.
Use: `PYTHONPATH=tests_plugin/live_rehearsal pytest -p fake_h200 -m gpu --anatomy-source=live`.
"""
from pytest_anatomy.specs import hardware
from pytest_anatomy import gpu_query

def pytest_configure(config):
    gpu = hardware.DetectedGPU(index=0, name="NVIDIA H200", backend="nvml", memory_total_bytes=143771*2**20,
                               catalog_name="h200", compute_capability=(9, 0), sm_clock_max_mhz=1980, mem_clock_max_mhz=3201,
                               memory_bus_bits=6144, cuda_cores=16896)
    hardware.detect = lambda *a, **k: gpu
    gpu_query.cuda_device_facts = lambda *a, **k: {"sm_count": 132, "l2_bytes": 60*2**20, "cuda_memory_total_bytes": 150_109_880_320, "compute_capability": [9,0]}
    hardware.visible_gpu_count = lambda: 1

import glob
import json
import lzma
from pathlib import Path
REPO = Path(__file__).resolve().parents[2]

def _batches(pattern):
    docs = []
    for f in sorted(glob.glob(str(REPO / "results/h200/batches" / pattern))):
        raw = Path(f).read_bytes()
        if f.endswith(".xz"):
            raw = lzma.decompress(raw)
        docs.append(json.loads(raw))
    return docs

def fake_measure_memory_ledger(config, settings, timeout_s=600, workdir=None, model_dir=None):
    from pytest_anatomy.specs import catalog
    name = None
    for cand in ("qwen2.5-0.5b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "llama-3.1-8b", "mistral-7b-v0.3"):
        c = catalog.load_config(cand)
        if all(c.get(k) == config.get(k) for k in ("hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size")):
            name = cand
    rid = f"{name}.{settings.tag()}"
    for doc in _batches("*/capacity-*.json"):
        for run in doc["runs"]:
            if run["id"] == rid:
                return run["result"]
    raise RuntimeError(f"no recorded run {rid}")

# Which recorded session the latency plan "measures": ANATOMY_REHEARSE_LATENCY names a batch folder under
# results/h200/batches/ holding the plan's latency*.json (every live session since 2026-12-01 wrote one folder);
# the default is the first session, whose two models ran as two batches.
_FIRST_SESSION = ("20261130T003745Z/latency.json", "20261130T020239Z/latency*.json")


def fake_run_plan(plan, config, out_dir, log=print):
    import os
    folder = os.environ.get("ANATOMY_REHEARSE_LATENCY")
    log(f"fake latency plan {plan.kinds} from {folder or _FIRST_SESSION[0]}")
    if not folder:
        main = _batches(_FIRST_SESSION[0])[0]
        return [main] + ([d for d in _batches(_FIRST_SESSION[1])] if plan.second_model else [])
    docs = _batches(f"{folder}/latency*.json") + _batches(f"{folder}/latency*.json.xz")
    if not docs:
        raise RuntimeError(f"no latency*.json under results/h200/batches/{folder}")
    # the raw step timelines too, where the plan writes them (its out_dir), as a live plan leaves them
    import shutil
    out_dir.mkdir(parents=True, exist_ok=True)
    for raw in glob.glob(str(REPO / "results/h200/batches" / folder / "latency*-raw.jsonl*")):
        shutil.copy(raw, out_dir / Path(raw).name)
    # Only the models this plan runs: a recorded session's folder may hold a twin or a second model the plan
    # does not (the live plans have run no tiny-hidden twin since 2026-12-02; the fast plan has no second model)
    ran = {plan.model, *(plan.overhead_models or ()), *([plan.second_model] if plan.second_model else [])}
    kept = [d for d in docs if _model_id(d) in ran or _model_id(d) is None]
    dropped = sorted({str(_model_id(d)) for d in docs if d not in kept})
    if dropped:
        log(f"fake latency plan: not replaying {', '.join(dropped)} (recorded in {folder}, not in this plan)")
    main = [d for d in kept if not (d.get("provenance") or {}).get("second_model_of")]
    return main + [d for d in kept if d not in main]


def _model_id(doc):
    model = (doc.get("provenance") or {}).get("model")
    return model.get("id") if isinstance(model, dict) else model

def pytest_sessionstart(session):
    import importlib.machinery
    import sys
    import types
    from pytest_anatomy.measure import vllm_engine, latency_live
    vllm_engine.measure_memory_ledger = fake_measure_memory_ledger
    latency_live.run_plan = fake_run_plan
    mod = types.ModuleType("vllm")
    mod.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    sys.modules["vllm"] = mod
