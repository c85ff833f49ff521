"""The tuning ladder's measured metrics from one load run's request records (the device plan's, and
the replay's): the same names theory/deployment.py predicts.

ITL is per output token: a streamed chunk of k tokens after a gap d gives k gaps of d / k, so that
speculation (several tokens per step) and plain decoding are measured alike; goodput is
specs/workload_file.goodput over the run, the simulator's own definition."""

from __future__ import annotations

from typing import Sequence

from pytest_anatomy.measure.load_stats import RequestRecord
from pytest_anatomy.specs.workload_file import Slo, goodput
from pytest_anatomy.stats import percentile


def per_token_itls(record: RequestRecord) -> list[float]:
    """Each chunk after the first contributes its token count of gaps of (its gap / its tokens)."""
    t, k = record.chunk_times, record.chunk_tokens
    return [(t[i] - t[i - 1]) / k[i] for i in range(1, len(t)) for _ in range(k[i])]


def ladder_metrics(records: Sequence[RequestRecord], start: float, slo: Slo) -> dict[str, float | None]:
    """TTFT p50/p99, per-token ITL p50/p99, output tokens/s and goodput of the completed requests,
    the run's duration from `start` (its first send) to its last token."""
    good = [r for r in records if r.ok]
    if not good:
        return {k: None for k in ("ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "output_throughput",
                                  "goodput")}
    duration = max(r.chunk_times[-1] for r in good) - start
    ttft = [r.ttft or 0.0 for r in good]
    itl = [x for r in good for x in per_token_itls(r)]
    return {"ttft_p50_s": percentile(ttft, 50), "ttft_p99_s": percentile(ttft, 99),
            "itl_p50_s": percentile(itl, 50) if itl else None, "itl_p99_s": percentile(itl, 99) if itl else None,
            "output_throughput": sum(r.output_tokens for r in good) / duration,
            "goodput": goodput(slo, tuple(ttft), tuple(r.e2e or 0.0 for r in good),
                               tuple(r.output_tokens for r in good), duration)}
