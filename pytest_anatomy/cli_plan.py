"""`pytest-anatomy plan`: recommend vLLM configurations for a workload and an SLO.

    pytest-anatomy plan --model qwen2.5-7b --hardware h200 --workload rag --slo-ttft-ms 400 \\
        --slo-itl-ms 25 [--gpus 2] [--spec-acceptance 0.6] [--json]

Prints the configurations that meet the SLO, best first (goodput per GPU): engine settings, TP,
quantization, prefix cache, speculation; predicted TTFT p50/p99, ITL p50/p99, output throughput,
goodput and how many of the workload's requests the KV pool holds; the knob that buys each gain
(the same configuration without it); and each number's uncertainty: the reconciled error of that
kind of prediction on this card (the validation table), or a plain statement that none exists.
A configuration whose token budget exceeds vLLM's default CUDA-graph capture captures graphs to its
budget (engine argument max_cudagraph_capture_size), priced in its note: the graph pool on top of
gpu_memory_utilization (not taken from the KV pool by vLLM 0.26.0's V2 runner) and the longer engine
start; where the pool would not fit, vLLM's default list is kept and the note says which steps run
outside the graphs, unpriced.
Calibrated like `predict latency` (the typical recorded session of the card, else the H200's carried
over, else the datasheet roofline). Any bad input: one line naming the problem and the fix, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from pytest_anatomy.cli_common import error, non_empty, recordings_folder

# the plan's metrics whose reconciled error is quoted (cli_uncertainty.METRICS names the table's rows for each)
ERROR_OF = ("ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "output_throughput")


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"Could not parse value: {text!r} (expected {kind.__name__})") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
        return value
    return parse


def add_parser(sub: Any) -> None:
    p = sub.add_parser("plan", help="recommend vLLM configurations for a workload and an SLO",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, type=non_empty, help="catalog name, Hugging Face id or config.json")
    p.add_argument("--hardware", required=True, type=non_empty, help="catalog name of the GPU")
    p.add_argument("--workload", required=True, type=non_empty,
                   help="a workload JSON (specs/workload_file.py) or a name in tests_deployment/workloads/ (chat, rag)")
    p.add_argument("--slo-ttft-ms", type=_positive(float), default=None, help="TTFT p99 limit (default: the workload's)")
    p.add_argument("--slo-itl-ms", type=_positive(float), default=None, help="ITL p99 limit (default: the workload's)")
    p.add_argument("--gpus", type=_positive(int), default=1, help="GPUs available: tensor parallel sizes up to it (1)")
    p.add_argument("--spec-acceptance", type=_positive(float), default=None, metavar="A",
                   help="n-gram acceptance per drafted token, in (0, 1]; speculation is a candidate only with it")
    p.add_argument("--top", type=_positive(int), default=5, help="configurations printed (5)")
    p.add_argument("--results", type=recordings_folder, default=Path("results"), help="recordings for the calibration (results)")
    p.add_argument("--json", action="store_true", help="print the ranked plans as JSON")


def plans(args: argparse.Namespace) -> dict[str, Any]:
    """The ranked plans as a JSON-able document; ValueError (one line) on bad input or no plan."""
    from dataclasses import replace

    from pytest_anatomy.cli_latency import calibration
    from pytest_anatomy.deployment_ladder import workload_path
    from pytest_anatomy.specs import workload_file as wf
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import deployment_plan as pl

    if args.spec_acceptance is not None and args.spec_acceptance > 1:
        raise ValueError(f"--spec-acceptance {args.spec_acceptance:g} is a probability: give it in (0, 1]")
    model, hw = load_model(args.model), get_hardware(args.hardware)
    spec = wf.load(workload_path(args.workload))
    slo = wf.Slo(args.slo_ttft_ms or spec.slo.ttft_ms, args.slo_itl_ms or spec.slo.itl_ms)
    if spec.max_request_tokens > min(model.max_position_embeddings or math.inf, 8192):
        raise ValueError(f"workload {spec.name}: a request can reach {spec.max_request_tokens:,} tokens, above the "
                         "8,192-token max_model_len planned; shorten its length distributions")
    work = wf.generate(replace(spec, slo=slo))
    ns = argparse.Namespace(uncalibrated=False, results=args.results, bandwidth_gbs=None, peak_tflops=None,
                            step_overhead_ms=None, compute_efficiency=None)
    ceilings, calib, source = calibration(ns, hw)
    cands = pl.evaluate(model, args.model, hw, ceilings, calib, work, args.gpus, args.spec_acceptance)
    if not cands:
        raise ValueError(_why_nothing_fits(model, args.model, hw, args.gpus, max(len(r.prompt) + r.output_len
                                                                                  for r in work.requests)))
    best = pl.ranked(cands, slo)
    if not best:
        near = min(cands, key=lambda c: max((c.outcome.metrics["ttft_p99_s"] or math.inf) * 1e3 / slo.ttft_ms,
                                            (c.outcome.metrics["itl_p99_s"] or math.inf) * 1e3 / slo.itl_ms))
        m = near.outcome.metrics
        knobs = ", ".join(k for k, v in near.on().items() if v) or "vLLM defaults"
        raise ValueError(
            f"no configuration of {args.model} on {args.gpus} x {hw.name} meets TTFT p99 <= {slo.ttft_ms:g} ms and ITL "
            f"p99 <= {slo.itl_ms:g} ms for workload {spec.name}: the closest ({knobs}, tp {near.tp}) predicts "
            f"{(m['ttft_p99_s'] or math.nan) * 1e3:.4g} ms and {(m['itl_p99_s'] or math.nan) * 1e3:.4g} ms; loosen "
            "the SLO or add --gpus")
    return {"model": args.model, "hardware": hw.name, "workload": spec.name, "gpus": args.gpus,
            "slo": {"ttft_p99_ms": slo.ttft_ms, "itl_p99_ms": slo.itl_ms}, "calibration": source,
            "uncertainty": _uncertainty(hw.name, args.results, args.model, spec.name),
            "plans": [{**pl.describe(c), "gains_by_knob": pl.attribution(c, cands)} for c in best[:args.top]],
            "candidates": len(cands), "meeting_slo": len(best)}


def _why_nothing_fits(model: Any, name: str, hw: Any, gpus: int, longest: int) -> str:
    """Why no candidate is left, in one line: the capacity ledger's own refusal at the largest tensor-parallel size
    tried (weights or the ledger above the budget, its arithmetic and what would fit), else the pool that is left
    against the workload's longest request."""
    from pytest_anatomy.theory import deployment as dp
    from pytest_anatomy.theory import deployment_plan as pl
    from pytest_anatomy.theory import feasibility
    from pytest_anatomy.theory.planning import capacity
    from pytest_anatomy.theory.prediction import Prediction

    tp = max(pl.tp_sizes(model, gpus), default=1)
    settings: dict[str, Any] = {"max_model_len": dp.MAX_MODEL_LEN, "tp": tp}
    answers = capacity(model, hw, max_model_len=dp.MAX_MODEL_LEN, tp=tp)
    where = f"{name} cannot be planned on {gpus} x {hw.name}"
    try:
        feasibility.judge_capacity(answers, feasibility.Plan(model, hw, settings), capacity)
    except feasibility.ImpossiblePlan as exc:
        # dp.pool_blocks sizes every pool with bf16 weights (a lower bound for fp8 ones), so only more GPUs help here
        return (f"{where} (tensor parallel {tp}): {str(exc).removeprefix(f'{model.name}: ')}; the planner sizes the "
                "KV pool with bf16 weights, so pass --gpus for a tensor-parallel size that fits")
    tokens = answers.get("kv_tokens")
    pool = f"{int(tokens.value):,}-token KV pool" if isinstance(tokens, Prediction) else "KV pool"
    return (f"{where}: at tensor parallel {tp} the {pool} left beside the weights cannot hold the workload's longest "
            f"request ({longest:,} tokens); pass --gpus with more GPUs (or a smaller model)")


def _uncertainty(card: str, results: Path, model: str, workload: str) -> dict[str, Any]:
    from pytest_anatomy.cli_uncertainty import reconciled_error

    out: dict[str, Any] = {}
    for metric in ERROR_OF:
        err = reconciled_error(metric, card)
        out[metric] = err.describe() if err else f"no reconciliation of {metric} exists yet on any card"
    out["knob_gains"] = knob_gain_uncertainty(card, results, model, workload)
    out["goodput"] = "no reconciliation of goodput exists yet"
    return out


def run(args: argparse.Namespace) -> int:
    from pytest_anatomy.specs.hardware import MissingHardwareFactError, UnknownHardwareError
    from pytest_anatomy.specs.model import ModelConfigError

    try:
        doc = plans(args)
    except (ModelConfigError, UnknownHardwareError, MissingHardwareFactError, KeyError, ValueError,
            NotImplementedError) as exc:
        return error(exc)
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"plan for {doc['model']} on {doc['gpus']} x {doc['hardware']}, workload {doc['workload']}: "
          f"TTFT p99 <= {doc['slo']['ttft_p99_ms']:g} ms, ITL p99 <= {doc['slo']['itl_p99_ms']:g} ms "
          f"({doc['meeting_slo']} of {doc['candidates']} configurations meet it)")
    for i, p in enumerate(doc["plans"], 1):
        m = p["predicted"]
        engines = f"{p['replicas']} x tp {p['tp']}" if p["replicas"] > 1 else f"tp {p['tp']}"
        print(f"{i}. {engines}, {', '.join(p['knobs_on']) or 'vLLM defaults'}: {_fmt(m)}"
              + (f", holds {p['max_concurrency']:.0f} requests" if p["max_concurrency"] else ""))
        print(f"   engine: {json.dumps(p['engine_kwargs'])}")
        for note in p["notes"]:
            print(f"   note: {note}")
        for knob, g in p["gains_by_knob"].items():
            moved = ", ".join(f"{k} x{v:.3g}" for k, v in g.items() if v is not None and abs(v - 1) > 0.01)
            print(f"   {knob}: {moved or 'no metric moves by more than 1%'}")
    print("uncertainty:")
    for metric, text in doc["uncertainty"].items():
        print(f"  {metric}: {text}")
    print(f"calibration: {doc['calibration']}")
    return 0


def _fmt(m: dict[str, float | None]) -> str:
    def ms(v: float | None) -> str:
        return "?" if v is None else f"{v * 1e3:.3g} ms"
    return (f"TTFT p50 {ms(m['ttft_p50_s'])} p99 {ms(m['ttft_p99_s'])}, ITL p50 {ms(m['itl_p50_s'])} p99 "
            f"{ms(m['itl_p99_s'])}, {m['output_throughput'] or 0:.4g} tok/s, goodput "
            + ("?" if m["goodput"] is None else f"{m['goodput']:.3g} req/s"))


def knob_gain_uncertainty(card: str, results: Path, model: str, workload: str) -> str:
    """What is known of the knob gains' error for this model and workload: the ladder rungs recorded
    (results/<card>/deployment/<model>.<workload>.<rung>@*.json). Engine starts (<model>.engine.N) and
    other models' or workloads' rungs say nothing about these gains, so they are not counted; and this
    command computes no error from the rungs: test_ladder_replay.py reconciles them, its misses are findings."""
    folder = results / card / "deployment"
    stem = f"{model}.{workload}."  # model names carry dots (qwen2.5-7b): cut by length, not by splitting
    recorded = sorted({p.name.split("@")[0][len(stem):] for p in folder.glob(f"{stem}*@*.json")})
    rungs = [r for r in recorded if "+" not in r]  # <rung>+<cause>: a cause test, a rung re-run with one change
    causes = "".join(f"; cause test {r} recorded (tests_deployment/test_cause_tests.py)" for r in recorded if "+" in r)
    if not rungs:
        return (f"no reconciliation of a knob's gain exists yet for {model}/{workload} (no ladder recordings under "
                f"{folder}): the gains are unchecked predictions")
    return (f"{len(rungs)} rungs of {model}/{workload} measured on {card} ({', '.join(rungs)}): "
            "tests_deployment/test_ladder_replay.py reconciles their gains with the preregistered ones (target 20%; "
            f"misses are findings, docs/DEPLOYMENT.md); the gains here are not corrected by them{causes}")
