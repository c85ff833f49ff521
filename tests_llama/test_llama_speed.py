"""llama.cpp's decode (llama-bench tg128) and prefill (pp512) per weight type, predicted.

The calibration is measured apart from what it predicts (llama_speed.SessionCalibration,
theory/llamacpp_latency.py):
- the read and matmul ceilings of the same session (the plan's own ceilings run);
- the per-token overhead: llama-bench on the tiny-hidden model with the same layers, vocabulary and
  weight type (its time is overhead, less its small lm_head roofline); its pp512 is the prefill overhead;
- the F16 kernel constant fitted on qwen2.5-7b F16, the quantized-kernel constant on qwen2.5-7b Q8_0.
Checked: qwen2.5-7b Q4_K_M (Q4_K and Q6_K rows: does one mul_mat_vec_q constant serve every block
type?) and every qwen2.5-0.5b file (a different proportion: 28% of its bytes are the lm_head, its
decode is mostly overhead, and 896-wide rows fall back to Q5_0/Q8_0). The fit points are not
reconciled: they agree by construction. The first session with the fit benches (2026-12-02 07:28)
answered both questions no: two findings (llama_findings.py), whose bands are computed here.

Tolerance: the budget is a sum of measured scatter, each term two standard errors of a median: the checked run's
repetitions, each fit run's, each overhead run's. Decode: 2 x stdev / sqrt(n), each term at full weight (tg128 has
no cold repetition). Prefill, since 2026-12-04 (tests_quant/quant_prefill.py's two changes): the robust scatter
(llama_speed.robust_rel_se: llama-bench's first pp512 repetition is a cold one at 20-80% of the others, and a plain
standard deviation made every budget +-120-137%), and each calibration run's scatter carried through the fit to the
prediction (SessionCalibration.carried), not added at full weight. All four prefill checks then diverged: two
findings (llama_findings.py).
"""

from __future__ import annotations

import pytest
from llama_findings import (KQUANT_PREFILL_FINDING, SMALL_DECODE_FINDING, SMALL_PREFILL_BANDED_UNTIL,
                            SMALL_PREFILL_FINDING, bench_marks, kquant_band, prefill_marks)
from llama_runs import SUITE, LlamaRun, completed
from llama_speed import FIT_MODEL, N_GEN, N_PROMPT, TINY_FOR, SessionCalibration

from pytest_anatomy import recordings
from pytest_anatomy import session as anatomy_session
from pytest_anatomy.theory import llamacpp_latency as ll


def _checked(run: LlamaRun) -> bool:
    return run.model in TINY_FOR and not (run.model == FIT_MODEL and run.weights in ("F16", "Q8_0"))


def _other_sessions_band(request, run, measured, header_for, s: SessionCalibration, predict, finding: str,
                         until: str | None = None) -> tuple[float, float]:
    """The envelope of measured/predicted of `run` in every other session that benched it and its tiny model (each
    with its own ceilings and overhead; `predict(o)`: the prediction from that session's SessionCalibration `o`), each
    +- its own scatter, its session's budget and this session's. No other session: no band to give (the finding then
    bounds nothing). `until`: the sessions recorded at or before that stamp instead, the judged one included where it
    is one of them (a checked-run band, pinned: a later session is judged against them, not added to them)."""
    _, results = anatomy_session.of_config(request.config, SUITE)
    this = s.budget.rel
    lo, hi = [], []
    for path in recordings.candidates(results, run.target, SUITE, run.name):
        other = recordings.load_file(path)
        if other.provenance.get("status") not in (None, "ok"):
            continue
        if (until is None and other.recorded_at == s.bench.recorded_at) or (
                until is not None and recordings.stamp_of(other.recorded_at) > recordings.stamp_of(until)):
            continue
        try:
            o = SessionCalibration(run, measured, header_for, s.phase, bench=completed(other))
            pred = predict(o)
        except pytest.skip.Exception:
            continue  # that session lacks its ceilings, its fits or its tiny model: it gives no ratio
        m = other[f"{s.test}.tok_per_s.median"]
        ratio, scatter = m.value / pred, s.budget.scatter(m) + o.budget.rel + this
        lo.append(ratio * (1 - scatter))
        hi.append(ratio * (1 + scatter))
    if not lo:
        pytest.fail(f"{run.name}: {finding} has no other session to band it with")
    return max(0.0, min(lo)), max(hi)


@pytest.mark.gpu
@pytest.mark.llama_runs("bench", select=_checked, findings=bench_marks)
def test_decode_tokens_per_s(target, run, measured, header_for, reconcile, request):
    s = SessionCalibration(run, measured, header_for, "decode")
    calib = s.calibration()
    m = s.bench[f"tg{N_GEN}.tok_per_s.median"]
    s.budget.add(f"this run {run.name}", m)
    header = header_for(run)
    pred = ll.decode_tokens_per_s(header, calib, n_gen=N_GEN)
    marks = {mk.args[0] for mk in request.node.iter_markers("finding")}
    band = None
    if SMALL_DECODE_FINDING.args[0] in marks:
        band = _other_sessions_band(request, run, measured, header_for, s, lambda o: ll.decode_tokens_per_s(
            header, o.calibration(attainment=calib.attainment), n_gen=N_GEN).value, SMALL_DECODE_FINDING.args[0])
    elif marks:  # the k-quant finding: between Q8_0's time per element and its bytes per second
        band = kquant_band(header, calib, N_GEN)
    reconcile(f"llamacpp_tg{N_GEN}_tok_per_s", pred, m, rel=s.budget.rel, why=s.budget.why(), model=run.model,
              finding_band=band)


@pytest.mark.gpu
@pytest.mark.llama_runs("bench", select=_checked, findings=prefill_marks)
def test_prefill_tokens_per_s(target, run, measured, header_for, reconcile, request):
    s = SessionCalibration(run, measured, header_for, "prefill")
    header = header_for(run)

    def predict(c: ll.LlamaCalibration) -> float:
        return ll.prefill_tokens_per_s(header, c, N_PROMPT).value

    calib = s.carried(predict)
    m = s.bench[f"pp{N_PROMPT}.tok_per_s.median"]
    s.budget.add(f"this run {run.name}", m)
    pred = ll.prefill_tokens_per_s(header, calib, N_PROMPT)
    band = None
    marks = {mk.args[0] for mk in request.node.iter_markers("finding")}
    if KQUANT_PREFILL_FINDING.args[0] in marks:
        band = _other_sessions_band(request, run, measured, header_for, s, lambda o: predict(o.carried(predict)),
                                    KQUANT_PREFILL_FINDING.args[0])
    elif SMALL_PREFILL_FINDING.args[0] in marks:  # the other session alone does not bound it: both, pinned
        band = _other_sessions_band(request, run, measured, header_for, s, lambda o: predict(o.carried(predict)),
                                    SMALL_PREFILL_FINDING.args[0], until=SMALL_PREFILL_BANDED_UNTIL)
    reconcile(f"llamacpp_pp{N_PROMPT}_tok_per_s", pred, m, rel=s.budget.rel, why=s.budget.why(), model=run.model,
              finding_band=band)
