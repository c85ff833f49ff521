"""pp512 of every shootout type at 7B (speed7b, 2026-12-04 17:12 and 17:18) against the llama suite's prefill theory.

Held out, not pre-registered: preregistered.json froze tg128 only, and these predictions were written after the benches
existed. The theory (theory/llamacpp_latency.prefill_tokens_per_s) is unchanged; its calibration is the llama suite's
newest session recorded before the run (quant_prefill.py): its ceilings, its tiny models' prompt overhead, its F16 and
MMQ efficiencies fitted on its own 7B F16 and Q8_0 pp512. The quant run's Q8_0 is therefore a check of that
calibration in another session, every other type a check of the one-MMQ-constant hypothesis. The Q4_K_M / Q8_0 rate
ratio of the quant run is also replayed against the llama suite's own benches of the two types.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import quant_batched as qb
import quant_prefill as qp
from quant_findings import (MMQ_PREFILL_PER_TYPE, Q4_K_M_MMQ_PREFILL_BANDED, QUANT_7B_MMQ_PREFILL_PER_TYPE,
                            QUANT_7B_Q4_K_M_MMQ_PREFILL)
from quant_speed import rel_se

from pytest_anatomy.session import get_session
from pytest_anatomy.theory.prediction import Prediction

MARKS = {**{ft: (QUANT_7B_Q4_K_M_MMQ_PREFILL,) for ft in Q4_K_M_MMQ_PREFILL_BANDED},
         **{ft: (QUANT_7B_MMQ_PREFILL_PER_TYPE,) for ft in MMQ_PREFILL_PER_TYPE}}
HELD_OUT = "held-out, not pre-registered (written after the bench existed; the theory unchanged): "


def _results(request: pytest.FixtureRequest) -> Path:
    return Path(get_session(request.config).settings.results_dir)


def _session(request: pytest.FixtureRequest, target, when: str) -> qp.Session:
    try:
        return qp.session_before(_results(request), target.name, when)
    except LookupError as exc:
        pytest.skip(f"the calibration is a llama-suite session's: {exc}")


@pytest.mark.quant_runs("bench", model=qp.MODEL, marks=MARKS)
def test_prefill_at_7b_against_the_llama_suite_calibration(target, file_type, measured, reconcile, request):
    rec = measured(f"{qp.MODEL}.{file_type.lower()}.bench")
    m = rec[qp.QUANTITY]
    s = _session(request, target, rec.recorded_at)
    p = s.predict(file_type)
    pred = Prediction(p.value, p.unit, HELD_OUT + p.formula, {**p.inputs, "llama_session": s.stamp}, terms=p.terms)
    terms = [*(f"{n} {v:.2%}" for n, v in s.budget(file_type)), f"this run {rel_se(m.samples, m.value):.2%}"]
    rel = sum(v for _, v in s.budget(file_type)) + rel_se(m.samples, m.value)
    band = None
    if file_type in Q4_K_M_MMQ_PREFILL_BANDED:
        band = qp.other_runs_band(_results(request), target.name, file_type, rel_se(m.samples, m.value))
    elif file_type in MMQ_PREFILL_PER_TYPE:  # the same file's prompts in its batched run (another run)
        band = qb.prefill_band(_results(request), target.name, file_type, pred.value, rel)
    reconcile(f"pp512_tok_per_s_7b[{file_type}]", pred, m, rel=rel, model=qp.MODEL, finding_band=band,
              why="the llama suite's budget terms, 2 robust standard errors of each median, each calibration run's "
                  "carried through the fit to this prediction: " + " + ".join(terms))


@pytest.mark.quant_runs("bench", model=qp.MODEL, only=("Q4_K_M",))
def test_the_q4_k_m_to_q8_0_prefill_ratio_replays_the_llama_suite(target, file_type, measured, reconcile, request):
    """The quant run's Q4_K_M / Q8_0 pp512 (one batch) against the llama suite's newest session's (its own benches of
    the same two files, made the same way): a session-wide shift of the card cancels in the ratio."""
    q4, q8 = (measured(f"{qp.MODEL}.{ft}.bench")[qp.QUANTITY] for ft in ("q4_k_m", "q8_0"))
    s = _session(request, target, measured(f"{qp.MODEL}.q8_0.bench").recorded_at)
    got = qp.llama_suite_ratio(_results(request), target.name, s, "Q4_K_M")
    if got is None:
        pytest.skip(f"the llama suite's session {s.stamp} benched no Q4_K_M 7B")
    llama_q4 = got[0] * s.predict("Q4_K_M").value
    llama_q8, q8_se = s.runs[f"{qp.MODEL}.q8_0.bench"]
    rel = got[1] + q8_se + rel_se(q4.samples, q4.value) + rel_se(q8.samples, q8.value)
    reconcile("pp512_q4_k_m_over_q8_0_7b", Prediction(llama_q4 / llama_q8, "x", f"the llama suite's session {s.stamp}: "
                                                      "Q4_K_M pp512 / Q8_0 pp512"),
              q4.value / q8.value, rel=rel, kind="replay", model=qp.MODEL,
              why="2 robust standard errors of each of the four medians")


@pytest.mark.quant_runs("bench", model=qp.MODEL, only=("Q8_0",))
def test_the_7b_prefill_findings_quote_the_benches(target, file_type, measured, request):
    """Every number the two 7B prefill findings quote, recomputed from the benches and the llama suite's sessions."""
    results = _results(request)
    s = _session(request, target, measured(f"{qp.MODEL}.q8_0.bench").recorded_at)
    got = {ft: measured(f"{qp.MODEL}.{ft.lower()}.bench")[qp.QUANTITY].value
           for ft in ("Q8_0", "Q4_K_M", *MMQ_PREFILL_PER_TYPE)}
    pred = {ft: s.predict(ft).value for ft in got}
    t_pred = qp.N_PROMPT / pred["Q8_0"]
    q4km = [qp.llama_suite_ratio(results, target.name, o, "Q4_K_M") for o in qp.sessions(results, target.name)]

    def weights_s(ft: str) -> float:
        return next(t.value for t in s.predict(ft).terms if t.name.startswith("weights read once"))

    quotes = [(QUANT_7B_Q4_K_M_MMQ_PREFILL, [
        f"measured {got['Q4_K_M']:,.0f} tok/s against {pred['Q4_K_M']:,.0f} predicted "
        f"({got['Q4_K_M'] / pred['Q4_K_M']:.3f}x)",
        f"costs {(qp.N_PROMPT / got['Q4_K_M'] - qp.N_PROMPT / pred['Q4_K_M']) * 1e3:.1f} ms more",
        *(f"{r[0]:.3f}x" for r in q4km if r is not None)]),
        (QUANT_7B_MMQ_PREFILL_PER_TYPE, [
        *(f"{got[ft] / pred[ft]:.3f}x for {ft}" for ft in MMQ_PREFILL_PER_TYPE),
        f"Q8_0 {got['Q8_0'] / pred['Q8_0']:.3f}x agrees", f"Q4_K_M {got['Q4_K_M'] / pred['Q4_K_M']:.3f}x",
        f"against {t_pred * 1e3:.2f} ms predicted",
        *(f"{ft} {(qp.N_PROMPT / got[ft] - t_pred) * 1e3:+.2f}" for ft in MMQ_PREFILL_PER_TYPE),
        f"Q4_0 reads {(weights_s('Q8_0') - weights_s('Q4_0')) * 1e3:.2f} ms fewer weight bytes"])]
    assert len([r for r in q4km if r is not None]) == 2, "the band's sessions: the two with every pp512 run"
    missing = [(mark.args[0], text) for mark, texts in quotes for text in texts if text not in mark.kwargs["reason"]]
    assert not missing, missing
    # every type but Q4_K_M's shares the Q8_0 prediction (one MMQ efficiency, the same FLOPs, the same tiny overhead)
    assert all(pred[ft] == pred["Q8_0"] for ft in MMQ_PREFILL_PER_TYPE)
