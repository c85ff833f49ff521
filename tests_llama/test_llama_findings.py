"""The numbers llama_findings.py's reasons quote, recomputed from what they were read from (the recordings, the
kept server logs of the visit's batch, the binding log, the theory), and its band checked to be the mechanism's."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

import pytest
from llama_findings import (
    BINDING_COMPUTE_MIB,
    BUILD_0C1E570,
    KQUANT_PREFILL_REASON,
    KQUANT_REASON,
    MARGINAL_REASON,
    MEASURED_ON,
    PREDICTED_COMPUTE_MIB,
    SERVER_COMPUTE_MIB,
    SMALL_DECODE_FINDING,
    SMALL_DECODE_REASON,
    SMALL_PREFILL_FINDING,
    SMALL_PREFILL_REASON,
    bench_marks,
    element_bound_time,
    ffn_floor_bytes,
    kquant_band,
    prefill_marks,
    server_compute_band,
    server_marks,
    sweep_marks,
)
from llama_runs import LlamaRun, header_for, parse_run
from llama_speed import SessionCalibration, robust_rel_se

from pytest_anatomy import recordings
from pytest_anatomy.measure.llama_log import parse_load_log
from pytest_anatomy.theory import llamacpp_latency as ll
from pytest_anatomy.theory import llamacpp_memory as lm
from pytest_anatomy.units import MiB

ROOT = Path(__file__).resolve().parents[1]
BATCH = ROOT / "results" / MEASURED_ON / "batches" / "20261202T050740Z"  # the visit's raw files, kept verbatim
STAMP = "2026-12-02T05:07:40Z"


def _recording(name: str) -> recordings.Recording:
    return recordings.load_latest(ROOT / "results", MEASURED_ON, "llama", name, STAMP)


@pytest.mark.parametrize("name", sorted(SERVER_COMPUTE_MIB))
def test_server_compute_numbers_are_the_recorded_ones(name):
    mib, n_outputs = SERVER_COMPUTE_MIB[name]
    rec = _recording(name)
    assert rec.provenance["source_commit"] == BUILD_0C1E570
    assert round(rec["load.buffers_bytes.compute.CUDA0"].value / MiB, 2) == mib
    log = (BATCH / f"{name}.log").read_text()
    assert re.search(rf"llama_context: n_outputs_max\s+= {n_outputs}\n", log), "the logged n_outputs_max"
    assert re.search(rf"llama_context: n_seq_max\s+= {n_outputs}\n", log), "no draft: n_outputs_max = -np"
    run = parse_run(MEASURED_ON, name)
    settings = lm.ContextSettings.from_flags(rec.provenance["settings"]["args"])
    assert round(lm.compute_buffer_gpu(header_for(run), settings).value / MiB, 2) == PREDICTED_COMPUTE_MIB


def test_the_binding_on_the_same_build_reserved_the_predicted_buffer():
    """The theory's reserve (n_ubatch outputs) is what this build does outside the server: the explanation's
    control. The device README's binding load of the same 0.5B F16 logged the predicted size."""
    log = parse_load_log((Path(__file__).parent / "data" / "h200-binding-qwen2.5-0.5b-f16-load.log").read_text())
    assert round(log.buffer("compute", "CUDA0") / MiB, 2) == BINDING_COMPUTE_MIB == PREDICTED_COMPUTE_MIB


def test_band_is_the_ffn_floor_up_to_the_prediction():
    run = LlamaRun(MEASURED_ON, "x", "qwen2.5-0.5b", "F16", "server-load")
    settings = lm.ContextSettings(n_ctx=8000, n_seq_max=3)
    lo, hi = server_compute_band(header_for(run), settings)
    # (2 x 4,864 + 896) x 512 x 4 B = 20.75 MiB against 298.50 MiB; the measurement plays no part
    assert ffn_floor_bytes(header_for(run), settings) == (2 * 4864 + 896) * 512 * 4
    assert (round(lo, 4), hi) == (round(20.75 / 298.5, 4), 1.0)


def test_the_finding_applies_to_its_build_only():
    run = LlamaRun(MEASURED_ON, "x", "qwen2.5-0.5b", "F16", "server-load")
    assert len(server_marks(run, {"source_commit": BUILD_0C1E570})) == 1
    assert server_marks(run, {"source_commit": "synthetic"}) == ()
    assert server_marks(LlamaRun(MEASURED_ON, "x", "qwen2.5-0.5b", "F16", "bench"), {"source_commit": BUILD_0C1E570}) == ()


# --- the 2026-12-02 07:28 visit's decode and sweep findings: the numbers their reasons quote --------------------------
STAMP_0728 = "2026-12-02T07:28:00Z"


def _measured_0728(name: str, suite: str = "llama", beside=None) -> recordings.Recording:
    if beside is not None:
        return recordings.load_beside(ROOT / "results", MEASURED_ON, suite, name, beside)
    return recordings.load_latest(ROOT / "results", MEASURED_ON, suite, name, STAMP_0728)


def _bench(model: str, weights: str) -> LlamaRun:
    return LlamaRun(MEASURED_ON, f"{model}.{weights.lower()}.bench", model, weights, "bench")


def _decode(model: str, weights: str, stamp: str = STAMP_0728):
    """(measured tok/s, predicted tok/s, calibration) of a bench, the kernel constants from the 07:28 fit benches."""
    fit = SessionCalibration(_bench(model, weights), _measured_0728, header_for, "decode",
                             bench=_measured_0728(f"{model}.{weights.lower()}.bench")).calibration()
    bench = recordings.load_latest(ROOT / "results", MEASURED_ON, "llama", f"{model}.{weights.lower()}.bench", stamp)
    calib = SessionCalibration(_bench(model, weights), _measured_0728, header_for, "decode", bench=bench).calibration(
        attainment=fit.attainment)
    pred = ll.decode_tokens_per_s(header_for(_bench(model, weights)), calib, n_gen=128).value
    return bench["tg128.tok_per_s.median"].value, pred, calib


def _weights_fraction(model: str, weights: str) -> float:
    """The fraction of the read ceiling at which the measured time less overhead, KV and F32 streams the weights."""
    meas, _, calib = _decode(model, weights)
    header = header_for(_bench(model, weights))
    t = ll.decode_time(header, calib, context=63.5)
    quantized_or_f16 = [tm for tm in t.terms if "weights" in tm.name and not tm.name.startswith("F32")]
    rest = t.value - sum(tm.value for tm in quantized_or_f16)
    nbytes = sum(b for k in ll.weight_bytes_by_kernel(header).values() for ty, b in k.items() if ty != "F32")
    return nbytes / (calib.read_bandwidth * (1 / meas - rest))


def test_decode_constants_are_the_recorded_fits():
    _, _, calib = _decode("qwen2.5-0.5b", "F16")
    assert round(calib.attainment["F16"], 3) == 0.757 and round(calib.attainment["MMVQ"], 3) == 0.568
    assert round(calib.read_bandwidth / 1e12, 3) == 4.459


@pytest.mark.parametrize(("weights", "meas", "pred", "ratio_0728", "ratio_0507"), [
    ("F16", 768.1, 941.7, 0.816, 0.813), ("Q8_0", 919.5, 997.2, 0.922, 0.942), ("Q4_K_M", 893.3, 1038.3, 0.860, 0.852)])
def test_small_decode_numbers_are_the_recorded_ones(weights, meas, pred, ratio_0728, ratio_0507):
    m, p, _ = _decode("qwen2.5-0.5b", weights)
    assert (round(m, 1), round(p, 1), round(m / p, 3)) == (meas, pred, ratio_0728)
    assert SMALL_DECODE_REASON.count(f"{ratio_0728:.3f}") and SMALL_DECODE_REASON.count(f"{ratio_0507:.3f}")
    m5, p5, _ = _decode("qwen2.5-0.5b", weights, "2026-12-02T05:07:40Z")
    assert round(m5 / p5, 3) == ratio_0507


def test_small_decode_streams_below_the_7b_fractions():
    assert round(_weights_fraction("qwen2.5-0.5b", "F16"), 3) == 0.416
    assert round(_weights_fraction("qwen2.5-0.5b", "Q8_0"), 3) == 0.403
    assert round(_weights_fraction("qwen2.5-7b", "F16"), 3) == 0.757  # the fit point: its own constant
    assert round(_weights_fraction("qwen2.5-7b", "Q4_K_M"), 3) == 0.376


def test_a_per_kernel_cost_does_not_carry_from_f16_to_q8_0():
    """The reason's 1.55 us and 0.55 us: t_weights = kernels x delta + bytes / (read x a), solved on the 0.5B and 7B
    of one type (24 x 7 + 1 and 28 x 7 + 1 matrix-vector kernels per token)."""
    def solve(weights):
        rows = []
        for model, kernels in (("qwen2.5-0.5b", 169), ("qwen2.5-7b", 197)):
            meas, _, calib = _decode(model, weights)
            header = header_for(_bench(model, weights))
            t = ll.decode_time(header, calib, context=63.5)
            w_terms = [tm for tm in t.terms if "weights" in tm.name and not tm.name.startswith("F32")]
            t_w = 1 / meas - (t.value - sum(tm.value for tm in w_terms))
            nbytes = sum(b for k in ll.weight_bytes_by_kernel(header).values() for ty, b in k.items() if ty != "F32")
            rows.append((kernels, nbytes / calib.read_bandwidth, t_w))
        (n1, b1, t1), (n2, b2, t2) = rows
        x = (t2 - n2 / n1 * t1) / (b2 - n2 / n1 * b1)  # 1 / attainment
        return (t1 - b1 * x) / n1
    assert (round(solve("F16") * 1e6, 2), round(solve("Q8_0") * 1e6, 2)) == (1.55, 0.55)


def test_kquant_numbers_are_the_recorded_ones():
    m, p, calib = _decode("qwen2.5-7b", "Q4_K_M")
    header = header_for(_bench("qwen2.5-7b", "Q4_K_M"))
    assert (round(m, 1), round(p, 1), round(m / p, 3)) == (281.0, 373.3, 0.753)
    assert round(1 / element_bound_time(header, calib, 63.5), 1) == 255.1
    lo, hi = kquant_band(header, calib, 128)
    assert (round(lo, 3), hi) == (0.683, 1.0)
    for quoted in ("281.0", "373.3", "0.753", "407.2", "0.690", "0.376", "0.568", "255.1", "0.683"):
        assert quoted in KQUANT_REASON


def test_marginal_numbers_are_the_recorded_ones():
    f16, q4 = (recordings.load_latest(ROOT / "results", MEASURED_ON, "llama",
                                      f"qwen2.5-7b.{w}.server-sweep.c_81920_np_64_fa_on", STAMP_0728)
               for w in ("f16", "q4_k_m"))
    itl = {w: {c: rec[f"c{c}.itl_s.median"].value * 1e3 for c in (1, 8, 32, 64)} for w, rec in (("f16", f16), ("q4", q4))}
    per_seq = {w: [(v[8] - v[1]) / 7, (v[32] - v[8]) / 24, (v[64] - v[32]) / 32] for w, v in itl.items()}
    assert [round(x, 3) for x in per_seq["f16"]] == [0.852, 0.627, 0.798]
    assert [round(x, 3) for x in per_seq["q4"]] == [0.973, 0.621, 0.936]
    marginal = per_seq["f16"][0]
    assert [round(itl["f16"][1] + (c - 1) * marginal, 2) for c in (32, 64)] == [31.98, 59.24]
    assert [round(itl["f16"][c], 3) for c in (1, 8, 32, 64)] == [5.569, 11.532, 26.582, 52.134]
    # the Q4_K_M C = 8 scatter: one request's median (index 3, its prompt's held tokens), then the rest's
    per_request = q4["c8.itl_s.median"].samples
    rest = [x for i, x in enumerate(per_request) if i != 3]
    assert round(per_request[3] / statistics.median(rest), 2) == 1.76
    se = [2 * statistics.stdev(v) / math.sqrt(len(v)) / statistics.median(v) for v in (per_request, rest)]
    assert [round(se[0], 2), round(se[1], 4)] == [0.19, 0.0039]
    for quoted in ("0.852", "0.627", "0.798", "0.973", "0.621", "0.936", "31.98", "59.24", "0.831", "0.880", "1.76x",
                   "0.39%"):
        assert quoted in MARGINAL_REASON


def test_the_decode_and_sweep_findings_apply_to_their_build_only():
    small, q4 = _bench("qwen2.5-0.5b", "F16"), _bench("qwen2.5-7b", "Q4_K_M")
    assert bench_marks(small, {"source_commit": BUILD_0C1E570}) == (SMALL_DECODE_FINDING,)
    assert bench_marks(_bench("qwen2.5-0.5b", "Q4_K_M"), {"source_commit": BUILD_0C1E570}) == (SMALL_DECODE_FINDING,)
    assert bench_marks(_bench("qwen2.5-0.5b", "Q8_0"), {"source_commit": BUILD_0C1E570}) == ()  # the overhead's drift
    assert len(bench_marks(q4, {"source_commit": BUILD_0C1E570})) == 2
    assert bench_marks(_bench("qwen2.5-7b", "F16"), {"source_commit": BUILD_0C1E570}) == ()
    assert bench_marks(q4, {"source_commit": "synthetic"}) == ()
    sweep = LlamaRun(MEASURED_ON, "x", "qwen2.5-7b", "F16", "server-sweep")
    assert len(sweep_marks(sweep, {"source_commit": BUILD_0C1E570})) == 1
    assert sweep_marks(sweep, {"source_commit": "synthetic"}) == ()
    assert len(sweep_marks(LlamaRun(MEASURED_ON, "x", "qwen2.5-7b", "Q4_K_M", "server-sweep"),
                           {"source_commit": BUILD_0C1E570})) == 1
    assert sweep_marks(LlamaRun(MEASURED_ON, "x", "qwen2.5-7b", "Q8_0", "server-sweep"), {"source_commit": BUILD_0C1E570}) == ()


# --- the 2026-12-04 15:03 visit: the third bench of the same files, the first sweep with per-token ITL ---------------
STAMP_1503 = "2026-12-04T15:03:36Z"


def _measured_1503(name: str, suite: str = "llama", beside=None) -> recordings.Recording:
    if beside is not None:
        return recordings.load_beside(ROOT / "results", MEASURED_ON, suite, name, beside)
    return recordings.load_latest(ROOT / "results", MEASURED_ON, suite, name, STAMP_1503)


@pytest.mark.parametrize(("weights", "ratio"), [("F16", 0.817), ("Q8_0", 0.956), ("Q4_K_M", 0.895)])
def test_small_decode_numbers_of_the_third_visit(weights, ratio):
    """The 15:03 visit's own calibration (its ceilings, tiny overheads and 7B fits): the ratios the reason quotes."""
    run = _bench("qwen2.5-0.5b", weights)
    s = SessionCalibration(run, _measured_1503, header_for, "decode")
    pred = ll.decode_tokens_per_s(header_for(run), s.calibration(), n_gen=128).value
    meas = s.bench["tg128.tok_per_s.median"].value
    assert round(meas / pred, 3) == ratio and f"{ratio:.3f}" in SMALL_DECODE_REASON
    if weights == "Q8_0":
        assert (round(meas, 1), round(pred, 1)) == (912.8, 954.5)
        overheads = [SessionCalibration(run, m, header_for, "decode").overhead("qwen2.5-0.5b", "Q8_0") * 1e6
                     for m in (_measured_1503, _measured_0728)]
        old = SessionCalibration(run, _measured_0728, header_for, "decode",
                                 bench=recordings.load_latest(ROOT / "results", MEASURED_ON, "llama", run.name, STAMP))
        overheads.append(old.overhead("qwen2.5-0.5b", "Q8_0") * 1e6)
        assert [round(x, 1) for x in overheads] == [840.0, 795.3, 810.8]
        for quoted in ("912.8", "954.5", "840.0", "810.8", "795.3", "0.942", "0.922"):
            assert quoted in SMALL_DECODE_REASON


def test_marginal_numbers_of_the_third_visit():
    """Per-token ITL of the 15:03 sweeps: the ratios to the constant marginal and the marginals the reason quotes."""
    itl = {}
    for w in ("f16", "q4_k_m"):
        rec = _measured_1503(f"qwen2.5-7b.{w}.server-sweep.c_81920_np_64_fa_on")
        itl[w] = {c: rec[f"c{c}.itl_per_token_s.median"].value * 1e3 for c in (1, 8, 16, 32, 64)
                  if f"c{c}.itl_per_token_s.median" in rec.measurements}
    quoted = []
    for w, v in itl.items():
        marginal = (v[8] - v[1]) / 7
        quoted += [f"{v[c] / (v[1] + (c - 1) * marginal):.3f}" for c in (16, 32, 64) if c in v]
        quoted += [f"{marginal:.3f}", f"{(v[32] - v[8]) / 24:.3f}", f"{(v[64] - v[32]) / 32:.3f}"]
    assert quoted == ["0.881", "0.757", "0.945", "0.772", "0.580", "0.808", "0.725", "0.821", "1.131", "0.682", "1.047"]
    assert (round(itl["q4_k_m"][64], 2), round(itl["f16"][64], 2)) == (61.84, 49.24)
    for q in (*quoted, "61.84", "49.24", "1.26x"):
        assert q in MARGINAL_REASON


# --- the prefill findings (robust scatter carried through the fit): the numbers their reasons quote -----------------
def _prefill(model: str, weights: str, measured) -> dict[str, float]:
    """A pp512 bench against its own session's prediction: tok/s, seconds per prompt and their parts, the budget."""
    run = _bench(model, weights)
    s, header = SessionCalibration(run, measured, header_for, "prefill"), header_for(run)
    calib = s.carried(lambda c: ll.prefill_tokens_per_s(header, c, 512).value)
    m = s.bench["pp512.tok_per_s.median"]
    s.budget.add("this run", m)
    t = ll.prefill_time(header, calib, 512).value
    return {"meas": m.value, "pred": 512 / t, "ratio": m.value * t / 512, "t": t, "t_meas": 512 / m.value,
            "overhead": calib.overhead_s, "body": t - calib.overhead_s, "budget": s.budget.rel,
            "eff_f16": calib.efficiency[ll.UNQUANTIZED_KERNEL],
            "eff_mmq": calib.efficiency[ll.QUANTIZED_PREFILL_KERNEL]}


def _quoted(values, fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in values)


def test_small_prefill_numbers_are_the_recorded_ones():
    now = [_prefill("qwen2.5-0.5b", w, _measured_1503) for w in ("F16", "Q8_0", "Q4_K_M")]
    then = [_prefill("qwen2.5-0.5b", w, _measured_0728) for w in ("F16", "Q8_0", "Q4_K_M")]
    slower = [(p["t_meas"] - p["overhead"]) / p["body"] for p in now]
    quotes = [_quoted((p["meas"] for p in now), ",.0f"), _quoted((p["pred"] for p in now), ",.0f"),
              _quoted((p["ratio"] for p in now), ".3f"), _quoted((p["ratio"] for p in then), ".3f"),
              _quoted(slower, ".2f") + "x", _quoted(((p["t_meas"] - p["overhead"]) * 1e3 for p in now), ".2f"),
              _quoted((p["body"] * 1e3 for p in now), ".2f"),
              _quoted((p["t_meas"] * 1e3 for p in then), ".2f") + " ms on 07:28, "
              + _quoted((p["t_meas"] * 1e3 for p in now), ".2f") + " on 15:03",
              ", ".join(f"{a['overhead'] * 1e3:.2f} -> {b['overhead'] * 1e3:.2f}" for a, b in zip(then, now)),
              f"{now[0]['eff_f16'] / slower[0]:.2f} (F16) and {now[1]['eff_mmq'] / slower[1]:.2f} (MMQ)",
              f"give {now[0]['eff_f16']:.3f} and {now[0]['eff_mmq']:.3f}",
              f"{min(p['budget'] for p in now):.1%}-{max(p['budget'] for p in now):.1%}",
              f"{min(p['overhead'] / p['t'] for p in now):.0%}-{max(p['overhead'] / p['t'] for p in now):.0%}"]
    for q in quotes:
        assert q.replace("%", "") in SMALL_PREFILL_REASON.replace("%", ""), q
    for a, b in zip(then, now):  # beyond both budgets: the other session's ratio cannot band this one
        assert abs(b["ratio"] / a["ratio"] - 1) > a["budget"] + b["budget"] or a is then[1]
    tiny = [robust_rel_se(m(f"tiny-24l.{w}.bench")["pp512.tok_per_s.median"]) for m in (_measured_0728, _measured_1503)
            for w in ("f16", "q8_0", "q4_k_m")]
    assert f"its robust scatter ({min(tiny):.1%}-{max(tiny):.1%})".replace("%", "", 1) in SMALL_PREFILL_REASON
    for i, (a, b) in enumerate(zip(then, now)):  # each overhead moved beyond both sessions' scatter of its bench
        assert abs(b["overhead"] / a["overhead"] - 1) > tiny[i] + tiny[i + 3]


def test_kquant_prefill_numbers_are_the_recorded_ones():
    now, then = (_prefill("qwen2.5-7b", "Q4_K_M", m) for m in (_measured_1503, _measured_0728))
    q8 = _prefill("qwen2.5-7b", "Q8_0", _measured_1503)
    assert round(q8["ratio"], 3) == 1.0, "the MMQ fit point"
    quotes = [f"{now['meas']:,.0f} tok/s on 2026-12-04 15:03 against {now['pred']:,.0f}",
              f"{then['meas']:,.0f} against {then['pred']:,.0f} on 2026-12-02 07:28",
              f"({now['eff_mmq']:.3f} of the bf16", f"{now['ratio']:.3f}x", f"MMQ {then['eff_mmq']:.3f}; "
              f"{then['ratio']:.3f}x",
              f"{(now['t_meas'] - now['t']) * 1e3:.1f} and {(then['t_meas'] - then['t']) * 1e3:.1f} ms",
              f"{now['t'] * 1e3:.1f} / {then['t'] * 1e3:.1f} ms", f"budget is {now['budget']:.1%}"]
    body = sorted((p["t_meas"] - p["overhead"]) / p["body"] for p in (now, then))
    quotes.append(f"{body[0]:.2f}-{body[1]:.2f}x Q8_0's")
    for q in quotes:
        assert q in KQUANT_PREFILL_REASON, q


def test_the_prefill_findings_apply_to_their_build_only():
    other = {"source_commit": "f" * 40}
    assert prefill_marks(_bench("qwen2.5-7b", "Q4_K_M"), other) == ()
    built = {"source_commit": BUILD_0C1E570}
    assert prefill_marks(_bench("qwen2.5-7b", "Q8_0"), built) == ()
    assert prefill_marks(_bench("qwen2.5-0.5b", "Q8_0"), built) == (SMALL_PREFILL_FINDING,)
