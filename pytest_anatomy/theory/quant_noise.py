"""Quality from quantization noise: each tensor's error computed exactly from the quantizer, then a
one-constant model from that noise to the KL divergence and the perplexity change.

Per tensor t (a weight W, its quantized-then-dequantized W_q, both float32):

    r_t = ||W_q - W||^2 / ||W||^2          (relative noise energy; exact: gguf-py's own quantizer)

The model: every matmul adds output noise of relative power ~r_t, small and independent across
tensors, so the logits' perturbation and hence KL(ref || quant) (second order in it) grow as

    KLD = c x S,   S = sum_t r_t

with one constant c for the model and the text, FITTED on two file types and CHECKED on the others
(held out). Treating every tensor as equally sensitive is the model's main approximation. The
perplexity change needs no second constant: when the reference is calibrated on the text (tokens
drawn from its own distribution), E[ln p_ref - ln p_quant] over the text is KL(ref || quant), so

    delta ln ppl = ln(ppl_quant / ppl_ref) ~= KLD.

gguf-py quantizes the legacy 32-block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) in numpy; it has no
k-quant quantizer, so a mix that needs one is refused here (NotImplementedError naming the type).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_anatomy.specs.gguf_file import GgufTensor
from pytest_anatomy.theory.prediction import Prediction, Term

NUMPY_QUANTIZABLE = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")
REQUANTIZE_ROWS = 256  # rows per quantizer call in requantize: past it, the temporaries outgrow the caches


def requantize(w: Any, ggml_type: str) -> Any:
    """W [rows, row_length] float32 -> gguf-py's quantize then dequantize, float32 (F32 and F16 cast)."""
    import gguf
    import numpy as np

    if ggml_type == "F32":
        return w
    if ggml_type == "F16":
        return w.astype(np.float16).astype(np.float32)
    if ggml_type not in NUMPY_QUANTIZABLE:
        raise NotImplementedError(f"gguf-py has no numpy quantizer for {ggml_type}; "
                                  f"quality is computed for mixes of {', '.join(NUMPY_QUANTIZABLE)} only")
    qtype = gguf.GGMLQuantizationType[ggml_type]
    quant = getattr(gguf.quants, "_type_traits", {}).get(qtype)
    if quant is None or not quant.can_quantize(w):  # gguf-py's own path, and its own error for a ragged row
        return gguf.quants.dequantize(gguf.quants.quantize(w, qtype), qtype).reshape(w.shape).astype(np.float32)
    # What gguf.quants.quantize and dequantize do (gguf-py 0.19.0, pinned by the llama extra), on 256 rows a call
    # where they take 16: each 32-weight block is quantized on its own, so the bits are the same, and the per-call
    # overhead that was half of it goes (the quality slice's four file types: ~1.5 s -> ~0.8 s each)
    rows = w.reshape(-1, w.shape[-1])
    out = np.empty(rows.shape, np.float32)
    for i in range(0, len(rows), REQUANTIZE_ROWS):
        out[i:i + REQUANTIZE_ROWS] = quant.dequantize_rows(quant.quantize_rows(rows[i:i + REQUANTIZE_ROWS]))
    return out.reshape(w.shape)


@dataclass(frozen=True)
class NoiseBudget:
    """The relative noise energy of each tensor of one file type, and their sum S."""

    file_type: str
    per_tensor: Mapping[str, float]
    types: Mapping[str, str]

    @property
    def total(self) -> float:
        return math.fsum(self.per_tensor.values())

    def by_role(self) -> dict[str, float]:
        """S split by tensor role (attn_q, ffn_down, token_embd, ...), for the derivation's terms."""
        out: dict[str, float] = {}
        for name, r in self.per_tensor.items():
            role = name.split(".")[-2] if name.startswith("blk.") else name.split(".")[0]
            out[role] = out.get(role, 0.0) + r
        return dict(sorted(out.items()))


def quantize_model(reference: Mapping[str, Any], tensors: Sequence[GgufTensor],
                   file_type: str) -> tuple[dict[str, Any], NoiseBudget]:
    """The reference weights requantized tensor by tensor to the mix's types, and the noise budget."""
    import numpy as np

    weights: dict[str, Any] = dict(reference)
    per_tensor: dict[str, float] = {}
    types: dict[str, str] = {}
    for t in tensors:
        if t.ggml_type in ("F32", "F16") or t.name not in reference:
            continue
        w = reference[t.name]
        q = requantize(w, t.ggml_type)
        weights[t.name] = q
        diff = (q - w).astype(np.float64)
        per_tensor[t.name] = float(np.sum(diff * diff) / np.sum(w.astype(np.float64) ** 2))
        types[t.name] = t.ggml_type
    return weights, NoiseBudget(file_type, per_tensor, types)


@dataclass(frozen=True)
class NoiseModel:
    """KLD = c x S, c fitted on `fit_on` (file type -> (S, measured KLD))."""

    c: float
    fit_on: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def fit_scatter(self) -> float:
        """max/min of the fit points' own c: how far apart the two points the constant came from are."""
        cs = [k / s for s, k in self.fit_on.values()]
        return max(cs) / min(cs)


def fit(points: Mapping[str, tuple[float, float]]) -> NoiseModel:
    """c = geometric mean of measured KLD / S over the fit file types (a one-parameter fit in log space)."""
    if len(points) < 2 or any(s <= 0 or k <= 0 for s, k in points.values()):
        raise ValueError(f"fit needs two or more file types with positive S and KLD, got {dict(points)}")
    c = math.exp(math.fsum(math.log(k / s) for s, k in points.values()) / len(points))
    return NoiseModel(c, dict(points))


def predict_kld(model: NoiseModel, budget: NoiseBudget) -> Prediction:
    return Prediction(
        model.c * budget.total, "nat", "KLD = c x S, S = sum over tensors of ||W_q - W||^2 / ||W||^2",
        {"c": model.c, "S": budget.total, "file_type": budget.file_type, "fit_on": sorted(model.fit_on)},
        terms=tuple(Term(f"c x S[{role}]", model.c * s, "nat") for role, s in budget.by_role().items()),
        notes=(f"c fitted on {', '.join(sorted(model.fit_on))}; "
               + ("a fit point" if budget.file_type in model.fit_on else "held out of the fit"),))


def predict_delta_ln_ppl(kld: Prediction) -> Prediction:
    return Prediction(kld.value, "nat", "ln(ppl_quant / ppl_ref) ~= KL(ref || quant) (a calibrated reference)",
                      {"kld": kld.value, **kld.inputs}, terms=kld.terms,
                      notes=("no constant of its own: the same c as the KLD",))
