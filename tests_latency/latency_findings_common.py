"""What every module of the latency suite's findings shares (latency_findings is their facade): the card the
findings were measured on, the two models, the other session the decode bands come from and its noise, how a band
is carried over from other runs than the one checked (Carried, StepCarried), and the wording helpers the reasons
spell counts and lists with.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


MEASURED_ON = "h200"
# The cards each finding's band is applied on. The bands were written on the H200 and held unchanged against
# the first H100 session (results/h100-sxm/live-runs/20261202T182700Z.full.json), as pre-registered in
# docs/RECORDING.md ("The first H100 visit"): the same GH100 die, clocks and vLLM, so a mechanism of the die or
# the software should give the same ratio. Where the H100's ratio fell outside a band, that finding keeps
# MEASURED_ON alone and the H100's miss has its own finding (latency_h100_findings).
H100 = "h100-sxm"  # the second card recorded (2026-12-02)
CHECKED_ON = (MEASURED_ON, H100)
QWEN, LLAMA = "qwen2.5-7b", "llama-3.1-8b"

# A count as the reasons spell it ("four sessions").
_COUNT = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int) -> str:
    return _COUNT[n] if n < len(_COUNT) else f"{n:,}"


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


def _days(stamps: tuple[str, ...]) -> str:
    """The days of `stamps` (oldest first) as a reason names them: "2026-12-01" or "2026-12-01 to 2026-12-02"."""
    first, last = stamps[0][:10], stamps[-1][:10]
    return first if first == last else f"{first} to {last}"


def _and(items: list[str]) -> str:
    """["a", "b", "c"] -> "a, b and c"."""
    return " and ".join(filter(None, (", ".join(items[:-1]), items[-1]))) if items else ""


# The session the decode bands were measured in, per model (its b=1 recording's stamp).
OTHER_SESSION = {"qwen2.5-7b": "2026-11-30T00:37:45Z", "llama-3.1-8b": "2026-11-30T02:02:39Z"}
# Two runs' noise budgets (each <= 1.25% for a decode step: repeat scatter, ceiling and calibration spread).
OTHER_SESSION_NOISE = 0.025


def envelope(ratios: Iterable[float], budget: float) -> tuple[float, float]:
    """Other runs' lowest and highest ratio, widened by `budget` (the checked run's relative noise budget)."""
    values = list(ratios)
    return (round(min(values) * (1 - budget), 4), round(max(values) * (1 + budget), 4))


def runs_band(ends: Iterable[tuple[float, float]], own: float) -> tuple[float, float]:
    """Other runs' (ratio, budget) pairs, each widened by its own budget plus the checked run's `own`. A ratio of two
    times is never negative: a lower edge below 0 (budgets summing past 1, as the 2026-12-07 17:25 session's 512-token
    prefill's 0.61 does, its GEMM timings scattering by up to 51%) is 0, which holds no ratio the edge did not."""
    pairs = list(ends)
    return (max(0.0, round(min(r * (1 - b - own) for r, b in pairs), 4)),
            round(max(r * (1 + b + own) for r, b in pairs), 4))


def claims(request: Any, finding_id: str, card: str) -> bool:
    """Whether the checked test carries `finding_id`'s mark claiming `card` (a band set at test time is computed
    only where its finding applies)."""
    return any(m.args[0] == finding_id and m.kwargs.get("hardware") == card
               for m in request.node.iter_markers("finding"))


def other_session_band(ratio: float) -> tuple[float, float]:
    return (round(ratio * (1 - OTHER_SESSION_NOISE), 4), round(ratio * (1 + OTHER_SESSION_NOISE), 4))


@dataclass(frozen=True)
class Carried:
    """The earlier sessions' (ratio, repeat scatter) of one quantity, eta fitted on the 8,192 prefill. The run
    checked brings its own repeat scatter and calibration shift (its prediction with that recipe / with its own),
    both computed at test time: band() puts the earlier runs in the checked run's frame."""
    earlier: tuple[tuple[float, float], ...]  # (ratio, scatter) of each earlier run, oldest first

    def band(self, scatter: float, shift: float) -> tuple[float, float]:
        lo = min(r * (1 - e - scatter) for r, e in self.earlier) * shift
        hi = max(r * (1 + e + scatter) for r, e in self.earlier) * shift
        return (round(lo, 4), round(hi, 4))

    def describe(self) -> str:
        return (f" Band carried from the earlier sessions ({', '.join(f'{r:.3f}' for r, _ in self.earlier)}, eta fitted "
                "on the 8,192 prefill) x the shift the theory computes for the run checked when its eta comes from "
                "GEMM timings (1 without them), +- both runs' repeat scatter: set at test time.")


@dataclass(frozen=True)
class StepCarried:
    """A band from one run of the same session as the run checked (its isolated decode step): that step's (ratio,
    budget) and the checked run's own budget, all recorded; test_closed_itl_bands_are_the_decode_steps recomputes
    them."""
    earlier: tuple[tuple[float, float], ...]
    newest_scatter: float

    def band(self) -> tuple[float, float]:
        return Carried(self.earlier).band(self.newest_scatter, 1.0)
