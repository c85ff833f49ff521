"""A fake vLLM engine for the load driver's CPU tests: generate() streams one token per step on an asyncio timer,
counting the requests in flight, and `drive` runs a LoadDriver against it.

Split out of test_load_driver_cpu.py on 2026-12-07 to keep modules under 500 lines."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any, AsyncIterator

from pytest_anatomy.measure import load_stats as ls
from pytest_anatomy.measure.load_driver import LoadDriver, LoadRun


class FakeEngine:
    """Streams one token per `step_s`, records how many requests were in flight."""

    def __init__(self, step_s: float = 0.002, drop_last: bool = False) -> None:
        self.step_s, self.drop_last = step_s, drop_last
        self.inflight = self.max_inflight = 0
        self.sent: list[float] = []
        self.errored = False

    async def generate(self, prompt: dict[str, Any], params: int, rid: str) -> AsyncIterator[Any]:
        self.sent.append(time.monotonic())
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        m = SimpleNamespace(arrival_time=time.time(), queued_ts=time.monotonic(), scheduled_ts=0.0,
                            first_token_ts=0.0, last_token_ts=0.0, num_generation_tokens=0)
        try:
            m.scheduled_ts = time.monotonic()
            for k in range(params - (1 if self.drop_last else 0)):
                await asyncio.sleep(self.step_s)
                m.last_token_ts = time.monotonic()
                m.first_token_ts = m.first_token_ts or m.last_token_ts
                m.num_generation_tokens += 1
                yield SimpleNamespace(outputs=[SimpleNamespace(token_ids=[k])], metrics=m,
                                      num_cached_tokens=0)
        finally:
            self.inflight -= 1

    def shutdown(self) -> None:
        pass


class FakeDriver(LoadDriver):
    def sampling_params(self, output_len: int) -> int:  # the fake engine only needs the count
        return output_len


def drive(engine: FakeEngine, **kw: Any) -> LoadRun:
    driver = FakeDriver(engine, timeline=[], startup_s=0.0, log=lambda s: None)
    return asyncio.run(driver.run("test", ls.token_id_prompts(kw.pop("n", 12), 8, 1000, 0),
                                  kw.pop("output_len", 5), **kw))
