"""Where the simulated engine's tokens land (serving.simulate): after one step, or after a quiet stretch of steps.

Most simulated steps are quiet: every running request decodes one token and nothing else happens (no arrival,
admission, preemption or finish). 87% of the steps and 78% of the request-steps of the suites' simulations were, in
stretches of 15 steps on average. `decode_streak` runs such a stretch without the per-request work of each step (the
scheduler's loop, the step's census, the landing) and gives every request its tokens at the end: the same step times
from the same StepModel.seconds arguments, added in the same order, so every result is the same to the bit
(tests_plugin/test_serving_streak.py checks it against the step-by-step path).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from pytest_anatomy.theory.latency import StepModel


# What these functions read and write of serving's _Request and _Engine, as protocols: serving imports this module,
# and an import back, even for types only, would be an import cycle (test_architecture).
class _Request(Protocol):
    computed: int
    generated: int
    length: int
    target: int
    blocks: int
    shared: int
    credit: float
    token_times: list[float]


class _Engine(Protocol):
    sched: Any  # SchedulerConfig
    work: Any  # Workload
    fixed: Any  # RequestTimes
    free: float
    future: deque[tuple[float, int]]
    next_id: int
    running: list[Any]  # of _Request
    done: list[Any]
    t: float
    steps: int
    running_time: float


def land_tokens(eng: _Engine, scheduled: Sequence[tuple[_Request, int]]) -> None:
    """A request whose chunk completes its sequence emits a token at the step's end; one that reached its output
    length finishes, frees its blocks and, in a closed loop, sends the next once that token reaches the client."""
    t, work, e = eng.t, eng.work, eng.sched.spec_tokens_per_step
    for r, n in scheduled:
        if n > 1 and r.generated and r.computed == r.length - 1:  # verified: the accepted run + one token
            r.credit += e
            g = min(n, max(1, int(r.credit)), r.target - r.generated)
            r.credit -= g
            r.computed += g  # the rejected drafts' KV is discarded
        else:
            r.computed += n
            if r.computed < r.length:
                continue  # a chunk of a longer prompt: no token yet
            g = 1
        r.generated += g
        r.length += g
        if g == 1:
            r.token_times.append(t)
        else:
            r.token_times.extend([t] * g)
        if r.generated >= r.target:
            eng.running.remove(r)
            eng.free += r.blocks - r.shared
            r.blocks = 0
            eng.done.append(r)
            if work.concurrency is not None and eng.next_id < work.num_requests:
                eng.future.append((t + eng.fixed.egress_s, eng.next_id))
                eng.next_id += 1


def decode_streak(eng: _Engine, steps: StepModel, max_steps: int) -> int:
    """After a quiet step (every running request scheduled for one token, none admitted, preempted or finished): run
    the following steps while they stay quiet, and return how many ran (0: the next step is not, simulate takes it).

    A following step stays quiet while no request arrives (checked at each step's start, as _arrive does), no request
    reaches its output length (the stretch stops one step before the first does) and the pool holds every block the
    decodes take (a request takes one when its tokens cross a block: the stretch stops before a step that would
    preempt). Admission stays shut: the step before admitted no one with the same queue head and the same budget left
    (its running requests took a token each, as decodes do), and the free pool only shrinks while the budget and the
    running count stay. Without speculation only (a verify step is not a decode)."""
    sched, running, future, ingress = eng.sched, eng.running, eng.future, eng.fixed.ingress_s
    t, m = eng.t, len(running)
    if sched.spec_tokens or not m or m > sched.max_num_batched_tokens or (future and future[0][0] + ingress <= t):
        return 0
    left = min(min(r.target - r.generated for r in running) - 1, max_steps - eng.steps)
    if left <= 0:
        return 0
    bs = sched.block_size
    crossing = [0] * bs  # requests by computed % block_size: those at residue (1 - j) % bs take a block at step j
    context = 0
    for r in running:
        c = r.computed
        if r.length - c != 1 or not r.generated or r.blocks != -(-c // bs):
            return 0  # not a plain decode (a prompt chunk, or blocks not exactly its tokens'): step by step
        crossing[c % bs] += 1
        context += c
    sizes, pad = sched.capture_sizes, 0
    if sizes:  # a step of decodes only is padded to its CUDA graph's size, as _step_seconds does
        at = bisect.bisect_left(sizes, m)
        pad = sizes[at] - m if at < len(sizes) else 0
    free, taken, first_token_s, times = eng.free, 0, eng.fixed.first_token_s, []
    for k in range(left):
        if k and future and future[0][0] + ingress <= t:
            break  # an arrival: that step is not quiet
        need = crossing[-k % bs]
        if taken + need > free:
            break  # that step would preempt
        taken += need
        # the step's census as _step_seconds takes it: m decodes whose contexts sum to context + m x (k + 1)
        dt = steps.seconds(m, float(context + m * (k + 1)), (), m, pad)
        if first_token_s:
            dt += first_token_s * 0  # no prompt completes in a decode step (the same float operation)
        eng.running_time += m * dt
        t += dt
        times.append(t)
    k = len(times)
    if k:
        eng.t, eng.free, eng.steps = t, free - taken, eng.steps + k
        for r in running:
            r.computed += k
            r.generated += k
            r.length += k
            r.blocks = -(-r.computed // bs)
            r.token_times.extend(times)
    return k
