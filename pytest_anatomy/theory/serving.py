"""Serving under load: a discrete-event simulation of continuous batching, plus closed forms.

The simulation replays vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py, 0.2x) step by
step, with every step's duration taken from the step model (theory/latency.py), never from a
measurement:

1. running requests first, in admission order: a decode needs 1 token, an unfinished prompt
   (or a recompute after preemption) the rest of its tokens, capped by the step's token
   budget (max_num_batched_tokens: chunked prefill);
2. each needs KV blocks for all its computed tokens; when the pool has none left, the most
   recently admitted running request is preempted (its blocks freed, its tokens to be
   recomputed later) and goes back to the front of the waiting queue;
3. waiting requests are admitted FCFS while budget, blocks and max_num_seqs allow, but not in
   a step that preempted.
A request's first token comes at the end of the step that completes its prompt; each later
step adds one token. Arrivals are open loop (Poisson offsets) or closed loop (C in flight,
the next sent when one finishes). Frontend time (HTTP, detokenization, the asyncio loop) is
not modeled unless the caller gives it (`RequestTimes`, fixed terms calibrated elsewhere): by
default simulated TTFT is the engine's queue + prefill.
"""

from __future__ import annotations

import bisect
import math
import operator
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_anatomy.specs.workload import poisson_arrivals
from pytest_anatomy.stats import percentile
from pytest_anatomy.theory.latency import StepModel
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.serving_tokens import decode_streak, land_tokens


@dataclass(frozen=True)
class SchedulerConfig:
    max_num_seqs: int
    max_num_batched_tokens: int
    num_gpu_blocks: int | None = None  # None: KV never runs out
    block_size: int = 16
    # Admit a waiting request only if its whole current sequence fits, not just its first
    # chunk (vLLM's `scheduler_reserve_full_isl`, default True where it exists); without it a
    # preempted request is re-admitted chunk by chunk and preempted again (thrashing).
    reserve_full_sequence: bool = True
    # n-gram speculation: each decoding request schedules 1 + spec_tokens tokens (its last token and
    # the drafts) and gains spec_tokens_per_step of them on average (E, measured: see speculative.py),
    # spread deterministically by a per-request credit. Graph padding is not priced here.
    spec_tokens: int = 0
    spec_tokens_per_step: float = 1.0
    # the share of decode steps that carry drafts (an n-gram proposer drafts only where the text
    # repeats); the others are plain decodes. Spread deterministically by a per-request credit.
    spec_draft_fraction: float = 1.0
    # CUDA-graph sizes a step of decodes/verifies only (no prompt chunk) is padded up to (its extra
    # rows' matmuls priced); () prices the tokens as they are. The ladder gives them when speculating.
    capture_sizes: tuple[int, ...] = ()

    @property
    def usable_blocks(self) -> float:
        """Usable blocks: the pool less vLLM's null block. Seen by the RTX 4090's round-2 overload (7,504 blocks):
        38 preemptions measured and predicted, 36 without the null block (theory mutation simulator-no-null-block
        is caught there)."""
        # vLLM's BlockPool holds block 0 back as the null block (docs/FACTS.md V6).
        return math.inf if self.num_gpu_blocks is None else self.num_gpu_blocks - 1


@dataclass(frozen=True)
class Workload:
    """num_requests prompts of input_len tokens, each generating exactly output_len tokens; or, with
    prompt_lens / output_lens, request i's own lengths (input_len, output_len are then the longest),
    and cached_lens: request i's prefix-cache hit tokens (whole blocks, theory/prefix_cache.py)."""

    input_len: int
    output_len: int
    num_requests: int
    concurrency: int | None = None  # closed loop
    arrivals: tuple[float, ...] | None = None  # open loop: send offsets in seconds
    prompt_lens: tuple[int, ...] | None = None
    output_lens: tuple[int, ...] | None = None
    cached_lens: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if (self.concurrency is None) == (self.arrivals is None):
            raise ValueError("a workload is closed loop (concurrency=C) or open loop (arrivals=...), not both")
        if self.arrivals is not None and len(self.arrivals) != self.num_requests:
            raise ValueError(f"{len(self.arrivals)} arrival times for {self.num_requests} requests")
        if self.input_len < 1 or self.output_len < 1 or self.num_requests < 1:
            raise ValueError(f"need input_len, output_len, num_requests >= 1, got {self}")
        for name in ("prompt_lens", "output_lens", "cached_lens"):
            lens = getattr(self, name)
            if lens is not None and len(lens) != self.num_requests:
                raise ValueError(f"{len(lens)} {name} for {self.num_requests} requests")
        if any(not 0 <= c < p for c, p in zip(self.cached_lens or (), self.prompt_lens or
                                               (self.input_len,) * self.num_requests)):
            raise ValueError("a request's cached tokens must be in [0, its prompt length): the last one is recomputed")

    def request(self, i: int) -> tuple[int, int, int]:
        """(prompt tokens, output tokens, prefix-cache hit tokens) of request i."""
        return (self.input_len if self.prompt_lens is None else self.prompt_lens[i],
                self.output_len if self.output_lens is None else self.output_lens[i],
                0 if self.cached_lens is None else self.cached_lens[i])

    @classmethod
    def of_requests(cls, prompt_lens: tuple[int, ...], output_lens: tuple[int, ...],
                    cached_lens: tuple[int, ...] | None = None, *, concurrency: int | None = None,
                    arrivals: tuple[float, ...] | None = None) -> "Workload":
        """Requests of their own lengths (and prefix hits), closed or open loop."""
        return cls(max(prompt_lens), max(output_lens), len(prompt_lens), concurrency=concurrency, arrivals=arrivals,
                   prompt_lens=prompt_lens, output_lens=output_lens, cached_lens=cached_lens)

    @classmethod
    def closed(cls, concurrency: int, num_requests: int, input_len: int, output_len: int) -> "Workload":
        return cls(input_len, output_len, num_requests, concurrency=concurrency)

    @classmethod
    def poisson(cls, rate: float, num_requests: int, input_len: int, output_len: int, seed: int,
                *, normalize: bool = False) -> "Workload":
        return cls(input_len, output_len, num_requests,
                   arrivals=tuple(poisson_arrivals(rate, num_requests, seed, normalize=normalize)))


@dataclass(frozen=True)
class RequestTimes:
    """Fixed per-request times outside the step model (s; 0: not modeled), calibrated by the caller on other runs.
    ingress_s: client send -> engine arrival; egress_s: a token's step end -> client (every token alike: ITL unchanged;
    a closed loop sends its next request when the last token arrives); first_token_s: engine time the step that
    completes a prompt takes beyond the step model, added to that step (every request in it waits)."""

    ingress_s: float = 0.0
    first_token_s: float = 0.0
    egress_s: float = 0.0

    def __post_init__(self) -> None:
        if min(self.ingress_s, self.first_token_s, self.egress_s) < 0:
            raise ValueError(f"per-request times must be >= 0, got {self}")


NO_REQUEST_TIMES = RequestTimes()


@dataclass(slots=True)
class _Request:
    id: int
    arrival: float
    prompt: int
    target: int
    computed: int = 0
    generated: int = 0
    blocks: int = 0
    first_scheduled: float | None = None
    token_times: list[float] = field(default_factory=list)
    preempted: int = 0
    # Prefix-cache hit tokens and the blocks they occupy: shared with the cache, so never taken from
    # (or returned to) the free pool; a preempted request finds them cached again.
    cached: int = 0
    shared: int = 0
    credit: float = 0.0  # speculation: accepted tokens owed (fractional E spread over steps)
    draft_credit: float = 0.0  # speculation: drafted steps owed (the draft fraction spread over steps)
    # Tokens whose KV must exist before the next token is sampled: prompt + generated. Kept as a
    # field, advanced with `generated`, because the scheduler reads it for every running request on
    # every step (a property cost a quarter of a 10,000-request simulation). Slots: the same reason.
    length: int = -1

    def __post_init__(self) -> None:
        self.length = self.prompt + self.generated


@dataclass(frozen=True)
class SimResult:
    """Per-request times (seconds from the workload's start) and engine counters."""

    ttft: tuple[float, ...]
    itl: tuple[float, ...]
    e2e: tuple[float, ...]
    queue: tuple[float, ...]  # first scheduled - arrival
    finished: tuple[float, ...]  # completion times, ascending
    output_tokens: int
    duration: float
    steps: int
    preemptions: int
    recomputed_tokens: int
    max_running: int
    mean_running: float  # time-weighted
    mixed_steps: int
    prompt_tokens: int = 0  # the prompts' tokens, cache hits included
    hit_tokens: int = 0  # of which served from the prefix cache (first admissions)
    free_blocks_end: float = math.inf  # the pool after the last request: every block back, none double-counted
    # The step model's calibration (describe() and its fit notes): what every simulated step
    # time rests on, carried into each Prediction built from this result.
    calibration: tuple[str, ...] = ()

    def stat(self, metric: str, stat: str) -> float:
        """stat in mean | median | p50 | p90 | p99 ... of ttft | itl | e2e | queue."""
        values = getattr(self, metric)
        if stat == "mean":
            return math.fsum(values) / len(values)
        return percentile(values, 50 if stat == "median" else float(stat.lstrip("p")))

    @property
    def output_throughput(self) -> float:
        return self.output_tokens / self.duration

    @property
    def request_throughput(self) -> float:
        return len(self.e2e) / self.duration


@dataclass(slots=True)
class _Engine:
    """The simulated engine between two steps: its queues, free KV blocks, clock and counters."""

    sched: SchedulerConfig
    work: Workload
    fixed: RequestTimes
    free: float  # KV blocks
    future: deque[tuple[float, int]]  # (arrival time, request id) not yet arrived
    next_id: int  # the next closed-loop request to send when one finishes
    waiting: deque[_Request] = field(default_factory=deque)
    running: list[_Request] = field(default_factory=list)
    done: list[_Request] = field(default_factory=list)
    t: float = 0.0
    steps: int = 0
    preemptions: int = 0
    recomputed: int = 0
    mixed: int = 0
    max_running: int = 0
    running_time: float = 0.0

    @classmethod
    def start(cls, sched: SchedulerConfig, work: Workload, fixed: RequestTimes) -> "_Engine":
        if work.concurrency is not None:
            future = deque((0.0, i) for i in range(min(work.concurrency, work.num_requests)))
            return cls(sched, work, fixed, sched.usable_blocks, future, len(future))
        return cls(sched, work, fixed, sched.usable_blocks,
                   deque((t, i) for i, t in enumerate(work.arrivals or ())), work.num_requests)


def simulate(steps: StepModel, sched: SchedulerConfig, work: Workload, *, max_steps: int = 2_000_000,
             fixed: RequestTimes = NO_REQUEST_TIMES) -> SimResult:
    """Run the workload through the scheduler, step by step; deterministic. In each step arrivals
    join the waiting queue, running requests are scheduled first (preempting from the back when
    the KV pool runs out), waiting ones are admitted into the token budget left, the step is priced
    by the step model, and the tokens it produced land. `fixed`: per-request times (RequestTimes)."""
    eng = _Engine.start(sched, work, fixed)
    while len(eng.done) < work.num_requests:
        _arrive(eng)
        if not eng.running and not eng.waiting:
            eng.t = eng.future[0][0] + fixed.ingress_s
            continue
        scheduled: list[tuple[_Request, int]] = []
        budget, preempted_now = _schedule_running(eng, scheduled)
        # A step of decodes only (a token each) that preempts nothing: if it also admits and finishes no one, the steps
        # after it stay alike until an arrival, a finish or a full pool, and decode_streak runs them at once
        alone = len(scheduled) if not preempted_now and budget + len(scheduled) == eng.sched.max_num_batched_tokens else -1
        _admit_waiting(eng, scheduled, budget, preempted_now)
        if not scheduled:  # nothing fits even alone: the pool cannot hold one request
            raise ValueError(f"a request of {work.input_len}+{work.output_len} tokens does not fit in "
                             f"{sched.usable_blocks} blocks of {sched.block_size}; the engine would refuse it")
        eng.t += _step_seconds(eng, steps, scheduled)
        eng.steps += 1
        if eng.steps > max_steps:
            raise RuntimeError(f"simulation exceeded {max_steps} steps; the workload never drains")
        finished = len(eng.done)
        land_tokens(eng, scheduled)
        if alone == len(scheduled) == len(eng.running) and finished == len(eng.done):
            decode_streak(eng, steps, max_steps)
    return replace(_result(eng.done, eng.t, eng.steps, eng.preemptions, eng.recomputed, eng.max_running,
                           eng.running_time, eng.mixed, steps.calibration, fixed), free_blocks_end=eng.free)


def _arrive(eng: _Engine) -> None:
    """Requests whose send time (+ ingress) has come join the waiting queue; `arrival` is the send time."""
    future, work, ingress = eng.future, eng.work, eng.fixed.ingress_s
    while future and future[0][0] + ingress <= eng.t:
        at, i = future.popleft()
        prompt, output, cached = work.request(i)
        shared = cached // eng.sched.block_size
        eng.waiting.append(_Request(i, at, prompt, output, computed=cached, blocks=shared, cached=cached,
                                    shared=shared))


def _schedule_running(eng: _Engine, scheduled: list[tuple[_Request, int]]) -> tuple[int, bool]:
    """Running requests first, in order, each its next chunk within the token budget; when the
    KV pool cannot hold a request's next blocks, the newest running request is preempted (its
    blocks freed, its tokens to be recomputed) until it fits or is itself the one preempted.
    Returns the token budget left and whether the step preempted."""
    bs, running, waiting = eng.sched.block_size, eng.running, eng.waiting
    free = eng.free  # a local: read for every running request on every step
    budget = eng.sched.max_num_batched_tokens
    spec, frac = eng.sched.spec_tokens, eng.sched.spec_draft_fraction
    preempted_now = False
    idx = 0
    while idx < len(running) and budget > 0:
        r = running[idx]
        n = r.length - r.computed
        if spec and n == 1 and r.generated:  # a decode verifies its drafts, none past its output length
            r.draft_credit += frac
            if r.draft_credit >= 1 - 1e-9:
                r.draft_credit -= 1
                n += min(spec, r.target - r.generated - 1)
        if n > budget:
            n = budget
        need = -(-(r.computed + n) // bs) - r.blocks  # r's own blocks: unchanged by preempting others
        while need > free:
            victim = running.pop()
            free += victim.blocks - victim.shared
            eng.recomputed += victim.computed - victim.cached
            victim.blocks, victim.computed = victim.shared, victim.cached
            victim.preempted += 1
            waiting.appendleft(victim)
            eng.preemptions += 1
            preempted_now = True
            if victim is r:
                break
        else:
            free -= need
            r.blocks += need
            scheduled.append((r, n))
            budget -= n
            idx += 1
            continue
        break  # r itself was preempted: nothing after it is left in running
    eng.free = free
    return budget, preempted_now


def _admit_waiting(eng: _Engine, scheduled: list[tuple[_Request, int]], budget: int, preempted_now: bool) -> None:
    """Waiting requests, first come first served, while the budget, max_num_seqs and the KV pool
    allow (the whole current sequence must fit under reserve_full_sequence); none in a step that
    preempted, as in vLLM's scheduler. No recording can see that gate: the preempted request heads the queue and
    needs about the blocks it gave up, so admission stops anyway (theory mutation simulator-admit-after-preemption)."""
    sched, bs, running, waiting = eng.sched, eng.sched.block_size, eng.running, eng.waiting
    while (not preempted_now and waiting and budget > 0 and len(running) < sched.max_num_seqs):
        r = waiting[0]
        n = r.length - r.computed
        if n > budget:
            n = budget
        need = -(-(r.computed + n) // bs) - r.blocks
        gate = -(-r.length // bs) - r.blocks if sched.reserve_full_sequence else need
        if need > eng.free or gate > eng.free:
            break
        waiting.popleft()
        eng.free -= need
        r.blocks += need
        if r.first_scheduled is None:
            r.first_scheduled = eng.t
        running.append(r)
        scheduled.append((r, n))
        budget -= n


def _step_seconds(eng: _Engine, steps: StepModel, scheduled: list[tuple[_Request, int]]) -> float:
    """The step model's time for this step's decodes (with their contexts) and prefill chunks;
    counts the step's mixing and running requests."""
    dec_n, dec_ctx, chunks, rows, prefills = 0, 0.0, [], 0, 0
    for r, n in scheduled:
        decoding = r.generated > 0 and r.computed == r.length - 1
        if n == 1 and decoding:
            dec_n += 1
            dec_ctx += r.computed + 1
            rows += 1
        else:  # a prompt chunk (one logits row), or a verify step (a row per query token)
            chunks.append((n, r.computed))
            rows += n if decoding else 1
            prefills += not decoding
    pad = 0
    sizes = eng.sched.capture_sizes
    if sizes and not prefills:
        total = dec_n + sum(n for n, _ in chunks)
        at = bisect.bisect_left(sizes, total)
        pad = sizes[at] - total if at < len(sizes) else 0
    dt = steps.seconds(dec_n, dec_ctx, tuple(chunks), rows, pad)
    if eng.fixed.first_token_s:  # prompts this step completes (first tokens, not recomputes after preemption)
        dt += eng.fixed.first_token_s * sum(1 for r, n in scheduled if not r.generated and r.computed + n >= r.length)
    eng.mixed += bool(prefills and len(chunks) + dec_n > prefills)
    eng.running_time += len(eng.running) * dt
    eng.max_running = max(eng.max_running, len(eng.running))
    return dt


def _result(done: list[_Request], t: float, n_steps: int, preemptions: int, recomputed: int,
            max_running: int, running_time: float, mixed: int, calibration: tuple[str, ...],
            fixed: RequestTimes = NO_REQUEST_TIMES) -> SimResult:
    """Client-side times: a token reaches the client egress_s after its step; the engine queue starts ingress_s late."""
    done.sort(key=lambda r: r.id)
    ingress, egress = fixed.ingress_s, fixed.egress_s
    itl: list[float] = []
    for r in done:  # per output token: g tokens landing together after a gap d count g gaps of d / g
        times, i = r.token_times, 1
        n = len(times)
        gaps = list(map(operator.sub, times[1:], times[:-1]))
        # No two tokens landed together (no speculation): every gap is one token's. Finite gaps, none zero: no two
        # neighbouring times are equal (with an infinite time some gap is inf or nan, and the sum with it).
        if 0.0 not in gaps and math.isfinite(sum(gaps)):
            itl.extend(gaps)
            continue
        while i < n:
            at, j = times[i], i
            while j + 1 < n and times[j + 1] == at:
                j += 1
            # g = 1 (every step without speculation) appends, building no list; d / 1 is d
            itl.extend([(at - times[i - 1]) / (j - i + 1)] * (j - i + 1)) if j > i else itl.append(at - times[i - 1])
            i = j + 1
    return SimResult(
        ttft=tuple(r.token_times[0] + egress - r.arrival for r in done), itl=tuple(itl),
        e2e=tuple(r.token_times[-1] + egress - r.arrival for r in done),
        queue=tuple((r.first_scheduled or r.arrival + ingress) - r.arrival - ingress for r in done),
        finished=tuple(sorted(r.token_times[-1] + egress for r in done)),
        output_tokens=sum(r.generated for r in done), duration=t + egress, steps=n_steps, preemptions=preemptions,
        recomputed_tokens=recomputed, max_running=max_running, mean_running=running_time / t if t else 0.0,
        mixed_steps=mixed, calibration=calibration, prompt_tokens=sum(r.prompt for r in done),
        hit_tokens=sum(r.cached for r in done))


def as_prediction(result: SimResult, metric: str, stat: str, unit: str, label: str,
                  notes: tuple[str, ...] = ()) -> Prediction:
    """One statistic of a simulation as a Prediction, with the run's counters as terms and, in
    its notes, the calibration the step times rest on (what t_overhead and eta were fitted on)
    followed by the caller's `notes`."""
    value: float
    if metric == "output_throughput":
        value = result.output_throughput
    elif metric == "request_throughput":
        value = result.request_throughput
    elif metric in ("preemptions", "max_running", "mean_running", "recomputed_tokens"):
        value = float(getattr(result, metric))
    else:
        value = result.stat(metric, stat)
    return Prediction(
        value, unit, f"discrete-event simulation of vLLM V1 continuous batching: {metric} {stat}".strip(),
        {"workload": label},
        terms=(Term("simulated duration", result.duration, "s"), Term("steps", result.steps, "steps"),
               Term("steps mixing prefill and decode", result.mixed_steps, "steps"),
               Term("preemptions", result.preemptions, "events"),
               Term("mean running", result.mean_running, "requests"),
               Term("max running", result.max_running, "requests")),
        notes=("step times from the step model, KV pool and scheduler limits as given; frontend time not modeled",
               *(result.calibration or ("step model calibration not recorded",)), *notes))


# --- closed forms ---------------------------------------------------------------------------

def littles_law_wait(waiting: float, throughput_rps: float) -> Prediction:
    """W = L / lambda: mean time in queue from the mean queue length and the service rate."""
    if throughput_rps <= 0:
        raise ValueError(f"throughput must be > 0, got {throughput_rps!r}")
    return Prediction(waiting / throughput_rps, "s", "W = L / lambda (Little's law)",
                      {"waiting": waiting, "throughput_rps": throughput_rps})


def kv_concurrency(pool_tokens: int, input_len: int, output_len: int, block_size: int = 16) -> dict[str, Prediction]:
    """How many requests of L + O tokens the KV pool holds (vLLM pages of block_size tokens).
    pool_tokens: the usable pool (vLLM's reported tokens minus the one null block).

    never_preempted -- requests at their full L + O length: below this, preemption cannot occur
    mean_occupancy  -- at their mean length L + O/2: the running count a saturated, preempting
                       engine hovers around
    peak_admitted   -- just-admitted requests (L + 1 tokens): the most that run at once"""
    blocks = pool_tokens // block_size

    def per(tokens: float) -> int:
        return -(-int(math.ceil(tokens)) // block_size)

    def pred(n: float, tokens: float, what: str) -> Prediction:
        return Prediction(n, "requests", f"pool blocks / ceil({what} / block_size)",
                          {"pool_tokens": pool_tokens, "block_size": block_size, "tokens_per_request": tokens},
                          terms=(Term("pool blocks", blocks, "blocks"),
                                 Term("blocks per request", per(tokens), "blocks")))

    return {"never_preempted": pred(blocks // per(input_len + output_len), input_len + output_len, "(L + O)"),
            "mean_occupancy": pred(blocks / per(input_len + output_len / 2), input_len + output_len / 2, "(L + O/2)"),
            "peak_admitted": pred(blocks // per(input_len + 1), input_len + 1, "(L + 1)")}


def saturation(steps: StepModel, sched: SchedulerConfig, input_len: int, output_len: int,
               waves: int = 4) -> dict[str, Any]:
    """The saturation point (the knee): the most requests that can be in flight (max_num_seqs,
    capped by the KV pool at full length) run as a closed loop; the completion rate between the
    first and the last wave (ramp-up and drain excluded) is the most an open loop sustains:
    above it the queue, and TTFT, grow without bound."""
    pool = sched.usable_blocks * sched.block_size
    per_request = -(-(input_len + output_len) // sched.block_size) * sched.block_size
    cap = sched.max_num_seqs if math.isinf(pool) else min(sched.max_num_seqs, max(1, int(pool // per_request)))
    n = max(3, waves) * cap
    result = simulate(steps, sched, Workload.closed(cap, n, input_len, output_len))
    done = result.finished
    rate = (n - 2 * cap) / (done[n - cap - 1] - done[cap - 1])
    return {"concurrency": cap, "request_rate": rate, "output_throughput": rate * output_len, "result": result}
