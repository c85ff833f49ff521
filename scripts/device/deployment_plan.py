#!/usr/bin/env python3
"""One or more device calls: issue 14's tuning ladder on vLLM 0.26.0, H200, dummy weights.

What runs is what tests_deployment/preregistered.json predicted (committed before this ran): for each
model (qwen2.5-7b, llama-3.1-8b) and workload (tests_deployment/workloads/chat.json, rag.json) each
rung's engine arguments, exactly as listed there. Rungs with the same arguments share one engine
start (the baseline is the same for both workloads). Per engine:

  engine      AsyncLLM start (in-process, load_format=dummy, token-id prompts) and its resolved
              settings, CUDA-graph capture sizes included (checks speculative.spec_default_capture_sizes)
  warmup      every shared prefix of the workload sent once, plus 4 short requests: the prefix cache is
              warm for the timed run (the theory assumes a warm cache) and torch.compile/graphs are hot
  <workload>  the workload's seeded requests (specs/workload_file.generate: the simulator's very
              requests) as a closed loop at its concurrency, each with its own output length

Per run: ladder metrics (measure/ladder_stats.py: TTFT p50/p99, per-token ITL p50/p99, output
throughput, goodput under the workload's SLO), bench-serve aggregate, and the engine's counters
as deltas over the run (Prometheus, in-process): prefix-cache queries and hits, speculative drafts,
draft tokens, accepted tokens and accepted tokens per position, preemptions. Dummy weights give
degenerate text, so n-gram acceptance here is not that of real text: it is measured and is the E
the ngram rung's prediction takes (theory/speculative.tokens_from_counters).

Files under --out-dir ($OUT): deployment.json (schema pytest-anatomy/deployment-batch/v1, rewritten
after every run) and deployment-raw.jsonl (every request's chunk times and tokens, one line per run).
Import: `pytest-anatomy import-device deployment.json deployment-raw.jsonl` files each run under
results/<hw>/deployment/ (docs/DEPLOYMENT.md).

Budget (measured 2026-12-02/03, see ENGINE_START_S): an engine start 38-69 s (torch.compile cold: each
configuration compiles its own graph), a rag run 4-12 s; the first five rungs took 311 s of wall time; the 36 (model, workload, rung) runs need 30 engine starts
(--dry-run lists them), ~48 minutes: more than one session's device time, so select with --models /
--workloads / --steps and spread it over calls and visits, e.g. per call one model and one workload:
    --models qwen2.5-7b --workloads rag --steps baseline,limits,prefix_cache,fp8_weights,fp8_kv
    --models qwen2.5-7b --workloads rag --steps eager,ngram,plan_top
An engine or run starts only if its estimate fits --budget-s (540) from the script's start.

Step replan (tests_deployment/replan.json, committed before its run): `plan`'s recommendation as it stands after cause
test graphs-to-budget, CUDA graphs captured to the 8,192-token budget (max_cudagraph_capture_size), for both models and
workloads; one engine per model (~150 s each: 614 graphs captured), recorded as <model>.<workload>.replan:
    --models llama-3.1-8b,qwen2.5-7b --steps replan        (2 engine starts, 4 runs, ~360 s)

Cause tests (tests_deployment/cause_tests.json, each written with its predictions before it runs): a recorded rung
re-run with one engine argument changed, e.g. --causes graphs-to-budget (Llama's chat plan_top with CUDA graphs
captured to its 8,192-token budget), recorded as <model>.<workload>.<base>+<name>; --steps then defaults to none.

On the device (after the bundle's install.sh, see shared/device/vllm/README.md):
    source /root/stage/env.sh && PYTHONUNBUFFERED=1 python3 scripts/device/deployment_plan.py \\
        --models qwen2.5-7b --steps baseline,limits,prefix_cache 2>&1 | tee $OUT/deployment.log
Anywhere, without torch or vllm:
    python3 scripts/device/deployment_plan.py --dry-run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pytest_anatomy.specs import workload_file as wf

SCHEMA = "pytest-anatomy/device-batch/v1"  # provenance.kind "deployment": importers/device.py files it
PREREGISTERED = REPO / "tests_deployment" / "preregistered.json"
CAUSES = REPO / "tests_deployment" / "cause_tests.json"  # rungs re-run with one engine argument changed
REPLAN = REPO / "tests_deployment" / "replan.json"  # plan's recommendation after graphs-to-budget (step replan)
WORKLOAD_DIR = REPO / "tests_deployment" / "workloads"
CONFIG_DIR = REPO / "pytest_anatomy" / "specs" / "configs"
MAX_MODEL_LEN = 8192
# Planning estimates, never compared with results. Measured on the H200 2026-12-02 05:02 (deployment.log and
# the engine recordings' startup_s): an engine start 38-60 s (bf16 38-50 s, fp8 57-60 s: torch.compile cold each
# time) plus 1-2 s shutdown; a rag run (96 requests) 4.2-11.9 s plus 0.2 s warmup; the first engine of a call
# also waits ~22 s for the imports. Since then (2026-12-02 07:24, 2026-12-03 00:01/00:13): starts 44-69 s (the fp8
# engines the slowest again), runs 2.5-16.5 s but an eager run (no CUDA graphs) 16.5 s on rag and 33 s on chat.
ENGINE_START_S = 70.0
RUN_S = 15.0
RUN_S_BY_STEP = {"eager": 35.0}  # the steps whose runs take longer than RUN_S


def run_s(step: str) -> float:
    """The planning estimate of one run of `step`."""
    return RUN_S_BY_STEP.get(step, RUN_S)
ALL_STEPS = ("baseline", "limits", "prefix_cache", "fp8_weights", "fp8_kv", "eager", "ngram", "plan_top", "replan")
COUNTERS = ("vllm:prefix_cache_queries", "vllm:prefix_cache_hits", "vllm:spec_decode_num_drafts",
            "vllm:spec_decode_num_draft_tokens", "vllm:spec_decode_num_accepted_tokens", "vllm:num_preemptions")
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"
ENV_DEFAULTS = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def engines(pre: dict[str, Any], models: list[str], workloads: list[str], steps: list[str],
            replan: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One entry per (model, engine arguments): the (workload, rung) runs it serves, in ladder order;
    step "plan_top" is `plan`'s recommendation for the workload (preregistered.json's plan_top), step "replan" the
    recommendation after graphs-to-budget (replan.json's plan_top, its engine start estimate with it)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for model in models:
        for workload in workloads:
            rows = [(r["step"], r["engine_kwargs"], None) for r in pre["ladders"][model][workload]]
            top = pre["plan_top"][model][workload].get("engine_kwargs")
            if top is not None:
                rows.append(("plan_top", top, None))
            again = (replan or {}).get("plan_top", {}).get(model, {}).get(workload, {})
            if again.get("engine_kwargs") is not None:
                rows.append(("replan", again["engine_kwargs"], again.get("start_s_estimate")))
            for step, kwargs, start_s in rows:
                if step not in steps:
                    continue
                key = (model, json.dumps(kwargs, sort_keys=True))
                entry = out.setdefault(key, {"model": model, "engine_kwargs": kwargs, "runs": []})
                entry["runs"].append({"workload": workload, "step": step})
                if start_s is not None:
                    entry["start_s"] = max(float(start_s), entry.get("start_s", ENGINE_START_S))
    return list(out.values())


def cause_engines(pre: dict[str, Any], causes: dict[str, Any], names: list[str],
                  models: list[str]) -> list[dict[str, Any]]:
    """One engine per cause test named (cause_tests.json) whose model is selected: its base rung's preregistered
    engine arguments with the cause's override on top, one run of its workload recorded as step `<base>+<name>`."""
    out = []
    for c in causes["causes"]:
        if c["name"] not in names or c["model"] not in models:
            continue
        base = pre["plan_top"][c["model"]][c["workload"]] if c["base"] == "plan_top" else \
            next(r for r in pre["ladders"][c["model"]][c["workload"]] if r["step"] == c["base"])
        out.append({"model": c["model"], "engine_kwargs": {**base["engine_kwargs"], **c["override"]},
                    "start_s": float(c.get("start_s_estimate", ENGINE_START_S)),
                    "runs": [{"workload": c["workload"], "step": f"{c['base']}+{c['name']}", "cause": c["name"]}]})
    return out


def counters() -> dict[str, Any]:
    """Every counter above summed over its labels, and the per-position accepted tokens by position."""
    try:
        from prometheus_client import REGISTRY
    except ImportError:
        return {}
    out: dict[str, Any] = {name: None for name in COUNTERS}
    by_pos: dict[str, float] = {}
    for family in REGISTRY.collect():
        for s in family.samples:
            name = s.name[:-len("_total")] if s.name.endswith("_total") else s.name
            if name in COUNTERS:
                out[name] = (out[name] or 0.0) + s.value
            elif name == PER_POSITION:
                pos = str(s.labels.get("position", "?"))
                by_pos[pos] = by_pos.get(pos, 0.0) + s.value
    out[PER_POSITION] = by_pos
    return out


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in after.items():
        if isinstance(v, dict):
            out[k] = {p: x - before.get(k, {}).get(p, 0.0) for p, x in sorted(v.items())}
        else:
            out[k] = None if v is None or before.get(k) is None else v - before[k]
    return out


class Output:
    """deployment.json (summary, rewritten atomically after every run) and deployment-raw.jsonl."""

    def __init__(self, directory: Path, provenance: dict[str, Any]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir, self.doc = directory, {"schema": SCHEMA, "provenance": provenance, "runs": []}
        self.raw = directory / "deployment-raw.jsonl"
        self.raw.write_text("")

    def add(self, run: dict[str, Any], raw: dict[str, Any] | None = None) -> None:
        self.doc["runs"].append(run)
        if raw is not None:
            with self.raw.open("a") as fh:
                fh.write(json.dumps(_jsonable({"id": run["id"], **raw}), separators=(",", ":")) + "\n")
        tmp = self.dir / "deployment.json.tmp"
        tmp.write_text(json.dumps(_jsonable(self.doc), indent=1, allow_nan=False) + "\n")
        tmp.replace(self.dir / "deployment.json")


def _jsonable(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x if x is None or isinstance(x, (str, int, bool)) else str(x)


async def run_engine(entry: dict[str, Any], out: Output, deadline: float) -> None:
    """Start one engine, warm it, run each of its (workload, rung) runs, shut it down."""
    from pytest_anatomy.measure import load_stats as ls
    from pytest_anatomy.measure.ladder_stats import ladder_metrics
    from pytest_anatomy.measure.load_driver import EngineConfig, LoadDriver

    model, kw = entry["model"], dict(entry["engine_kwargs"])
    model_dir = tempfile.mkdtemp(prefix=f"{model}-dummy-")
    (Path(model_dir) / "config.json").write_text((CONFIG_DIR / f"{model}.json").read_text())
    cfg = EngineConfig(model_dir=model_dir, max_model_len=MAX_MODEL_LEN, max_num_seqs=kw.pop("max_num_seqs"),
                       max_num_batched_tokens=kw.pop("max_num_batched_tokens"),
                       enable_prefix_caching=kw.pop("enable_prefix_caching"), enforce_eager=kw.pop("enforce_eager"),
                       extra=kw)
    engine_id = f"{model}.engine.{len(out.doc['runs'])}"
    try:
        driver = LoadDriver.start(cfg, log=log)
    except Exception:
        out.add({"id": engine_id, "engine_kwargs": entry["engine_kwargs"], "error": traceback.format_exc()})
        return
    try:
        resolved = driver.resolved_settings()
    except Exception:  # a renamed config field must not cost the engine's runs
        resolved = {"error": traceback.format_exc()}
    out.add({"id": engine_id, "model": model, "engine_kwargs": entry["engine_kwargs"],
             "result": {"startup_s": driver.startup_s, "resolved": resolved}})
    try:
        for r in entry["runs"]:
            run_id = f"{model}.{r['workload']}.{r['step']}"
            if time.monotonic() + run_s(r['step']) > deadline:
                out.add({"id": run_id, "skipped": "budget"})
                continue
            work = wf.generate(wf.load(WORKLOAD_DIR / f"{r['workload']}.json"))
            await driver.run("warmup", [list(p) + [1000 + i] * 16 for i, p in enumerate(work.prefixes)]
                             + ls.token_id_prompts(4, 256, 30000, 99), 8, deadline=deadline)
            before = counters()
            run = await driver.run(run_id, [list(q.prompt) for q in work.requests], list(work.output_lens),
                                   concurrency=work.spec.concurrency, arrivals=work.arrivals, deadline=deadline)
            out.add({"id": run_id, "model": model, "workload": r["workload"], "step": r["step"],
                     **({"cause": r["cause"]} if "cause" in r else {}), "engine_kwargs": entry["engine_kwargs"], "engine_run": engine_id, "result": {
                         "metrics": ladder_metrics(run.records, run.start_time, work.spec.slo),
                         "aggregate": ls.aggregate(run.records, run.expected_requests, start_time=run.start_time),
                         "counters": delta(before, counters()), "truncated": run.truncated}},
                    {"start": run.start_time, "requests": [q.to_raw() for q in run.records]})
            log(f"{run_id}: {out.doc['runs'][-1]['result']['metrics']}")
    finally:
        driver.shutdown()


def provenance(args: argparse.Namespace) -> dict[str, Any]:
    """What the importer needs (date_utc, the GPU's name, versions) and what the run was planned from."""
    import hashlib
    from datetime import datetime, timezone
    from importlib import metadata

    from pytest_anatomy.gpu_query import gpu_identity
    from pytest_anatomy.host_facts import host_facts

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {"kind": "deployment", "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([sys.executable, *sys.argv]), "nvidia_smi": {"summary": gpu_identity() or {}},
            "host": host_facts(),  # a host-bound step (eager) moves with the machine, not the GPU model
            "versions": {name: version(name) for name in ("vllm", "torch")},
            "preregistered": {"file": str(PREREGISTERED.relative_to(REPO)),
                              "sha256": hashlib.sha256(PREREGISTERED.read_bytes()).hexdigest()},
            **({"replan": {"file": str(REPLAN.relative_to(REPO)),
                           "sha256": hashlib.sha256(REPLAN.read_bytes()).hexdigest()}} if "replan" in args.steps else {}),
            **({"causes": {"file": str(CAUSES.relative_to(REPO)), "names": args.causes,
                           "sha256": hashlib.sha256(CAUSES.read_bytes()).hexdigest()}} if args.causes else {}),
            "weights": "random (load_format=dummy): exact for time and memory, degenerate text for acceptance",
            "selection": {"models": args.models, "workloads": args.workloads, "steps": args.steps,
                          "causes": args.causes}}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    pre = json.loads(PREREGISTERED.read_text())
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(pre["ladders"]))
    p.add_argument("--workloads", default="chat,rag")
    p.add_argument("--steps", default=None, help="rungs to run (default: all of them, or none with --causes)")
    p.add_argument("--causes", default="", help="cause tests to run, by name (tests_deployment/cause_tests.json)")
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--out-dir", type=Path, default=Path(os.environ.get("OUT", "out")))
    p.add_argument("--dry-run", action="store_true", help="print the engines and runs, start nothing")
    args = p.parse_args(argv)
    args.pre, args.cause_doc, args.replan = pre, json.loads(CAUSES.read_text()), json.loads(REPLAN.read_text())
    if args.steps is None:
        args.steps = "" if args.causes else ",".join(ALL_STEPS)
    for name in ("models", "workloads", "steps", "causes"):
        setattr(args, name, [x for x in getattr(args, name).split(",") if x])
    unknown = set(args.models) - set(pre["ladders"])
    if unknown:
        p.error(f"unknown model(s) {sorted(unknown)}; preregistered: {sorted(pre['ladders'])}")
    known = [c["name"] for c in args.cause_doc["causes"]]
    if set(args.causes) - set(known):
        p.error(f"unknown cause test(s) {sorted(set(args.causes) - set(known))}; written in "
                f"{CAUSES.relative_to(REPO)}: {known}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = engines(args.pre, args.models, args.workloads, args.steps, args.replan) + \
        cause_engines(args.pre, args.cause_doc, args.causes, args.models)
    estimate = sum(e.get("start_s", ENGINE_START_S) + sum(run_s(r["step"]) for r in e["runs"]) for e in plan)
    for e in plan:
        log(f"engine {e['model']} {json.dumps(e['engine_kwargs'])}: {[(r['workload'], r['step']) for r in e['runs']]}")
    log(f"{len(plan)} engine starts, {sum(len(e['runs']) for e in plan)} runs, ~{estimate:.0f} s estimated")
    if args.dry_run:
        return 0
    for k, v in ENV_DEFAULTS.items():
        os.environ.setdefault(k, v)
    deadline = time.monotonic() + args.budget_s
    out = Output(args.out_dir, provenance(args))
    for e in plan:
        if time.monotonic() + e.get("start_s", ENGINE_START_S) + run_s(e["runs"][0]["step"]) > deadline:
            out.add({"id": f"{e['model']}.engine", "engine_kwargs": e["engine_kwargs"], "skipped": "budget"})
            continue
        asyncio.run(run_engine(e, out, deadline))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
