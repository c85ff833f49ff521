"""vLLM 0.26.0, Qwen2.5-7B on each target card: the decode step at batch 1-128 and the lone prefill
at 128-32,000 tokens, against the step model with the ceilings measured in the same session.

Recordings: results/<card>/latency/qwen2.5-7b.decode.b*, .prefill.l* (scripts/device/latency_plan.py,
live: the same program once per session, tests_latency/latency_live_plan.py;
decode step = median steady ITL of B requests of 1024/128 sent at once; prefill = median
engine time from scheduling to first token of a lone request, one warm-up discarded).
In-sample (conftest.engine_setup), on sessions without tiny-hidden overhead models: decode.b1
(t_overhead) and prefill.l8192 (eta), reconciled as kind "fit"; the other checks verify from the
recordings' settings that they test neither (Setup.check_held_out). Tolerances are each run's
measured noise (step_budget); decode gaps beyond it carry findings banded by the other session.
test_prefill[16384]'s first chunk is the 8,192-token step eta was fitted on; its note says so.
"""

from __future__ import annotations


import latency_findings as lf
from latency_card_findings import card_finding  # noqa: F401 - the fixture, used by name
from latency_card_spread import transfer_card_spread
import latency_h100_findings as h100f
import pytest
from latency_findings_common import MEASURED_ON, claims

from pytest_anatomy import recordings
from pytest_anatomy.cli_calibration import b1_residuals
from latency_b1_overheads import B1_OVERHEAD_BY_SESSION_MS, other_sessions_overheads_s
from latency_step_checks import (BUDGET_WHY, ROOFLINE_WHY, TRANSFER_BUDGET_WHY, above_gemms_marks_for, decode_budget,
                                 decode_run, marginal_cost, pool_regime, prefill_budget, prefill_roofline_noise,
                                 roofline_budget, run_setup, slow_session_band, slow_session_mark_for,
                                 stalled_run_marks_for)
from latency_setups import h200_workload, mean_context, median_scatter, validity_note, with_note

from pytest_anatomy.measure import Measurement
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.prediction import Prediction, Term

# Recorded Qwen2.5-7B decode runs (or the live target): the runs these tests read exist there.
pytestmark = pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=True)
# Tests whose live measurements are in the slow plan only (a second engine for Llama-3.1-8B).
LIVE_SLOW_TESTS = ("test_decode_overhead_transfers_to_a_second_model",
                   "test_prefill_efficiency_transfers_to_a_second_model", "test_marginal_cost_per_sequence")

BATCHES = (2, 4, 8, 16, 32, 64, 128)
PREFILL = (128, 512, 2048, 16384, 32000)


@pytest.fixture
def above_gemms(request) -> None:
    """Marks a long lone prefill with h200-prefill-above-its-gemms when its setup takes eta from the session's GEMM
    timings (requested before `reconcile`, which reads the marks): with eta fitted on the 8,192 prefill (the
    sessions before 2026-12-01 06:44, a live session without them) the finding does not apply."""
    for mark in above_gemms_marks_for(request):
        request.applymarker(mark)


@pytest.fixture
def stalled_run(request, session_rec) -> None:
    """Puts h200-decode-stalled-run ahead of the case's other finding marks when a replayed decode run the case reads is
    one the run-validity check flags (latency_setups.run_validity; requested before `reconcile`, which reads the marks;
    the first mark covering a quantity is the one judged): the decode step's own run at batch b, or for the
    per-sequence slope any of its runs at b = 1..64. Any session, batch and model; never a run the check passes."""
    for mark in stalled_run_marks_for(request, session_rec):
        request.node.add_marker(mark, append=False)


@pytest.fixture
def slow_session(request, latency_recording) -> None:
    """Puts h200-one-session-above-every-other ahead of the case's other finding marks when the run it judges is one
    that finding lists (latency_run_validity_findings.SLOW_SESSION_RUNS); the test sets its band from the run
    (checked-run)."""
    mark = slow_session_mark_for(request, latency_recording)
    if mark is not None:
        request.node.add_marker(mark, append=False)


@pytest.mark.gpu
@pytest.mark.parametrize("b", [pytest.param(b, marks=(*lf.decode_step_marks("qwen2.5-7b", b),
                                                       *((h100f.B2_STEP,) if b == 2 else ())))
                               for b in (1, *BATCHES)])
def test_decode_step(b, latency_recording, stalled_run, slow_session, reconcile, anatomy_benchmark, request):
    """Median steady ITL of b sequences at the mean context (1024 + 128/2). b=1 is a fit point (kind
    "fit") where the session's t_overhead is Qwen's own b=1 residual, a prediction where it comes from
    the tiny overhead models. The run is the first the validity check passes (the live plan measures a flagged
    part once more); a flagged run's check values are in the reconciliation's note."""
    rec, ctx = decode_run(latency_recording, b)
    engine_setup = run_setup(request, "qwen2.5-7b", rec)
    anatomy_benchmark(rec, "step_time_s")  # the steady ITLs (the engine's steps), as pytest-benchmark rounds
    note = engine_setup.check_held_out(h200_workload(rec), "step_time_s", repeat=None if b == 1 else False)
    pred = lat.decode_step_time(engine_setup.model, engine_setup.ceilings, engine_setup.calib, b, ctx)
    budget = decode_budget(engine_setup, pred, rec)
    b2_band = (h100f.b2_step_band(pred.value, sum(budget.values()))
               if claims(request, h100f.B2_STEP_ID, engine_setup.label) else
               slow_session_band(request, engine_setup, rec["step_time_s"].value / pred.value, budget))
    reconcile("decode_step", with_note(pred, note, *validity_note(rec)), rec["step_time_s"],
              budget=budget, why=BUDGET_WHY, model=engine_setup.model.name, finding_band=b2_band,
              kind=engine_setup.kind_of(h200_workload(rec), "step_time_s"))


@pytest.mark.gpu
@pytest.mark.parametrize("model_name", ["qwen2.5-7b", "llama-3.1-8b"])
def test_streamed_weight_bytes_are_the_loaded_parameters(model_name, target, measured, reconcile):
    """The matmul weights a decode step is priced to stream (theory/latency.matmul_weight_bytes) plus those it does
    not stream (the embedding, gathered one row per token; norms) are the parameter bytes vLLM loaded: the engine's
    recorded model memory less the load replay's non-parameter allocations (rope cache, scale buffers, the caching
    allocator's rounding; tests_capacity holds each to the byte). Exact. Without this check the calibration absorbs
    a weight-bytes error: latency-matmul-weights-x1.05 (tests_plugin/theory_mutants.py) moved the b=1 prediction by
    less than the recorded sessions' overhead spread, and survived once a session with a mid-range overhead became
    the newest (2026-12-04 10:12)."""
    from dataclasses import replace

    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import capacity as cap
    from pytest_anatomy.theory.vllm_load import replay_load

    rec = measured(f"vllm-ledger.{model_name}.u0.90.len8192.eager", target=target, suite="capacity",
                   measured_by="tests_capacity")
    model = load_model(model_name)
    replay = replay_load(model)
    memory = rec["model_memory_bytes"]
    loaded = replace(memory, value=memory.value - (replay.allocated - replay.parameter_bytes))
    streamed = lat.matmul_weight_bytes(model)
    gathered = cap.weight_bytes(model).value - cap.weight_bytes(model, matmul_only=True).value
    pred = Prediction(streamed + gathered, "B", "matmul_weight_bytes + the bytes a step does not stream",
                      {"model": model_name}, (Term("matmul weights streamed per step", streamed, "B"),
                                              Term("embedding and norms (not streamed)", gathered, "B")))
    reconcile("streamed_weight_bytes_vs_loaded_parameters", pred, loaded, abs=0.0, model=model_name,
              why="exact: integer parameter bytes; the loaded side is model_memory_bytes less the load replay's "
                  "non-parameter allocations")


@pytest.mark.gpu
def test_kv_read_per_block_is_what_the_engine_allocates(engine_setup, latency_recording, reconcile):
    """The KV bytes a decode step is priced to read for a context (theory/latency.kv_read_bytes) are the bytes the
    engine stores for it: with the pool pinned (kv_cache_memory_bytes), vLLM's block count is that pool over one
    block's KV, which kv_read_bytes gives at block_size tokens. Exact. Without it the step model could price a KV layout
    other than the one the engine allocates, and the per-sequence excess (h200-decode-per-sequence-cost) would hide it:
    a 5% error in the KV read moves every decode ratio by 2% or less (tests_plugin/theory_mutants.py)."""
    b1 = latency_recording("qwen2.5-7b.decode.b1")
    engine = latency_recording("qwen2.5-7b.engine", beside=b1)
    if not engine_setup.kv_pinned:
        pytest.skip("the engine's KV pool was sized by memory profiling, not pinned: its blocks are tests_capacity's")
    pinned = engine["resolved.kv_cache_memory_bytes"].value
    block = int(engine["resolved.block_size"].value)
    per_block = lat.kv_read_bytes(engine_setup.model, block)
    pred = Prediction(float(int(pinned) // int(per_block)), "blocks", "floor(kv_cache_memory_bytes / kv_read_bytes("
                      "block_size tokens))", {"kv_cache_memory_bytes": pinned, "block_size": block,
                                              "kv_read_bytes_per_block": per_block},
                      (Term("kv_read_bytes_per_block", per_block, "B"),))
    reconcile("num_gpu_blocks_from_kv_read", pred, engine["resolved.num_gpu_blocks"], abs=0.0,
              why="exact: integer blocks of a pinned pool", model=engine_setup.model.name)


@pytest.mark.gpu
@pytest.mark.usefixtures("card_finding")  # before reconcile, which reads the marks
@lf.DECODE_ROOFLINE
@h100f.OVERHEAD
def test_decode_roofline_without_overhead(engine_setup, latency_recording, reconcile, anatomy_benchmark):
    rec, ctx = decode_run(latency_recording, 1)
    anatomy_benchmark(rec, "step_time_s")  # b=1 (the fit point's timing), as pytest-benchmark rounds
    pred = lat.decode_step_time(engine_setup.model, engine_setup.ceilings, lat.UNCALIBRATED, 1, ctx)
    # The recorded H200 sessions' overheads (b=1 step less its bare roofline), pinned (latency_b1_overheads says why),
    # on this run's roofline, never the checked session's own: on the H200 the band of h200-decode-step-overhead, on
    # the H100 that of h100f.OVERHEAD; on any other card the mark does not apply and the reconciler drops the band.
    residuals = other_sessions_overheads_s(rec.recorded_at)
    band = h100f.overhead_band(pred.value, residuals) if residuals else None
    reconcile("decode_step_roofline", pred, rec["step_time_s"], why=ROOFLINE_WHY,
              budget=roofline_budget(engine_setup, rec, "itl_steady_engine_clock_s", "bandwidth"),
              model=engine_setup.model.name, finding_band=band)


@pytest.mark.gpu
@lf.TINY_OVERHEAD_FINDING
def test_tiny_models_overhead_as_an_additive_term(qwen, session_rec, target, setup_builders, tiny_overhead_fit, request,
                                                  reconcile):
    """The step overhead measured apart, as the calibration was designed to use it: c0 + c_layer x layers fitted on
    the tiny-hidden twins' b=1 steps of one session, added to Qwen2.5-7B's b=1 roofline in that session, against
    Qwen2.5-7B's measured b=1 step. Needs a session that ran the twins at two layer counts (the newest such)."""
    import dataclasses

    from pytest_anatomy.session import get_session

    build_engine_setup, _ = setup_builders
    if not session_rec.has("qwen2.5-7b-tiny-l2.decode.b1"):  # asked first: a live plan without it measures nothing
        pytest.skip("no session of this target ran the 2-layer tiny twin: the overhead's layer term has no data "
                    "(the live plans run no twin since 2026-12-02: latency_live_plan.LIVE_OVERHEAD; "
                    "scripts/device/latency_plan.py runs both)")
    twin = session_rec("qwen2.5-7b-tiny-l2.decode.b1")
    b1 = session_rec("qwen2.5-7b.decode.b1", beside=twin)
    overhead = tiny_overhead_fit(session_rec, target, b1)
    if overhead is None:
        pytest.skip("the session with the 2-layer twin did not run the 28-layer one: no layer term to test")
    setup = build_engine_setup(qwen, session_rec, target, beside=b1)
    s = b1.data["run"]["settings"]
    ctx = mean_context(s["input_len"], s["output_len"])
    roof = lat.decode_step_time(qwen, setup.ceilings, lat.UNCALIBRATED, 1, ctx)
    t_over = overhead.at(qwen.num_layers)
    calib = dataclasses.replace(setup.calib, step_overhead_s=t_over, fitted_on=(),
                                notes=(overhead.describe(),))
    pred = lat.decode_step_time(qwen, setup.ceilings, calib, 1, ctx)
    budget = {"repeat_scatter": median_scatter(b1, "itl_steady_engine_clock_s"),
              "ceiling_spread": setup.noise.get("bandwidth", 0.0) * roof.value / pred.value,
              "overhead_spread": overhead.spread_s / pred.value}
    # The band: what the mechanism expects Qwen's step to be, from every other recorded session's b=1 residual
    results = get_session(request.config).settings.results_dir
    expected = []
    for path in recordings.candidates(results, target.name, "latency", "qwen2.5-7b.decode.b1"):
        stamp = recordings.load_file(path).recorded_at
        if stamp == b1.recorded_at:
            continue
        other = build_engine_setup(qwen, session_rec, target,
                                   beside=session_rec("qwen2.5-7b.decode.b1", not_after=stamp))
        noise = other.noise.get("t_overhead_s", 0.0) / pred.value + sum(budget.values())
        ratio = (roof.value + other.calib.step_overhead_s) / pred.value
        expected.append((ratio * (1 - noise), ratio * (1 + noise)))
    band = (round(min(lo for lo, _ in expected), 4), round(max(hi for _, hi in expected), 4)) if expected else None
    reconcile("decode_step_tiny_overhead", pred, b1["step_time_s"], budget=budget,
              why="measured noise only: Qwen2.5-7B's b=1 repeat scatter, the read ceiling's scatter over the "
                  "roofline's share, and the twins' b=1 repeat scatter (the fit's own spread)",
              finding_band=band, model=qwen.name)


@pytest.mark.gpu
@pytest.mark.parametrize("setup_name", (pytest.param("engine_setup", marks=lf.marginal_cost_marks("qwen2.5-7b")),
                                        pytest.param("transfer_setup", marks=lf.marginal_cost_marks("llama-3.1-8b"))))
def test_marginal_cost_per_sequence(setup_name, request, latency_recording, stalled_run, reconcile):
    """Least-squares slope of the decode step over b = 1..64 vs the model's d(t_step)/db. The finding's band is set
    here: the model's other recorded runs (never this one) widened by this run's budget (marginal_cost_envelope); a
    stalled-run mark put ahead of it keeps its own band."""
    engine_setup = request.getfixturevalue(setup_name)
    model = engine_setup.model.name
    pred, slope, budget = marginal_cost(engine_setup, latency_recording)
    first = next(request.node.iter_markers("finding"), None)
    band = None
    if first is not None and first.args[0] == lf.PER_SEQUENCE_FINDING_ID:
        band = lf.marginal_cost_envelope(model, sum(budget.values()),
                                         exclude=latency_recording(f"{model}.decode.b1").recorded_at)
    reconcile("decode_s_per_sequence", pred, slope, budget=budget,
              why="the OLS slope's own scatter (2 standard errors of the slope over b = 1..64) and the read "
                  "ceiling's (the predicted slope is KV bytes / BW)", model=model, finding_band=band)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_marginal_cost_newest_is_the_recorded_one(engine_setup, transfer_setup, latency_recording):
    """latency_findings.MARGINAL_COST_NEWEST is each model's newest run (the one a replay checks): measured/predicted
    slope and its noise budget, recomputed with its own session's setup."""
    for setup in (engine_setup, transfer_setup):
        pred, slope, budget = marginal_cost(setup, latency_recording)
        assert (slope.value / pred.value, sum(budget.values())) == pytest.approx(
            lf.MARGINAL_COST_NEWEST[setup.model.name], abs=5e-5), setup.model.name


@pytest.mark.gpu
@pytest.mark.parametrize("length", [pytest.param(n, marks=lf.short_prefill_marks("qwen2.5-7b", "prefill", n))
                                    for n in sorted((*PREFILL, 8192))])
def test_prefill(length, above_gemms, slow_session, latency_recording, reconcile, anatomy_benchmark, request):
    """Lone prefill in chunks of max_num_batched_tokens (8,192): compute-bound above ~180 tokens,
    with the quadratic attention term; eta from the session's GEMM timings where it has them, else fitted
    on 8,192 tokens only (a fit point)."""
    rec = latency_recording(f"qwen2.5-7b.prefill.l{length}")
    engine_setup = run_setup(request, "qwen2.5-7b", rec)
    anatomy_benchmark(rec, "engine_prefill_s.median")  # the repeats, as pytest-benchmark rounds
    notes = [engine_setup.check_held_out(h200_workload(rec), "engine_prefill_s.median",
                                         repeat=None if length == 8192 else False)]
    budget = engine_setup.sched.max_num_batched_tokens
    eta_fit = next((f for f in engine_setup.fits if f.constant == "eta"), None)  # None: eta from GEMM timings
    fitted = lat.prefill_chunks(dict(eta_fit.workload)["input_len"], budget) if eta_fit else [None]
    chunks = lat.prefill_chunks(length, budget)
    if eta_fit and len(chunks) > 1 and chunks[0] == fitted[0]:  # a first chunk that is the fitted lone step
        notes.append(f"chunk 1 ({chunks[0][0]} tokens after {chunks[0][1]}) is the step eta was fitted on "
                     f"({eta_fit.recording}): only the {len(chunks) - 1} later chunk(s), attending to the earlier "
                     "ones, are held out")
    pred = lat.prefill_time(engine_setup.model, engine_setup.ceilings, engine_setup.calib, length, budget)
    noise = prefill_budget(engine_setup, pred, rec, length)
    reconcile("prefill" + pool_regime(engine_setup), with_note(pred, *notes), rec["engine_prefill_s.median"],
              budget=noise, why=BUDGET_WHY, model=engine_setup.model.name,
              kind=engine_setup.kind_of(h200_workload(rec), "engine_prefill_s.median"),
              finding_band=slow_session_band(request, engine_setup,
                                             rec["engine_prefill_s.median"].value / pred.value, noise))


@pytest.mark.gpu
@pytest.mark.parametrize("length", [pytest.param(n, marks=lf.prefill_ceiling_marks(n)) for n in (2048, 8192, 16384, 32000)])
def test_prefill_at_the_matmul_ceiling(length, latency_recording, session_rec, reconcile, request):
    rec = latency_recording(f"qwen2.5-7b.prefill.l{length}")
    engine_setup = run_setup(request, "qwen2.5-7b", rec)
    pred = lat.prefill_time(engine_setup.model, engine_setup.ceilings, lat.UNCALIBRATED, length,
                            engine_setup.sched.max_num_batched_tokens)
    stamp = session_rec("qwen2.5-7b.decode.b1", beside=rec).recorded_at
    band = lf.prefill_ceiling_band(length, stamp, prefill_roofline_noise(session_rec, rec))
    reconcile("prefill_roofline", pred, rec["engine_prefill_s.median"], why=ROOFLINE_WHY,
              budget=roofline_budget(engine_setup, rec, "engine_prefill_s", "peak"),
              model=engine_setup.model.name, finding_band=band)


@pytest.mark.gpu
def test_prefill_attention_term_runs_at_matmul_efficiency(latency_recording, reconcile, request):
    """Attention is 11% of the FLOPs at 8,192 tokens and 33% at 32,000: if the S^2 term were
    wrong (or missing) measured/roofline would differ between the two lengths by up to 35%."""
    ratios = []
    l8192 = latency_recording("qwen2.5-7b.prefill.l8192")
    engine_setup = run_setup(request, "qwen2.5-7b", l8192)
    for n in (8192, 32000):
        rec = l8192 if n == 8192 else latency_recording(f"qwen2.5-7b.prefill.l{n}", beside=l8192)
        roof = lat.prefill_time(engine_setup.model, engine_setup.ceilings, lat.UNCALIBRATED, n,
                                engine_setup.sched.max_num_batched_tokens)
        ratios.append((rec["engine_prefill_s.median"], roof))
    (m8, r8), (m32, r32) = ratios
    measured_ratio = Measurement((m32.value / r32.value) / (m8.value / r8.value), "", source=m32.source,
                                 provenance={**m32.provenance, "derived": "(measured/roofline at 32k) / (at 8k)"})
    pred = Prediction(1.0, "", "attention FLOPs run at the same fraction of peak as the matmuls",
                      terms=(Term("roofline at 8,192", r8.value, "s"), Term("roofline at 32,000", r32.value, "s")))
    reconcile("attention_vs_matmul_efficiency", pred, measured_ratio, rel=0.05,
              why="+-5% on the ratio is attention (a third of the FLOPs at 32k) within +-15% of the matmuls' "
                  "efficiency; dropping the S^2 term would move the ratio by 35%",
              model=engine_setup.model.name)


@pytest.mark.gpu
@pytest.mark.usefixtures("card_finding")  # before reconcile, which reads the marks
@pytest.mark.parametrize("b", [pytest.param(b, marks=(*((h100f.LLAMA_B128,) if b == 128 else ()),
                                                       *lf.decode_step_marks("llama-3.1-8b", b))) for b in (1, *BATCHES)])
def test_decode_overhead_transfers_to_a_second_model(b, latency_recording, stalled_run, reconcile, request):
    """The calibration's real test: the overhead fitted on Qwen2.5-7B's b=1 step (or measured on the tiny
    overhead models) predicting Llama-3.1-8B's decode step on the same engine and GPU (Llama's own
    session's ceilings). Llama differs from Qwen in KV bytes per token (128 vs 56 KiB, so the KV term
    weighs 2.3x more at every batch) and layers (32 vs 28); not in weight scale (14.0 vs 14.2 GB), lm_head
    share (7.5% vs 7.7%) or FFN share (~80%): an error in those cancels here too (theory_mutants:
    latency-matmul-weights-x1.05 survives every calibrated check; only the bare roofline band catches it)."""
    rec, ctx = decode_run(latency_recording, b, "llama-3.1-8b")
    setup = run_setup(request, "llama-3.1-8b", rec)
    note = setup.check_held_out(h200_workload(rec), "step_time_s")
    pred = lat.decode_step_time(setup.model, setup.ceilings, setup.calib, b, ctx)
    reconcile("decode_step_other_model", with_note(pred, note, *validity_note(rec)), rec["step_time_s"],
              budget={**decode_budget(setup, pred, rec), "card_spread": transfer_card_spread(b, rec)},
              why=TRANSFER_BUDGET_WHY, model=setup.model.name)


@pytest.mark.gpu
@pytest.mark.parametrize("length", [pytest.param(n, marks=lf.short_prefill_marks("llama-3.1-8b", "prefill_other_model", n))
                                    for n in PREFILL])
def test_prefill_efficiency_transfers_to_a_second_model(length, above_gemms, reconcile, latency_recording, request):
    """The same for eta: fitted on Qwen2.5-7B's 8,192-token prefill, tested on Llama-3.1-8B."""
    rec = latency_recording(f"llama-3.1-8b.prefill.l{length}")
    setup = run_setup(request, "llama-3.1-8b", rec)
    note = setup.check_held_out(h200_workload(rec), "engine_prefill_s.median")
    pred = lat.prefill_time(setup.model, setup.ceilings, setup.calib, length, setup.sched.max_num_batched_tokens)
    reconcile("prefill_other_model" + pool_regime(setup), with_note(pred, note), rec["engine_prefill_s.median"],
              budget=prefill_budget(setup, pred, rec, length), why=BUDGET_WHY, model=setup.model.name)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False)
def test_decode_bands_are_the_other_sessions_ratios(qwen, session_rec, target, setup_builders):
    """Every decode-step finding band is the other session's measured/predicted ratio, recomputed here
    from its recordings by the same setup code: the table in latency_findings.py is never retyped."""
    build_engine_setup, build_transfer_setup = setup_builders
    q1 = session_rec("qwen2.5-7b.decode.b1", not_after=lf.OTHER_SESSION["qwen2.5-7b"])
    l1 = session_rec("llama-3.1-8b.decode.b1", not_after=lf.OTHER_SESSION["llama-3.1-8b"])
    setups = {"qwen2.5-7b": (build_engine_setup(qwen, session_rec, target, beside=q1), q1),
              "llama-3.1-8b": (build_transfer_setup(build_engine_setup(qwen, session_rec, target,
                                                                       not_after=l1.recorded_at), session_rec,
                                                    target, beside=l1), l1)}
    for (model, b), ratio in lf.DECODE_RATIO_OTHER_SESSION.items():
        setup, first = setups[model]
        assert first.recorded_at == lf.OTHER_SESSION[model]
        rec = session_rec(f"{model}.decode.b{b}", beside=first)
        s = rec.data["run"]["settings"]
        pred = lat.decode_step_time(setup.model, setup.ceilings, setup.calib, b, mean_context(s["input_len"], s["output_len"]))
        assert rec["step_time_s"].value / pred.value == pytest.approx(ratio, abs=5e-5), (model, b)
    setup, first = setups["qwen2.5-7b"]
    s = first.data["run"]["settings"]
    roof = lat.decode_step_time(setup.model, setup.ceilings, lat.UNCALIBRATED, 1, mean_context(s["input_len"], s["output_len"]))
    terms = {t.name: t.value for t in roof.terms}
    assert lf.ROOFLINE_OTHER_SESSION == pytest.approx(
        {"bytes_gb": (terms["matmul weights"] + terms["KV read, decode"] + terms["KV written"]) / 1e9,
         "read_tb_s": setup.ceilings.bandwidth / 1e12, "roofline_ms": roof.value * 1e3,
         "step_ms": first["step_time_s"].value * 1e3}, abs=6e-4)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_b1_overheads_are_the_recorded_ones(request, target):
    """latency_b1_overheads.B1_OVERHEAD_BY_SESSION_MS is cli_calibration.b1_residuals of every complete recorded
    session of this card, under the current theory: the overheads the bare roofline's band is built from."""
    from pytest_anatomy.session import get_session

    results = get_session(request.config).settings.results_dir
    got = {b1.recorded_at: round(r * 1e3, 4) for r, _, b1 in b1_residuals(results, target.require_spec())}
    assert got == B1_OVERHEAD_BY_SESSION_MS


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_b1_residuals_are_the_recorded_ones(request, session_rec, target):
    """latency_findings.B1_RESIDUAL_MS (the numbers LLAMA_OVERHEAD_BELOW_QWEN's reason states) are the b=1
    residuals of every recorded H200 session of each model, at that session's read ceiling."""
    from pytest_anatomy.session import get_session
    from pytest_anatomy.specs.model import load_model

    results = get_session(request.config).settings.results_dir
    for model, (lo, hi) in lf.B1_RESIDUAL_MS.items():
        spec = load_model(model)
        residuals = []
        for path in recordings.candidates(results, target.name, "latency", f"{model}.decode.b1"):
            b1 = session_rec(f"{model}.decode.b1", not_after=recordings.load_file(path).recorded_at)
            ceil = session_rec("ceilings", suite="ceilings", beside=b1)
            ceilings = lat.Ceilings.measured(target.require_spec(), bandwidth=ceil["read_bandwidth.value"].value,
                                             peak=ceil["matmul_bf16.value"].value, source="recorded")
            s = b1.data["run"]["settings"]
            roof = lat.decode_step_time(spec, ceilings, lat.UNCALIBRATED, 1, mean_context(s["input_len"], s["output_len"]))
            residuals.append((b1["step_time_s"].value - roof.value) * 1e3)
        assert len(residuals) >= 2, model
        assert (round(min(residuals), 3), round(max(residuals), 3)) == (lo, hi), (model, residuals)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_prefill_roofline_runs_are_the_recorded_ones(request, qwen, session_rec, target, setup_builders):
    """latency_findings.PREFILL_ROOFLINE_RUNS (the prefill-ceiling bands, set at test time from the other sessions) is
    every recorded session's Qwen2.5-7B lone prefill / its bare roofline at that session's matmul ceiling, and that
    run's noise, recomputed from the recordings; a session missing from the table fails here."""
    from pytest_anatomy.session import get_session

    build_engine_setup, _ = setup_builders
    results = get_session(request.config).settings.results_dir
    got: dict[str, dict[int, tuple[float, float]]] = {}
    for path in recordings.candidates(results, target.name, "latency", "qwen2.5-7b.decode.b1"):
        b1 = session_rec("qwen2.5-7b.decode.b1", not_after=recordings.load_file(path).recorded_at)
        setup = build_engine_setup(qwen, session_rec, target, beside=b1)
        for n in (2048, 8192, 16384, 32000):
            rec = session_rec(f"qwen2.5-7b.prefill.l{n}", beside=b1)
            roof = lat.prefill_time(qwen, setup.ceilings, lat.UNCALIBRATED, n, setup.sched.max_num_batched_tokens)
            got.setdefault(b1.recorded_at, {})[n] = (rec["engine_prefill_s.median"].value / roof.value,
                                                     prefill_roofline_noise(session_rec, rec))
    assert list(got) == list(lf.PREFILL_ROOFLINE_RUNS)
    for stamp, runs in got.items():
        assert list(runs) == list(lf.PREFILL_ROOFLINE_RUNS[stamp]), stamp
        for n, row in runs.items():
            assert row == pytest.approx(lf.PREFILL_ROOFLINE_RUNS[stamp][n], abs=5e-5), (stamp, n)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_prefill_runs_are_the_recorded_ones(request, qwen, session_rec, target, setup_builders):
    """latency_findings.PREFILL_RUNS (the lone-prefill findings' bands and the numbers in their reasons) is every
    recorded session of both models: each run's measured/predicted and noise budget, recomputed here with the
    calibration of its own session (Llama's: Qwen's known when it ran)."""
    from pytest_anatomy.session import get_session

    build_engine_setup, build_transfer_setup = setup_builders
    results = get_session(request.config).settings.results_dir
    seen = set()
    for model in ("qwen2.5-7b", "llama-3.1-8b"):
        for path in recordings.candidates(results, target.name, "latency", f"{model}.decode.b1"):
            b1 = session_rec(f"{model}.decode.b1", not_after=recordings.load_file(path).recorded_at)
            setup = (build_engine_setup(qwen, session_rec, target, beside=b1) if model == qwen.name else
                     build_transfer_setup(build_engine_setup(qwen, session_rec, target, not_after=b1.recorded_at),
                                          session_rec, target, beside=b1))
            runs = lf.PREFILL_RUNS[(model, b1.recorded_at)]
            seen.add((model, b1.recorded_at))
            for n, (ratio, budget) in runs.items():
                rec = session_rec(f"{model}.prefill.l{n}", beside=b1)
                pred = lat.prefill_time(setup.model, setup.ceilings, setup.calib, n, setup.sched.max_num_batched_tokens)
                assert rec["engine_prefill_s.median"].value / pred.value == pytest.approx(ratio, abs=5e-5), (model, n)
                assert sum(prefill_budget(setup, pred, rec, n).values()) == pytest.approx(budget, abs=5e-5), (model, n)
    assert seen == set(lf.PREFILL_RUNS)
    for model, stamp in lf.CHECKED_PREFILL.items():  # the checked run is the newest of its model
        assert stamp == max((s for m, s in seen if m == model), key=recordings.stamp_of)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=h100f.H100)
def test_h100_b128_band_inputs_are_the_predictions(transfer_setup, latency_recording):
    """latency_h100_findings.LLAMA_B128's inputs are the H100 replay's own predictions: Llama-3.1-8B's predicted cost
    per extra sequence (x 128) and its predicted b=128 step, each from the transfer setup this check uses."""
    pred, _, _ = marginal_cost(transfer_setup, latency_recording)
    _, ctx = decode_run(latency_recording, 128, transfer_setup.model.name)
    step = lat.decode_step_time(transfer_setup.model, transfer_setup.ceilings, transfer_setup.calib, 128, ctx)
    assert (round(pred.value * 1e6, 2) * 128 * 1e-3, round(step.value * 1e3, 2)) == pytest.approx(
        (h100f.KV_READ_128_MS, h100f.STEP_128_MS))


def test_a_session_above_every_other_never_calibrates():
    """The sessions h200-one-session-above-every-other lists are the ones the default calibration leaves out of its
    median (cli_calibration.NOT_A_CALIBRATION), and the median session is none of them."""
    from latency_run_validity_findings import SLOW_SESSION_RUNS

    from pytest_anatomy import cli_calibration
    from pytest_anatomy.specs.hardware import get_hardware

    from pathlib import Path

    listed = {at for _, at in SLOW_SESSION_RUNS}
    assert listed == set(cli_calibration.NOT_A_CALIBRATION[MEASURED_ON])
    results = Path(__file__).resolve().parents[1] / "results"
    median = cli_calibration.typical_session_b1(results, get_hardware(MEASURED_ON))
    assert not any(recordings.same_instant(at, median.recorded_at) for at in listed)
