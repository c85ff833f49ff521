"""H200, vLLM 0.26.0, Qwen2.5-7B under load: closed loop C = 1..64, Poisson arrivals at five
rates, and one overload run, against the continuous-batching simulation.

The simulation runs each recorded workload as designed (same prompts, concurrency, Poisson
seed and normalisation, engine limits and KV pool) with step times from the calibrated step
model (conftest.h200_setup; in-sample: decode.b1 and prefill.l8192, none of the runs here,
though closed.c1 runs in the b=1 decode regime decode.b1 was fitted on: its note says so).
Simulated TTFT has no frontend (HTTP-less here, but the asyncio output loop still delays
ingress and egress); measured TTFT is the client's.
"""

from __future__ import annotations

import pytest
from latency_setups import h200_workload

from pytest_anatomy.measure import Measurement
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import serving as sv
from pytest_anatomy.theory.prediction import Prediction, Term

CLOSED = (1, 8, 32, 64)
POISSON = ("0.25", "0.5", "0.8", "1", "1.3")
TPUT_WHY = "issue 4's target for throughput (10%)"
ITL_WHY = "issue 4's decode target (10%): the median is a decode step, the mean a step-weighted average"
TTFT_WHY = "issue 4's target for p50 TTFT below the knee (25%)"


def _workload(rec) -> sv.Workload:
    s = rec.data["run"]["settings"]
    if rec.data["run"]["kind"] == "poisson":
        return sv.Workload.poisson(s["rate"], s["requests"], s["input_len"], s["output_len"], s["seed"],
                                   normalize=bool(s.get("normalized_like_bench_serve")))
    return sv.Workload.closed(s.get("concurrency") or s["requests"], s["requests"], s["input_len"], s["output_len"])


def _label(rec) -> str:
    return f"{rec.name}: {rec.data['run']['settings']}"


def _sim(setup, rec) -> sv.SimResult:
    return setup.simulate(_workload(rec))


def _kw(setup) -> dict[str, str]:
    return {"model": setup.model.name, "hardware": "h200"}


@pytest.mark.gpu
@pytest.mark.parametrize("c", CLOSED[:-1])
def test_closed_loop_throughput(c, h200_setup, measured, reconcile):
    rec = measured(f"qwen2.5-7b.closed.c{c}", hardware="h200")
    res = _sim(h200_setup, rec)
    notes = [h200_setup.check_held_out(h200_workload(rec), "output_throughput")]
    t_overhead = next(f for f in h200_setup.fits if f.constant == "t_overhead")
    if c == dict(t_overhead.workload).get("batch"):  # every decode step has the fitted batch
        share = 1 - res.stat("ttft", "mean") / res.stat("e2e", "mean")
        notes.append(f"held out by workload, but C={c} decodes at batch {c}, the regime t_overhead was fitted "
                     f"on ({t_overhead.recording}); decode steps are {share:.1%} of the simulated request time, so "
                     "this mostly repeats that fit (reproducibility across run kinds) and tests the prefill and the "
                     "loop around it")
    pred = sv.as_prediction(res, "output_throughput", "", "tokens/s", _label(rec), tuple(notes))
    reconcile("output_throughput", pred, rec["aggregate.output_throughput_tok_per_s"], rel=0.10, why=TPUT_WHY,
              **_kw(h200_setup))


@pytest.mark.gpu
def test_saturation_throughput(h200_setup, measured, reconcile):
    """The plan's saturation point (C=64, whose request rate set the Poisson rates): the simulated
    finite run at the target, and the steady-state closed form as a bound. The closed form has no
    ramp-up or drain, so the measured run (three waves of 64) can only fall below it; how far
    the transient alone takes it is simulate's (finite run vs its steady state between the first
    and last wave). The engine's own knee (max_num_seqs = 128, KV permitting) is higher; it is
    reported as a term, not measured yet."""
    rec = measured("qwen2.5-7b.closed.c64", hardware="h200")
    res = _sim(h200_setup, rec)
    measured_tput = rec["aggregate.output_throughput_tok_per_s"]
    reconcile("output_throughput", sv.as_prediction(res, "output_throughput", "", "tokens/s", _label(rec)),
              measured_tput, rel=0.10, why=TPUT_WHY, **_kw(h200_setup))
    s = rec.data["run"]["settings"]
    steady = lat.closed_loop_throughput(h200_setup.model, h200_setup.ceilings, h200_setup.calib, 64, s["input_len"],
                                        s["output_len"], h200_setup.sched.max_num_batched_tokens)
    knee = h200_setup.knee_rate(s["input_len"], s["output_len"])
    steady_sim = h200_setup.steady_rate(64, s["input_len"], s["output_len"]) * s["output_len"]
    transient = 1 - res.output_throughput / steady_sim  # ramp-up + drain share of this finite run
    steady = Prediction(steady.value, steady.unit, steady.formula, steady.inputs,
                        terms=(*steady.terms,
                               Term("simulated steady state, C=64", steady_sim, "tokens/s",
                                    "between the first and the last wave"),
                               Term("simulated finite run", res.output_throughput, "tokens/s", _label(rec)),
                               Term("engine knee: closed loop at max_num_seqs", knee * s["output_len"],
                                    "tokens/s", f"{knee:.1f} requests/s")),
                        notes=(*steady.notes, h200_setup.calib.describe()))
    lo = (1 - transient) * (1 - 0.10)
    reconcile("output_throughput_steady_state", steady, measured_tput, ratio=(lo, 1.0),
              why=f"a bound, not a point: a finite run cannot beat its steady state (measured/predicted <= 1); below, "
                  f"the ramp-up and drain simulate puts at {transient:.1%} of this run ({res.output_throughput:.0f} "
                  f"vs {steady_sim:.0f} tok/s steady), then issue 4's 10% throughput target: "
                  f"(1 - {transient:.3f}) x 0.90 = {lo:.3f}", **_kw(h200_setup))


@pytest.mark.gpu
@pytest.mark.parametrize("c", CLOSED[1:])
def test_closed_loop_itl_mean_and_median(c, h200_setup, measured, reconcile):
    rec = measured(f"qwen2.5-7b.closed.c{c}", hardware="h200")
    res = _sim(h200_setup, rec)
    reconcile("itl_median", sv.as_prediction(res, "itl", "p50", "s", _label(rec)), rec["aggregate.itl_s.median"],
              rel=0.10, why=ITL_WHY, **_kw(h200_setup))
    reconcile("itl_mean", sv.as_prediction(res, "itl", "mean", "s", _label(rec)), rec["aggregate.itl_s.mean"],
              rel=0.10, why=ITL_WHY, **_kw(h200_setup))


TTFT_FINDING = pytest.mark.finding(
    "h200-ttft-short-prefill-and-frontend", quantity="ttft_p50",
    reason="Below the knee TTFT p50 is one 1,024-token prefill, simulated at 23-26 ms (a step at eta = 0.79) but "
           "measured at 41-76 ms. Two parts: the engine's own prefill of 1,024 tokens takes 34-62 ms (median "
           "scheduling-to-first-token), the lone-short-prefill excess seen in test_prefill[128/512] and in closed.c1 "
           "(31.6 ms); and the frontend's ingress + egress (5-14 ms, growing with load) that the simulation omits.",
    expected=(1.3, 2.2))
ENGINE_TTFT_FINDING = pytest.mark.finding(
    "h200-ttft-short-prefill-and-frontend", quantity="engine_ttft_p50", reason=TTFT_FINDING.kwargs["reason"],
    expected=(1.2, 1.6))


@pytest.mark.gpu
@TTFT_FINDING
@pytest.mark.parametrize("factor", POISSON)
def test_poisson_ttft_p50_below_the_knee(factor, h200_setup, measured, reconcile):
    """Open loop at factor x the C=64 request rate, all below the simulated knee (~31 req/s at
    max_num_seqs = 128)."""
    rec = measured(f"qwen2.5-7b.poisson.f{factor}", hardware="h200")
    s = rec.data["run"]["settings"]
    knee = h200_setup.knee_rate(s["input_len"], s["output_len"])
    assert s["rate"] < knee, f"{s['rate']:.1f} req/s is not below the predicted knee ({knee:.1f} req/s)"
    res = _sim(h200_setup, rec)
    pred = sv.as_prediction(res, "ttft", "p50", "s", _label(rec))
    reconcile("ttft_p50", pred, rec["aggregate.ttft_s.median"], rel=0.25, why=TTFT_WHY, **_kw(h200_setup))
    # Engine-side TTFT (no frontend): queue + prefill medians; below the knee queue is ~10 us.
    q, p = rec["aggregate.engine.queue_s.median"], rec["aggregate.engine.prefill_s.median"]
    engine = Measurement(q.value + p.value, "s", source=p.source,
                         provenance={**p.provenance, "derived": "median queue_s + median prefill_s (engine clock)"})
    reconcile("engine_ttft_p50", pred, engine, rel=0.25, why=TTFT_WHY, **_kw(h200_setup))


test_poisson_ttft_p50_below_the_knee = ENGINE_TTFT_FINDING(test_poisson_ttft_p50_below_the_knee)


ITL_UNDER_LOAD = ("At the higher rates the simulated ITLs run 10-18% short, the two decode findings combined: the "
                  "median is a decode step of 50-90 sequences, where each sequence costs ~1.4x its KV bytes "
                  "(h200-decode-per-sequence-cost: b=64 +6%, b=128 +13%), and the mean adds the steps that carry a "
                  "1,024-token prompt, which the engine runs in ~35-60 ms instead of the ~25 ms modeled "
                  "(h200-ttft-short-prefill-and-frontend).")


@pytest.mark.gpu
@pytest.mark.parametrize("factor", [*POISSON[:2], pytest.param("0.8", marks=pytest.mark.finding(
    "h200-itl-under-load", quantity="itl_mean", reason=ITL_UNDER_LOAD, expected=(1.10, 1.25))), "1",
    pytest.param("1.3", marks=pytest.mark.finding("h200-itl-under-load", reason=ITL_UNDER_LOAD,
                                                  expected=(1.10, 1.25)))])
def test_poisson_itl_mean_and_median(factor, h200_setup, measured, reconcile):
    rec = measured(f"qwen2.5-7b.poisson.f{factor}", hardware="h200")
    res = _sim(h200_setup, rec)
    reconcile("itl_median", sv.as_prediction(res, "itl", "p50", "s", _label(rec)), rec["aggregate.itl_s.median"],
              rel=0.10, why=ITL_WHY, **_kw(h200_setup))
    reconcile("itl_mean", sv.as_prediction(res, "itl", "mean", "s", _label(rec)), rec["aggregate.itl_s.mean"],
              rel=0.10, why=ITL_WHY, **_kw(h200_setup))


@pytest.mark.gpu
def test_overload_preemption(h200_setup, measured, reconcile):
    """128 prompts of 16,113 + 1,024 tokens against a 2.06M-token pool (1.06x): the pool holds
    120 such requests at full length, so preemption must start; how many times, and how many run."""
    rec = measured("qwen2.5-7b.overload", hardware="h200")
    s = rec.data["run"]["settings"]
    res = _sim_overload(h200_setup, rec)
    onset = sv.kv_concurrency(int(h200_setup.sched.usable_blocks) * h200_setup.sched.block_size,
                              s["input_len"], s["output_len"], h200_setup.sched.block_size)["never_preempted"]
    assert s["requests"] > onset.value, "the workload does not oversubscribe the pool: no preemption predicted"
    timeline = rec.data["run"]["result"]["timeline"]  # per-step stat logger: preempted requests, running
    prom = rec["preemptions_prometheus"]  # vllm:num_preemptions, the engine's own counter
    assert timeline["preemptions"] == prom.value, "the step log and the Prometheus counter disagree"
    reconcile("preemptions", sv.as_prediction(res, "preemptions", "", "events", _label(rec)), prom, abs=1.0,
              why="a handful of discrete events: one more or less is the granularity of the event", **_kw(h200_setup))
    peak = Measurement(float(timeline["max_running"]), "requests", source=prom.source,
                       provenance={**prom.provenance, "derived": "max of the per-step running count"})
    reconcile("max_running", sv.as_prediction(res, "max_running", "", "requests", _label(rec)), peak, abs=1.0,
              why="one request admitted a step earlier or later changes the peak by one", **_kw(h200_setup))


def _sim_overload(setup, rec) -> sv.SimResult:
    s = rec.data["run"]["settings"]
    return setup.simulate(sv.Workload.closed(s["requests"], s["requests"], s["input_len"], s["output_len"]))


@pytest.mark.gpu
def test_overload_latency_and_throughput(h200_setup, measured, reconcile):
    rec = measured("qwen2.5-7b.overload", hardware="h200")
    res = _sim_overload(h200_setup, rec)
    label = _label(rec)
    kw = _kw(h200_setup)
    reconcile("output_throughput", sv.as_prediction(res, "output_throughput", "", "tokens/s", label),
              rec["aggregate.output_throughput_tok_per_s"], rel=0.10, why=TPUT_WHY, **kw)
    reconcile("ttft_p50", sv.as_prediction(res, "ttft", "p50", "s", label), rec["aggregate.ttft_s.median"],
              rel=0.25, why="issue 4's TTFT target (25%)", **kw)
    reconcile("itl_median", sv.as_prediction(res, "itl", "p50", "s", label), rec["aggregate.itl_s.median"],
              rel=0.10, why=ITL_WHY, **kw)
    reconcile("itl_mean", sv.as_prediction(res, "itl", "mean", "s", label), rec["aggregate.itl_s.mean"],
              rel=0.10, why=ITL_WHY, **kw)


MIXED_PREFILL = "h200-overload-prefill-in-kv-bound-steps"
MIXED_REASON = ("Under overload a prompt's two chunks (8,192 + 7,921 tokens) share steps with ~125 decodes that each "
                "read ~16,600 tokens of KV (~120 GB, 27 ms a step at 4.47 TB/s). The step model takes max(memory, "
                "compute) and hides that traffic under the chunk's 150 ms of compute; the engine's prefill part of "
                "TTFT is 0.91 s against 0.63 s simulated, so the two overlap only partly (or the steps between "
                "chunks are longer). Queueing still dominates TTFT either way (96% vs 98% simulated).")


@pytest.mark.gpu
@pytest.mark.finding(MIXED_PREFILL, quantity="prefill_part_of_ttft", reason=MIXED_REASON, expected=(1.3, 1.6))
@pytest.mark.finding(MIXED_PREFILL, quantity="queueing_share_of_ttft", expected=(0.97, 1.0), reason=(
    "Measured queueing share 96.2% vs 97.7% simulated (-1.5 pp, outside the fixed 1 pp budget): the engine's prefill "
    "part of TTFT is 0.27 s longer than simulated (0.9 pp of the 29 s TTFT; " + MIXED_REASON.split(";")[0] + ") and "
    "ingress + egress take 0.2 s (0.7 pp) under overload, 15-40x their 5-14 ms below the knee."))
def test_overload_queueing_share_of_ttft(h200_setup, measured, reconcile):
    """Engine queue time over client TTFT, both means: TTFT in overload is queueing."""
    rec = measured("qwen2.5-7b.overload", hardware="h200")
    res = _sim_overload(h200_setup, rec)
    q, t = rec["aggregate.engine.queue_s.mean"], rec["aggregate.ttft_s.mean"]
    share = Measurement(q.value / t.value, "", source=q.source,
                        provenance={**q.provenance, "derived": "mean engine queue_s / mean client TTFT"})
    pred = Prediction(res.stat("queue", "mean") / res.stat("ttft", "mean"), "", "mean queue / mean TTFT (simulated)",
                      terms=(Term("mean queue", res.stat("queue", "mean"), "s"),
                             Term("mean TTFT", res.stat("ttft", "mean"), "s")))
    sim_prefill = 1 - pred.value
    reconcile("queueing_share_of_ttft", pred, share, abs=0.01,
              why=f"a fixed 1 pp budget set from the prediction, not from this run: the simulated prefill share "
                  f"({sim_prefill:.1%}) held to the TTFT target (25%: {0.25 * sim_prefill * 100:.1f} pp), the rest for "
                  "the frontend the simulation omits (ingress + egress: 5-14 ms per request below the knee; 0.4 pp is "
                  "~0.12 s of a ~30 s TTFT)", **_kw(h200_setup))
    prefill_part = Prediction(res.stat("ttft", "mean") - res.stat("queue", "mean"), "s",
                              "mean TTFT - mean queue (simulated): first scheduling to first token",
                              notes=res.calibration)
    reconcile("prefill_part_of_ttft", prefill_part, rec["aggregate.engine.prefill_s.mean"], rel=0.25,
              why="issue 4's TTFT target (25%)", **_kw(h200_setup))


@pytest.mark.gpu
def test_overload_every_request_completes_exactly(measured, reconcile):
    """No request fails, and each one emits exactly output_len tokens (ignore_eos): read from the
    per-request counts, not from the harness's aggregate (whose sum could hide a +1/-1 pair)."""
    rec = measured("qwen2.5-7b.overload", hardware="h200")
    s = rec.data["run"]["settings"]
    reconcile("failed_requests", Prediction(0.0, "count", "0: every request fits the KV pool alone"),
              rec["aggregate.failed"])
    counts = rec.data["run"]["result"]["per_request"]["output_tokens"]
    src = rec["aggregate.failed"]
    per_request = Prediction(float(s["output_len"]), "tokens", "output_len (ignore_eos)", dict(s))
    reconcile("requests_answered", Prediction(float(s["requests"]), "requests", "requests sent", dict(s)),
              Measurement(float(len(counts)), "requests", source=src.source,
                          provenance={**src.provenance, "derived": "rows of data.run.result.per_request"}))
    for stat, fn in (("min", min), ("max", max)):
        reconcile(f"output_tokens_per_request_{stat}", per_request,
                  Measurement(float(fn(counts)), "tokens", source=src.source,
                              provenance={**src.provenance, "derived": f"{stat} of per_request.output_tokens"}))
