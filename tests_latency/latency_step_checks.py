"""The shared parts of test_latency_steps.py's checks of the decode step and the lone prefill: the noise budgets and
the words that explain them (decode_budget, roofline_budget, prefill_budget, prefill_roofline_noise, BUDGET_WHY,
TRANSFER_BUDGET_WHY, ROOFLINE_WHY), the setup of the session that measured a run (run_setup) and the runs read
(decode_run, marginal_cost, pool_regime), and the finding marks its fixtures put on a case at test time
(above_gemms_marks_for, stalled_run_marks_for, slow_session_mark_for, slow_session_band). Split out of
test_latency_steps.py on 2026-12-07 to keep modules under 500 lines; the tests and their fixtures stay there.
"""

from __future__ import annotations

import latency_budget_findings as bf
import latency_findings as lf
from latency_card_spread import CARD_SPREAD_WHY
from latency_findings_common import claims
from latency_run_validity_findings import SLOW_SESSION_ID, slow_session_mark
from latency_setups import mean_context, median_scatter, ceiling_scatter, run_validity, step_budget
from sequence_cost import decode_sweep_fit

from pytest_anatomy.theory import latency as lat

ROOFLINE_WHY = ("measured noise only (10% is the accuracy goal of a calibrated step, docs; not this tolerance): the "
                "run's own repeat scatter (2 standard errors of its median) and the session ceiling's scatter over the "
                "whole step, which a bare roofline divides by that ceiling alone (no calibration: none is used)")
_NOISE_WHY = ("measured noise only: the run's own repeat scatter (2 standard errors of its median, over its engine "
              "steps for a decode step), the session ceiling's scatter over the share of the step it sets, and the "
              "calibration's (its fit points' scatter)")
_GOAL_WHY = "; 10% is the accuracy goal (docs), not a tolerance"
BUDGET_WHY = _NOISE_WHY + _GOAL_WHY
TRANSFER_BUDGET_WHY = _NOISE_WHY + CARD_SPREAD_WHY + _GOAL_WHY


def decode_budget(setup, pred, rec) -> dict[str, float]:
    setup.priced_in_its_session(rec)  # every budget below prices `rec` with `setup`: one session, or a failure
    return step_budget(setup, pred, median_scatter(rec, "itl_steady_engine_clock_s"), compute_share=0.0)


def roofline_budget(setup, rec, key: str, ceiling: str) -> dict[str, float]:
    """A bare roofline's budget (lat.UNCALIBRATED: no overhead, eta = 1): the run's repeat scatter and the spread of
    the one ceiling the whole prediction divides by ("bandwidth" or "peak"); no calibration term, since none enters."""
    setup.priced_in_its_session(rec)
    return {"repeat_scatter": median_scatter(rec, key), "ceiling_spread": setup.noise.get(ceiling, 0.0)}


def prefill_budget(setup, pred, rec, length: int) -> dict[str, float]:
    """A lone prefill is compute-bound above ~180 tokens at the H200's ridge (theory/latency.py)."""
    setup.priced_in_its_session(rec)
    return step_budget(setup, pred, median_scatter(rec, "engine_prefill_s"), compute_share=float(length > 180))


def prefill_roofline_noise(session_rec, rec) -> float:
    """A lone prefill's noise against the matmul roofline: its repeat scatter + its session's matmul ceiling scatter."""
    return median_scatter(rec, "engine_prefill_s") + ceiling_scatter(
        session_rec("ceilings", suite="ceilings", beside=rec), "matmul_bf16")


def run_setup(request, model: str, rec):
    """The setup of the session that measured `rec` (conftest.setup_beside): a run is priced with its own session's
    ceilings, engine limits and calibration, never the newest session's. The newest session need not have measured
    every part (a session of load runs only, 2026-12-06 05:48, left the lone prefills to the one before), so a test
    of one part builds its setup from that part's run, not from the newest decode.b1 (engine_setup)."""
    return request.getfixturevalue("setup_beside")(model, rec)


def decode_run(latency_recording, b: int, model: str = "qwen2.5-7b"):
    rec = latency_recording(f"{model}.decode.b{b}")
    s = rec.data["run"]["settings"]
    return rec, mean_context(s["input_len"], s["output_len"])


def marginal_cost(engine_setup, latency_recording):
    """(prediction, OLS slope, noise budget) of the decode step's cost per extra sequence over b = 1..64."""
    fit = decode_sweep_fit(engine_setup, latency_recording)
    return fit.predicted, fit.slope, fit.budget


def pool_regime(setup) -> str:
    """'_pinned_pool' when the run's engine had kv_cache_memory_bytes pinned, else ''."""
    return "_pinned_pool" if setup.kv_pinned else ""


def above_gemms_marks_for(request) -> tuple:
    """h200-prefill-above-its-gemms's marks for a long lone prefill when its setup takes eta from the session's GEMM
    timings: with eta fitted on the 8,192 prefill (the sessions before 2026-12-01 06:44, a live session without them)
    the finding does not apply, and there are none."""
    other = request.node.originalname == "test_prefill_efficiency_transfers_to_a_second_model"
    model = "llama-3.1-8b" if other else "qwen2.5-7b"
    setup = run_setup(request, model, request.getfixturevalue("latency_recording")(
        f"{model}.prefill.l{request.node.callspec.params['length']}"))
    if setup.calib.efficiency_by_tokens:
        return tuple(lf.above_gemms_marks(setup.model.name, "prefill_other_model" if other else "prefill",
                                          request.node.callspec.params["length"]))
    return ()


MARGINAL_BATCHES = (1, 2, 4, 8, 16, 32, 64)  # the per-sequence slope's runs


def stalled_run_marks_for(request, session_rec) -> tuple:
    """h200-decode-stalled-run's marks when a replayed decode run the case reads is one the run-validity check flags
    (latency_setups.run_validity): the decode step's own run at batch b, or for the per-sequence slope any of its runs
    at b = 1..64. Any session, batch and model; none for a run the check passes."""
    params = request.node.callspec.params
    other = request.node.originalname == "test_decode_overhead_transfers_to_a_second_model"
    setup = request.getfixturevalue(params.get("setup_name", "transfer_setup" if other else "engine_setup"))
    model = setup.model.name
    if "b" in params:
        rec = session_rec(f"{model}.decode.b{params['b']}")
        check = run_validity(rec)
        if check is None or not check.flagged:
            return ()
        spread = rec["itl_steady_s.std"].value / rec["step_time_s"].value  # one std of its steps over its median
        return lf.stalled_run_marks(model, "decode_step_other_model" if other else "decode_step", spread, params["b"])
    recs = {b: session_rec(f"{model}.decode.b{b}") for b in MARGINAL_BATCHES}
    flagged = [b for b, r in recs.items() if (c := run_validity(r)) is not None and c.flagged]
    if not flagged:
        return ()
    s = recs[1].data["run"]["settings"]
    ctx = mean_context(s["input_len"], s["output_len"])
    t1, t64 = (lat.decode_step_time(setup.model, setup.ceilings, setup.calib, b, ctx).value for b in (1, 64))
    mean_b = sum(MARGINAL_BATCHES) / len(MARGINAL_BATCHES)
    sxx = sum((b - mean_b) ** 2 for b in MARGINAL_BATCHES)
    # each flagged run's step std moved through the OLS slope's leverage at its batch, over the predicted slope
    spread = sum(abs(b - mean_b) / sxx * recs[b]["itl_steady_s.std"].value for b in flagged) / ((t64 - t1) / 63)
    return lf.stalled_run_marks(model, "decode_s_per_sequence", spread)


def slow_session_mark_for(request, latency_recording):
    """h200-one-session-above-every-other's mark when the run the case judges is one that finding lists
    (latency_run_validity_findings.SLOW_SESSION_RUNS), else None."""
    params = request.node.callspec.params
    param = params["b"] if "b" in params else params["length"]
    name = f"qwen2.5-7b.decode.b{param}" if "b" in params else f"qwen2.5-7b.prefill.l{param}"
    return slow_session_mark("qwen2.5-7b", latency_recording(name).recorded_at, request.node.originalname, param)


def slow_session_band(request, setup, ratio: float, budget: dict[str, float]) -> tuple[float, float] | None:
    return bf.checked_run_band(ratio, sum(budget.values())) if claims(request, SLOW_SESSION_ID, setup.label) else None
