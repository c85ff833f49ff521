"""Speculative decoding (vLLM V1, n-gram proposer): tokens per verify step and what a step costs.

A verify step runs each of B sequences on its last token plus gamma drafted tokens (B x (gamma + 1)
query tokens, one weight read), and keeps the longest accepted run of drafts plus one token of its
own. With an acceptance probability alpha per drafted token, independent by position, the expected
tokens per sequence per step are (Leviathan et al. 2023, eq. 1)

    E = 1 + alpha + ... + alpha^gamma = (1 - alpha^(gamma + 1)) / (1 - alpha)

The engine's counters give E without alpha: accepted_per_position[i] / drafts is the share of
drafts whose first i + 1 tokens were all accepted, so E = 1 + sum_i accepted_per_position[i] / drafts.

Acceptance is a property of the text, and dummy weights produce degenerate text (repetitions an
n-gram matcher predicts far better than real text): a prediction here takes the measured acceptance
as an input and says so; it predicts the step cost, never the acceptance.

CUDA graphs: with speculation, vLLM rounds the capture sizes to multiples of gamma + 1
(CompilationConfig.adjust_cudagraph_sizes_for_spec_decode, vllm PR #28315, docs/FACTS.md D3) so that a uniform
verify batch of B x (gamma + 1) tokens pads to the next captured size; above the largest one the
step runs without a full graph, and its overhead is no longer the graph-replay overhead the
calibration was fitted on (said in the notes, not modelled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.flops import StepWork, trunk_matmul_flops_per_token
from pytest_anatomy.theory.latency import Ceilings, EngineCalibration, decode_step_time, step_time
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.vllm_settings import default_capture_sizes


def expected_tokens(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma + 1)) / (1 - alpha); gamma + 1 when every draft is accepted."""
    if not 0 <= alpha <= 1 or gamma < 0:
        raise ValueError(f"need 0 <= alpha <= 1 and gamma >= 0, got alpha={alpha!r} gamma={gamma!r}")
    if alpha == 1:
        return float(gamma + 1)
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def tokens_from_counters(drafts: int, accepted_per_position: tuple[int, ...]) -> float:
    """E from the engine's counters: 1 + sum over positions of accepted / drafts.
    No recording can see a 5% error in E: every recorded n-gram run measures E at 4.77-4.91 with k = 4, so E x1.05
    passes k + 1 = 5, which the step model refuses (it raises: no prediction to diverge); theory mutation
    deployment-spec-tokens-per-step-x1.05 survives, and test_knob_theory.py holds the arithmetic."""
    if drafts < 1:
        raise ValueError(f"no drafts counted ({drafts!r}): acceptance was not measured")
    if any(b > a for a, b in zip(accepted_per_position, accepted_per_position[1:])) or \
            any(a < 0 or a > drafts for a in accepted_per_position):
        raise ValueError(f"accepted per position must be non-increasing within [0, drafts={drafts}], "
                         f"got {accepted_per_position!r}")
    return 1 + sum(accepted_per_position) / drafts


def alpha_for_tokens(tokens: float, gamma: int) -> float:
    """The alpha at which expected_tokens(alpha, gamma) == tokens (bisection; E rises with alpha)."""
    if not 1 <= tokens <= gamma + 1:
        raise ValueError(f"tokens per step must be in [1, gamma + 1 = {gamma + 1}], got {tokens!r}")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_tokens(mid, gamma) < tokens else (lo, mid)
    return (lo + hi) / 2


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def spec_capture_sizes(capture_sizes: tuple[int, ...], gamma: int) -> tuple[int, ...]:
    """The capture sizes rounded up to multiples of gamma + 1, those still within the largest size
    (CompilationConfig.adjust_cudagraph_sizes_for_spec_decode)."""
    if not capture_sizes:
        return ()
    q, top = gamma + 1, max(capture_sizes)
    return tuple(sorted({round_up(s, q) for s in capture_sizes if round_up(s, q) <= top}))


def spec_default_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, gamma: int) -> tuple[int, ...]:
    """vLLM's default list when speculating: sized for max_num_seqs x (gamma + 1) query tokens
    (VllmConfig._set_cudagraph_sizes scales its max_num_seqs x 2 cap by the decode query length),
    then rounded to multiples of gamma + 1. Read in vLLM's source; the device plan records the
    engine's own list, which checks this."""
    return spec_capture_sizes(default_capture_sizes(max_num_seqs * (gamma + 1), max_num_batched_tokens), gamma)


def padded_tokens(tokens: int, capture_sizes: tuple[int, ...]) -> tuple[int, bool]:
    """(tokens the step runs, whether a captured graph serves it): the next captured size, or the
    tokens themselves outside every graph."""
    for size in sorted(capture_sizes):
        if size >= tokens:
            return size, True
    return tokens, False


@dataclass(frozen=True)
class SpecStep:
    verify: Prediction  # one verify step of the batch
    per_token: Prediction  # verify / E: the mean time between a sequence's output tokens
    speedup: Prediction  # E x t_decode / t_verify against plain decoding at the same batch


def verify_step(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, batch: int, context: float,
                gamma: int, tokens_per_step: float, capture_sizes: tuple[int, ...] = ()) -> SpecStep:
    """A verify step of `batch` sequences at mean `context`, each checking gamma drafts, priced by the
    roofline at B x (gamma + 1) query tokens (padded to the captured graph size: the padding adds
    matmul FLOPs, no weight bytes), with every position's logits; `tokens_per_step` is the measured
    E (tokens_from_counters) or expected_tokens(alpha, gamma) for an assumed alpha. capture_sizes: the
    engine's list while speculating (spec_default_capture_sizes); () = no graphs."""
    if batch < 1 or gamma < 1 or not 1 <= tokens_per_step <= gamma + 1:
        raise ValueError(f"need batch >= 1, gamma >= 1, 1 <= tokens_per_step <= gamma + 1; got {batch!r}, "
                         f"{gamma!r}, {tokens_per_step!r}")
    q = gamma + 1
    # context counts the step's new token, as decode_step_time's does: context - 1 tokens are cached
    work = StepWork(prefill=tuple((q, max(0, math.ceil(context) - 1)) for _ in range(batch)), logits=batch * q)
    real = step_time(model, ceilings, calib, work)
    runs, captured = padded_tokens(batch * q, capture_sizes)
    memory_s = next(t.value for t in real.terms if t.name == "bytes / BW")
    # the step's FLOPs at the padded size's efficiency (StepModel.seconds(..., pad_tokens) alike)
    eta = calib.eta_at(runs)
    compute_s = next(t.value for t in real.terms if t.name == "FLOPs / (eta x peak)") * calib.eta_at(batch * q) / eta
    pad_s = (runs - batch * q) * trunk_matmul_flops_per_token(model).value / (eta * ceilings.peak)
    t = max(memory_s, compute_s + pad_s) + calib.step_overhead_s
    graph_note = (f"{batch * q} query tokens run as a captured graph of {runs}" if captured else
                  f"{batch * q} query tokens exceed every captured size (largest {max(capture_sizes, default=0)}): no full "
                  "graph; the eager overhead is not modelled, the calibration's graph overhead is used")
    verify = Prediction(
        t, "s", "max(bytes / BW, (FLOPs + padding FLOPs) / (eta x peak)) + t_overhead at B x (gamma + 1) tokens",
        {"batch": batch, "gamma": gamma, "context": context, "calibration": calib.name},
        terms=(Term("query tokens", batch * q, "tokens"), Term("padded to", runs, "tokens"),
               Term("bytes / BW", memory_s, "s"), Term("FLOPs / (eta x peak)", compute_s, "s"),
               Term("padding FLOPs / (eta x peak)", pad_s, "s"), Term("t_overhead", calib.step_overhead_s, "s")),
        notes=(graph_note, "n-gram drafting runs on the CPU between steps: not modelled", calib.describe()))
    source = "E measured from the engine's counters (dummy weights: acceptance is not predicted)"
    per_token = Prediction(t / tokens_per_step, "s", "t_verify / E", {"E": tokens_per_step},
                           terms=(Term("t_verify", t, "s"), Term("E tokens per step", tokens_per_step, "tokens")),
                           notes=(source, *verify.notes))
    plain = decode_step_time(model, ceilings, calib, batch, context).value
    speedup = Prediction(tokens_per_step * plain / t, "x", "E x t_decode(B) / t_verify(B, gamma)",
                         {"E": tokens_per_step, "batch": batch},
                         terms=(Term("t_decode", plain, "s"), Term("t_verify", t, "s")), notes=(source,))
    return SpecStep(verify, per_token, speedup)
