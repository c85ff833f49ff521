"""llama-bench of every SmolLM2 file (the second visit, 2026-12-02 14:33): what a 135M decode step and prompt are bound by.

The pre-registered tg128 (test_quant_replay.test_decode_speed_against_the_preregistered_priors) agrees inside its band
for all twelve files. Beside it, here:
- each file's attainment of the read roofline, and the instructions per 32-weight block that would make it issue-bound;
- the step against the overhead the llama suite's tiny models measure apart (held out: quant_speed.py);
- pp512 against the theory's prefill at the same frozen constants and priors. Not pre-registered: preregistered.json
  froze tg128 only; the theory (theory/llamacpp_latency.py) is unchanged since the pre-registration's commit.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import quant_speed as qs
from quant_findings import (QUANT_135M_MMQ_PREFILL, QUANT_135M_MMVQ_TYPE_LATENCY, QUANT_135M_PREFILL_PER_LAYER,
                            judged_marks)

from pytest_anatomy.quant_prereg import FILE_TYPES, LLAMA_BAND
from pytest_anatomy.session import get_session
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory import llamacpp_latency as ll
from pytest_anatomy.theory.prediction import Prediction, Term

QUANTIZED = tuple(ft for ft in FILE_TYPES if ft != "F16")
# The files whose step the tiny models' overhead + bytes does not reach (quant_findings.QUANT_135M_MMVQ_TYPE_LATENCY)
SLOWER_THAN_THE_TINY_LINE = ("Q8_0", "Q6_K", "Q5_K_M", "Q5_0", "Q3_K_M")
DECODE_MARKS = {ft: judged_marks(qs.BENCHED_BY_RUN, qs.newest_stamp, QUANT_135M_MMVQ_TYPE_LATENCY)
                for ft in SLOWER_THAN_THE_TINY_LINE}
PREFILL_MARKS = {"F16": (QUANT_135M_PREFILL_PER_LAYER,), **{ft: (QUANT_135M_MMQ_PREFILL,) for ft in QUANTIZED}}


def line_for(request: pytest.FixtureRequest, target, file_type: str, phase: str) -> qs.OverheadLine:
    results = Path(get_session(request.config).settings.results_dir)
    try:
        return qs.overhead_line(results, target.name, qs.tiny_weights_for(file_type), phase)
    except LookupError as exc:
        pytest.skip(f"the overhead is measured apart by the llama suite's tiny models: {exc}")


@pytest.mark.quant_runs("bench", marks=DECODE_MARKS)
def test_decode_at_135m_is_neither_bandwidth_nor_issue_bound(target, file_type, measured, reconcile, request):
    """tg128: the weights at the read ceiling are a few % of the step, issuing the dequantization's instructions
    would need thousands per block to fill it; what is left is the per-layer chain of kernels, which the tiny
    models measure (their line at 30 layers, fitted there, held out here)."""
    m = measured(f"{qs.MODEL}.{file_type.lower()}.bench")["tg128.tok_per_s"]
    h, step = qs.header(file_type), 1 / m.value
    attainment = qs.roofline_s(h) / step
    assert attainment < 0.1, f"{file_type}: the bytes take {attainment:.1%} of the step at the roofline"
    assert qs.issue_break_even(step, h, get_hardware(target.name)) > 1000
    line = line_for(request, target, file_type, "decode")
    overhead, body = line.at(h.block_count), qs.body_s(h, "decode")
    pred = Prediction(1 / (overhead + body), "tokens/s", "1 / (tiny models' overhead at these layers + weights and KV "
                      "bytes / (read ceiling x prior attainment))",
                      {"weight_bytes_per_token": qs.weight_bytes(h), "roofline_attainment": attainment,
                       "tiny_line_us": [line.c0 * 1e6, line.per_layer * 1e6]},
                      terms=(Term(f"overhead (tiny {line.weights}, {h.block_count} layers)", overhead, "s"),
                             Term("weights + KV at the priors", body, "s")))
    rel = 2 * line.se_at(h.block_count) / (overhead + body) + qs.rel_se(m.samples, m.value)
    band = None
    if file_type in SLOWER_THAN_THE_TINY_LINE:
        results = Path(get_session(request.config).settings.results_dir)
        band = qs.checked_run_band(results, target.name, file_type, "tg128.tok_per_s", pred.value, rel)
    reconcile(f"tg128_vs_tiny_overhead[{file_type}]", pred, m, rel=rel, model=qs.MODEL, finding_band=band,
              why="2 standard errors of the tiny line at these layers (its residual scatter) + 2 of the bench's median")


@pytest.mark.quant_runs("bench", marks=PREFILL_MARKS)
def test_prefill_at_135m_against_the_theory(target, file_type, measured, reconcile, request):
    """pp512 at the theory's prefill (FLOPs at the prior efficiency + the decode overhead, the frozen constants).
    Each finding's band comes from the tiny models' own pp512 line at 30 layers (held out)."""
    m = measured(f"{qs.MODEL}.{file_type.lower()}.bench")["pp512.tok_per_s"]
    h = qs.header(file_type)
    per_layer = ll.PRIOR_OVERHEAD_PER_LAYER_S["F16" if file_type == "F16" else "quantized"]
    cal = ll.LlamaCalibration(qs.FROZEN["llama_read_bandwidth"], qs.FROZEN["peak"], per_layer * h.block_count,
                              source="preregistered.json frozen + the priors")
    pred = ll.prefill_tokens_per_s(h, cal, qs.N_PROMPT)
    t = qs.N_PROMPT / pred.value
    compute = sum(term.value for term in pred.terms if "matmuls" in term.name or term.name == "attention")
    spread = LLAMA_BAND["attainment"] * compute + LLAMA_BAND["overhead"] * cal.overhead_s
    line = line_for(request, target, file_type, "prefill")
    mech_t = line.at(h.block_count) + qs.body_s(h, "prefill")
    mech = qs.N_PROMPT / mech_t / pred.value
    u = 2 * line.se_at(h.block_count) / mech_t + qs.rel_se(m.samples, m.value)
    # F16: the tiny line is the mechanism; MMQ: it is only a ceiling (a wider matrix is no faster per layer)
    band = (mech * (1 - u), mech * (1 + u)) if file_type == "F16" else (0.0, mech * (1 + u))
    reconcile(f"pp512_tok_per_s[{file_type}]", pred, m, ratio=(t / (t + spread), t / (t - spread)), model=qs.MODEL,
              why=f"the llama priors' band per term: efficiency +-{LLAMA_BAND['attainment']:.0%} of the FLOP term, "
                  f"overhead +-{LLAMA_BAND['overhead']:.0%} of its term (not pre-registered: the theory at the "
                  "pre-registration's constants)", finding_band=band)


@functools.lru_cache(maxsize=None)
def _rows(results: Path, hardware: str) -> dict[str, dict[str, float]]:
    return qs.rows(results, hardware, get_hardware(hardware), FILE_TYPES)


@pytest.mark.quant_runs("bench", only=("F16",))
def test_the_speed_findings_quote_the_benches(target, file_type, request):
    """Every number the three speed findings quote, recomputed from the benches and the tiny models' lines."""
    results = Path(get_session(request.config).settings.results_dir)
    r = _rows(results, target.name)
    att = [x["attainment"] for x in r.values()]
    dec = {w: qs.overhead_line(results, target.name, w, "decode") for w in ("F16", "Q8_0")}
    pre = {w: qs.overhead_line(results, target.name, w, "prefill") for w in ("F16", "Q8_0")}
    theory = {ft: ll.prefill_tokens_per_s(qs.header(ft), ll.LlamaCalibration(
        qs.FROZEN["llama_read_bandwidth"], qs.FROZEN["peak"], ll.PRIOR_OVERHEAD_PER_LAYER_S[
            "F16" if ft == "F16" else "quantized"] * 30), qs.N_PROMPT).value for ft in ("F16", "Q8_0")}
    quantized = [r[ft] for ft in QUANTIZED]
    mix_gap = [r[qs.dominant_type(ft)]["decode_tok_s"] / r[ft]["decode_tok_s"] - 1 for ft in QUANTIZED if "_K" in ft]
    quotes = [(QUANT_135M_MMVQ_TYPE_LATENCY, [
        f"are {100 * min(att):.1f}-{max(att):.1%} of its step", f"over {8000:,} warp instructions",
        f"{dec['F16'].per_layer * 1e6:.1f} us per layer for F16, {dec['Q8_0'].per_layer * 1e6:.1f} for Q8_0",
        f"F16 at {r['F16']['decode_vs_tiny']:.3f}x", f"Q4_0 at {r['Q4_0']['decode_vs_tiny']:.3f}x",
        f"Q4_1 at {r['Q4_1']['decode_vs_tiny']:.3f}x", f"Q8_0 {r['Q8_0']['decode_vs_tiny']:.3f}x",
        f"decodes {100 * min(mix_gap):.1f}-{max(mix_gap):.1%} slower than the legacy file of its dominant type",
        f"Q6_K (Q8_0 but ffn_down) {r['Q6_K']['decode_vs_tiny']:.3f}x", f"Q5_0 {r['Q5_0']['decode_vs_tiny']:.3f}x",
        f"Q5_K_M (mostly Q5_1) {r['Q5_K_M']['decode_vs_tiny']:.3f}x", f"Q5_1 ({r['Q5_1']['decode_vs_tiny']:.3f}x)",
        f"Q4_K_M (mostly Q5_0, {r['Q4_K_M']['decode_vs_tiny']:.3f}x)",
        f"Q8_0 reads {r['Q8_0']['weight_bytes'] / r['Q4_0']['weight_bytes']:.2f}x Q4_0's bytes and is "
        f"{r['Q4_0']['decode_tok_s'] / r['Q8_0']['decode_tok_s'] - 1:.1%} slower",
        f"Q5_0 reads {r['Q5_0']['weight_bytes'] / r['Q4_0']['weight_bytes']:.2f}x and is "
        f"{r['Q4_0']['decode_tok_s'] / r['Q5_0']['decode_tok_s'] - 1:.1%} slower"]),
        (QUANT_135M_PREFILL_PER_LAYER, [
        f"measured {r['F16']['prefill_tok_s']:,.0f} tok/s against the theory's {theory['F16']:,.0f} "
        f"({r['F16']['prefill_tok_s'] / theory['F16']:.3f}x)",
        f"take {pre['F16'].per_layer * 1e6:.1f} us per layer in pp512 against {dec['F16'].per_layer * 1e6:.1f}",
        f"predicts {qs.N_PROMPT / (pre['F16'].at(30) + qs.body_s(qs.header('F16'), 'prefill')):,.0f} tok/s; measured "
        f"{r['F16']['prefill_vs_tiny']:.3f}x"]),
        (QUANT_135M_MMQ_PREFILL, [
        f"measured {min(x['prefill_tok_s'] for x in quantized):,.0f}-{max(x['prefill_tok_s'] for x in quantized):,.0f} "
        f"tok/s against the theory's {theory['Q8_0']:,.0f} ({min(x['prefill_tok_s'] for x in quantized) / theory['Q8_0']:.2f}"
        f"-{max(x['prefill_tok_s'] for x in quantized) / theory['Q8_0']:.2f}x)",
        f"and {min(x['prefill_vs_tiny'] for x in quantized):.2f}-{max(x['prefill_vs_tiny'] for x in quantized):.2f}x",
        f"({pre['Q8_0'].per_layer * 1e6:.1f} us per layer)", f"F16 reaches {r['F16']['prefill_vs_tiny']:.3f}x",
        f"costs {r['F16']['prefill_tok_s'] / max(x['prefill_tok_s'] for x in quantized):.1f}-"
        f"{r['F16']['prefill_tok_s'] / min(x['prefill_tok_s'] for x in quantized):.1f}x the F16 one",
        f"(the theory: {theory['F16'] / theory['Q8_0']:.2f}x)"])]
    assert min(x["issue_break_even"] for x in r.values()) > 8000
    missing = [(mark.args[0], text) for mark, texts in quotes for text in texts if text not in mark.kwargs["reason"]]
    assert not missing, missing
    # the marked files (the finding's own list) all sit below 0.94 of the tiny line; Q4_K_M, Q3_K_M and Q5_1 sit
    # below it too (0.90-0.93) but inside their reconciliations' tolerance (their benches scatter more), so unmarked
    assert {ft for ft in QUANTIZED if r[ft]["decode_vs_tiny"] < 0.94 and ft in SLOWER_THAN_THE_TINY_LINE} == set(
        SLOWER_THAN_THE_TINY_LINE)
