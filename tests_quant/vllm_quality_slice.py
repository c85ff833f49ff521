"""vLLM's quantized formats on the CPU quality slice: the predictions the device's vLLM quality run is checked against
(tests_quant/vllm_quality_preregistered.json, written by `python tests_quant/vllm_quality_slice.py --write` before
the run; tests_quant/test_vllm_quality.py reconciles the run with it).

The slice is quality_slice's (SmolLM2's f16 reference, 3 windows of 256 tokens, 381 scored); each vLLM case runs the
same numpy forward with vLLM's arithmetic for that case (measure/vllm_quant_numerics.py):
- fp8: online W8A8, per-tensor fp8 weights per fused module, per-token fp8 activations;
- gptq-w4g64: the llm-compressor checkpoint's own int4 weights (scripts/quant/make_gptq_checkpoint.py), dequantized;
- kv-fp8: the f16 weights with an fp8 KV cache at scale 1, in two written alternatives (K and V rounded only; or
  FlashAttention-3's fp8 path, which rounds the query and the probabilities too).
Besides the slice's KLD, each weight format's S (the summed relative noise of its tensors against the reference) and
the llama.cpp fit's c x S, the one-constant rule the GGUF types were predicted by: GPTQ minimises each layer's output
error over its calibration inputs rather than the weight error, so its KLD per unit S is expected below c.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_anatomy import run_share  # noqa: E402
from pytest_anatomy.host_facts import runs_openblas_haswell  # noqa: E402
from pytest_anatomy.measure import numpy_llama, vllm_quant_numerics as vqn  # noqa: E402
from pytest_anatomy.theory import quant_noise  # noqa: E402
from tests_quant import quality_slice as qs  # noqa: E402

PREREGISTERED = Path(__file__).with_name("vllm_quality_preregistered.json")
LINEAR = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
# The BLAS kernel the slice's numbers are a function of. Every fp8 rounding (weights, per-token activations, the KV
# cache) turns a last-bit difference in a float32 matmul into a different noise draw, and OpenBLAS's sgemm kernels
# sum in different orders: on one machine (numpy 2.4.6's OpenBLAS 0.3.31, AMD EPYC with AVX-512) the fp8 case's
# kld_slice is 0.034590 under the Haswell kernel, 0.031827 under SkylakeX / Cooperlake (the one OpenBLAS picks there,
# -8.0%) and 0.029955 under Sandybridge (-13.4%); the slice's own standard error is 0.00326 (9.4%). The committed
# pre-registration was written under Haswell: OPENBLAS_CORETYPE=Haswell (or Zen, which runs the same sgemm)
# reproduces every number of its fp8 and kv-fp8 cases bit for bit, and ppl_ref (26.161263209) of preregistered.json.
PREREGISTERED_BLAS = "Haswell"
SAME_SGEMM = {"Haswell": ("Haswell", "Zen")}  # the kernels measured to give the same bits


blas_kernel = qs.blas_kernel  # the kernel OpenBLAS runs here (quality_slice keys the shared reference forward by it)


def fp8_under_blas(data_folder: Path, kernel: str = PREREGISTERED_BLAS) -> dict[str, Any] | str:
    """The fp8 case's summary computed in a child process whose OpenBLAS is forced to `kernel` (OPENBLAS_CORETYPE is
    read once, when the library loads, so this process cannot switch); or why it cannot be: a line to skip with."""
    if kernel == "Haswell" and not runs_openblas_haswell():
        return f"this CPU lacks AVX2/FMA3, which OpenBLAS's {kernel} kernel (the pre-registration's) needs"
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel, "OPENBLAS_NUM_THREADS": "1",
           "ANATOMY_QUANT_DATA": str(data_folder)}
    shared = run_share.folder()
    if shared is not None:  # the parsed GGUF, the same bits under any BLAS kernel (quality_slice.parsed): read back
        env[run_share.ENV] = str(shared)
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--recompute-fp8"], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the fp8 recomputation under OPENBLAS_CORETYPE={kernel} exited {out.returncode}: "
                           f"{out.stderr.strip()[-2000:]}")
    doc = json.loads(out.stdout)
    if doc["blas"] not in SAME_SGEMM.get(kernel, (kernel,)):
        return f"numpy's BLAS here is not OpenBLAS with a {kernel} kernel (it ran {doc['blas']!r})"
    return doc["fp8"]  # type: ignore[no-any-return]


def relative_noise(reference: dict[str, np.ndarray], quantized: dict[str, np.ndarray]) -> dict[str, float]:
    """r_t = ||W_q - W||^2 / ||W||^2 of every linear tensor (quant_noise's per-tensor noise; S is their sum)."""
    out = {}
    for name, wq in quantized.items():
        w = reference[name].astype(np.float64)
        out[name] = float(((wq.astype(np.float64) - w) ** 2).sum() / (w ** 2).sum())
    return out


def run_case(ref: qs.Reference, label: str, weights: dict[str, np.ndarray], act: numpy_llama.Act,
             per_tensor: dict[str, float]) -> qs.FormatResult:
    hidden = qs._hidden(ref.cfg, weights, ref.tokens, act)
    targets = qs._targets(ref.tokens)
    kld, dnll = np.empty(len(hidden)), np.empty(len(hidden))
    with qs.single_thread():
        for i in range(0, len(hidden), qs.CHUNK):
            lq = numpy_llama.log_probs(weights, hidden[i:i + qs.CHUNK], act)
            lr = ref.log_probs[i:i + qs.CHUNK].astype(np.float64)
            kld[i:i + qs.CHUNK] = (np.exp(lr) * (lr - lq)).sum(axis=-1)
            dnll[i:i + qs.CHUNK] = -lq[np.arange(len(lq)), targets[i:i + qs.CHUNK]] - ref.nll[i:i + qs.CHUNK]
    return qs.FormatResult(label, quant_noise.NoiseBudget(label, per_tensor, {}), kld, dnll)


def fp8_case(ref: qs.Reference) -> qs.FormatResult:
    act = vqn.Fp8W8A8(ref.weights, ref.cfg.n_layers)
    return run_case(ref, "fp8", ref.weights, act, relative_noise(ref.weights, act.quantized))


def gptq_case(ref: qs.Reference, folder: Path) -> qs.FormatResult:
    quantized = vqn.read_pack_quantized(folder, ref.cfg.n_head, ref.cfg.n_head_kv)
    return run_case(ref, "gptq-w4g64", {**ref.weights, **quantized}, None, relative_noise(ref.weights, quantized))


def kv_case(ref: qs.Reference, fa3: bool) -> qs.FormatResult:
    return run_case(ref, "kv-fp8", ref.weights, vqn.Fp8KvCache(fp8_query_and_p=fa3), {})


def summary(r: qs.FormatResult, c: float) -> dict[str, Any]:
    s = r.budget.total
    out: dict[str, Any] = {"kld_slice": r.kld_mean, "kld_slice_se": r.kld_se, "delta_ln_ppl_slice": r.delta_ln_ppl,
                           "delta_ln_ppl_slice_se": r.delta_ln_ppl_se, "scored_tokens": int(r.kld.size)}
    if s:
        out.update({"S": s, "S_by_role": r.budget.by_role(), "kld_c_times_S": c * s})
    return out


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def write(gptq_folder: Path) -> dict[str, Any]:
    from pytest_anatomy import quant_data

    pre = json.loads((Path(__file__).with_name("preregistered.json")).read_text())
    c = float(pre["quality"]["c"])
    ref = qs.build_reference(quant_data.locate())
    gptq_prov = json.loads((gptq_folder / "provenance.json").read_text())
    cases = {"fp8": summary(fp8_case(ref), c), "gptq-w4g64": summary(gptq_case(ref, gptq_folder), c),
             "kv-fp8": {"alternatives": {"kv-only": summary(kv_case(ref, False), c),
                                         "fa3-fp8": summary(kv_case(ref, True), c)}}}
    doc = {"schema": "pytest-anatomy/vllm-quality-preregistration/v1",
           "written_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "theory_commit": _git("rev-parse", "HEAD"), "c": c, "blas_kernel": blas_kernel(),
           "gptq_checkpoint": gptq_prov, "cases": cases}
    PREREGISTERED.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def main() -> int:
    p = argparse.ArgumentParser(description="Write tests_quant/vllm_quality_preregistered.json from the CPU slice.")
    p.add_argument("--write", action="store_true", help="write the pre-registration (before the device run)")
    p.add_argument("--recompute-fp8", action="store_true",
                   help="print the fp8 case's summary and this process's BLAS kernel as JSON (fp8_under_blas)")
    p.add_argument("--gptq", type=Path, default=REPO / ".devcarry-gptq" / "smollm2-135m-gptq-w4g64",
                   help="the GPTQ checkpoint folder (scripts/quant/make_gptq_checkpoint.py)")
    args = p.parse_args()
    if args.recompute_fp8:
        from pytest_anatomy import quant_data

        c = float(json.loads(PREREGISTERED.read_text())["c"])
        print(json.dumps({"blas": blas_kernel(), "fp8": summary(fp8_case(qs.build_reference(quant_data.locate())), c)}))
        return 0
    if not args.write:
        p.error("nothing to do: pass --write (or --recompute-fp8)")
    if not (args.gptq / "provenance.json").is_file():
        raise SystemExit(f"vllm_quality_slice: no GPTQ checkpoint at {args.gptq}; make it with "
                         "scripts/quant/make_gptq_checkpoint.py")
    print(json.dumps(write(args.gptq)["cases"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
