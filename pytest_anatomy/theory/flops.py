"""FLOPs of a transformer forward pass, per token and per engine step: pure functions of a ModelSpec.

Conventions (one multiply-add = 2 FLOP; the seed study's, STUDY.md claim 5):

- matmul ("trunk"): 2 x the linear weights every token multiplies by, lm_head excluded.
  Qwen2.5-7B: 2 x 6.525e9 = 13.05 GFLOP/token. MoE: only the k routed experts a token uses.
- lm_head: 2 x vocab x hidden, and only at positions whose logits are needed (every decode
  token; the last token of a prefill). Qwen2.5-7B: 1.09 GFLOP.
- attention core (QK^T and PV, the part that grows with context): per query token, per
  context token, per layer 2 x heads x (head_dim + v_head_dim). Qwen2.5-7B: 401,408 x T per
  decode token at context T; a causal prefill of S tokens sums that over positions 1..S,
  S(S+1)/2 ~ S^2/2, i.e. 200,704 x S^2 (the seed's coefficient).
Sliding-window layers see at most `window` keys. Norms, rope, activations and softmax
are O(hidden) per token and left out (< 0.1% of the matmul FLOPs for 7B models).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.capacity import NotModeled
from pytest_anatomy.theory.prediction import Prediction, Term


def lm_head_parameters(model: ModelSpec) -> int:
    """vocab x hidden: the lm_head matmul (the embedding matrix itself when tied)."""
    return model.vocab_size * model.hidden_size


def trunk_matmul_flops_per_token(model: ModelSpec) -> Prediction:
    """2 x (matmul parameters a token multiplies by - lm_head): 13.05 GFLOP for Qwen2.5-7B."""
    active = model.matmul_parameters(active_only=True)
    trunk = active - lm_head_parameters(model)
    notes = ("MoE: k-of-E routed experts counted (active_only)",) if model.is_moe else ()
    return Prediction(
        2.0 * trunk, "FLOP", "2 x (matmul_parameters(active) - vocab x hidden)",
        {"matmul_parameters": active, "lm_head_parameters": lm_head_parameters(model)},
        terms=(Term("trunk matmul parameters", trunk, "params"),), notes=notes)


def lm_head_flops_per_token(model: ModelSpec) -> Prediction:
    """2 x vocab x hidden, paid only where logits are needed: 1.09 GFLOP for Qwen2.5-7B."""
    n = lm_head_parameters(model)
    return Prediction(2.0 * n, "FLOP", "2 x vocab x hidden",
                      {"vocab_size": model.vocab_size, "hidden_size": model.hidden_size},
                      terms=(Term("lm_head parameters", n, "params"),))


def attention_flops_coefficient(model: ModelSpec) -> float:
    """FLOP per (query token, context token) summed over full-attention layers:
    2 x heads x (head_dim + v_head_dim) x layers = 401,408 for Qwen2.5-7B."""
    if model.is_mla:
        raise NotModeled(f"{model.name}: MLA attention FLOPs (latent-space QK and absorbed V) are not "
                         "modeled yet; use a GQA/MHA model or add the MLA formula to theory/flops.py")
    per_layer = 2 * model.num_attention_heads * (model.head_dim + model.v_head_dim)
    return float(per_layer * model.num_layers)


def attention_flops_per_layer(model: ModelSpec) -> float:
    """FLOP per (query token, context token) in one full-attention layer: 12,544 for Qwen2.5-7B."""
    return attention_flops_coefficient(model) / model.num_layers


def visible_keys(past: int, new: int, window: int | None) -> float:
    """Sum over the `new` query positions past+1..past+new of the keys each one attends to
    (causal; at most `window` keys on a sliding-window layer)."""
    if new <= 0:
        return 0.0
    if window is None:
        return new * past + new * (new + 1) / 2
    # Positions p = past+1..past+new see min(p, window) keys.
    lo, hi = past + 1, past + new
    full = max(0, hi - max(lo, window + 1) + 1)  # positions at or beyond the window
    partial_hi = min(hi, window)
    partial = (lo + partial_hi) * (partial_hi - lo + 1) / 2 if partial_hi >= lo else 0.0
    return partial + full * window


_visible = visible_keys  # the earlier private name, still used by tests_plugin


def attention_flops(model: ModelSpec, new_tokens: int, past_tokens: int = 0) -> float:
    """Attention-core FLOPs for `new_tokens` query tokens appended causally after
    `past_tokens` cached ones (decode: new_tokens=1, past=T-1; prefill chunk: new=chunk)."""
    if new_tokens < 0 or past_tokens < 0:
        raise ValueError(f"token counts must be >= 0, got new={new_tokens!r} past={past_tokens!r}")
    coef = attention_flops_per_layer(model)
    return coef * sum(visible_keys(past_tokens, new_tokens, la.window) for la in model.layer_attention)


def decode_attention_flops(model: ModelSpec, context: int) -> Prediction:
    """One decode token at context T (the new token included): 401,408 x T for Qwen2.5-7B."""
    value = attention_flops(model, 1, context - 1)
    coef = attention_flops_coefficient(model)
    return Prediction(value, "FLOP", "2 x heads x (head_dim + v_head_dim) x layers x T",
                      {"context": context}, terms=(Term("coefficient", coef, "FLOP/token^2"),
                                                   Term("T", context, "tokens")))


def prefill_attention_flops(model: ModelSpec, tokens: int) -> Prediction:
    """A causal prefill of S tokens: coefficient x S(S+1)/2, i.e. ~200,704 x S^2 for Qwen2.5-7B."""
    value = attention_flops(model, tokens, 0)
    half = attention_flops_coefficient(model) / 2
    return Prediction(value, "FLOP", "2 x heads x (head_dim + v_head_dim) x layers x S(S+1)/2",
                      {"tokens": tokens}, terms=(Term("causal coefficient", half, "FLOP/token^2",
                                                      "x S^2 is the seed's form"),
                                                 Term("S", tokens, "tokens")),
                      notes=("exact causal sum S(S+1)/2; the S^2/2 form differs by 1/S",))


@dataclass(frozen=True)
class StepWork:
    """What one engine step computes: decode sequences and prefill chunks.

    decode_tokens      -- sequences that generate one token this step
    decode_context_sum -- sum over those sequences of their context after this token
    prefill            -- (chunk tokens, tokens already cached before the chunk) per chunk
    logits             -- positions whose logits are computed (decodes + chunks that end a
                          prompt; vLLM computes one logits row per scheduled request)
    """

    decode_tokens: int = 0
    decode_context_sum: float = 0.0
    prefill: tuple[tuple[int, int], ...] = ()
    logits: int | None = None

    @property
    def new_tokens(self) -> int:
        return self.decode_tokens + sum(n for n, _ in self.prefill)

    @property
    def logits_rows(self) -> int:
        return self.logits if self.logits is not None else self.decode_tokens + len(self.prefill)


def step_flops(model: ModelSpec, work: StepWork) -> Prediction:
    """FLOPs of one step: trunk x new tokens + lm_head x logits rows + attention."""
    trunk = trunk_matmul_flops_per_token(model).value * work.new_tokens
    head = lm_head_flops_per_token(model).value * work.logits_rows
    # Decode: full layers see each sequence's whole context (exact from the sum); a sliding
    # layer sees min(context, window), taken at the mean context of the batch.
    mean = work.decode_context_sum / work.decode_tokens if work.decode_tokens else 0.0
    per_layer = attention_flops_per_layer(model)
    attn_decode = per_layer * sum(work.decode_context_sum if la.window is None
                                  else work.decode_tokens * min(mean, la.window)
                                  for la in model.layer_attention)
    attn_prefill = sum(attention_flops(model, n, past) for n, past in work.prefill)
    return Prediction(
        trunk + head + attn_decode + attn_prefill, "FLOP",
        "trunk x new tokens + lm_head x logits rows + attention(decode) + attention(prefill)",
        {"new_tokens": work.new_tokens, "logits_rows": work.logits_rows},
        terms=(Term("trunk matmuls", trunk, "FLOP"), Term("lm_head", head, "FLOP"),
               Term("attention, decode", attn_decode, "FLOP"), Term("attention, prefill", attn_prefill, "FLOP")))


def flops_per_output_token(model: ModelSpec, input_len: int, output_len: int,
                           *, decode_steps: int | None = None) -> Prediction:
    """Whole-request FLOPs / output tokens for an input_len/output_len request.

    Physically a request runs one prefill (input_len tokens, logits at the last) and
    output_len - 1 decode steps. `decode_steps=output_len` reproduces the seed's 67.63 GFLOP
    for 1024/256 (claim 5), which counts one decode step more (+0.08%)."""
    if input_len < 1 or output_len < 1:
        raise ValueError(f"need input_len >= 1 and output_len >= 1, got {input_len!r}/{output_len!r}")
    steps = output_len - 1 if decode_steps is None else decode_steps
    trunk = trunk_matmul_flops_per_token(model).value
    head = lm_head_flops_per_token(model).value
    prefill = input_len * trunk + head + attention_flops(model, input_len, 0)
    decode = steps * (trunk + head) + sum(attention_flops(model, 1, input_len + t) for t in range(steps))
    return Prediction(
        (prefill + decode) / output_len, "FLOP",
        "(prefill(L) + sum over decode steps of (trunk + lm_head + attention(T))) / O",
        {"input_len": input_len, "output_len": output_len, "decode_steps": steps},
        terms=(Term("prefill", prefill, "FLOP"), Term("decode", decode, "FLOP")))
