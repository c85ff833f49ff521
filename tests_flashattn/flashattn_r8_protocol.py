"""r8's barrier protocol as a model: every mbarrier wait and arrival of r8_pingpong.py's three partitions, in order,
run under a random interleaving with the hardware's parity semantics.

Triton's interpreter cannot run Gluon, so a phase bug in r8 (a wait on the wrong parity, an arrival too few, a turn
taken twice) would first show as a hang on the GPU (the preflight's 300 s). This model transcribes the kernel's
protocol, not its arithmetic: the producer's ring (K/V "ready" on the copy, "empty" on two arrivals, one per consumer
warpgroup), and each consumer warpgroup's prologue, steps and last PV with its turn waits. An mbarrier here is what
the PTX one is: a count of completed phases and the arrivals pending in the current one; `try_wait.parity(P)` passes
while the current phase's parity differs from P, so a waiter two phases behind blocks (aliasing) as on the GPU.
A TMA copy's completion is an arrival made at a random later time. Keep it in step with r8_pingpong.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

Op = tuple[str, str, int]  # ("wait", barrier, parity), ("arrive" | "copy", barrier, 0) or ("issue", warpgroup, 0)


@dataclass
class Barrier:
    count: int
    phase: int = 0  # completed phases
    pending: int = 0

    def arrive(self) -> None:
        self.pending += 1
        if self.pending == self.count:
            self.phase, self.pending = self.phase + 1, 0

    def passes(self, parity: int) -> bool:
        return (self.phase & 1) != parity


def producer(tiles: int, stages: int) -> Iterator[Op]:
    yield ("copy", "q", 0)
    for it in range(tiles):
        stage, free = it % stages, ((it // stages) & 1) ^ 1
        yield ("wait", f"k_empty{stage}", free)
        yield ("copy", f"k_ready{stage}", 0)
        yield ("wait", f"v_empty{stage}", free)
        yield ("copy", f"v_ready{stage}", 0)


def consumer(wg: int, tiles: int, stages: int) -> Iterator[Op]:
    mine, other = f"turn{wg}", f"turn{1 - wg}"
    yield ("wait", "q", 0)
    yield ("wait", "k_ready0", 0)
    yield ("wait", mine, (1 - wg) & 1)
    yield ("issue", str(wg), 0)
    yield ("arrive", other, 0)
    yield ("arrive", "k_empty0", 0)
    for it in range(1, tiles):
        stage, prev = it % stages, (it - 1) % stages
        yield ("wait", f"k_ready{stage}", (it // stages) & 1)
        yield ("wait", f"v_ready{prev}", ((it - 1) // stages) & 1)
        yield ("wait", mine, (it + 1 - wg) & 1)
        yield ("issue", str(wg), 0)
        yield ("arrive", other, 0)
        yield ("arrive", f"k_empty{stage}", 0)
        yield ("arrive", f"v_empty{prev}", 0)
    last = tiles - 1
    yield ("wait", f"v_ready{last % stages}", (last // stages) & 1)
    yield ("wait", mine, (last + 2 - wg) & 1)
    yield ("issue", str(wg), 0)
    yield ("arrive", other, 0)


@dataclass
class Run:
    finished: bool
    turns: list[int] = field(default_factory=list)  # the warpgroup of each GEMM issue, in order
    stuck: list[str] = field(default_factory=list)


def simulate(tiles: int, stages: int, seed: int) -> Run:
    """One random interleaving of the three partitions and the copies in flight, to the end or to a deadlock."""
    rng = random.Random(seed)
    bars = {"q": Barrier(1), "turn0": Barrier(1), "turn1": Barrier(1)}
    for s in range(stages):
        bars |= {f"k_ready{s}": Barrier(1), f"v_ready{s}": Barrier(1), f"k_empty{s}": Barrier(2),
                 f"v_empty{s}": Barrier(2)}
    procs = {"producer": producer(tiles, stages), "wg0": consumer(0, tiles, stages), "wg1": consumer(1, tiles, stages)}
    heads: dict[str, Op | None] = {name: next(p, None) for name, p in procs.items()}
    copies: list[str] = []
    run = Run(False)
    while any(heads.values()) or copies:
        ready = [n for n, op in heads.items() if op is not None and (op[0] != "wait" or bars[op[1]].passes(op[2]))]
        if not ready and not copies:
            run.stuck = [f"{n}: {op}" for n, op in heads.items() if op is not None]
            return run
        if copies and (not ready or rng.random() < 0.3):
            bars[copies.pop(rng.randrange(len(copies)))].arrive()
            continue
        name = rng.choice(ready)
        kind, bar, _ = heads[name] or ("", "", 0)
        if kind == "arrive":
            bars[bar].arrive()
        elif kind == "copy":
            copies.append(bar)
        elif kind == "issue":
            run.turns.append(int(bar))
        heads[name] = next(procs[name], None)
    run.finished = True
    return run
