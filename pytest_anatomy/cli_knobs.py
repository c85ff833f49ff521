"""`predict latency`'s deployment knobs: --prefix-cached-tokens N and --speculative ngram:k=K[,acceptance=A].

--prefix-cached-tokens N: the first N tokens of every prompt are in vLLM's prefix cache; the hit is
  block-granular and never the last token (theory/prefix_cache.py). prefill_ms and ttft_ms become
  those of the uncached tail; with --rate every simulated request hits (a warm cache).
--speculative ngram:k=K[,acceptance=A]: n-gram speculation with K drafted tokens. The verify step is
  priced by the roofline at batch x (K + 1) tokens (theory/speculative.py); per-token ITL and the
  speedup need the acceptance A (the probability a drafted token is accepted, per position), which
  the theory does not predict: without it only the verify step is answered. vLLM trims drafts to the
  step's max_num_batched_tokens: K + 1 above it is refused, B x (K + 1) above it answered with a warning.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace
from typing import Any

from pytest_anatomy.theory.prediction import Prediction, Term


@dataclass(frozen=True)
class Speculation:
    method: str
    k: int
    acceptance: float | None


def parse_speculative(text: str) -> Speculation:
    """ngram:k=K[,acceptance=A] with K >= 1 and A in [0, 1]."""
    method, _, rest = text.partition(":")
    if method != "ngram":
        raise argparse.ArgumentTypeError(f"method {method!r} is not modelled; use ngram:k=K[,acceptance=A]")
    fields: dict[str, str] = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq or key not in ("k", "acceptance"):
            raise argparse.ArgumentTypeError(f"{part!r} is not k=K or acceptance=A (ngram:k=4,acceptance=0.6)")
        if key in fields:  # the last one silently won: ngram:k=4,k=5 answered k=5
            raise argparse.ArgumentTypeError(f"{key} is given twice in {text!r}; give each of k and acceptance once")
        fields[key] = value
    try:
        k = int(fields["k"])
        acceptance = float(fields["acceptance"]) if "acceptance" in fields else None
    except KeyError:
        raise argparse.ArgumentTypeError("needs k=K, the drafted tokens per step (ngram:k=4)") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"k must be an integer and acceptance a number, got {text!r}") from None
    if k < 1 or (acceptance is not None and not (math.isfinite(acceptance) and 0 <= acceptance <= 1)):
        raise argparse.ArgumentTypeError(f"needs k >= 1 and acceptance in [0, 1], got {text!r}")
    return Speculation(method, k, acceptance)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Could not parse value: {text!r} (expected int)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prefix-cached-tokens", type=_non_negative, default=0, metavar="N",
                   help="prompt tokens already in the prefix cache (whole blocks hit, never the last token) (0)")
    p.add_argument("--speculative", type=parse_speculative, default=None, metavar="ngram:k=K[,acceptance=A]",
                   help="n-gram speculative decoding: the verify step; per-token ITL and speedup need acceptance=A")


def hit(args: argparse.Namespace, block_size: int) -> int:
    from pytest_anatomy.theory.prefix_cache import hit_tokens

    return hit_tokens(args.input_len, args.prefix_cached_tokens, block_size) if args.prefix_cached_tokens else 0


def apply(args: argparse.Namespace, model: Any, settings: Any, ceilings: Any, calib: Any,
          out: dict[str, Prediction]) -> dict[str, Prediction]:
    """The answers with the knobs applied (the simulated --rate answers already carry the hit)."""
    out = dict(out)
    h = hit(args, settings.block_size)
    if args.prefix_cached_tokens:
        out.update(_prefix_answers(args, model, settings, ceilings, calib, h, out))
    if args.speculative is not None:
        out.update(_spec_answers(args, model, settings, ceilings, calib))
    return out


def _prefix_answers(args: argparse.Namespace, model: Any, settings: Any, ceilings: Any, calib: Any, h: int,
                    out: dict[str, Prediction]) -> dict[str, Prediction]:
    from pytest_anatomy.theory import latency as lat
    from pytest_anatomy.theory.prefix_cache import cached_prefill_time

    budget, b = settings.max_num_batched_tokens, args.batch
    prefill = cached_prefill_time(model, ceilings, calib, args.input_len, args.prefix_cached_tokens, budget,
                                  settings.block_size)
    new: dict[str, Prediction] = {
        "prefix_hit_tokens": Prediction(h, "tokens", "block_size x floor(min(N, L - 1) / block_size)",
                                        {"N": args.prefix_cached_tokens, "L": args.input_len,
                                         "block_size": settings.block_size}),
        "prefill_ms": replace(prefill, value=prefill.value * 1e3, unit="ms")}
    if args.rate is None and b > 1:  # a new prompt's tail joins B - 1 running decodes, chunk by chunk
        room = max(1, budget - (b - 1))
        steps = math.ceil((args.input_len - h) / room)
        ctx = args.input_len + args.output_len / 2
        chunk = lat.mixed_step_time(model, ceilings, calib, b - 1, ctx, min(args.input_len - h, room), h)
        new["ttft_ms"] = Prediction(
            chunk.value * steps * 1e3, "ms", "steps of the uncached tail x a step carrying a chunk and B - 1 decodes",
            {"batch": b, "hit": h}, terms=(Term("steps per prompt", steps, "steps"),
                                          Term("chunk step", chunk.value, "s")),
            notes=("prefix cache: the tail attends to the hit tokens as its past",))
    elif args.rate is None:
        new["ttft_ms"] = replace(new["prefill_ms"], notes=new["prefill_ms"].notes + ("a lone request: TTFT = prefill",))
    return new


def _spec_answers(args: argparse.Namespace, model: Any, settings: Any, ceilings: Any,
                  calib: Any) -> dict[str, Prediction]:
    from pytest_anatomy.theory import speculative as sp

    s: Speculation = args.speculative
    sizes = sp.spec_default_capture_sizes(settings.max_num_seqs, settings.max_num_batched_tokens, s.k) \
        if settings.cudagraphs else ()
    e = 1.0 if s.acceptance is None else sp.expected_tokens(s.acceptance, s.k)
    step = sp.verify_step(model, ceilings, calib, args.batch, args.input_len + args.output_len / 2, s.k, e, sizes)
    new = {"spec_verify_step_ms": replace(step.verify, value=step.verify.value * 1e3, unit="ms")}
    if args.rate is not None:
        new["spec_verify_step_ms"] = replace(new["spec_verify_step_ms"], notes=new["spec_verify_step_ms"].notes + (
            "at --batch; the --rate simulation above does not speculate (plan does, with --spec-acceptance)",))
    if s.acceptance is None:
        return new
    given = f"acceptance {s.acceptance:g} given (not predicted: it is a property of the text)"
    new["spec_tokens_per_step"] = Prediction(e, "tokens", "(1 - a^(k + 1)) / (1 - a)", {"a": s.acceptance, "k": s.k},
                                             notes=(given,))
    new["spec_itl_ms"] = replace(step.per_token, value=step.per_token.value * 1e3, unit="ms",
                                 notes=(given, *step.per_token.notes[1:]))
    new["spec_speedup"] = replace(step.speedup, notes=(given,))
    return new
