"""How fast a load run's engine ran its prompt-carrying steps: a validity check for open-loop (Poisson) runs.

Why: on 2026-12-02 07:14 the Qwen2.5-7B Poisson run at 0.8x the C=64 rate ran every step that carried a
1,024-token prompt ~9 ms longer than the same session's other Poisson runs (36.1 ms for the two engine-step
intervals around such a step against 26.4-31.6 ms), from 0.8 s into the run to its end, while its decode-only
steps ran at the usual pace for their batch (5.64 vs 5.68 ms at 32-39 sequences). Only compute-bound work slowed:
the run's TTFT and mean ITL, which prompt steps drive, missed their findings' bands; its median ITL did not.
A run is judged against its own session's other runs at other rates (same engine, same minutes), never against
the theory, so the check cannot absorb a theory error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_anatomy.stats import percentile

# A run's lone-prompt pace over its session's reference pace above which the run is flagged. Set after the miss it
# explains, on the six H200 sessions with a 0.8x Poisson run (2026-11-30 to 2026-12-02 07:14, five rates each): the
# 29 runs it passes sit at 0.82-1.18x their session's other runs (the highest, 1.18, a 1.3x run with only 10 lone
# prompts), the flagged 07:14 0.8x run at 1.32x (test_latency_prompt_pace.py recomputes both). The sessions after
# 07:14 are its held-out test: the first, the 14:18 full session, flagged its 1.3x run (1.23x on 7 lone prompts; its
# other runs 0.94-1.02x), where 1.3x runs sit highest (1.03-1.18 in the six sessions above), so the margin at 1.3x
# is thin.
SLOW_PROMPT_STEPS = 1.2


@dataclass(frozen=True)
class PromptPace:
    """The lone-prompt steps of one run: `pairs` steps that carry exactly one prompt (and decodes) between
    decode-only steps, `median_s` the median of the two engine-step intervals around each (the engine's clock
    ticks a step late under async scheduling, so the prompt's time is split over two intervals), and
    `decode_s` the run's median decode-only interval."""

    pairs: int
    median_s: float
    decode_s: float

    def prompt_part_s(self) -> float:
        """The pair's time beyond two decode-only steps: the prompt's own compute."""
        return self.median_s - 2 * self.decode_s


def prompt_pace(timeline: Mapping[str, Sequence[Any]], prompt_tokens: int) -> PromptPace | None:
    """PromptPace of a recorded run's step timeline (its "engine_t" clock where kept, else "t"; "ctx_tokens" per
    step). None when the run has fewer than 5 lone-prompt steps: too few for a median worth judging."""
    clock = timeline.get("engine_t") or []
    t = clock if clock and clock[0] is not None else timeline.get("t") or []
    ctx = timeline.get("ctx_tokens") or []
    n = min(len(t), len(ctx))
    pairs = [t[i] - t[i - 2] for i in range(2, n - 1)
             if ctx[i] == prompt_tokens and ctx[i - 2] == ctx[i - 1] == ctx[i + 1] == 0]
    decode = [t[i] - t[i - 1] for i in range(2, n - 1) if ctx[i - 1] == ctx[i] == ctx[i + 1] == 0]
    if len(pairs) < 5 or not decode:
        return None
    return PromptPace(len(pairs), percentile(pairs, 50), percentile(decode, 50))


@dataclass(frozen=True)
class PromptPaceCheck:
    """One run's pace against its session's reference (the median pace of the session's other runs)."""

    run: PromptPace
    reference_s: float
    threshold: float = SLOW_PROMPT_STEPS

    @property
    def ratio(self) -> float:
        return self.run.median_s / self.reference_s

    @property
    def flagged(self) -> bool:
        return self.ratio > self.threshold

    def compute_slowdown(self) -> float:
        """How much longer the run's prompts took than the reference's, their compute part only (each pace less
        two decode-only steps of this run): the factor a simulation divides eta by to run prompts at this pace."""
        return (self.run.median_s - 2 * self.run.decode_s) / (self.reference_s - 2 * self.run.decode_s)

    def describe(self) -> str:
        verdict = f"flagged (> {self.threshold} x)" if self.flagged else "clean"
        return (f"prompt-step pace {verdict}: {self.run.pairs} lone-prompt steps, median {self.run.median_s * 1e3:.1f} ms "
                f"vs {self.reference_s * 1e3:.1f} ms in the session's other runs ({self.ratio:.2f}x); decode-only "
                f"steps {self.run.decode_s * 1e3:.2f} ms")


def check_against_session(run: PromptPace | None, others: Sequence[PromptPace | None]) -> PromptPaceCheck | None:
    """The run judged against the median of its session's other runs' paces; None without a pace on either side."""
    paces = [o.median_s for o in others if o is not None]
    if run is None or not paces:
        return None
    return PromptPaceCheck(run, percentile(paces, 50))


@dataclass(frozen=True)
class SessionPaceCheck:
    """A session's open-loop runs together against a reference compute part (a prompt's pace less two decode-only
    steps) recorded on other sessions of the same model, card type and prompt length: a session-wide slowdown, which
    check_against_session cannot see because every run of the session is slow alike."""

    parts_s: tuple[float, ...]
    reference_s: float
    threshold: float = SLOW_PROMPT_STEPS

    @property
    def median_s(self) -> float:
        return percentile(list(self.parts_s), 50)

    @property
    def ratio(self) -> float:
        return self.median_s / self.reference_s

    @property
    def flagged(self) -> bool:
        return self.ratio > self.threshold

    def slowdown_of(self, run: PromptPace) -> float:
        """The factor a simulation divides eta by to run this run's prompts at its own measured pace (never < 1)."""
        return max(1.0, run.prompt_part_s() / self.reference_s)

    def describe(self, run: PromptPace) -> str:
        verdict = f"flagged (> {self.threshold} x)" if self.flagged else "clean"
        return (f"session prompt pace {verdict}: the median compute part of its {len(self.parts_s)} runs' lone "
                f"prompts {self.median_s * 1e3:.1f} ms vs {self.reference_s * 1e3:.1f} ms recorded ({self.ratio:.2f}x); "
                f"this run's {run.prompt_part_s() * 1e3:.1f} ms on {run.pairs} lone-prompt steps "
                f"({self.slowdown_of(run):.2f}x)")


def check_session(paces: Sequence[PromptPace | None], reference_part_s: float) -> SessionPaceCheck | None:
    """The session's runs' compute parts against `reference_part_s`; None with fewer than 3 runs holding a pace."""
    parts = tuple(p.prompt_part_s() for p in paces if p is not None)
    return SessionPaceCheck(parts, reference_part_s) if len(parts) >= 3 else None
