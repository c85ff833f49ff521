"""vLLM's decode step per weight format on the device: Qwen2.5-7B with dummy weights in bf16, fp8 (W8A8, dynamic
activations), AWQ and GPTQ (int4, group 128), each a quantized config.json the engine reads as a checkpoint's, timed
by the latency plan's decode part (scripts/device/latency_plan.py --only decode). Issue 13's "decode step vs bytes
moved" for the vLLM methods, which no plan measured until now.

    python scripts/device/quant_decode.py preregister        # here, before the call: writes PREREGISTRATION
    python scripts/device/quant_decode.py configs DIR        # on the device: the three quantized configs
    python scripts/device/quant_decode.py commands DIR OUT [--only M]  # the latency-plan commands, one a method
    python scripts/device/quant_decode.py preregister-sweep  # here: fp8 across the GEMM dispatch's M boundary
    python scripts/device/quant_decode.py sweep DIR OUT      # on the device: that sweep's one latency-plan command
    python scripts/device/quant_decode.py preregister-prefill  # here: each method's lone prefill, predicted first
    python scripts/device/quant_decode.py preregister-prefill-batch  # here: 64 prompts of 512 at once, predicted first
    python scripts/device/quant_decode.py prefill DIR OUT [--only M] [--dry-run]  # the prefill commands / their plan

The pre-registration holds `pytest-anatomy predict latency --quantization M` at the decode part's shape (1,024
prompt tokens, 128 out: context 1,088) for each method and batch, with the theory's commit; it must be committed
before the run (a replay test reconciles the run against it as well as against the current theory).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))

from quant_plan import QUANT_CONFIGS  # noqa: E402  (the vllm phase's checkpoint configs, GPTQ's module list included)

MODEL = "qwen2.5-7b"
HARDWARE = "h200"  # the card the plan and its pre-registration are for (results/<HARDWARE>/latency)
METHODS = ("fp8", "awq", "gptq")  # bf16 is the latency suite's own qwen2.5-7b.decode.b*
BATCHES = (1, 8, 32, 64)
INPUT_LEN, OUTPUT_LEN = 1024, 128  # latency_plan's decode part
PREREGISTRATION = REPO / "tests_quant" / "vllm_decode_preregistered.json"
# fp8 across vLLM's Hopper fp8 dispatch M buckets (M <= 16 on a 16-wide tile, (16, 64] on one 64-wide tile), b=32 and
# b=64 repeated: separates the bucket from a cost of b=32 alone (finding h200-fp8-decode-mid-batch-above-its-bytes).
SWEEP_METHOD = "fp8"
SWEEP_BATCHES = (16, 17, 24, 32, 48, 64)
SWEEP_LINE_BATCHES = (17, 24, 48, 64)  # the bucket's line, fitted in the sweep's own run; b=32 judged off it
SWEEP_PREREGISTRATION = REPO / "tests_quant" / "vllm_fp8_sweep_preregistered.json"
# Prefill per method: the latency plan's prefill part (one lone request of L tokens, 1 warm-up + 5 repeats, TTFT and
# the engine's prefill time) at lengths the bf16 model's qwen2.5-7b.prefill.l<L> runs record in every session, so bf16
# is the baseline. The plan has no batched-prefill part: batch 1 only. 512: the smallest length past the fixed cost;
# 2,048: one compute-bound chunk; 8,192: one full chunk (bf16's eta fit point).
PREFILL_LENS = (512, 2048, 8192)
PREFILL_BUDGET_S = 165  # per method: import || ceilings, the engine start, warm-up, four parts (~92-104 s planned); the
# batched part still fits with the plan's own 90 s engine-start assumption (33 + 90 + 14 = 137 s <= 165 - 15)
MAX_NUM_BATCHED_TOKENS = 8192  # the latency plan's chunk size
MAX_MODEL_LEN = 33024  # the latency plan's engine setting
ASSUMED_ENGINE_S = 90.0  # latency_plan's own assumption, for a method without a recorded engine start
PREFILL_PREREGISTRATION = REPO / "tests_quant" / "vllm_prefill_preregistered.json"
# The same calls' batched prefill (latency_plan's prefill_batch part): PREFILL_BATCH prompts of PREFILL_BATCH_LEN
# tokens sent at once, 1 warm-up round + 3, the engine span from the first schedule to the last first token.
PREFILL_BATCH, PREFILL_BATCH_LEN = 64, 512
PREFILL_BATCH_PREREGISTRATION = REPO / "tests_quant" / "vllm_prefill_batch_preregistered.json"


def config_for(method: str) -> dict[str, Any]:
    """The catalog's Qwen2.5-7B config.json with the method's quantization_config, as a quantized checkpoint has it."""
    base = json.loads((REPO / "pytest_anatomy" / "specs" / "configs" / f"{MODEL}.json").read_text())
    return {**{k: v for k, v in base.items() if not k.startswith("_")}, "quantization_config": QUANT_CONFIGS[method]}


def write_configs(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for method in METHODS:
        path = folder / f"{MODEL}-{method}.json"  # the run ids are the file's stem: qwen2.5-7b-awq.decode.b1
        path.write_text(json.dumps(config_for(method), indent=1) + "\n")
        paths.append(path)
    return paths


def _command(folder: Path, out: Path, method: str, batches: tuple[int, ...], budget_s: int) -> str:
    return (f"python scripts/device/latency_plan.py --config {folder / f'{MODEL}-{method}.json'} --only decode "
            f"--decode-batches {','.join(str(b) for b in batches)} --second-model none --overhead-models none "
            f"--budget-s {budget_s} --out-dir {out}")


def commands(folder: Path, out: Path, only: tuple[str, ...] = METHODS) -> list[str]:
    """One latency-plan call per method: its own engine, the decode part at BATCHES, the session's ceilings first."""
    return [_command(folder, out / m, m, BATCHES, 170) for m in only]


def sweep_command(folder: Path, out: Path) -> str:
    """The fp8 sweep across the M buckets: one engine, six decode batches."""
    return _command(folder, out / f"{SWEEP_METHOD}-sweep", SWEEP_METHOD, SWEEP_BATCHES, 230)


def prefill_command(folder: Path, out: Path, method: str) -> str:
    return (f"python scripts/device/latency_plan.py --config {folder / f'{MODEL}-{method}.json'} "
            f"--only prefill,prefill_batch --prefill-lens {','.join(str(n) for n in PREFILL_LENS)} "
            f"--prefill-batch {PREFILL_BATCH} --second-model none --overhead-models none "
            f"--budget-s {PREFILL_BUDGET_S} --out-dir {out / f'{method}-prefill'}")


def prefill_commands(folder: Path, out: Path, only: tuple[str, ...] = METHODS) -> list[str]:
    """One latency-plan call per method: its own engine (run ids qwen2.5-7b-<method>.prefill.L<N> and
    .prefill.b64.L512), ceilings first."""
    return [prefill_command(folder, out, m) for m in only]


def recorded_engine_s(method: str) -> float:
    """The slowest recorded engine start of `method`'s model on the card (the decode runs'), else the plan's 90 s."""
    folder = REPO / "results" / HARDWARE / "latency"
    starts = [json.loads(p.read_text())["measurements"]["startup_s"]["value"]
              for p in sorted(folder.glob(f"{MODEL}-{method}.engine@*.json"))]
    return max(starts, default=ASSUMED_ENGINE_S)


def prefill_dry_run(only: tuple[str, ...] = METHODS) -> tuple[str, float]:
    """Each method's latency-plan dry run with its recorded engine start, and the call's GPU seconds (their sum)."""
    import subprocess
    import tempfile

    lines, total = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_configs(folder)
        for method, command in zip(only, prefill_commands(folder, folder / "out", only)):
            engine_s = recorded_engine_s(method)
            argv = [*command.split()[2:], "--dry-run", "--assumed-engine-s", f"{engine_s:.0f}"]
            run = subprocess.run([sys.executable, str(REPO / "scripts" / "device" / "latency_plan.py"), *argv],
                                 capture_output=True, text=True, timeout=120, cwd=REPO, check=True)
            planned = float(run.stdout.split("total planned: ")[1].split(" s")[0])
            total += planned
            lines += [f"== {method}: engine start {engine_s:.0f} s (recorded), planned {planned:.0f} s", run.stdout]
    lines.append(f"estimate: {total:.0f} s of GPU time for {len(only)} method(s), engine starts included")
    return "\n".join(lines), total


def prefill_predictions() -> dict[str, dict[str, Any]]:
    """method (and bf16, the baseline) -> length -> `predict latency`'s prefill_ms for one lone prompt."""
    from pytest_anatomy import cli, cli_latency

    out: dict[str, dict[str, Any]] = {}
    for method in ("bf16", *METHODS):
        out[method] = {}
        for n in PREFILL_LENS:
            quant = [] if method == "bf16" else ["--quantization", method]
            args = cli.build_parser().parse_args(
                ["predict", "latency", "--model", MODEL, "--hardware", HARDWARE, *quant, "--batch", "1",
                 "--input-len", str(n), "--output-len", "1", "--max-model-len", str(MAX_MODEL_LEN)])
            answers = cli_latency.answers(args)
            pre = answers["prefill_ms"]
            out[method][str(n)] = {"prefill_ms": round(pre.value, 4), "formula": pre.formula,
                                   "chunks": -(-n // MAX_NUM_BATCHED_TOKENS),
                                   "calibration": answers["itl_ms"].inputs.get("calibration")}
    return out


def _write_preregistration(path: Path, what: str, **body: Any) -> Path:
    """preregistration.write_document for this script: a one-line refusal where the theory has uncommitted changes (a
    pre-registration names the commit its predictions come from)."""
    from pytest_anatomy.preregistration import PreregistrationError, write_document

    try:
        return write_document(REPO, path, what, body)
    except PreregistrationError as err:
        raise SystemExit(f"refused: {err}") from None


def preregister_prefill() -> Path:
    return _write_preregistration(
        PREFILL_PREREGISTRATION,
        f"vLLM 0.26.0 lone-prompt prefill per weight format, {MODEL} dummy weights on the {HARDWARE.upper()}, "
        "predicted before any run (scripts/device/quant_decode.py prefill); bf16 is the baseline the latency suite "
        "records in every session (not pre-registered here: recorded)",
        lengths=list(PREFILL_LENS), measured_as="engine_prefill_s.median", predictions=prefill_predictions())


def prefill_batch_predictions() -> dict[str, dict[str, Any]]:
    """method (and bf16) -> the engine span (ms) of PREFILL_BATCH prompts of PREFILL_BATCH_LEN arriving together
    (theory's batch_prefill_time: vLLM's token-budget packing), with the ceilings and calibration `predict latency`
    uses (the typical recorded session's, as prefill_predictions), and what a partially-filled first step would add:
    its least and most over a first step of 1 .. (prompts a step holds - 1) prompts (the others arriving after the
    engine's first schedule)."""
    from pytest_anatomy import cli, cli_latency
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import latency as lat
    from pytest_anatomy.theory import quant_planning as qp

    args = cli.build_parser().parse_args(["predict", "latency", "--model", MODEL, "--hardware", HARDWARE,
                                          "--max-model-len", str(MAX_MODEL_LEN)])
    model, hw = load_model(MODEL), get_hardware(HARDWARE)
    ceilings, calib, _ = cli_latency.calibration(args, hw)
    b, n, budget = PREFILL_BATCH, PREFILL_BATCH_LEN, MAX_NUM_BATCHED_TOKENS

    def span(method: str, first: int | None = None) -> Any:
        if method == "bf16":
            return lat.batch_prefill_time(model, ceilings, calib, b, n, budget, first)
        return qp.batch_prefill_time(model, hw, ceilings, calib, b, n, budget, method, first)

    out: dict[str, dict[str, Any]] = {}
    for method in ("bf16", *METHODS):
        packed = span(method)
        extra = [span(method, j).value - packed.value for j in range(1, min(b, budget // n))]
        out[method] = {"engine_span_ms": round(packed.value * 1e3, 4), "formula": packed.formula,
                       "steps": packed.inputs["steps"], "tokens_per_s": round(b * n / packed.value, 1),
                       "calibration": calib.name,
                       "partial_first_step": {"first_step_prompts": f"1..{len(extra)}",
                                              "extra_ms_max": round(max(extra) * 1e3, 4),
                                              "extra_ms_min": round(min(extra) * 1e3, 4)} if extra else None}
    return out


def preregister_prefill_batch() -> Path:
    return _write_preregistration(
        PREFILL_BATCH_PREREGISTRATION,
        f"vLLM 0.26.0 prefill of {PREFILL_BATCH} prompts of {PREFILL_BATCH_LEN} tokens sent at once, per weight format "
        f"and bf16, {MODEL} dummy weights on the {HARDWARE.upper()}, predicted before any run "
        "(scripts/device/quant_decode.py prefill, latency_plan.py's prefill_batch part)",
        batch=PREFILL_BATCH, input_len=PREFILL_BATCH_LEN, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS,
        measured_as="engine_span_s.median",
        note=("the engine span runs from the round's first schedule to its last first token; the theory packs the "
              f"{PREFILL_BATCH} prompts whole into each step's {MAX_NUM_BATCHED_TOKENS}-token budget (vLLM V1's "
              "Scheduler.schedule). If the requests do not all reach the engine before its first schedule, the "
              "measured span holds one more, partially-filled, first step: partial_first_step.extra_ms_max is the most "
              "that adds (the run records queued_after_first_schedule per round to tell)"),
        predictions=prefill_batch_predictions())


def predictions() -> dict[str, dict[str, Any]]:
    """method -> batch -> the decode step `predict latency` gives (ms) with its formula and calibration."""
    from pytest_anatomy import cli, cli_latency

    out: dict[str, dict[str, Any]] = {}
    for method in METHODS:
        out[method] = {}
        for b in BATCHES:
            args = cli.build_parser().parse_args(
                ["predict", "latency", "--model", MODEL, "--hardware", HARDWARE, "--quantization", method,
                 "--batch", str(b), "--input-len", str(INPUT_LEN), "--output-len", str(OUTPUT_LEN)])
            itl = cli_latency.answers(args)["itl_ms"]
            out[method][str(b)] = {"step_ms": round(itl.value, 4), "formula": itl.formula,
                                   "calibration": itl.inputs.get("calibration")}
    return out


def preregister() -> Path:
    return _write_preregistration(
        PREREGISTRATION, "vLLM 0.26.0 decode step per weight format, Qwen2.5-7B dummy weights on the H200, predicted "
        "before any run (scripts/device/quant_decode.py); the typical recorded session's ceilings and calibration",
        context_tokens=INPUT_LEN + OUTPUT_LEN // 2, predictions=predictions())


def _recorded_steps_ms(method: str) -> dict[int, float]:
    """The newest recorded step (ms) of each of the plan's BATCHES for `method`, from results/<HARDWARE>/latency."""
    from pytest_anatomy import recordings

    return {b: recordings.load_latest(REPO / "results", HARDWARE, "latency", f"{MODEL}-{method}.decode.b{b}")
            ["step_time_s"].value * 1e3 for b in BATCHES}


def sweep_expectations() -> dict[str, Any]:
    """What the sweep should show under each explanation, from the theory's KV slope and the first run's steps.

    slope: the theory's step grows with the batch only by the KV reads (b=32 -> 64 of the pre-registration).
    bucket: b <= 16 on the line through the first run's b=8, b in (16, 64] on the line through its b=64; the jump
    at 16 -> 17 is the 64-wide tile's extra cost. b=32's own: the same line, but b=32 at the first run's step again.
    """
    first = _recorded_steps_ms(SWEEP_METHOD)
    pre = json.loads(PREREGISTRATION.read_text())["predictions"][SWEEP_METHOD]
    slope = (pre["64"]["step_ms"] - pre["32"]["step_ms"]) / 32
    small = {b: first[8] + (b - 8) * slope for b in SWEEP_BATCHES if b <= 16}
    large = {b: first[64] - (64 - b) * slope for b in SWEEP_BATCHES if b > 16}
    bucket = {**small, **large}
    return {"kv_slope_ms_per_seq": round(slope, 5),
            "first_run_ms": {str(b): round(v, 4) for b, v in first.items()},
            "bucket_ms": {str(b): round(v, 4) for b, v in sorted(bucket.items())},
            "jump_16_to_17_ms": round(bucket[17] - bucket[16], 4),
            "b32_above_the_line_ms": {"bucket": 0.0, "own": round(first[32] - bucket[32], 4)},
            "no_bucket_jump_ms": round(slope, 5)}


def preregister_sweep() -> Path:
    return _write_preregistration(
        SWEEP_PREREGISTRATION, f"vLLM 0.26.0 {SWEEP_METHOD} decode step across the Hopper fp8 dispatch's M buckets, "
        f"{MODEL} dummy weights on the {HARDWARE.upper()}, written before the sweep ran "
        "(scripts/device/quant_decode.py sweep)",
        batches=list(SWEEP_BATCHES), line_batches=list(SWEEP_LINE_BATCHES), expected=sweep_expectations())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("preregister", help=f"write {PREREGISTRATION.relative_to(REPO)} (commit it before the run)")
    c = sub.add_parser("configs", help="write the quantized config.json files into DIR")
    c.add_argument("dir", type=Path)
    m = sub.add_parser("commands", help="print the latency-plan commands of the call")
    m.add_argument("dir", type=Path)
    m.add_argument("out", type=Path)
    m.add_argument("--only", choices=METHODS, action="append", help="this method only (repeatable)")
    sub.add_parser("preregister-sweep", help=f"write {SWEEP_PREREGISTRATION.relative_to(REPO)} (commit it first)")
    w = sub.add_parser("sweep", help=f"print the {SWEEP_METHOD} M-bucket sweep's latency-plan command")
    w.add_argument("dir", type=Path)
    w.add_argument("out", type=Path)
    sub.add_parser("preregister-prefill", help=f"write {PREFILL_PREREGISTRATION.relative_to(REPO)} (commit it first)")
    sub.add_parser("preregister-prefill-batch",
                   help=f"write {PREFILL_BATCH_PREREGISTRATION.relative_to(REPO)} (commit it first)")
    f = sub.add_parser("prefill", help="print the prefill latency-plan commands of the call (or, --dry-run, its plan)")
    f.add_argument("dir", type=Path)
    f.add_argument("out", type=Path)
    f.add_argument("--only", choices=METHODS, action="append", help="this method only (repeatable)")
    f.add_argument("--dry-run", action="store_true", help="each command's plan and the call's GPU seconds (no GPU)")
    args = p.parse_args(argv)
    if args.what == "preregister-prefill":
        print(f"wrote {preregister_prefill()}")
    elif args.what == "preregister-prefill-batch":
        print(f"wrote {preregister_prefill_batch()}")
    elif args.what == "prefill":
        only = tuple(args.only or METHODS)
        print(prefill_dry_run(only)[0] if args.dry_run else "\n".join(prefill_commands(args.dir, args.out, only)))
    elif args.what == "preregister":
        print(f"wrote {preregister()}")
    elif args.what == "preregister-sweep":
        print(f"wrote {preregister_sweep()}")
    elif args.what == "configs":
        for path in write_configs(args.dir):
            print(path)
    elif args.what == "sweep":
        print(sweep_command(args.dir, args.out))
    else:
        print("\n".join(commands(args.dir, args.out, tuple(args.only or METHODS))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
