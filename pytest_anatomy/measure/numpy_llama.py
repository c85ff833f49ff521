"""A float32 numpy forward of a llama-architecture GGUF (SmolLM2-135M on a CPU, in seconds).

The weights are the GGUF's tensors dequantized by gguf-py (PyPI `gguf`), in PyTorch's [out, in]
order. llama.cpp's converter permutes attn_q/attn_k so that rotary embedding rotates *adjacent*
pairs (ggml's "normal" rope mode), so the rope here rotates (x[2i], x[2i+1]) with the GGUF's
freq_base. Everything is float32 except the softmax statistics (float64 sums: the KL divergences
measured from these logits are ~1e-3 and must not drown in summation error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class LlamaConfig:
    n_layers: int
    n_embd: int
    n_head: int
    n_head_kv: int
    n_ff: int
    rope_base: float
    rms_eps: float

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


Weights = Mapping[str, np.ndarray]
# What happens to the activations entering a weight matmul: None = nothing (float32). llama.cpp's CUDA MMQ kernels
# round them to q8_1 for every quantized weight (measure/q8_1.py); passing that rounding here prices it on the CPU.
# An `act` with a `matmul(x, name, w)` method computes the whole product itself: a kernel whose error depends on the
# weight as well (measure/q8_1.AsymmetricMmq: the types with a block minimum).
Act = Callable[[np.ndarray], np.ndarray] | None


def _in(act: Act, x: np.ndarray) -> np.ndarray:
    return x if act is None else act(x)


def _mm(act: Act, x: np.ndarray, w: Weights, name: str) -> np.ndarray:
    """x @ w[name].T as the kernel computes it."""
    matmul = getattr(act, "matmul", None)
    if matmul is not None:
        return matmul(x, name, w[name])  # type: ignore[no-any-return]
    return _in(act, x) @ w[name].T


def read_gguf(path: Path) -> tuple[LlamaConfig, dict[str, np.ndarray], object]:
    """(config, every tensor dequantized to float32 [out, in], the gguf reader for its metadata)."""
    import gguf

    from pytest_anatomy.specs.gguf_file import gguf_reader

    reader = gguf_reader(path)

    def field(key: str) -> object:
        f = reader.get_field(key)
        if f is None:
            raise ValueError(f"{path}: no {key} in the header; is this a llama-architecture GGUF?")
        return f.contents()

    cfg = LlamaConfig(
        n_layers=int(field("llama.block_count")), n_embd=int(field("llama.embedding_length")),  # type: ignore[call-overload]
        n_head=int(field("llama.attention.head_count")),  # type: ignore[call-overload]
        n_head_kv=int(field("llama.attention.head_count_kv")),  # type: ignore[call-overload]
        n_ff=int(field("llama.feed_forward_length")), rope_base=float(field("llama.rope.freq_base")),  # type: ignore[call-overload, arg-type]
        rms_eps=float(field("llama.attention.layer_norm_rms_epsilon")))  # type: ignore[arg-type]
    weights = {}
    for t in reader.tensors:
        w = gguf.quants.dequantize(t.data, t.tensor_type)
        weights[t.name] = np.ascontiguousarray(w.reshape(tuple(int(d) for d in reversed(t.shape))), np.float32)
    return cfg, weights, reader


def _rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope_tables(cfg: LlamaConfig, n: int) -> tuple[np.ndarray, np.ndarray]:
    inv = cfg.rope_base ** (-np.arange(0, cfg.head_dim, 2, dtype=np.float64) / cfg.head_dim)
    ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def _rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x: [batch, heads, tokens, head_dim]; rotates adjacent pairs (ggml rope mode 0)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def _attention(cfg: LlamaConfig, w: Weights, i: int, x: np.ndarray, cos: np.ndarray, sin: np.ndarray,
               act: Act = None) -> np.ndarray:
    b, n, _ = x.shape
    hd, p = cfg.head_dim, f"blk.{i}."
    q = _mm(act, x, w, p + "attn_q.weight").reshape(b, n, cfg.n_head, hd).transpose(0, 2, 1, 3)
    k = _mm(act, x, w, p + "attn_k.weight").reshape(b, n, cfg.n_head_kv, hd).transpose(0, 2, 1, 3)
    v = _mm(act, x, w, p + "attn_v.weight").reshape(b, n, cfg.n_head_kv, hd).transpose(0, 2, 1, 3)
    q, k = _rope(q, cos, sin), _rope(k, cos, sin)
    group = cfg.n_head // cfg.n_head_kv
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    attend = getattr(act, "attention", None) or causal_attention  # an act may change attention's own arithmetic
    out = attend(q, k, v).transpose(0, 2, 1, 3).reshape(b, n, cfg.n_embd)
    return _mm(act, out, w, p + "attn_output.weight")


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, p_round: Act = None) -> np.ndarray:
    """softmax(q k^T / sqrt(d), causal) v over [batch, heads, tokens, head_dim]. `p_round` rounds the unnormalised
    probabilities exp(s - rowmax) before they multiply v (a kernel that feeds them to a low-precision MMA); the row
    sums stay exact, as a flash-attention kernel accumulates them in fp32."""
    n = q.shape[2]
    scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(q.shape[-1]))
    scores += np.triu(np.full((n, n), -np.inf, np.float32), 1)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    total = scores.sum(axis=-1, keepdims=True)
    if p_round is None:
        scores /= total
        return scores @ v  # type: ignore[no-any-return]
    return (p_round(scores) @ v) / total  # type: ignore[no-any-return]


def _mlp(w: Weights, i: int, x: np.ndarray, act: Act = None) -> np.ndarray:
    p = f"blk.{i}."
    gate = _mm(act, x, w, p + "ffn_gate.weight")
    up = _mm(act, x, w, p + "ffn_up.weight")
    return _mm(act, (gate / (1 + np.exp(-gate))) * up, w, p + "ffn_down.weight")


def hidden_states(cfg: LlamaConfig, w: Weights, tokens: np.ndarray, act: Act = None) -> np.ndarray:
    """tokens [batch, n] -> the final-normed hidden states [batch, n, n_embd] (causal, one window each);
    `act` rounds the input of every weight matmul (not attention's own q.k and p.v, which use no weights)."""
    x = w["token_embd.weight"][tokens]
    cos, sin = _rope_tables(cfg, tokens.shape[1])
    for i in range(cfg.n_layers):
        p = f"blk.{i}."
        x = x + _attention(cfg, w, i, _rms_norm(x, w[p + "attn_norm.weight"], cfg.rms_eps), cos, sin, act)
        x = x + _mlp(w, i, _rms_norm(x, w[p + "ffn_norm.weight"], cfg.rms_eps), act)
    return _rms_norm(x, w["output_norm.weight"], cfg.rms_eps)


def log_probs(w: Weights, hidden: np.ndarray, act: Act = None) -> np.ndarray:
    """Log-softmax over the vocabulary (the output matrix, or token_embd when tied), float64 sums."""
    logits = _mm(act, hidden, w, "output.weight" if "output.weight" in w else "token_embd.weight").astype(np.float64)
    logits -= logits.max(axis=-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
