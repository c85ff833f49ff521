"""Pure statistics for load tests: per-request latency records, `vllm bench serve` metric
definitions, percentiles, arrival processes and token-id prompts.

Nothing here imports torch or vllm, so every definition is tested on a CPU. The engine-facing
half lives in load_driver.py and only fills RequestRecord / TimelineStep objects.

Definitions follow `vllm bench serve` (vllm/benchmarks/lib/endpoint_request_func.py and
vllm/benchmarks/serve.py in vLLM 0.26.0), so numbers are comparable with the seed study:
- TTFT = arrival time of the first streamed output - send time
- ITL  = gap between two successive streamed outputs (one entry per output *chunk*; when the
         consumer falls behind, vLLM merges deltas, so one chunk may carry several tokens)
- E2E  = arrival time of the last streamed output - send time
- TPOT = (E2E - TTFT) / (output tokens - 1), only for requests with more than one token
- percentiles: numpy's default linear interpolation; std is the population std (ddof=0)
All times are seconds (SI); nothing is converted to milliseconds here.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from pytest_anatomy.specs.workload import poisson_arrivals  # noqa: F401 - re-exported: the driver's API
from pytest_anatomy.stats import percentile  # noqa: F401 - re-exported: scripts read it from here

PERCENTILES: tuple[int, ...] = (50, 90, 99)


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, median, std (population), p50/p90/p99, min, max; None for an empty list."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "median": None, "std": None, "min": None, "max": None,
                **{f"p{p}": None for p in PERCENTILES}}
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)
    return {
        "n": n,
        "mean": mean,
        "median": percentile(values, 50),
        "std": std,
        "min": min(values),
        "max": max(values),
        **{f"p{p}": percentile(values, p) for p in PERCENTILES},
    }


@dataclass(frozen=True)
class RequestRecord:
    """What one request did, in the client's monotonic clock (seconds).

    chunk_times / chunk_tokens -- arrival time and token count of every streamed output
    engine        -- vLLM's RequestStateStats at the end: queued_ts, scheduled_ts,
                     first_token_ts, last_token_ts (engine-core monotonic clock),
                     arrival_time (wall clock), num_generation_tokens
    engine_chunk_times -- RequestStateStats.last_token_ts seen with each chunk: the engine's
                     own timestamp of that step, immune to frontend lag
    """

    request_id: str
    input_len: int
    expected_output_len: int
    send_time: float
    chunk_times: tuple[float, ...] = ()
    chunk_tokens: tuple[int, ...] = ()
    scheduled_time: float | None = None
    engine: Mapping[str, float] = field(default_factory=dict)
    engine_chunk_times: tuple[float, ...] = ()
    num_cached_tokens: int | None = None
    error: str | None = None

    @property
    def output_tokens(self) -> int:
        return sum(self.chunk_tokens)

    @property
    def ok(self) -> bool:
        """Completed without error and produced exactly the requested number of tokens."""
        return self.error is None and self.output_tokens == self.expected_output_len

    @property
    def ttft(self) -> float | None:
        return self.chunk_times[0] - self.send_time if self.chunk_times else None

    @property
    def itls(self) -> list[float]:
        t = self.chunk_times
        return [t[i] - t[i - 1] for i in range(1, len(t))]

    @property
    def e2e(self) -> float | None:
        return self.chunk_times[-1] - self.send_time if self.chunk_times else None

    @property
    def tpot(self) -> float | None:
        if not self.chunk_times or self.output_tokens <= 1:
            return None
        return (self.chunk_times[-1] - self.chunk_times[0]) / (self.output_tokens - 1)

    @property
    def send_lag(self) -> float | None:
        """Open loop: how late the request was sent relative to its planned arrival."""
        return None if self.scheduled_time is None else self.send_time - self.scheduled_time

    def engine_breakdown(self) -> dict[str, float] | None:
        """TTFT split into ingress + queue + prefill + egress, and the engine-side TPOT.

        Assumes the engine core's time.monotonic() and ours share one clock: true on Linux
        (CLOCK_MONOTONIC is system-wide) for processes on one host. vLLM's docstring warns
        against comparing across processes in general; check `negative_parts` in the summary."""
        e = self.engine
        keys = ("queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts")
        if not self.chunk_times or any(not e.get(k) for k in keys):
            return None
        n = self.output_tokens
        return {
            "ingress_s": e["queued_ts"] - self.send_time,
            "queue_s": e["scheduled_ts"] - e["queued_ts"],
            "prefill_s": e["first_token_ts"] - e["scheduled_ts"],
            "egress_s": self.chunk_times[0] - e["first_token_ts"],
            "decode_s": e["last_token_ts"] - e["first_token_ts"],
            "engine_tpot_s": (e["last_token_ts"] - e["first_token_ts"]) / (n - 1) if n > 1 else math.nan,
        }

    def to_raw(self) -> dict[str, Any]:
        """Everything needed to recompute every metric later. Chunk times (ours and the
        engine's) are offsets from send_time rounded to 1 us, which keeps the raw file small."""
        send = self.send_time
        return {
            "id": self.request_id,
            "input_len": self.input_len,
            "expected_output_len": self.expected_output_len,
            "send": round(send, 6),
            "scheduled": None if self.scheduled_time is None else round(self.scheduled_time - send, 6),
            "chunks": [round(t - send, 6) for t in self.chunk_times],
            "chunk_tokens": list(self.chunk_tokens),
            "engine_chunks": [round(t - send, 6) for t in self.engine_chunk_times],
            "engine": {k: round(v - send, 6) if k.endswith("_ts") else v for k, v in self.engine.items()},
            "num_cached_tokens": self.num_cached_tokens,
            "error": self.error,
        }


def aggregate(records: Sequence[RequestRecord], expected_requests: int | None = None,
              start_time: float | None = None) -> dict[str, Any]:
    """`vllm bench serve`-style summary of one load run, plus the self-checks the seed insists
    on (exact output-token count, no prefix-cache hits, failures listed).

    duration runs from start_time (default: the earliest send or planned arrival) to the last
    output, like bench serve's benchmark_duration."""
    done = [r for r in records if r.chunk_times]
    good = [r for r in records if r.ok]
    expected = len(records) if expected_requests is None else expected_requests
    if done:
        start = start_time if start_time is not None else min(
            r.send_time if r.scheduled_time is None else min(r.send_time, r.scheduled_time)
            for r in records)
        duration = max(r.chunk_times[-1] for r in done) - start
    else:
        duration = 0.0
    out_tokens = sum(r.output_tokens for r in done)
    in_tokens = sum(r.input_len for r in done)
    breakdowns = [b for b in (r.engine_breakdown() for r in good) if b is not None]
    negative = sum(1 for b in breakdowns
                   for k in ("ingress_s", "queue_s", "prefill_s", "egress_s") if b[k] < 0)
    return {
        "requests": expected,
        "completed": len(good),
        "failed": len(records) - len(good),
        "not_sent": expected - len(records),
        "exact_output_tokens": len(good) == expected and expected > 0,
        "failures": sorted({_failure(r) for r in records if not r.ok})[:5],
        "input_tokens": in_tokens,
        "output_tokens": out_tokens,
        "duration_s": duration,
        "request_throughput_per_s": len(good) / duration if duration > 0 else None,
        "output_throughput_tok_per_s": out_tokens / duration if duration > 0 else None,
        "total_token_throughput_tok_per_s": (in_tokens + out_tokens) / duration if duration > 0 else None,
        "ttft_s": summarize([r.ttft for r in good if r.ttft is not None]),
        "tpot_s": summarize([r.tpot for r in good if r.tpot is not None]),
        "itl_s": summarize([x for r in good for x in r.itls]),
        "e2e_s": summarize([r.e2e for r in good if r.e2e is not None]),
        "multi_token_chunks": sum(1 for r in good for k in r.chunk_tokens if k > 1),
        "prefix_cache_hit_tokens": sum(r.num_cached_tokens or 0 for r in records),
        "send_lag_s": summarize([r.send_lag for r in good if r.send_lag is not None]),
        "engine": {
            key: summarize([b[key] for b in breakdowns if not math.isnan(b[key])])
            for key in ("ingress_s", "queue_s", "prefill_s", "egress_s", "engine_tpot_s")
        } | {"negative_parts": negative},
    }


def _failure(record: RequestRecord) -> str:
    if record.error is not None:
        return record.error
    return f"{record.output_tokens} output tokens, expected {record.expected_output_len}"


def per_request_columns(records: Sequence[RequestRecord]) -> dict[str, list[Any]]:
    """Compact per-request arrays for the summary file (ITL lists go to the raw file)."""
    return {
        "ttft_s": [_r(r.ttft) for r in records],
        "tpot_s": [_r(r.tpot) for r in records],
        "e2e_s": [_r(r.e2e) for r in records],
        "output_tokens": [r.output_tokens for r in records],
        "chunks": [len(r.chunk_times) for r in records],
    }


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


# --- steady state of a batch that was submitted at once ----------------------------------

def steady_window(records: Sequence[RequestRecord]) -> tuple[float, float] | None:
    """[last first-token, first last-token]: the span in which every request of a batch is
    decoding, so each step has exactly len(records) sequences (no prefill chunk mixed in, no
    request finished yet). None when the span is empty."""
    done = [r for r in records if r.chunk_times]
    if not done or len(done) != len(records):
        return None
    start = max(r.chunk_times[0] for r in done)
    end = min(r.chunk_times[-1] for r in done)
    return (start, end) if end > start else None


def steady_itls(records: Sequence[RequestRecord], window: tuple[float, float],
                *, engine_clock: bool = False) -> list[float]:
    """ITLs whose both ends fall inside the window (window in our clock). engine_clock=True
    returns the same gaps measured with the engine's step timestamps instead of ours."""
    lo, hi = window
    out: list[float] = []
    for r in records:
        t = r.chunk_times
        src = r.engine_chunk_times if engine_clock else t
        if len(src) != len(t):
            continue
        out.extend(src[i] - src[i - 1] for i in range(1, len(t)) if t[i - 1] >= lo and t[i] <= hi)
    return out


def steady_tpots(records: Sequence[RequestRecord], window: tuple[float, float]) -> list[float]:
    """Per request: time between its first and last output inside the window divided by the
    tokens that arrived after the first one. Unlike the ITL median this is not biased when
    chunks merge (then one ITL spans two steps)."""
    lo, hi = window
    out: list[float] = []
    for r in records:
        inside = [(t, k) for t, k in zip(r.chunk_times, r.chunk_tokens, strict=True) if lo <= t <= hi]
        tokens = sum(k for _, k in inside[1:])
        if len(inside) >= 2 and tokens > 0:
            out.append((inside[-1][0] - inside[0][0]) / tokens)
    return out


# --- engine step timeline (one entry per engine step, from a vLLM stat logger) -----------

@dataclass(frozen=True)
class TimelineStep:
    """One engine step. t is our monotonic clock when the frontend processed the step;
    engine_t is the engine core's EngineCoreOutputs.timestamp of the step (None when the step
    returned no request output), immune to frontend lag; ctx_* / gen_* come from vLLM's
    SchedulerIterationDetails (the work scheduled in that step)."""

    t: float
    ctx_requests: int = 0
    ctx_tokens: int = 0
    gen_requests: int = 0
    gen_tokens: int = 0
    running: int = 0
    waiting: int = 0
    kv_usage: float = 0.0
    preempted: int = 0
    engine_t: float | None = None


def decode_step_intervals(steps: Sequence[TimelineStep], batch: int,
                          *, engine_clock: bool = False) -> list[float]:
    """Gaps between consecutive pure-decode steps that both ran exactly `batch` sequences,
    in our clock or (engine_clock=True) in the engine core's step timestamps."""
    def pure(s: TimelineStep) -> bool:
        return s.ctx_tokens == 0 and s.gen_requests == batch and (not engine_clock or s.engine_t is not None)

    def when(s: TimelineStep) -> float:
        return s.engine_t if engine_clock and s.engine_t is not None else s.t

    return [when(b) - when(a) for a, b in zip(steps[:-1], steps[1:], strict=True) if pure(a) and pure(b)]


# --- a decode run's validity: was the engine core's host loop stalled during it? ----------
# The thresholds come from the mechanism, fixed before they were applied to the recordings (below). A CPU stall
# of the engine-core process delays the step that is due (a long step); the GPU meanwhile finished the work
# already queued under async scheduling, so the next steps are only the host catching up: shorter than the
# GPU could run that batch (at b=64 shorter than the b=1 step), which no GPU slowdown, clock drop included,
# can produce. A clean GPU-bound run's step intervals are tight and symmetric about their median.
STALL_MEAN_OVER_MEDIAN = 1.02  # (a) long steps pull the mean above the median
CATCH_UP_FRACTION = 0.9  # (b) a catch-up step is shorter than 0.9 x the run's median step ...
CATCH_UP_SHARE = 0.05  # ... and a stalled run has more than 5% of them


@dataclass(frozen=True)
class DecodeValidity:
    """The run-validity check of one decode run's steady steps (decode_validity). short_share is None when only
    the steps' summary (mean, median) is known, which decides criterion (a) alone."""

    steps: int
    median_s: float
    mean_over_median: float
    short_share: float | None

    @property
    def reasons(self) -> tuple[str, ...]:
        """Which criteria flag the run, as a note quotes them (empty for a clean run)."""
        out = []
        if self.mean_over_median > STALL_MEAN_OVER_MEDIAN:
            out.append(f"mean/median of its steps {self.mean_over_median:.3f} > {STALL_MEAN_OVER_MEDIAN}")
        if self.short_share is not None and self.short_share > CATCH_UP_SHARE:
            out.append(f"{self.short_share:.0%} of its steps < {CATCH_UP_FRACTION} x their median "
                       f"(> {CATCH_UP_SHARE:.0%})")
        return tuple(out)

    @property
    def flagged(self) -> bool:
        return bool(self.reasons)

    def describe(self) -> str:
        """One line for a reconciliation's note or a log: the verdict and the values it came from."""
        verdict = "flagged (an engine-core stall: " + "; ".join(self.reasons) + ")" if self.flagged else "clean"
        short = "n/a" if self.short_share is None else f"{self.short_share:.1%}"
        return (f"decode validity check {verdict}: {self.steps} steps, median {self.median_s * 1e3:.3f} ms, "
                f"mean/median {self.mean_over_median:.4f}, share < {CATCH_UP_FRACTION} x median {short}")

    def as_dict(self) -> dict[str, Any]:
        return {"flagged": self.flagged, "reasons": list(self.reasons), "steps": self.steps, "median_s": self.median_s,
                "mean_over_median": self.mean_over_median, "short_share": self.short_share,
                "thresholds": {"mean_over_median": STALL_MEAN_OVER_MEDIAN, "catch_up_fraction": CATCH_UP_FRACTION,
                               "catch_up_share": CATCH_UP_SHARE}}


def decode_validity(intervals: Sequence[float]) -> DecodeValidity | None:
    """Whether a decode run's engine-clock step intervals (decode_step_intervals(..., engine_clock=True): the gaps
    between its pure steps of the full batch) show a host-CPU stall of the engine-core process, by two criteria
    from the mechanism (see STALL_MEAN_OVER_MEDIAN): (a) mean / median > 1.02, the long stalled steps; (b) more than
    5% of the steps shorter than 0.9 x the median, the catch-up steps under the GPU's floor.

    Why these thresholds: in every recorded H200 session (2026-11-30 to 2026-12-07) the runs of Qwen2.5-7B and
    Llama-3.1-8B the check passes (and from 2026-12-06 Qwen2.5-3B's and Qwen2.5-32B's) have mean/median 0.990-1.018
    and at most 4.9% of steps under 0.9 x the median (0.990-1.011 before 2026-12-07 05:34, whose Qwen2.5-3B b=16 run
    has 1.018, 4 of 124 steps under 0.9 x its median; 0.996-1.011 and 4.8% before 2026-12-06 09:41, whose Qwen2.5-7B
    b=128 run has 0.990 and Qwen2.5-3B b=32 run 4.9%, 6 of 122 steps), with a std of 0.03-0.66 ms against medians of
    3.0-30.5 ms (4.6-10.7 ms for Qwen2.5-7B and Llama-3.1-8B); the stalled b=64 run of 2026-12-02 02:43 has
    1.146 and 28% (test_latency_findings_reasons.py::test_decode_validity_flags_the_recorded_runs recomputes
    all of it). Not for the tiny-hidden overhead models, whose step is the engine's CPU loop itself (no GPU floor):
    their clean and stalled steps look alike, and the check flags about half their runs. None without steps."""
    values = [float(v) for v in intervals]
    if not values:
        return None
    median = percentile(values, 50)
    mean = math.fsum(values) / len(values)
    short = sum(1 for v in values if v < CATCH_UP_FRACTION * median) / len(values)
    return DecodeValidity(len(values), median, mean / median, short)


def decode_validity_of_summary(summary: Mapping[str, Any]) -> DecodeValidity | None:
    """Criterion (a) alone, from a summarize() of the intervals (n, mean, median): what a recording without the
    intervals themselves can say. None without steps."""
    n, mean, median = summary.get("n"), summary.get("mean"), summary.get("median")
    if not n or mean is None or not median:
        return None
    return DecodeValidity(int(n), float(median), float(mean) / float(median), None)


def timeline_summary(steps: Sequence[TimelineStep]) -> dict[str, Any]:
    if not steps:
        return {"steps": 0}
    return {
        "steps": len(steps),
        "preemptions": sum(s.preempted for s in steps),
        "max_running": max(s.running for s in steps),
        "max_waiting": max(s.waiting for s in steps),
        "max_kv_usage": max(s.kv_usage for s in steps),
        "ctx_tokens": sum(s.ctx_tokens for s in steps),
        "gen_tokens": sum(s.gen_tokens for s in steps),
        "mixed_steps": sum(1 for s in steps if s.ctx_tokens and s.gen_requests),
    }


# --- workload generation ------------------------------------------------------------------
# poisson_arrivals lives in specs/workload.py: the simulator (theory) must replay exactly these offsets.

def token_id_prompts(n: int, length: int, vocab_size: int, seed: int,
                     *, low: int = 0, high: int | None = None) -> list[list[int]]:
    """n prompts of `length` random token ids in [low, high) (high defaults to vocab_size).

    Distinct first 16 tokens (one KV block) per prompt are enforced, so even with prefix
    caching on no two requests could share a cached block."""
    top = vocab_size if high is None else high
    if not 0 <= low < top <= vocab_size:
        raise ValueError(f"token id range [{low}, {top}) must lie inside the vocabulary [0, {vocab_size})")
    if length < 1 or n < 1:
        raise ValueError(f"need n >= 1 prompts of length >= 1, got n={n!r}, length={length!r}")
    rng = random.Random(seed)
    population = range(low, top)
    prompts: list[list[int]] = []
    heads: set[tuple[int, ...]] = set()
    collisions = 0
    while len(prompts) < n:
        ids = rng.choices(population, k=length)
        head = tuple(ids[:16])
        if head in heads:  # astronomically unlikely for a real vocabulary; checked anyway
            collisions += 1
            if collisions > 1000:
                raise ValueError(f"cannot draw {n} prompts with distinct first tokens from "
                                 f"{top - low} ids at length {length}: use longer prompts")
            continue
        heads.add(head)
        prompts.append(ids)
    return prompts
