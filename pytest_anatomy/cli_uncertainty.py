"""The uncertainty printed beside each `predict latency` answer: how far that kind of prediction has
landed from measurements, as the validation table states it (report/validation.py, written by
`pytest-anatomy report` beside README's block from the reconciliations of every suite).

Per answer, the table's metrics that reconcile the same kind of prediction, preferred in order:
the card's own recorded sessions first (ours, the seed's), then third-party measurements on the same
card; a card with neither gets the third-party rows of the other cards the same transfer rule
predicted, and says so. The number is the median |measured / predicted - 1| with its p90: an error
already observed, not a confidence interval."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# answer -> the validation table's metrics that reconcile the same kind of prediction, preferred first
METRICS: dict[str, tuple[str, ...]] = {
    "itl_ms": ("decode_step", "itl_median", "tpot_mean"),
    "prefill_ms": ("prefill",),
    "ttft_ms": ("ttft_p50", "ttft_mean"),
    "throughput_tok_s": ("output_throughput",),
    # `plan`'s simulated metrics (cli_plan.py); a tail (p99) has no reconciliation of its own yet
    "ttft_p50_s": ("ttft_p50", "ttft_mean"),
    "ttft_p99_s": (),
    "itl_p50_s": ("itl_median", "decode_step"),
    "itl_p99_s": (),
    "output_throughput": ("output_throughput",),
}


@dataclass(frozen=True)
class ReconciledError:
    median: float
    p90: float
    count: int
    metric: str
    source: str
    gpu: str
    same_card: bool

    def short(self) -> str:
        return f"±{self.median * 100:.2g}% (p90 {self.p90 * 100:.2g}%)"

    def describe(self) -> str:
        where = "" if self.same_card else " (no reconciliation of this kind on this card; the transfer's error there)"
        return (f"±{self.median:.1%} median |measured/predicted - 1|, p90 {self.p90:.1%}, over {self.count} "
                f"{self.metric} reconciliations of {self.source} on {self.gpu}{where}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def reconciled_error(answer: str, hardware: str) -> ReconciledError | None:
    """The error of `answer`'s kind of prediction on `hardware`, or on the cards the transfer reached
    when `hardware` has none; None when the table holds no such reconciliation at all."""
    from pytest_anatomy.report import validation

    table = validation.load_json()
    own = set(validation.OWN.values())
    for metric in METRICS.get(answer, ()):
        same = [r for r in table if r.gpu == hardware and r.metric == metric]
        if same:
            best = max(same, key=lambda r: (r.source in own, r.count))
            return ReconciledError(best.median_abs_error, best.p90_abs_error, best.count, metric, best.source,
                                   best.gpu, True)
    for metric in METRICS.get(answer, ()):
        transferred = [r for r in table if r.metric == metric and r.source not in own]
        if transferred:
            best = max(transferred, key=lambda r: r.count)
            return ReconciledError(best.median_abs_error, best.p90_abs_error, best.count, metric, best.source,
                                   best.gpu, False)
    return None
