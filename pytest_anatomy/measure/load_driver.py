"""Load driver over vLLM's in-process AsyncLLM (vLLM 0.26.0 V1 engine), no HTTP server.

Closed loop (at most C requests in flight, the next sent when one finishes: `vllm bench
serve --max-concurrency C --request-rate inf`) and open loop (send offsets from a seeded
Poisson process, load_stats.poisson_arrivals). Prompts are token ids, outputs are forced to
exactly O tokens (ignore_eos, min_tokens = max_tokens = O) and checked per request.

What is recorded, all in our monotonic clock (time.monotonic):
- per request: send time, arrival time and token count of every streamed delta, vLLM's
  RequestStateStats (queued/scheduled/first-token/last-token engine timestamps), cached tokens;
- per engine step: a custom stat logger appends a TimelineStep (scheduled prefill/decode
  tokens from SchedulerIterationDetails, running/waiting, KV usage, preemptions).

Facts relied on, read in vLLM 0.26.0's source:
- AsyncLLM(..., log_stats=False) plus custom stat_loggers turns stats on without the default
  logging loggers (vllm/v1/engine/async_llm.py: `self.log_stats = log_stats or
  has_custom_loggers`; StatLoggerManager adds default loggers only when log_stats), so
  enable_logging_iteration_details does not print one line per step.
- RequestOutput.metrics is the live RequestStateStats of the request
  (vllm/v1/engine/output_processor.py `_new_request_output(..., metrics=self.stats)`).
- IterationStats.num_preempted_reqs counts PREEMPTED events (vllm/v1/metrics/stats.py); the
  Prometheus counter vllm:num_preemptions is read as a cross-check.
- With DELTA output the collector merges deltas when the consumer lags
  (RequestOutputCollector.put), so a chunk can carry > 1 token; counted, never hidden.

vllm is imported inside functions only; this module imports on a CPU machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from pytest_anatomy.measure.load_stats import RequestRecord, TimelineStep


@dataclass(frozen=True)
class EngineConfig:
    """The engine arguments this driver sets; everything else stays at vLLM's default.

    kv_cache_memory_bytes pins the KV pool (vLLM then ignores gpu_memory_utilization for the
    pool size); None keeps the utilization-derived pool."""

    model_dir: str
    max_model_len: int
    gpu_memory_utilization: float = 0.9
    max_num_seqs: int = 128
    max_num_batched_tokens: int = 8192
    enable_prefix_caching: bool = False
    enforce_eager: bool = False
    seed: int = 0
    kv_cache_memory_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def engine_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model_dir,
            "load_format": "dummy",          # random weights from config.json: exact for speed
            "skip_tokenizer_init": True,     # token-id prompts, no tokenizer on the device
            "dtype": "bfloat16",
            "max_model_len": self.max_model_len,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "enable_prefix_caching": self.enable_prefix_caching,
            "enforce_eager": self.enforce_eager,
            "seed": self.seed,
            "disable_log_stats": True,       # our stat logger still turns stats on
            "enable_logging_iteration_details": True,
        }
        if self.kv_cache_memory_bytes is not None:
            kwargs["kv_cache_memory_bytes"] = self.kv_cache_memory_bytes
        kwargs.update(self.extra)
        return kwargs


@dataclass
class LoadRun:
    """The raw outcome of one driver call."""

    label: str
    records: list[RequestRecord]
    expected_requests: int
    start_time: float
    end_time: float
    timeline: list[TimelineStep]
    truncated: bool
    preemptions_prometheus: float | None = None


def _timeline_logger_class(sink: list[TimelineStep], engine_ts: list[float | None]) -> type:
    """A vLLM StatLoggerBase that appends one TimelineStep per engine step to `sink`.
    engine_ts[0] holds the engine timestamp of the step being logged (see _tap_engine_clock)."""
    from vllm.v1.metrics.loggers import StatLoggerBase

    class TimelineLogger(StatLoggerBase):  # type: ignore[misc]
        def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
            self.engine_index = engine_index
            self.last_engine_t: float | None = None

        def record(self, scheduler_stats: Any, iteration_stats: Any,
                   mm_cache_stats: Any = None, engine_idx: int = 0) -> None:
            details = getattr(scheduler_stats, "iteration_details", None)
            if details is None and iteration_stats is None:
                return
            # a step with no request output did not pass through process_outputs: no new stamp
            engine_t = engine_ts[0] if engine_ts[0] != self.last_engine_t else None
            self.last_engine_t = engine_ts[0]
            sink.append(TimelineStep(
                t=time.monotonic(),
                ctx_requests=getattr(details, "num_ctx_requests", 0),
                ctx_tokens=getattr(details, "num_ctx_tokens", 0),
                gen_requests=getattr(details, "num_generation_requests", 0),
                gen_tokens=getattr(details, "num_generation_tokens", 0),
                running=getattr(scheduler_stats, "num_running_reqs", 0),
                waiting=getattr(scheduler_stats, "num_waiting_reqs", 0),
                kv_usage=getattr(scheduler_stats, "kv_cache_usage", 0.0),
                preempted=getattr(iteration_stats, "num_preempted_reqs", 0),
                engine_t=engine_t,
            ))

        def log_engine_initialized(self) -> None:
            pass

    return TimelineLogger


def _tap_engine_clock(engine: Any, engine_ts: list[float | None]) -> bool:
    """Record the engine core's timestamp of each step as the frontend processes it.

    AsyncLLM's output handler calls output_processor.process_outputs(outputs, timestamp,
    iteration_stats) once per chunk of a step, then the stat loggers (vLLM 0.26.0,
    async_llm.py _run_output_handler), so the logger sees the timestamp of its own step.
    Wrapping an internal method is fragile: any failure leaves vLLM untouched."""
    processor = getattr(engine, "output_processor", None)
    original = getattr(processor, "process_outputs", None)
    if processor is None or original is None:
        return False

    def process_outputs(*args: Any, **kwargs: Any) -> Any:
        try:
            ts = args[1] if len(args) > 1 else kwargs.get("engine_core_timestamp")
            if ts:
                engine_ts[0] = float(ts)
        except Exception:
            pass
        return original(*args, **kwargs)

    processor.process_outputs = process_outputs
    return True


def prometheus_total(metric: str = "vllm:num_preemptions") -> float | None:
    """Sum of an in-process Prometheus counter over all label sets; None if absent."""
    try:
        from prometheus_client import REGISTRY
    except ImportError:
        return None
    total, found = 0.0, False
    for family in REGISTRY.collect():
        for sample in family.samples:
            if sample.name in (metric, metric + "_total"):
                total += sample.value
                found = True
    return total if found else None


class LoadDriver:
    """One AsyncLLM plus its step timeline. Create inside a running event loop."""

    def __init__(self, engine: Any, timeline: list[TimelineStep], startup_s: float,
                 log: Callable[[str], None] = print) -> None:
        self.engine = engine
        self.timeline = timeline
        self.startup_s = startup_s
        self.log = log
        self.engine_clock_tapped = False
        self._next_id = 0

    @classmethod
    def start(cls, config: EngineConfig, log: Callable[[str], None] = print) -> "LoadDriver":
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        timeline: list[TimelineStep] = []
        engine_ts: list[float | None] = [None]
        t0 = time.monotonic()
        engine = AsyncLLM.from_engine_args(AsyncEngineArgs(**config.engine_kwargs()),
                                           stat_loggers=[_timeline_logger_class(timeline, engine_ts)])
        driver = cls(engine, timeline, time.monotonic() - t0, log)
        driver.engine_clock_tapped = _tap_engine_clock(engine, engine_ts)
        return driver

    def resolved_settings(self) -> dict[str, Any]:
        """What the engine actually chose (read from its config objects, not its logs)."""
        cfg = self.engine.vllm_config
        cache, sched, comp, model = (cfg.cache_config, cfg.scheduler_config,
                                     cfg.compilation_config, cfg.model_config)
        blocks = getattr(cache, "num_gpu_blocks", None)
        settings = {
            "num_gpu_blocks": blocks,
            "block_size": cache.block_size,
            "kv_cache_tokens": blocks * cache.block_size if blocks else None,
            "kv_cache_size_tokens_reported": getattr(cache, "kv_cache_size_tokens", None),
            "gpu_memory_utilization": cache.gpu_memory_utilization,
            "kv_cache_memory_bytes": getattr(cache, "kv_cache_memory_bytes", None),
            "cache_dtype": str(getattr(cache, "cache_dtype", None)),
            "enable_prefix_caching": getattr(cache, "enable_prefix_caching", None),
            "max_num_batched_tokens": sched.max_num_batched_tokens,
            "max_num_seqs": sched.max_num_seqs,
            "enable_chunked_prefill": getattr(sched, "enable_chunked_prefill", None),
            "async_scheduling": getattr(sched, "async_scheduling", None),
            "max_model_len": model.max_model_len,
            "dtype": str(model.dtype),
            "enforce_eager": model.enforce_eager,
            "cudagraph_mode": str(getattr(comp, "cudagraph_mode", None)),
            "cudagraph_capture_sizes": list(getattr(comp, "cudagraph_capture_sizes", None) or []),
            "max_cudagraph_capture_size": getattr(comp, "max_cudagraph_capture_size", None),
            "compilation_mode": str(getattr(comp, "mode", getattr(comp, "level", None))),
        }
        attention = getattr(cfg, "attention_config", None)
        if attention is not None:
            settings["attention_backend_requested"] = str(getattr(attention, "backend", None))  # None: auto
        return settings

    async def run(self, label: str, prompts: Sequence[list[int]], output_len: int | Sequence[int], *,
                  concurrency: int | None = None, arrivals: Sequence[float] | None = None,
                  deadline: float | None = None, progress_every_s: float = 10.0) -> LoadRun:
        """Send every prompt once. concurrency=C: closed loop; arrivals: open loop (offsets
        in seconds from the start); neither: all at once. At `deadline` (monotonic) unsent
        requests are dropped and in-flight ones aborted; the run is then marked truncated.
        output_len: one length for every request, or request i's own (a deployment workload's)."""
        if arrivals is not None and len(arrivals) != len(prompts):
            raise ValueError(f"{label}: {len(arrivals)} arrival offsets for {len(prompts)} prompts")
        lens = [output_len] * len(prompts) if isinstance(output_len, int) else list(output_len)
        if len(lens) != len(prompts):
            raise ValueError(f"{label}: {len(lens)} output lengths for {len(prompts)} prompts")
        params = {n: self.sampling_params(n) for n in set(lens)}
        semaphore = asyncio.Semaphore(concurrency) if concurrency else None
        records: list[RequestRecord] = []
        step0 = len(self.timeline)
        prom0 = prometheus_total()
        start = time.monotonic()

        async def one(i: int, ids: list[int]) -> None:
            planned = None
            if arrivals is not None:
                planned = start + arrivals[i]
                await asyncio.sleep(max(0.0, planned - time.monotonic()))
            async with semaphore or contextlib.nullcontext():
                if deadline is None or time.monotonic() < deadline:
                    records.append(await self._request(ids, params[lens[i]], lens[i], planned))

        tasks = [asyncio.create_task(one(i, ids)) for i, ids in enumerate(prompts)]
        progress = asyncio.create_task(self._progress(label, records, len(prompts), start,
                                                      progress_every_s))
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        progress.cancel()
        end = time.monotonic()
        prom1 = prometheus_total()
        self.log(f"[load] {label}: {sum(r.ok for r in records)}/{len(prompts)} ok in "
                 f"{end - start:.1f} s{' (TRUNCATED at deadline)' if pending else ''}")
        return LoadRun(label=label, records=records, expected_requests=len(prompts),
                       start_time=start, end_time=end, timeline=self.timeline[step0:],
                       truncated=bool(pending) or len(records) < len(prompts),
                       preemptions_prometheus=None if prom0 is None or prom1 is None else prom1 - prom0)

    def sampling_params(self, output_len: int) -> Any:
        """Exactly output_len tokens (EOS ignored, min = max), greedy like the seed's
        `--temperature 0`, token ids only, streamed as deltas."""
        from vllm.sampling_params import RequestOutputKind, SamplingParams

        return SamplingParams(max_tokens=output_len, min_tokens=output_len, ignore_eos=True,
                              detokenize=False, temperature=0.0,
                              output_kind=RequestOutputKind.DELTA)

    async def _request(self, ids: list[int], params: Any, output_len: int,
                       planned: float | None) -> RequestRecord:
        rid = f"req-{self._next_id}"
        self._next_id += 1
        times: list[float] = []
        tokens: list[int] = []
        engine_times: list[float] = []
        metrics: Any = None
        cached: int | None = None
        error: str | None = None
        send = time.monotonic()
        try:
            async for out in self.engine.generate({"prompt_token_ids": ids}, params, rid):
                now = time.monotonic()
                n = sum(len(c.token_ids) for c in out.outputs)
                if n:
                    times.append(now)
                    tokens.append(n)
                    if out.metrics is not None:
                        metrics = out.metrics
                        engine_times.append(float(out.metrics.last_token_ts))
                cached = out.num_cached_tokens
        except asyncio.CancelledError:
            error = "aborted at the part's deadline"
        except Exception as exc:  # one failed request must not end the run: recorded instead
            error = f"{type(exc).__name__}: {exc}"
        engine = {}
        if metrics is not None:
            engine = {k: float(getattr(metrics, k)) for k in
                      ("arrival_time", "queued_ts", "scheduled_ts", "first_token_ts",
                       "last_token_ts", "num_generation_tokens") if hasattr(metrics, k)}
        return RequestRecord(request_id=rid, input_len=len(ids), expected_output_len=output_len,
                             send_time=send, chunk_times=tuple(times), chunk_tokens=tuple(tokens),
                             scheduled_time=planned, engine=engine,
                             engine_chunk_times=tuple(engine_times), num_cached_tokens=cached,
                             error=error)

    async def _progress(self, label: str, records: list[RequestRecord], total: int,
                        start: float, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            self.log(f"[load] {label}: {len(records)}/{total} done after "
                     f"{time.monotonic() - start:.0f} s")

    def shutdown(self) -> None:
        self.engine.shutdown()
