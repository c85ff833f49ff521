"""vLLM's quantized arithmetic in numpy, for the CPU slice's forward (measure/numpy_llama.py): what the engine does
to SmolLM2's weights and activations under `--quantization fp8` and under an int4 compressed-tensors checkpoint, so
that the slice can predict the KL divergence the device then measures (tests_quant/test_vllm_quality.py).

fp8 (vLLM 0.26.0, Fp8LinearMethod on a GPU where CUTLASS fp8 is supported, the H200 included):
- weights, online: each linear module's weight, fused as vLLM holds it (q|k|v as one qkv_proj, gate|up as one
  gate_up_proj), quantized once with one per-tensor scale, amax / 448 (ops.scaled_fp8_quant with no scale);
- activations: dynamic per token (kFp8DynamicTokenSym): each row of the input scaled by its own amax / 448;
- e4m3fn: 3 mantissa bits, exponent bias 7, subnormals down to 2^-9, finite maximum 448, round to nearest even;
- the product accumulates in fp32 and is rescaled by the two scales; the embedding / lm_head is left in the model
  dtype (vLLM's fp8 method quantizes linear layers only).
int4 (compressed-tensors pack-quantized, as llm-compressor writes it): 8 signed 4-bit values per int32 along the
input, value i at bits 4i..4i+3, stored with +8 so that the nibble is unsigned; weight = (nibble - 8) x scale of its
group of `group_size` inputs (symmetric: no zero point). The kernels (Machete / Marlin) dequantize exactly that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pytest_anatomy.measure import hf_checkpoint

E4M3_MAX = 448.0
_E4M3_MANTISSA_BITS = 3
_E4M3_MIN_EXPONENT = -6  # smallest normal 2^-6; subnormals step by 2^(-6-3)
# vLLM's dynamic quantization floors the scale so that an all-zero row does not divide by zero
MIN_SCALE = 1.0 / (E4M3_MAX * 512.0)


def e4m3_round(v: np.ndarray) -> np.ndarray:
    """v (already divided by its scale) rounded to the nearest e4m3fn value, ties to even, saturated at +-448."""
    a = np.minimum(np.abs(v).astype(np.float64), E4M3_MAX)
    _, e = np.frexp(a)  # a = m x 2^e with m in [0.5, 1): the leading bit is 2^(e-1)
    quantum = np.ldexp(1.0, np.maximum(e - 1 - _E4M3_MANTISSA_BITS, _E4M3_MIN_EXPONENT - _E4M3_MANTISSA_BITS))
    r = np.minimum(np.round(a / quantum) * quantum, E4M3_MAX)
    return np.copysign(r, v).astype(np.float32)


def fp8_per_tensor(w: np.ndarray) -> np.ndarray:
    """A weight through vLLM's online fp8: one scale for the whole (fused) tensor, dequantized back."""
    scale = max(float(np.abs(w).max()) / E4M3_MAX, MIN_SCALE)
    return e4m3_round(w / np.float32(scale)) * np.float32(scale)


def fp8_per_token(x: np.ndarray) -> np.ndarray:
    """Activations [..., n] through vLLM's dynamic per-token fp8: one scale per row, dequantized back."""
    scale = np.maximum(np.abs(x).max(axis=-1, keepdims=True) / np.float32(E4M3_MAX), np.float32(MIN_SCALE))
    return e4m3_round(x / scale) * scale


# GGUF names of the tensors vLLM fuses into one module, and so quantizes under one scale
_FUSED = (("attn_q", "attn_k", "attn_v"), ("ffn_gate", "ffn_up"), ("attn_output",), ("ffn_down",))
_LM_HEAD = ("token_embd.weight", "output.weight")


def fp8_weights(weights: Mapping[str, np.ndarray], n_layers: int) -> dict[str, np.ndarray]:
    """Every linear weight of the GGUF-named `weights` as vLLM's online fp8 leaves it (fused modules share a scale)."""
    out: dict[str, np.ndarray] = {}
    for i in range(n_layers):
        for group in _FUSED:
            names = [f"blk.{i}.{g}.weight" for g in group]
            fused = np.concatenate([weights[n] for n in names], axis=0)
            q = fp8_per_tensor(fused)
            row = 0
            for n in names:
                out[n] = q[row:row + weights[n].shape[0]]
                row += weights[n].shape[0]
    return out


class Fp8W8A8:
    """An `act` for numpy_llama: every linear matmul as vLLM's fp8 W8A8 computes it (fp8 weights, per-token fp8
    activations, fp32 accumulation); the lm_head matmul is left alone."""

    def __init__(self, weights: Mapping[str, np.ndarray], n_layers: int) -> None:
        self.quantized = fp8_weights(weights, n_layers)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return fp8_per_token(x)

    def matmul(self, x: np.ndarray, name: str, w: np.ndarray) -> np.ndarray:
        if name in _LM_HEAD:
            return x @ w.T  # type: ignore[no-any-return]
        return fp8_per_token(x) @ self.quantized[name].T  # type: ignore[no-any-return]


def unpack_int4(packed: np.ndarray, columns: int) -> np.ndarray:
    """[rows, columns / 8] int32 -> [rows, columns] signed int4 values (compressed-tensors' pack_to_int32, 4 bits)."""
    words = packed.astype(np.int64) & 0xFFFFFFFF
    shifts = np.arange(8, dtype=np.int64) * 4
    nibbles = (words[:, :, None] >> shifts[None, None, :]) & 0xF
    return (nibbles.reshape(packed.shape[0], -1)[:, :columns] - 8).astype(np.int8)


def read_pack_quantized(folder: Path, n_head: int, n_head_kv: int) -> dict[str, np.ndarray]:
    """An int4 symmetric group-quantized compressed-tensors checkpoint -> every linear weight dequantized to
    float32 under its GGUF name (q/k rows permuted back to the GGUF's rope layout), as numpy_llama reads weights."""
    config = json.loads((folder / "config.json").read_text())
    groups = config["quantization_config"]["config_groups"]
    (scheme,) = groups.values()
    wargs = scheme["weights"]
    if wargs["num_bits"] != 4 or not wargs["symmetric"] or wargs["strategy"] != "group":
        raise ValueError(f"{folder}: only symmetric int4 group quantization is read here, not {wargs}")
    group = int(wargs["group_size"])
    tensors: dict[str, np.ndarray] = {}
    for f in sorted(folder.glob("*.safetensors")):
        tensors.update(hf_checkpoint.read_safetensors(f))
    to_gguf = {hf_checkpoint.hf_name(f"blk.{i}.{r}.weight")[:-len(".weight")]: f"blk.{i}.{r}.weight"
               for i in range(config["num_hidden_layers"]) for group_names in _FUSED for r in group_names}
    out: dict[str, np.ndarray] = {}
    for prefix, gguf_name in to_gguf.items():
        rows, cols = (int(d) for d in tensors[f"{prefix}.weight_shape"])
        q = unpack_int4(tensors[f"{prefix}.weight_packed"], cols).astype(np.float32)
        scale = np.repeat(tensors[f"{prefix}.weight_scale"].astype(np.float32), group, axis=1)[:, :cols]
        w = q * scale
        if ".attn_q." in gguf_name:
            w = hf_checkpoint.permute(w, n_head)
        elif ".attn_k." in gguf_name:
            w = hf_checkpoint.permute(w, n_head_kv)
        out[gguf_name] = np.ascontiguousarray(w, np.float32)
    return out


def fp8_unit_scale(x: np.ndarray) -> np.ndarray:
    """x stored as e4m3 with scale 1.0: vLLM's fp8 KV cache without calibrated scales (k_scale = v_scale = 1.0)."""
    return e4m3_round(x)


class Fp8KvCache:
    """An `act` for numpy_llama: the weights untouched, attention as vLLM computes it with kv_cache_dtype="fp8" and no
    calibrated scales: K and V (after rope) stored as e4m3 with scale 1. `fp8_query_and_p` adds what the FlashAttention-3
    fp8 path does besides: the query quantized with its scale (1.0) and the probabilities fed to the P.V MMA in e4m3.
    Which of the two the H200 runs is pre-registered as two alternatives (tests_quant/vllm_quality_preregistered.json)."""

    def __init__(self, fp8_query_and_p: bool) -> None:
        self.fp8_query_and_p = fp8_query_and_p

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x

    def attention(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        from pytest_anatomy.measure.numpy_llama import causal_attention

        k, v = fp8_unit_scale(k), fp8_unit_scale(v)
        if not self.fp8_query_and_p:
            return causal_attention(q, k, v)
        return causal_attention(fp8_unit_scale(q), k, v, p_round=fp8_unit_scale)
