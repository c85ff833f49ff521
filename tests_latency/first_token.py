"""Per-request times outside the step model, calibrated on a session's other runs (sv.RequestTimes): the first-token
excess of a prompt (the session's lone prefills' measured/modeled, interpolated to the prompt's length) and the
frontend's ingress and egress (the session's decode.b1 means). Used where a band prices the short-prefill excess and
the frontend apart from the run it is for: the C = 1 closed loop's throughput (test_latency_closed_loop.py) and the
Poisson runs' TTFT below the knee (test_latency_load.py)."""

from __future__ import annotations

import math
from typing import Any

from latency_setups import Setup, median_scatter

from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv

FIRST_TOKEN_LENS = (512, 2048)  # the session's lone-prefill runs that bracket the closed loop's 1,024-token prompts


def first_token_times(setup: Setup, rec: Any, latency_recording: Any) -> tuple[sv.RequestTimes, float, str]:
    """The per-request times of `rec`'s requests outside the step model, from its session's other runs: the prefill
    of its input length at the step model's price x the measured/modeled ratio of the session's lone prefills at
    FIRST_TOKEN_LENS (engine_prefill_s medians), interpolated linearly in log length (the excess over the step model
    is the first-token term); ingress and egress: the means of the session's decode.b1 run (its engine clock against
    the client's). Returns (the times, the excess's scatter in seconds, a note naming the recordings)."""
    s = rec.data["run"]["settings"]
    budget = setup.sched.max_num_batched_tokens
    lo, hi = FIRST_TOKEN_LENS
    ratios, scatters, names = [], [], []
    for n in FIRST_TOKEN_LENS:
        run = latency_recording(f"{setup.model.name}.prefill.l{n}", beside=rec)
        ratios.append(run["engine_prefill_s.median"].value
                      / lat.prefill_time(setup.model, setup.ceilings, setup.calib, n, budget).value)
        scatters.append(median_scatter(run, "engine_prefill_s"))
        names.append(f"{run.name}@{run.recorded_at}")
    w = math.log(s["input_len"] / lo) / math.log(hi / lo)
    ratio = math.exp((1 - w) * math.log(ratios[0]) + w * math.log(ratios[1]))
    modeled = lat.prefill_time(setup.model, setup.ceilings, setup.calib, s["input_len"], budget).value
    b1 = latency_recording(f"{setup.model.name}.decode.b1", beside=rec)
    ingress, egress = b1["aggregate.engine.ingress_s.mean"].value, b1["aggregate.engine.egress_s.mean"].value
    # The finding is about an excess: where a session's lone prefills ran at or under the model (never so far: 1.4-1.8
    # at 1,024 tokens), there is none to add and the band centres on the plain simulation, instead of an error live.
    times = sv.RequestTimes(ingress_s=ingress, first_token_s=modeled * max(ratio - 1, 0.0), egress_s=egress)
    spread = ((1 - w) * scatters[0] + w * scatters[1]) * modeled * ratio
    note = (f"finding band from per-request times calibrated on this session's other runs: first-token excess "
            f"{times.first_token_s * 1e3:.2f} ms (the {s['input_len']}-token prefill modeled {modeled * 1e3:.2f} ms x "
            f"{ratio:.3f}, measured/modeled {ratios[0]:.3f} at {lo} and {ratios[1]:.3f} at {hi} tokens interpolated in "
            f"log length: {', '.join(names)}), ingress {ingress * 1e3:.2f} + egress {egress * 1e3:.2f} ms "
            f"({b1.name}@{b1.recorded_at} means); none of them is this run")
    return times, spread, note
