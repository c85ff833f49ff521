"""vLLM's decode step per weight format on the device: Qwen2.5-7B with dummy weights in bf16, fp8 (W8A8, dynamic
activations), AWQ and GPTQ (int4, group 128), each a quantized config.json the engine reads as a checkpoint's, timed
by the latency plan's decode part (scripts/device/latency_plan.py --only decode). Issue 13's "decode step vs bytes
moved" for the vLLM methods, which no plan measured until now.

    python scripts/device/quant_decode.py preregister        # here, before the call: writes PREREGISTRATION
    python scripts/device/quant_decode.py configs DIR        # on the device: the three quantized configs
    python scripts/device/quant_decode.py commands DIR OUT   # the latency-plan commands the call runs, one a method

The pre-registration holds `pytest-anatomy predict latency --quantization M` at the decode part's shape (1,024
prompt tokens, 128 out: context 1,088) for each method and batch, with the theory's commit; it must be committed
before the run (a replay test reconciles the run against it as well as against the current theory).
"""

from __future__ import annotations

import argparse
import datetime as dt
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


def commands(folder: Path, out: Path) -> list[str]:
    """One latency-plan call per method: its own engine, the decode part at BATCHES, the session's ceilings first."""
    batches = ",".join(str(b) for b in BATCHES)
    return [f"python scripts/device/latency_plan.py --config {folder / f'{MODEL}-{m}.json'} --only decode "
            f"--decode-batches {batches} --second-model none --overhead-models none --budget-s 170 "
            f"--out-dir {out / m}" for m in METHODS]


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
    from pytest_anatomy.preregistration import PreregistrationError, theory_commit

    try:
        commit = theory_commit(REPO)
    except PreregistrationError as err:
        raise SystemExit(f"refused: {err}") from None
    doc = {"what": "vLLM 0.26.0 decode step per weight format, Qwen2.5-7B dummy weights on the H200, predicted "
                   "before any run (scripts/device/quant_decode.py); the median recorded session's ceilings and "
                   "calibration", "written_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "theory_commit": commit, "context_tokens": INPUT_LEN + OUTPUT_LEN // 2, "predictions": predictions()}
    PREREGISTRATION.write_text(json.dumps(doc, indent=1) + "\n")
    return PREREGISTRATION


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("preregister", help=f"write {PREREGISTRATION.relative_to(REPO)} (commit it before the run)")
    c = sub.add_parser("configs", help="write the quantized config.json files into DIR")
    c.add_argument("dir", type=Path)
    m = sub.add_parser("commands", help="print the latency-plan commands of the call")
    m.add_argument("dir", type=Path)
    m.add_argument("out", type=Path)
    args = p.parse_args(argv)
    if args.what == "preregister":
        print(f"wrote {preregister()}")
    elif args.what == "configs":
        for path in write_configs(args.dir):
            print(path)
    else:
        print("\n".join(commands(args.dir, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
