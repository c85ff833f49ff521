"""Measurements read off a ladder batch's kept raw timeline (results/<hw>/batches/<stamp>/deployment-raw.jsonl.xz:
every request's client chunk times, the engine's timestamp of each output and its RequestStateStats), for the
findings' quoted numbers (ladder_findings.py) and the tests that recompute them (test_ladder_replay.py).

Methods, stated once:
- engine steps: every output of every request on the engine's clock (arrival_time + each engine_chunks offset, as
  ladder_findings.completing_step_ms reads them); outputs less than STEP_GAP_S apart are one step (one step's outputs
  lie within 0.13 ms of each other in these batches; a step takes 3 ms or more). A step's time is the gap from the
  previous step's first output to its own; a step is a pure decode (or, speculating, a pure verify) step when no
  request is between its scheduling and its first token during it; its batch is the number of outputs it emitted.
- resampled gain interval: the requests of a rung and of its parent resampled with replacement (RESAMPLES times,
  seeded), each resample's metric the number measure/ladder_stats.ladder_metrics (the device plan's own function)
  gives from the run's start, computed for all resamples at once (_Requests; test_ladder_replay and test_ladder_chat
  check sample_metric, its one-resample form, against ladder_metrics); the 2.5th and 97.5th percentile of rung / parent.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import random
import statistics
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from ladder_findings import BATCHES

from pytest_anatomy.measure.load_stats import RequestRecord
from pytest_anatomy.specs.workload_file import Slo
from pytest_anatomy.stats import percentile

STEP_GAP_S = 1e-3
RESAMPLES, SEED = 400, 14


@lru_cache(maxsize=None)
def raw_lines(batch: Path) -> tuple[dict[str, Any], ...]:
    """Every run's raw line (id, start, requests) of the kept batch in folder `batch`, read through
    importers.xz.read_kept (the importer keeps a file under 1 MiB as it came, a larger one xz-compressed)."""
    from pytest_anatomy.importers.xz import read_kept

    path = batch / "deployment-raw.jsonl"
    raw = path.read_bytes() if path.exists() else read_kept(path.with_suffix(".jsonl.xz"))
    return tuple(map(json.loads, raw.decode("utf-8").splitlines()))


def raw_runs(stamp: str) -> dict[str, dict[str, Any]]:
    """step -> the run's raw line of one kept ladder batch (one model's rungs: a step names one run)."""
    return {run["id"].rsplit(".", 1)[-1]: run for run in raw_lines(BATCHES / stamp)}


def raw_run(stamp: str, run_id: str) -> dict[str, Any]:
    """The raw line of run `run_id` (model.workload.step) of a kept batch, which may hold both models' rungs."""
    return next(run for run in raw_lines(BATCHES / stamp) if run["id"] == run_id)


def records(run: dict[str, Any]) -> list[RequestRecord]:
    """The run's requests as the device plan held them (client clock), for ladder_metrics."""
    return [RequestRecord(r["id"], r["input_len"], r["expected_output_len"], r["send"],
                          tuple(r["send"] + t for t in r["chunks"]), tuple(r["chunk_tokens"]), error=r["error"])
            for r in run["requests"]]


def engine_steps(requests: list[dict[str, Any]]) -> list[tuple[int, float, bool]]:
    """(outputs, seconds since the previous step, pure) of every engine step after the first (module docstring)."""
    outs = sorted(r["engine"]["arrival_time"] + t for r in requests if r.get("engine") for t in r["engine_chunks"])
    firsts: list[float] = []
    sizes: list[int] = []
    last = -1.0
    for t in outs:
        if firsts and t - last < STEP_GAP_S:
            sizes[-1] += 1
        else:
            firsts.append(t)
            sizes.append(1)
        last = t
    windows = [(r["engine"]["arrival_time"] + r["engine"]["scheduled_ts"],
                r["engine"]["arrival_time"] + r["engine"]["first_token_ts"]) for r in requests if r.get("engine")]
    return [(n, b - a, not any(s < b and f > a for s, f in windows))
            for a, b, n in zip(firsts, firsts[1:], sizes[1:])]


def pure_step_ms(requests: list[dict[str, Any]], batch: int) -> float:
    """Median time (ms) of the pure decode / verify steps that emitted `batch` outputs."""
    return statistics.median(dt for n, dt, pure in engine_steps(requests) if pure and n == batch) * 1e3


def engine_median_ms(requests: list[dict[str, Any]], part: str) -> float:
    """Median over the requests of one part of TTFT on the engine's timestamps (measure/load_stats' split):
    ingress (send to queued) or prefill (scheduled to first token), ms."""
    def value(e: dict[str, float]) -> float:
        return e["queued_ts"] if part == "ingress" else e["first_token_ts"] - e["scheduled_ts"]
    return statistics.median(value(r["engine"]) for r in requests) * 1e3


def sample_metric(chosen: list[RequestRecord], start: float, metric: str, slo: Slo) -> float | None:
    """ladder_metrics' `metric` over completed requests (a resample: repeats allowed) of a run that began at `start`,
    computed as ladder_metrics computes it (test_ladder_replay checks the two agree on every run), by the same
    arithmetic the resampled intervals run on many resamples at once (_Requests)."""
    if not chosen:
        return None
    value = _Requests(chosen, slo).metric(np.arange(len(chosen))[None, :], start, metric)[0]
    return None if np.isnan(value) else float(value)


@lru_cache(maxsize=None)
def _itls_of(times: tuple[float, ...], tokens: tuple[int, ...]) -> np.ndarray:
    return np.repeat(np.diff(np.asarray(times)) / np.asarray(tokens[1:]), tokens[1:])


def _itls(r: RequestRecord) -> np.ndarray:
    return _itls_of(r.chunk_times, r.chunk_tokens)


class _Requests:
    """A run's completed requests as arrays, so that a metric is computed for many resamples at once: a resample is a
    row of request indices (repeats allowed). Every metric is the number sample_metric's definition gives, to the bit:
    the ITL percentiles are numpy's 'linear' percentile (its rank, its interpolation) of the multiset the resample's
    ITLs form, read off the run's ITLs sorted once and counted per resample instead of concatenated and partitioned
    per resample (2026-12-06: the resampling was 2/3 of tests_deployment's 200 s)."""

    def __init__(self, chosen: list[RequestRecord], slo: Slo) -> None:
        self.ttft = np.array([r.ttft or 0.0 for r in chosen], dtype=float)
        self.last = np.array([r.chunk_times[-1] for r in chosen], dtype=float)
        self.tokens = np.array([r.output_tokens for r in chosen], dtype=np.int64)
        # goodput's test of each request (specs/workload_file.goodput), on the same TTFT, e2e and output tokens
        self.met = np.array([slo.met(r.ttft or 0.0, ((r.e2e or 0.0) - (r.ttft or 0.0)) / max(1, r.output_tokens - 1))
                             for r in chosen], dtype=np.int64)
        itls = [_itls(r) for r in chosen]
        flat = np.concatenate(itls) if itls else np.empty(0)
        owner = np.repeat(np.arange(len(chosen)), [len(x) for x in itls])
        order = np.argsort(flat, kind="stable")
        self.itl, self.owner = flat[order], owner[order]
        # The sorted ITLs in blocks of about sqrt(their count), with how many of each request's ITLs each block holds:
        # a rank is found block by block (a product and a cumulative sum over blocks), then inside its one block
        self.block = max(1, math.isqrt(self.itl.size))
        self.in_block = np.zeros((len(chosen), max(1, -(-self.itl.size // self.block))))
        np.add.at(self.in_block, (self.owner, np.arange(self.itl.size) // self.block), 1.0)

    def metric(self, picks: np.ndarray, start: float, metric: str) -> np.ndarray:
        """`metric` of each resample (a row of `picks`), nan where sample_metric gives None."""
        rows, n = picks.shape
        if n == 0:
            return np.full(rows, np.nan)
        if metric.startswith("ttft_"):
            return np.percentile(self.ttft[picks], 50 if metric == "ttft_p50_s" else 99, axis=1)
        if metric.startswith("itl_"):
            return self._itl_percentile(picks, 0.5 if metric == "itl_p50_s" else 0.99)
        duration = self.last[picks].max(axis=1) - start
        if metric == "output_throughput":
            return self.tokens[picks].sum(axis=1) / duration
        if (duration <= 0).any():
            raise ValueError("goodput needs one TTFT, e2e and output length per request and a duration > 0")
        return self.met[picks].sum(axis=1) / duration

    def _itl_percentile(self, picks: np.ndarray, q: float) -> np.ndarray:
        """numpy.percentile's 'linear' method (numpy/lib/_function_base_impl.py: _quantile, _get_indexes, _lerp) of
        each resample's ITLs: rank (count - 1) x q, the order statistics on either side, interpolated as _lerp does."""
        rows, n = picks.shape
        counts = np.bincount((picks + n * np.arange(rows)[:, None]).ravel(), minlength=rows * n).reshape(rows, n)
        # per resample, its ITLs at or before each block (exact: integer counts far below 2^53 in a float product)
        through = np.cumsum(np.rint(counts @ self.in_block).astype(np.int64), axis=1)
        total = through[:, -1]
        virtual = (total - 1) * q
        previous = np.floor(virtual)
        gamma = virtual - previous
        top = virtual >= total - 1  # numpy takes the largest value for both neighbours there
        lo = np.where(top, total - 1, previous.astype(np.int64))
        a, b = (self._at_rank(counts, through, np.maximum(k, 0)) for k in (lo, np.where(top, lo, lo + 1)))
        diff = b - a
        value = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
        return np.where(total > 0, value, np.nan)

    def _at_rank(self, counts: np.ndarray, through: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """Each resample's ITL of 0-based `rank` in its sorted multiset: the block whose cumulative count passes the
        rank, then the place in that block where the resample's own cumulative count does (nan without ITLs)."""
        if not self.itl.size:
            return np.full(len(rank), np.nan)
        rows = np.arange(len(rank))
        blk = np.minimum((through <= rank[:, None]).sum(axis=1), through.shape[1] - 1)
        before = np.where(blk > 0, through[rows, np.maximum(blk - 1, 0)], 0)
        where = blk[:, None] * self.block + np.arange(self.block)
        inside = where < self.itl.size
        weights = np.where(inside, counts[rows[:, None], self.owner[np.where(inside, where, 0)]], 0)
        place = (before[:, None] + np.cumsum(weights, axis=1) <= rank[:, None]).sum(axis=1)
        return self.itl[np.minimum(blk * self.block + place, self.itl.size - 1)]


def _digest(run: dict[str, Any]) -> str:
    """The sha256 of exactly what records() reads from a run, and its start: all an interval of the run depends on."""
    fields = (run["start"], [(r["id"], r["input_len"], r["expected_output_len"], r["send"], r["chunks"],
                              r["chunk_tokens"], r["error"]) for r in run["requests"]])
    return hashlib.sha256(pickle.dumps(fields, protocol=4)).hexdigest()


# (rung's digest, parent's, metric, SLO, resamples, seed) -> interval: test_ladder_replay's error budgets, the noise and
# repeat tables' tests and the ladder modules' tests resample the same run pairs (479 calls, 273 distinct, 2026-12-06).
# Keyed on the runs' content, so an edited or synthetic run never reads another's interval; nothing in it comes from
# pytest_anatomy.theory, so a theory mutation cannot make an entry stale.
_INTERVALS: dict[tuple[str, str, str, Slo, int, int], tuple[float, float]] = {}


def resampled_gain_interval(run: dict[str, Any], parent: dict[str, Any], metric: str, slo: Slo,
                            resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The 95% interval of the gain (rung / parent) of `metric` over request resamples (module docstring)."""
    key = (_digest(run), _digest(parent), metric, slo, resamples, seed)
    if key not in _INTERVALS:
        _INTERVALS[key] = _gain_interval(run, parent, metric, slo, resamples, seed)
    return _INTERVALS[key]


def _uniforms(seed: int, count: int) -> np.ndarray:
    """random.Random(seed).random() called `count` times, as one array: numpy's MT19937 continued from that Random's
    state makes the same 53-bit doubles (both are genrand_res53 on the same Mersenne Twister), ~50x faster than the
    calls. Checked against the calls themselves over the first 1,000 draws (past the generator's first refill of its
    624 words); on any difference, the calls are made."""
    rng = random.Random(seed)
    state = rng.getstate()[1]
    bits = np.random.MT19937(0)
    bits.state = {"bit_generator": "MT19937", "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": state[624]}}
    drawn = np.random.Generator(bits).random(count)
    head = [rng.random() for _ in range(min(count, 1000))]
    if drawn[:len(head)].tolist() != head:
        return np.array(head + [rng.random() for _ in range(count - len(head))], dtype=float)
    return drawn


def _picks(seed: int, resamples: int, sizes: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The request indices random.Random(seed).choices(mine, k=len(mine)) then choices(theirs, k=len(theirs)) pick in
    each of `resamples` rounds: choices takes floor(random() x n) per pick, in that order."""
    mine, theirs = sizes
    u = _uniforms(seed, resamples * (mine + theirs)).reshape(resamples, mine + theirs)
    return (np.floor(u[:, :mine] * float(mine)).astype(np.intp),
            np.floor(u[:, mine:] * float(theirs)).astype(np.intp))


def _gain_interval(run: dict[str, Any], parent: dict[str, Any], metric: str, slo: Slo, resamples: int,
                   seed: int) -> tuple[float, float]:
    mine, theirs = ([r for r in records(x) if r.ok] for x in (run, parent))
    picks = _picks(seed, resamples, (len(mine), len(theirs)))
    a, b = (_Requests(chosen, slo).metric(picked, x["start"], metric).tolist()
            for chosen, x, picked in zip((mine, theirs), (run, parent), picks))
    gains = [x / y for x, y in zip(a, b) if not math.isnan(x) and y and not math.isnan(y)]
    return percentile(gains, 2.5), percentile(gains, 97.5)


# --- the chat ladder's methods (2026-12-03; ladder_chat.py quotes them) ---------------------------------------------
def _step_starts(requests: list[dict[str, Any]]) -> tuple[list[float], list[int]]:
    """The first output (engine clock) and the output count of every engine step (engine_steps' grouping)."""
    outs = sorted(r["engine"]["arrival_time"] + t for r in requests if r.get("engine") for t in r["engine_chunks"])
    firsts: list[float] = []
    sizes: list[int] = []
    for i, t in enumerate(outs):
        if firsts and t - outs[i - 1] < STEP_GAP_S:
            sizes[-1] += 1
        else:
            firsts.append(t)
            sizes.append(1)
    return firsts, sizes


def timed_prompt_windows(requests: list[dict[str, Any]]) -> list[tuple[float, float, int, int]]:
    """prompt_windows with each window's ends on the engine's clock: (start, end, new tokens, outputs)."""
    firsts, sizes = _step_starts(requests)
    sched = sorted((r["engine"]["arrival_time"] + r["engine"]["scheduled_ts"],
                    r["input_len"] - (r["num_cached_tokens"] or 0)) for r in requests if r.get("engine"))
    windows = []
    for a, b, n in zip(firsts, firsts[1:], sizes[1:]):
        new = [tokens for t, tokens in sched if a < t <= b]
        if new:
            windows.append((a, b, sum(new), n))
    return windows


def prompt_windows(requests: list[dict[str, Any]]) -> list[tuple[float, int, int]]:
    """(seconds, new tokens, outputs) of every step window into which a request was scheduled: the gap between two
    consecutive steps' first outputs (engine_steps' grouping) holding at least one request's scheduled_ts. With async
    scheduling the engine core launches the step carrying that prompt inside this gap, before it can emit the running
    step's outputs; without it (speculation) the step ends the gap. New tokens: the scheduled requests' input less
    their cached tokens (a chunked prompt's later chunks are not counted); outputs: those the gap's closing step
    emitted (its running sequences), so new tokens + outputs is the step's size when no prompt was chunked."""
    return [(b - a, new, n) for a, b, new, n in timed_prompt_windows(requests)]


def prompt_window_ms(requests: list[dict[str, Any]], graph_max: int | None = None,
                     inside: bool = True) -> float:
    """Median prompt window (ms); with graph_max, of the windows whose step (new tokens + outputs) fits that largest
    captured CUDA-graph size (inside) or exceeds it (not inside)."""
    gaps = [dt for dt, new, n in prompt_windows(requests)
            if graph_max is None or (new + n <= graph_max) == inside]
    return statistics.median(gaps) * 1e3


def prompt_window_terciles_ms(requests: list[dict[str, Any]]) -> tuple[float, float]:
    """(lowest, highest) tercile median of the prompt windows (ms), the windows ordered by their new tokens."""
    rows = sorted(prompt_windows(requests), key=lambda w: w[1])
    n = len(rows)
    return (statistics.median(dt for dt, _, _ in rows[: n // 3]) * 1e3,
            statistics.median(dt for dt, _, _ in rows[2 * n // 3 :]) * 1e3)


def prompt_window_quantile_ms(requests: list[dict[str, Any]], q: float) -> float:
    """The q-th percentile (0-100) of the prompt windows (ms)."""
    return percentile([dt for dt, _, _ in prompt_windows(requests)], q) * 1e3


def opening_burst(requests: list[dict[str, Any]], users: int) -> tuple[int, float]:
    """(steps, ms) of a closed loop's opening burst: its first `users` requests by send time, sent together, from the
    first one's queueing to the last one's first token by the engine's clock, and the steps that emitted outputs in it."""
    first = sorted(requests, key=lambda r: r["send"])[:users]
    start = min(r["engine"]["arrival_time"] + r["engine"]["queued_ts"] for r in first)
    end = max(r["engine"]["arrival_time"] + r["engine"]["first_token_ts"] for r in first)
    outs = sorted(r["engine"]["arrival_time"] + t for r in requests if r.get("engine") for t in r["engine_chunks"])
    steps = sum(1 for i, t in enumerate(outs) if start <= t <= end and (i == 0 or t - outs[i - 1] >= STEP_GAP_S))
    return steps, (end - start) * 1e3


def _per_token_percentile(chunks: list[tuple[float, int, Any]], q: float) -> float:
    """The q-th percentile of the per-token ITL over (gap, tokens, _) decode chunks, each chunk's gap / tokens counted
    once per token (as ladder_stats computes ITL)."""
    return float(np.percentile(np.repeat([d / k for d, k, _ in chunks], [k for _, k, _ in chunks]), q))


def itl_tail(requests: list[dict[str, Any]], q: float = 99.0, early: int = 5) -> dict[str, float]:
    """The per-token ITL's q-th percentile (ms, as ladder_stats computes it) and the chunks at or above it: their
    tokens, how many of those are one-token chunks, how many lie in a request's first `early` decode chunks, and the
    median gap of those chunks (ms)."""
    chunks = [(t1 - t0, k, i) for r in requests for i, (t0, t1, k) in
              enumerate(zip(r["chunks"], r["chunks"][1:], r["chunk_tokens"][1:]))]
    cut = _per_token_percentile(chunks, q)
    tail = [(d, k, i) for d, k, i in chunks if d / k >= cut]
    return {"p_ms": cut * 1e3, "tokens": sum(k for _, k, _ in tail), "one_token": sum(k for _, k, _ in tail if k == 1),
            "early": sum(k for _, k, i in tail if i < early),
            "gap_ms": statistics.median(d for d, _, _ in tail) * 1e3}


def one_token_chunks(requests: list[dict[str, Any]], early: int = 5) -> tuple[int, int, int, int]:
    """(one-token chunks, chunks) among every request's first `early` decode chunks, then among the later ones."""
    sizes = [(i < early, k) for r in requests for i, k in enumerate(r["chunk_tokens"][1:])]
    return (sum(1 for e, k in sizes if e and k == 1), sum(1 for e, _ in sizes if e),
            sum(1 for e, k in sizes if not e and k == 1), sum(1 for e, _ in sizes if not e))


# --- Llama-3.1-8B's chat ladder and plan_top (2026-12-03 14:26-14:37; ladder_llama_chat.py quotes them) --------------
def itl_tail_windows(requests: list[dict[str, Any]], size: int, q: float = 99.0) -> tuple[int, int, int]:
    """Where the per-token ITL tail (itl_tail's chunks at or above the q-th percentile) sits on the engine's clock:
    (its tokens, those whose output closed a prompt window, those whose window's step (new tokens + outputs) exceeds
    `size`, a largest captured CUDA-graph size). A chunk's output closes a window when it belongs to the step that ends
    the window (the last step starting at or before it: engine_steps' grouping); its client-side gap then spans it."""
    firsts, _ = _step_starts(requests)
    ends = {b: new + n for _, b, new, n in timed_prompt_windows(requests)}
    chunks = [(t1 - t0, k, r["engine"]["arrival_time"] + r["engine_chunks"][i]) for r in requests
              for i, (t0, t1, k) in enumerate(zip(r["chunks"], r["chunks"][1:], r["chunk_tokens"][1:]), start=1)]
    cut = _per_token_percentile(chunks, q)
    tail = [(k, firsts[bisect_right(firsts, t) - 1]) for d, k, t in chunks if d / k >= cut]
    return (sum(k for k, _ in tail), sum(k for k, step in tail if step in ends),
            sum(k for k, step in tail if ends.get(step, 0) > size))


def resampled_metric_interval(run: dict[str, Any], metric: str, slo: Slo, resamples: int = RESAMPLES,
                              seed: int = SEED) -> tuple[float, float]:
    """The 95% interval of one run's `metric` over request resamples (resampled_gain_interval without a parent)."""
    mine = [r for r in records(run) if r.ok]
    picks, _ = _picks(seed, resamples, (len(mine), 0))
    values = _Requests(mine, slo).metric(picks, run["start"], metric).tolist()
    kept = [v for v in values if not math.isnan(v)]
    return percentile(kept, 2.5), percentile(kept, 97.5)


def resampled_window_median_ms(requests: list[dict[str, Any]], graph_max: int, inside: bool = True,
                               resamples: int = RESAMPLES) -> tuple[float, float]:
    """The 95% interval (ms) of prompt_window_ms(requests, graph_max, inside): the selected windows resampled with
    replacement (seeded), the 2.5th and 97.5th percentile of the resamples' medians."""
    gaps = [dt for dt, new, n in prompt_windows(requests) if (new + n <= graph_max) == inside]
    rng = random.Random(SEED)
    medians = [statistics.median(rng.choices(gaps, k=len(gaps))) for _ in range(resamples)]
    return float(np.percentile(medians, 2.5)) * 1e3, float(np.percentile(medians, 97.5)) * 1e3
