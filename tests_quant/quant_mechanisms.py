"""The CPU computations behind the first visit's quality findings (docs/QUANT.md, "What the first visit measured"),
on the same slice as quality_slice.py. Each is one numpy forward (~2.5 s of one core), 13 in all: too many for the
suite's CPU budget, so `python tests_quant/quant_mechanisms.py` writes their means and standard errors to
quant_mechanisms.json (committed) and the tests read that; test_quant_mechanisms.py recomputes the q8_1 floor (one
forward, shared by the run's processes) and checks it against the file, so the file cannot drift from the code.

- floor: the reference's weights with every weight matmul's input rounded through q8_1 (llama.cpp's CUDA MMQ for a
  quantized weight; the F16 reference takes cuBLAS in f16 and sees none of it);
- Q8_0 / Q4_0 with and without that rounding: does the floor add to the weight noise's KLD;
- role:<r>: only the tensors of one role (attn_q, ..., ffn_down) requantized to Q4_0: each role's KLD per unit S;
- ffn_down x1.774: ffn_down's Q4_0 error scaled to the Q2_K file's ffn_down S (0.71539): is KLD linear in S there;
- <mix>-no-ffn-down: the Q5_K_M and Q4_K_M mixes' legacy tensors (gguf-py has no numpy k-quant quantizer) on the CPU.

Added after the second visit (2026-12-02 14:33; `python tests_quant/quant_mechanisms.py --missing` computes only the
rows the file lacks, so the rows above keep the values the first visit's findings quote):
- floor realizations: the floor again with the attention norms' weights moved by +-1 ulp (seeds 1..5): the q8_1 rounding
  makes the forward chaotic (a flipped code changes the next layer's inputs, which flips others), so the floor is one
  draw from a spread about its own standard error, and another CPU's BLAS draws another;
- Q5_1 (no kernel rounding), Q5_1+asym and Q4_1+asym / Q4_1+q8_1: the file types with a block minimum through MMQ's
  asymmetric arithmetic (measure/q8_1.AsymmetricMmq), paired per token with the run without it; Q4_1 is the trap
  (its weights are the reference's own grid), here only a probe of the kernel, never a quality result;
- output noise: each tensor's error measured where it acts, ||E x||^2 / ||W x||^2 over the slice's own activations x
  entering that matmul, summed (S_out), beside the weight-space S: noise correlated with the weights is not white.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

PATH = Path(__file__).with_name("quant_mechanisms.json")
ROLES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
Q2_K_FFN_DOWN_S = 0.71539  # the device's S of the Q2_K file's 30 Q3_K ffn_down tensors (batch 20261202T092902Z)


def stats(kld: np.ndarray, dnll: np.ndarray, s: float | None) -> dict[str, Any]:
    d = dnll - kld
    n = math.sqrt(kld.size)
    return {"kld": float(kld.mean()), "kld_se": float(kld.std(ddof=1) / n), "delta_ln_ppl": float(dnll.mean()),
            "delta_ln_ppl_se": float(dnll.std(ddof=1) / n), "dnll_minus_kld": float(d.mean()),
            "dnll_minus_kld_se": float(d.std(ddof=1) / n), "S": s}


def run(ref: Any, weights: dict[str, np.ndarray], act: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """KL(ref || this forward) and nll - nll_ref per scored token (quality_slice.run_format with a rounding hook)."""
    from quality_slice import CHUNK, SCORED_FROM, _targets, single_thread

    from pytest_anatomy.measure import numpy_llama

    with single_thread():
        h = numpy_llama.hidden_states(ref.cfg, weights, ref.tokens, act)[:, SCORED_FROM - 1:-1]
        h = h.reshape(-1, ref.cfg.n_embd)
        targets = _targets(ref.tokens)
        kld, dnll = np.empty(len(h)), np.empty(len(h))
        for i in range(0, len(h), CHUNK):
            lq = numpy_llama.log_probs(weights, h[i:i + CHUNK], act)
            lr = ref.log_probs[i:i + CHUNK].astype(np.float64)
            kld[i:i + CHUNK] = (np.exp(lr) * (lr - lq)).sum(axis=-1)
            dnll[i:i + CHUNK] = -lq[np.arange(len(lq)), targets[i:i + CHUNK]] - ref.nll[i:i + CHUNK]
    return kld, dnll


def floor(ref: Any) -> dict[str, Any]:
    from pytest_anatomy.measure.q8_1 import q8_1_round

    return stats(*run(ref, ref.weights, q8_1_round), None)


def compute(ref: Any) -> dict[str, Any]:
    from pytest_anatomy.measure.q8_1 import q8_1_round
    from pytest_anatomy.theory import gguf_mix, quant_noise

    out: dict[str, Any] = {"floor": floor(ref)}
    for ft in ("Q8_0", "Q4_0"):
        w, b = quant_noise.quantize_model(ref.weights, gguf_mix.quantized_types(ref.header_f16, ft), ft)
        out[ft] = stats(*run(ref, w), b.total)
        out[ft + "+q8_1"] = stats(*run(ref, w, q8_1_round), b.total)
    for role in ROLES:
        ts = [t.retyped("Q4_0") for t in ref.header_f16.tensors
              if t.name.startswith("blk.") and t.name.split(".")[-2] == role]
        w, b = quant_noise.quantize_model(ref.weights, ts, f"Q4_0[{role}]")
        out[f"role:{role}"] = stats(*run(ref, w), b.total)
        if role == "ffn_down":  # the same error pattern, amplitude scaled to the Q2_K file's ffn_down S
            k = math.sqrt(Q2_K_FFN_DOWN_S / b.total)
            scaled = {**ref.weights, **{n: ref.weights[n] + np.float32(k) * (w[n] - ref.weights[n]) for n in b.per_tensor}}
            out["ffn_down x1.774"] = stats(*run(ref, scaled), Q2_K_FFN_DOWN_S)
    for ft in ("Q5_K_M", "Q4_K_M"):
        ts = [t for t in gguf_mix.quantized_types(ref.header_f16, ft) if ".ffn_down." not in t.name]
        w, b = quant_noise.quantize_model(ref.weights, ts, ft)
        out[f"{ft}-no-ffn-down"] = {**stats(*run(ref, w), b.total), "S_by_role": b.by_role()}
    lr = ref.log_probs.astype(np.float64)
    out["reference"] = {"nll": float(ref.nll.mean()), "entropy": float(-(np.exp(lr) * lr).sum(axis=-1).mean()),
                        "scored_tokens": int(ref.nll.size)}
    return out


def paired(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> dict[str, float]:
    """Per-token differences of two runs on the same tokens: their means and standard errors."""
    dk, dn = a[0] - b[0], a[1] - b[1]
    n = math.sqrt(dk.size)
    return {"kld": float(dk.mean()), "kld_se": float(dk.std(ddof=1) / n), "delta_ln_ppl": float(dn.mean()),
            "delta_ln_ppl_se": float(dn.std(ddof=1) / n)}


def floor_realizations(ref: Any, seeds: range = range(1, 6)) -> dict[str, list[float]]:
    """The floor with every attn_norm weight moved by +-1 ulp (a change whose own KLD is ~4e-9)."""
    from pytest_anatomy.measure.q8_1 import q8_1_round

    out: dict[str, list[float]] = {"kld": [], "kld_se": []}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        moved = dict(ref.weights)
        for name in (n for n in ref.weights if n.endswith(".attn_norm.weight")):
            w0 = ref.weights[name]
            moved[name] = (w0 * (1 + np.float32(2 ** -23) * rng.choice([-1, 1], w0.shape))).astype(np.float32)
        row = stats(*run(ref, moved, q8_1_round), None)
        out["kld"].append(row["kld"])
        out["kld_se"].append(row["kld_se"])
    return out


def asymmetric(ref: Any) -> dict[str, Any]:
    """Q5_1 and Q4_1 through the asymmetric MMQ arithmetic (and Q4_1 through the symmetric one, for contrast)."""
    from pytest_anatomy.measure.q8_1 import AsymmetricMmq, block_minimum, q8_1_round
    from pytest_anatomy.theory import gguf_mix, quant_noise

    out: dict[str, Any] = {}
    for ft in ("Q5_1", "Q4_1"):
        ts = gguf_mix.quantized_types(ref.header_f16, ft)
        w, b = quant_noise.quantize_model(ref.weights, ts, ft)
        kernel = AsymmetricMmq({t.name: block_minimum(w[t.name]) for t in ts if t.ggml_type == ft})
        plain, asym = run(ref, w), run(ref, w, kernel)
        if ft == "Q5_1":
            out[ft] = {**stats(*plain, b.total), "S_by_role": b.by_role()}
        else:
            out[ft + "+q8_1"] = stats(*run(ref, w, q8_1_round), b.total)
        out[ft + "+asym"] = {**stats(*asym, b.total), "minus_plain": paired(asym, plain)}
    return out


def output_noise(ref: Any, file_types: tuple[str, ...] = ("Q8_0", "Q4_0", "Q5_0", "Q5_1")) -> dict[str, Any]:
    """S_out = sum over tensors of ||E x||^2 / ||W x||^2, x the reference's activations entering that matmul on the
    slice (every position of the three windows), beside S = sum ||E||^2 / ||W||^2, both by role."""
    from quality_slice import single_thread

    from pytest_anatomy.measure import numpy_llama
    from pytest_anatomy.theory import gguf_mix, quant_noise

    seen: list[np.ndarray] = []

    def capture(x: np.ndarray) -> np.ndarray:
        seen.append(x.reshape(-1, x.shape[-1]))
        return x

    with single_thread():
        numpy_llama.hidden_states(ref.cfg, ref.weights, ref.tokens, capture)
    inputs: dict[str, np.ndarray] = {}
    per_layer = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    for i in range(ref.cfg.n_layers):  # the order numpy_llama calls its matmuls in
        for role, x in zip(per_layer, seen[7 * i:7 * i + 7]):
            inputs[f"blk.{i}.{role}.weight"] = x
    out: dict[str, Any] = {}
    with single_thread():
        for ft in file_types:
            w, b = quant_noise.quantize_model(ref.weights, gguf_mix.quantized_types(ref.header_f16, ft), ft)
            by: dict[str, float] = {}
            for name, x in inputs.items():
                y = (x @ ref.weights[name].T).astype(np.float64)
                e = (x @ (w[name] - ref.weights[name]).T).astype(np.float64)
                role = name.split(".")[-2]
                by[role] = by.get(role, 0.0) + float(np.sum(e * e) / np.sum(y * y))
            s_w = {r: v for r, v in b.by_role().items() if r in by}
            out[ft] = {"S": math.fsum(s_w.values()), "S_out": math.fsum(by.values()), "S_by_role": s_w,
                       "S_out_by_role": dict(sorted(by.items()))}
    return out


ADDED = {"floor realizations": floor_realizations, "asymmetric": asymmetric, "output noise": output_noise}


def compute_missing(ref: Any, have: dict[str, Any]) -> dict[str, Any]:
    """The rows of ADDED that `have` lacks ("asymmetric" writes several rows, named by file type)."""
    out = dict(have)
    for key, fn in ADDED.items():
        if key == "asymmetric":
            if "Q5_1+asym" not in out:
                out.update(fn(ref))
        elif key not in out:
            out[key] = fn(ref)
    return out


def load() -> dict[str, Any]:
    return json.loads(PATH.read_text())


def refuse_other_arguments(argv: list[str]) -> str | None:
    """The one-line usage error for any argument but --missing, or None: an unknown one (--help) must not fall
    through to recomputing every row and rewriting the committed file."""
    other = [a for a in argv if a != "--missing"]
    return f"usage: python {Path(__file__).name} [--missing] (not {' '.join(other)})" if other else None


if __name__ == "__main__":
    if (usage := refuse_other_arguments(sys.argv[1:])) is not None:
        sys.exit(usage)
    sys.path.insert(0, str(Path(__file__).parent))
    from quality_slice import build_reference

    from pytest_anatomy import quant_data

    reference = build_reference(quant_data.locate())
    rows = compute_missing(reference, load()) if "--missing" in sys.argv else compute_missing(reference, compute(reference))
    PATH.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PATH}")


# ---- predictions for the GPU visit from the file above and the device's own per-tensor noise ---------------------------

def device_s_by_role(kld_recording: Any) -> dict[str, dict[str, float]]:
    """file type -> S per role, from the per-tensor noise the visit's raw batch kept beside the kld recording's
    (results/<hw>/batches/<stamp>/quant.json: gguf-py dequantized each tensor of llama-quantize's own file)."""
    stamp = kld_recording.path.name.split("@", 1)[1].removesuffix(".json")
    batch = kld_recording.path.parent.parent / "batches" / stamp / kld_recording.provenance["origin"]["file"]
    out: dict[str, dict[str, float]] = {}
    for run_ in json.loads(batch.read_text())["runs"]:
        if run_["id"].endswith(".noise") and "result" in run_:  # Q4_1 (the trap) was skipped
            by: dict[str, float] = {}
            for name, r in run_["result"]["per_tensor"].items():
                role = name.split(".")[-2] if name.startswith("blk.") else name.split(".")[0]
                by[role] = by.get(role, 0.0) + r
            out[run_["id"].split(".")[-2]] = by
    return out


def role_c(cpu: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """role -> (KLD per unit S, its standard error) from the one-role Q4_0 runs: 7 constants FITTED on the CPU slice,
    none on GPU data. token_embd (Q8_0 in every file, its S ~4e-8: the reference's own grid) gets the mean."""
    out = {r: (cpu[f"role:{r}"]["kld"] / cpu[f"role:{r}"]["S"], cpu[f"role:{r}"]["kld_se"] / cpu[f"role:{r}"]["S"])
           for r in ROLES}
    return out


def gaps(cpu: dict[str, Any]) -> dict[str, float]:
    """How far the CPU slice itself says the sums below are from additive: |measured / summed - 1|."""
    roles = sum(cpu[f"role:{r}"]["kld"] for r in ROLES)
    return {"roles": abs(cpu["Q4_0"]["kld"] / roles - 1),
            "floor": abs(cpu["Q8_0+q8_1"]["kld"] / (cpu["Q8_0"]["kld"] + cpu["floor"]["kld"]) - 1)}


def mechanism_kld(cpu: dict[str, Any], s_by_role: dict[str, float]) -> tuple[float, float]:
    """(KLD, relative band) = sum over roles of c_role x S_role + the q8_1 floor. The band: 3 standard errors of the
    CPU constants' sum + the two non-additivities the CPU slice measured (roles summed vs all at once; floor + weight
    noise vs both at once), added: neither is modelled, both were measured before any GPU number was compared."""
    c = role_c(cpu)
    value = sum(c[r][0] * s_by_role.get(r, 0.0) for r in ROLES) + cpu["floor"]["kld"]
    se = math.sqrt(sum((c[r][1] * s_by_role.get(r, 0.0)) ** 2 for r in ROLES) + cpu["floor"]["kld_se"] ** 2)
    g = gaps(cpu)
    return value, 3 * se / value + g["roles"] + g["floor"]


def calibration_ratio(cpu: dict[str, Any], key: str) -> tuple[float, float]:
    """(delta ln ppl / KLD on the CPU slice, the relative band: 3 standard errors of the paired per-token mean of
    delta nll - KL, over the KLD). Not 1 when the reference is not calibrated on the text."""
    row = cpu[key]
    return row["delta_ln_ppl"] / row["kld"], 3 * row["dnll_minus_kld_se"] / row["kld"]
