"""The llama.cpp suite's findings: gaps between the pre-registered theory and what a card measured, each with
its numbers, its explanation and a band that is not the checked measurement.

A finding applies to the runs of the llama.cpp build it was measured with (the batch's source_commit, in each
recording's provenance): the explanation is that build's code, and a replay of another build (the synthetic
batch, a later visit with a newer llama.cpp) is judged on its own. The numbers the reasons quote are
recomputed from the recordings by test_llama_findings.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pytest_anatomy.importers.seed import ENGINE_VERSIONS as SEED_ENGINE_VERSIONS
from pytest_anatomy.importers.seed import HARDWARE as SEED_HARDWARE
from pytest_anatomy.specs.gguf_file import GgufHeader
from pytest_anatomy.theory import llamacpp_memory as lm

MEASURED_ON = "h200"
# The llama.cpp vendored in llama-cpp-python 0.3.36 (scripts/device/llama_plan.py ENGINE), which the 2026-12-02
# 05:07 visit ran.
BUILD_0C1E570 = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"

# The two server loads of that visit (MiB as logged; n_outputs_max as logged by llama_context).
SERVER_COMPUTE_MIB = {"qwen2.5-0.5b.f16.server-load.c_8000_np_3_fa_on": (36.58, 3),
                      "qwen2.5-0.5b.q8_0.server-load.c_4096_np_1_fa_on_ctk_q8_0_ctv_q8_0": (37.79, 1)}
PREDICTED_COMPUTE_MIB = 298.50  # the 0.5B's lm_head step at n_ubatch 512: 296.8 MiB of logits + 1.75 MiB input
BINDING_COMPUTE_MIB = 298.50  # the same build through the Python binding (data/h200-binding-qwen2.5-0.5b-f16-load.log)
_lo, _hi = min(v for v, _ in SERVER_COMPUTE_MIB.values()), max(v for v, _ in SERVER_COMPUTE_MIB.values())
SERVER_COMPUTE_REASON = (
    f"llama-server's CUDA0 compute buffer is {_lo:.2f}-{_hi:.2f} MiB where the lm_head step predicts "
    f"{PREDICTED_COMPUTE_MIB:.2f} MiB ({_lo / PREDICTED_COMPUTE_MIB:.1%}-{_hi / PREDICTED_COMPUTE_MIB:.1%} of it) on both "
    "0.5B loads of the 2026-12-02 visit. Explanation, from this build's source: llama-server sets the context's "
    "n_outputs_max to n_parallel x (1 + draft tokens) (tools/server/server-context.cpp load_model, "
    "common_speculative_get_output_limits), logged as 'n_outputs_max = 3' and '= 1' for -np 3 and -np 1, and "
    "sched_reserve sizes the prompt graph with min(n_ubatch, n_outputs_max) outputs (src/llama-context.cpp). The "
    "theory reserves n_ubatch outputs (f32 logits n_vocab x 512), as llama-bench and the Python binding do (their "
    f"n_outputs_max is n_batch: the binding logged {BINDING_COMPUTE_MIB:.2f} MiB for the same 0.5B on this build). "
    "With 1-3 output rows the lm_head step shrinks to a few MiB and the peak moves to a per-layer step the theory "
    "does not model. Band (from that mechanism, not from the measurement): at least the FFN step's live f32 "
    "tensors (gate and up outputs, n_ff x n_ubatch each, beside the n_embd x n_ubatch residual); at most the "
    "prediction, since fewer outputs shrink every tensor of the graph the theory sized.")


def ffn_floor_bytes(header: GgufHeader, settings: lm.ContextSettings) -> float:
    """The FFN step's live f32 tensors: gate and up outputs and the residual stream, at n_ubatch tokens."""
    n_ff = next(t.ne[1] for t in header.tensors if t.name == "blk.0.ffn_up.weight")
    tokens = min(settings.n_ctx, settings.n_ubatch, settings.n_batch)
    return (2 * n_ff + header.embedding_length) * tokens * 4


def server_compute_band(header: GgufHeader, settings: lm.ContextSettings) -> tuple[float, float]:
    """measured / predicted the explanation allows: (FFN floor / prediction, 1)."""
    return ffn_floor_bytes(header, settings) / lm.compute_buffer_gpu(header, settings).value, 1.0


SERVER_COMPUTE_FINDING = pytest.mark.finding(
    "h200-llama-server-reserves-n-parallel-outputs", reason=SERVER_COMPUTE_REASON,
    quantity="llamacpp_compute_buffer_CUDA0", hardware=MEASURED_ON, band_from="explanation")


def server_marks(run: Any, provenance: Mapping[str, Any]) -> tuple[pytest.MarkDecorator, ...]:
    """The findings of a server load of `run`, by the build that measured it."""
    if provenance.get("source_commit") == BUILD_0C1E570 and run.kind in ("server-load", "server-sweep"):
        return (SERVER_COMPUTE_FINDING,)
    return ()


# --- the 2026-12-02 07:28 visit: the first decode predictions with the 7B kernel constants ------------------------
# Until that visit the 7B F16 / Q8_0 fit benches were skipped on budget, so no decode was predicted; their arrival
# made every other bench a prediction: F16 attainment 0.757 (7B F16, 196.8 tok/s), MMVQ 0.568 (7B Q8_0, 254.4 tok/s)
# of the session's 4.459 TB/s read ceiling, overheads from tiny-24l / tiny-28l (31.7-34.4 us per layer).
SMALL_DECODE_REASON = (
    "Qwen2.5-0.5B decodes slower than the tiny-model overhead plus its weights at the kernel constants fitted on "
    "the 7B: tg128 768.1 / 919.5 / 893.3 tok/s (F16 / Q8_0 / Q4_K_M) against 941.7 / 997.2 / 1,038.3 predicted on "
    "2026-12-02 07:28 (measured/predicted 0.816 / 0.922 / 0.860), and 0.813 / 0.942 / 0.852 for the 05:07 visit's "
    "benches of the same files (its own ceilings and tiny overheads, the 07:28 kernel constants). Read as "
    "bandwidth, the time left after the tiny model's overhead streams the 0.5B's weights at 0.416 (F16, 988 MB) and "
    "0.403 (Q8_0, 525 MB) of the read ceiling, where the 7B's fits give 0.757 and 0.568. Best explanation, not "
    "confirmed: the 0.5B's 169 matrix-vector kernels per token are small (5.8 MB per F16 matrix against 72 MB in the "
    "7B, 896-wide rows), so each pays a DRAM ramp and tail the 7B amortises, while the tiny model, whose layer "
    "weights sit in L2, pays neither; a per-kernel cost fitted on F16 (1.55 us) does not carry to Q8_0 (0.55 us), "
    "so the mechanism is not pinned down. Band: the other visits' measured/predicted of the same run (their own "
    "ceilings and overheads, this session's kernel constants) +- both runs' measured scatter (test_llama_speed). "
    "Q8_0 left out since the 2026-12-04 15:03 visit, which benched the same files again: the 0.5B Q8_0 measured "
    "912.8 tok/s (925.5 / 919.5 before: it repeats within 1.4%) against 954.5 predicted (0.956, inside the check's "
    "6.75%), because the predictor moved: tiny-28l Q8_0's overhead read 840.0 us against 810.8 / 795.3, beyond its "
    "own scatter. Over the three visits Q8_0's measured/predicted is 0.942 / 0.922 / 0.956, once 0.85 points beyond "
    "the check's tolerance, twice inside it: the size of the tiny overhead's drift between sessions, not a "
    "shortfall beyond it. F16 (0.813 / 0.816 / 0.817) and Q4_K_M (0.852 / 0.860 / 0.895) stay below in all three")
SMALL_DECODE_WEIGHTS = ("F16", "Q4_K_M")  # the 0.5B files the finding covers (Q8_0's gap is the overhead's drift)
SMALL_DECODE_FINDING = pytest.mark.finding(
    "h200-llama-0.5b-decode-below-the-7b-constants", reason=SMALL_DECODE_REASON,
    quantity="llamacpp_tg128_tok_per_s", hardware=MEASURED_ON, band_from="other-runs")

KQUANT_REASON = (
    "qwen2.5-7b Q4_K_M (Q4_K 3,121 MB, Q6_K 1,248 MB on the GPU) decodes at 281.0 tok/s where one MMVQ constant, "
    "fitted on the same session's Q8_0 (0.568 of the read ceiling), predicts 373.3 (measured/predicted 0.753), and "
    "the frozen pre-registration (one attainment 0.86 for every type) 407.2 (0.690). Its weights stream at 0.376 "
    "of the read ceiling against Q8_0's 0.568: the issue's expected finding, llama.cpp's k-quant mul_mat_vec_q "
    "falls short of the bandwidth Q8_0's reaches. Explanation: a k-quant block carries more per-weight work (4- and "
    "6-bit unpacking, 6-bit sub-block scales) for fewer bytes, so at the H200's bandwidth the kernel is bound by "
    "its instructions rather than by DRAM. Band from that mechanism, both ends from the Q8_0 fit, not from this "
    "run: at most the prediction (k-quants at Q8_0's bytes per second) and at least the same weights at Q8_0's "
    "time per weight element (an element-bound kernel no slower per weight than Q8_0's): 255.1 tok/s, 0.683")
KQUANT_FINDING = pytest.mark.finding(
    "h200-llama-k-quant-mmvq-below-q8_0", reason=KQUANT_REASON, quantity="llamacpp_tg128_tok_per_s",
    hardware=MEASURED_ON, band_from="explanation")
KQUANT_PREREG_FINDING = pytest.mark.finding(
    "h200-llama-k-quant-mmvq-below-q8_0", reason=KQUANT_REASON, quantity="llamacpp_tg128_tok_per_s_preregistered",
    hardware=MEASURED_ON, band_from="explanation")


def element_bound_time(header: GgufHeader, calib: Any, context: float) -> float:
    """Seconds per decode token if every block-quantized weight took Q8_0's time per element (the MMVQ constant
    being Q8_0's bytes per second): decode_time with each quantized type's bytes scaled by Q8_0's bits per element
    over its own."""
    from pytest_anatomy.specs.formats import GGML_TYPES
    from pytest_anatomy.theory import llamacpp_latency as ll

    q8 = GGML_TYPES["Q8_0"].bits_per_element
    extra = 0.0
    for t, b in ll.weight_bytes_by_kernel(header).get(ll.QUANTIZED_DECODE_KERNEL, {}).items():
        scale = float(q8 / GGML_TYPES[t].bits_per_element)
        extra += b / (calib.read_bandwidth * calib.attainment[ll.QUANTIZED_DECODE_KERNEL]) * (scale - 1)
    return ll.decode_time(header, calib, context=context).value + extra


def kquant_band(header: GgufHeader, calib: Any, n_gen: int, against: float | None = None) -> tuple[float, float]:
    """measured / `against` (default: the byte-bound prediction, tok/s) that the k-quant mechanism allows."""
    from pytest_anatomy.theory import llamacpp_latency as ll

    byte_bound = ll.decode_tokens_per_s(header, calib, n_gen=n_gen).value
    element_bound = 1 / element_bound_time(header, calib, (n_gen - 1) / 2)
    ref = byte_bound if against is None else against
    return element_bound / ref, byte_bound / ref


def bench_marks(run: Any, provenance: Mapping[str, Any]) -> tuple[pytest.MarkDecorator, ...]:
    """The decode findings of a bench of `run`, by the build that measured it."""
    if provenance.get("source_commit") != BUILD_0C1E570 or run.kind != "bench":
        return ()
    if run.model == "qwen2.5-0.5b":
        return (SMALL_DECODE_FINDING,) if run.weights in SMALL_DECODE_WEIGHTS else ()
    if run.model == "qwen2.5-7b" and run.weights == "Q4_K_M":
        return (KQUANT_FINDING, KQUANT_PREREG_FINDING)
    return ()


# --- prefill (pp512) on robust scatter carried through the fit (2026-12-04): checks that passed inside +-120-137% --
SMALL_PREFILL_REASON = (
    "Qwen2.5-0.5B's prompts run slower than the tiny model's prompt overhead plus their matmuls at the efficiencies "
    "fitted on the 7B: pp512 82,665 / 53,078 / 49,095 tok/s (F16 / Q8_0 / Q4_K_M) against 112,107 / 71,610 / "
    "66,805 predicted on 2026-12-04 15:03 (measured/predicted 0.737 / 0.741 / 0.735), and 0.668 / 0.711 / 0.641 on "
    "2026-12-02 07:28 (its own ceilings, overheads and fits). Until then this check passed them inside +-133-137% "
    "budgets (plain standard deviations of benches whose first repetition is cold); on robust scatter carried "
    "through the fit they are 2.3-2.8%. Less the tiny-24l's overhead, the 0.5B's matmuls take 2.86 / 2.18 / 2.30x "
    "their predicted time (2.50 / 4.62 / 4.89 ms against 0.87 / 2.12 / 2.12): they run at 0.19 (F16) and 0.10 (MMQ) "
    "of the bf16 matmul ceiling, where the 7B's fits give 0.553 and 0.224. Best explanation, not confirmed: at 512 "
    "tokens the 0.5B's projections are GEMMs a quarter as wide as the 7B's (896, 128 and 4,864 outputs against "
    "3,584, 512 and 18,944), too few output tiles to fill the card, which an efficiency fitted on the 7B does not "
    "carry; the 135M of the quant suite (same build) also prefills below its tiny models' line "
    "(quant-135m-mmq-prefill-beyond-the-tiny-models); per-kernel timings of the prompt would test it. The other "
    "session's ratio alone does not bound this one (F16 0.668 and Q4_K_M 0.641 against 0.737 and 0.735, beyond "
    "both budgets). The 0.5B's own prompt repeats (6.10 / 9.73 / 10.42 ms on 07:28, 6.19 / 9.65 / 10.43 on 15:03), "
    "but the tiny-24l overhead, 70-81% of each prediction, moved 3.16 -> 3.69, 4.82 -> 5.03, 4.58 -> 5.54 ms "
    "between the sessions, beyond its robust scatter (0.1-5.3%): the predictor drifts between sessions by more "
    "than either budget, and the mechanism is not established. Band: the envelope of both sessions' "
    "measured/predicted (07:28 and 15:03, the judged one included: checked-run), each +- its scatter and both "
    "budgets (test_llama_speed), pinned to those two: a third session's bench of the 0.5B with its tiny model "
    "would be judged against them, and would band the finding from other runs")
# The sessions SMALL_PREFILL_FINDING's band is read from (the judged 15:03 one included): later ones are judged by it.
SMALL_PREFILL_BANDED_UNTIL = "2026-12-04T15:03:36Z"
SMALL_PREFILL_FINDING = pytest.mark.finding(
    "h200-llama-0.5b-prefill-below-the-7b-efficiencies", reason=SMALL_PREFILL_REASON,
    quantity="llamacpp_pp512_tok_per_s", hardware=MEASURED_ON, band_from="checked-run")

KQUANT_PREFILL_REASON = (
    "qwen2.5-7b Q4_K_M's pp512 measured 10,054 tok/s on 2026-12-04 15:03 against 11,689 predicted from the same "
    "session's MMQ efficiency fitted on its Q8_0 7B (0.224 of the bf16 matmul ceiling; 0.860x), and 10,070 against "
    "11,943 on 2026-12-02 07:28 (MMQ 0.219; 0.843x): its prompt takes 7.1 and 8.0 ms more than the 43.8 / 42.9 ms "
    "predicted, its matmuls 1.19-1.21x Q8_0's time at the same FLOPs. The quant suite's own 7B Q4_K_M bench "
    "(2026-12-04 17:12) is 0.851x of the 15:03 session's prediction (quant-7b-q4_k_m-mmq-prefill-below-q8_0). "
    "Until then this check passed them inside +-120% budgets (plain standard deviations of benches whose first "
    "repetition is cold); on robust scatter carried through the fit its budget is 2.3%. Mechanism named there, not "
    "computed: MMQ unpacks each weight tile to int8 in shared memory before the int8 tensor-core products, and a "
    "Q4_K block's 8 sub-blocks carry 6-bit scales and mins packed in 12 bytes, applied per sub-block, where Q8_0 "
    "copies int8 codes with one scale per 32 (quant-7b-mmq-prefill-per-type: one MMQ efficiency does not price "
    "every type). Band: the other sessions' measured/predicted of the same run (their own ceilings, overheads and "
    "fits) +- both runs' robust scatter and both sessions' budgets (test_llama_speed)")
KQUANT_PREFILL_FINDING = pytest.mark.finding(
    "h200-llama-7b-q4_k_m-prefill-below-the-q8_0-fit", reason=KQUANT_PREFILL_REASON,
    quantity="llamacpp_pp512_tok_per_s", hardware=MEASURED_ON, band_from="other-runs")


def prefill_marks(run: Any, provenance: Mapping[str, Any]) -> tuple[pytest.MarkDecorator, ...]:
    """The prefill findings of a bench of `run`, by the build that measured it."""
    if provenance.get("source_commit") != BUILD_0C1E570 or run.kind != "bench":
        return ()
    if run.model == "qwen2.5-0.5b":
        return (SMALL_PREFILL_FINDING,)
    if run.model == "qwen2.5-7b" and run.weights == "Q4_K_M":
        return (KQUANT_PREFILL_FINDING,)
    return ()


MARGINAL_REASON = (
    "llama-server's decode step does not grow by a constant marginal per busy slot: on qwen2.5-7b F16 (2026-12-02 "
    "07:28 sweep) ITL is 5.569 ms at C = 1 and 11.532 at C = 8 (0.852 ms per extra sequence), then 26.582 at 32 "
    "and 52.134 at 64, where that marginal predicts 31.98 and 59.24 (measured/predicted 0.831, 0.880): 0.627 ms "
    "per sequence from 8 to 32, 0.798 from 32 to 64. The Q4_K_M sweep of the same visit has the same shape (0.973, "
    "0.621, 0.936 ms per sequence) and misses too: its C = 8 median scattered 19% by the standard deviation, but "
    "that is one request whose ITL median is 1.76x the other seven's (0.39% without it; every busy slot advances a "
    "token per step, so its counted gaps span two steps, tokens the stream never showed, docs/LLAMA.md), and the "
    "check's scatter is the median absolute deviation, which that artefact cannot widen; at C = 32 and 64 the "
    "two files' steps are within 1.9% and 7.5% although F16 reads 3.2x the bytes: above C = 8 the step is per-slot "
    "work that does not depend on the weights. Best explanation, not confirmed: ggml-cuda serves batches up to 8 "
    "with its matrix-vector kernels (mul_mat_vec_f / mul_mat_vec_q), whose cost per extra column is steeper than "
    "the GEMM path (cuBLAS / MMQ) larger batches take, so the C = 1-8 slope overstates the marginal; the per-slot "
    "rest (sampling over 152k logits on the host, the logits copy) is unmeasured. Band from that mechanism: at "
    "most the constant-marginal prediction, at least the C = 1 step (every step still reads the weights once). "
    "The 2026-12-04 15:03 visit (same build; ITL now per token, test_llama_crossover.py) misses on both files at every "
    "checked level: F16 0.881 / 0.757 of the constant marginal at C = 32 / 64, Q4_K_M 0.808 / 0.725 / 0.821 at C = "
    "16 / 32 / 64. Its marginals per sequence are F16 0.945 / 0.772 / 0.580 ms and Q4_K_M 1.131 / 0.682 / 1.047 "
    "(C = 1-8, 8-32, 32-64): the shrink from C = 8 to 32 repeats, but Q4_K_M's C = 64 step (61.84 ms) is 1.26x "
    "F16's (49.24), so the weights-independent per-slot work above C = 8 does not hold at C = 64")
MARGINAL_FINDING = pytest.mark.finding(
    "h200-llama-server-marginal-shrinks-above-batch-8", reason=MARGINAL_REASON, hardware=MEASURED_ON,
    band_from="explanation")


def sweep_marks(run: Any, provenance: Mapping[str, Any]) -> tuple[pytest.MarkDecorator, ...]:
    """The crossover findings of a sweep: both 7B files' (F16, Q4_K_M), where the constant marginal misses beyond the
    requests' scatter."""
    if provenance.get("source_commit") == BUILD_0C1E570 and run.kind == "server-sweep" and run.weights in ("F16",
                                                                                                           "Q4_K_M"):
        return (MARGINAL_FINDING,)
    return ()


# --- the seed's RTX 4090 llama.cpp sweeps (test_llama_seed_latency.py) -----------------------------------------------
# Predicted from the priors only (the card has no llama.cpp session); the seed's server marginal is in-sample at the
# level it came from. Bands: from no run (the step excess: beyond its check's tolerance; the closed loop: its
# mechanism); test_llama_seed_latency.py computes them and recomputes every number the reasons quote.
SEED_CARD = SEED_HARDWARE  # the card import-seed files the seed's recordings under (its llama.cpp sweeps included)
SEED_BUILD = SEED_ENGINE_VERSIONS["llama.cpp"]  # the llama.cpp the seed ran (its recordings' engine_version)
# (round, C) of the level theory/llamacpp_latency.py SEED_MARGINAL_ABOVE_FLOOR_S came from, with that round's C = 1:
# STUDY.md item 10's 0.468 ms per extra request is (35.32 - 5.84) / 63, round 2's median ITLs
SEED_MARGINAL_SOURCE = (2, 64)
SEED_STEP_EXCESS = "rtx4090-llama-seed-r2-step-excess"
# The step excess's band: beyond its check's tolerance on the slow side, up to a step ten times its prediction (or
# a tenth of the throughput): further out a run would be stalled, not slower; the band comes from no run
STEP_EXCESS_LIMIT = 10.0
SEED_CLOSED_LOOP_TTFT = "rtx4090-llama-seed-closed-loop-ttft-below-the-burst"
# (check, round, C): (measured, predicted) as the reasons quote them, in ms (ITL to 2 decimals, TTFT to 1) or tokens/s
SEED_QUOTED: dict[tuple[str, int, int], tuple[float, float]] = {
    ("llamacpp_median_itl", 2, 16): (23.35, 13.59), ("llamacpp_median_itl", 2, 32): (61.36, 21.23),
    ("llamacpp_output_throughput", 2, 32): (443.7, 917.5), ("llamacpp_median_itl", 1, 32): (21.02, 21.24),
    ("llamacpp_output_throughput", 1, 32): (890.1, 923.0), ("llamacpp_median_itl", 2, 8): (10.30, 9.76),
    ("llamacpp_median_itl", 2, 64): (35.32, 36.53),
    ("llamacpp_median_ttft", 2, 16): (324.4, 906.2), ("llamacpp_median_ttft", 2, 32): (478.0, 1759.1),
    ("llamacpp_median_ttft", 2, 64): (441.5, 3464.9), ("llamacpp_median_ttft", 1, 32): (789.9, 1759.1),
    ("llamacpp_median_ttft", 1, 8): (419.1, 479.8), ("llamacpp_median_ttft", 2, 8): (204.4, 479.8),
    ("llamacpp_p99_ttft", 2, 16): (1599.6, 1493.7), ("llamacpp_p99_ttft", 2, 32): (3206.5, 3072.6),
    ("llamacpp_p99_ttft", 2, 64): (6268.0, 6278.5),
}
SEED_WAVES = {16: 200, 32: 320, 64: 512}  # C: round 2's requests at that level (--num-prompts)
SEED_PROMPT_MS = 106.6  # the predicted prompt (1,024 tokens at the priors): the burst's TTFT at C = 1
# (round, C): p90 / median ITL as recorded (the share of slow steps): round 1's waves against round 2's
SEED_P90_OVER_MEDIAN_ITL = {(1, 8): 1.04, (1, 32): 1.03, (2, 2): 1.97, (2, 4): 2.58, (2, 8): 2.74}
SEED_C32_FAILED = {1: 8, 2: 1}  # round: the C = 32 run's failed requests (of 320)


def _seed_q(check: str, rnd: int, c: int) -> str:
    m, p = SEED_QUOTED[(check, rnd, c)]
    nd, unit = (1, "tokens/s") if "throughput" in check else (2 if "itl" in check else 1, "ms")
    return f"{m:,.{nd}f} {unit} against {p:,.{nd}f} ({m / p:.2f}x)"


def _excess_ms(c: int) -> float:
    m, p = SEED_QUOTED[("llamacpp_median_itl", 2, c)]
    return m - p


def _p90(*levels: tuple[int, int]) -> str:
    return " / ".join(f"{SEED_P90_OVER_MEDIAN_ITL[lv]:.2f}" for lv in levels)


SEED_STEP_EXCESS_REASON = (
    f"round 2 of the seed's llama.cpp sweep (driver 580.159) stepped far slower than predicted at C = 16 and 32, "
    f"median ITL {_seed_q('llamacpp_median_itl', 2, 16)} and {_seed_q('llamacpp_median_itl', 2, 32)}, and its C = "
    f"32 output throughput fell to {_seed_q('llamacpp_output_throughput', 2, 32)}, where round 1's C = 32 run of the "
    f"same build (driver 590.48, another rented machine) agrees (median ITL {_seed_q('llamacpp_median_itl', 1, 32)}; "
    f"{_seed_q('llamacpp_output_throughput', 1, 32)}) and so do round 2's own C = 8 "
    f"({_seed_q('llamacpp_median_itl', 2, 8)}) and C = 64 ({_seed_q('llamacpp_median_itl', 2, 64)}, the marginal's "
    "in-sample level): the excess is no function of C, so no constant of the step model accounts for it. Round 2's "
    "steps were irregular from C = 2 (p90 / median ITL "
    f"{_p90((2, 2), (2, 4), (2, 8))} at C = 2 / 4 / 8, against {_p90((1, 8), (1, 32))} in round 1's C = 8 / 32). "
    "Explanation unknown. It coincides with what the seed's 1 Hz /metrics sampler saw in round 2 (STUDY.md item "
    "10; its CSV is not among the recordings): llama.cpp's CUDA-graph reuse falling from 99.22% at C = 1 to 0% at "
    "C = 32, so that every step's kernels were launched one by one; whether that accounts for "
    f"{_excess_ms(16):.0f}-{_excess_ms(32):.0f} ms more per step was not measured (the seed left the point out of its conclusions pending a -DGGML_CUDA_USE_GRAPHS=OFF control "
    f"it never ran), and both C = 32 runs lost requests ({SEED_C32_FAILED[1]} and {SEED_C32_FAILED[2]} of 320 in "
    "rounds 1 and 2), which the seed's own self-check rejects. "
    "Band: beyond the check's own tolerance on the slow side, up to 10x (from no run: the runs it rests on are the "
    "ones it judges)")
_WAVES = " / ".join(f"{n / c:g}" for c, n in SEED_WAVES.items())
_WAITED = " / ".join(f"{SEED_QUOTED[('llamacpp_median_ttft', 2, c)][0] / SEED_PROMPT_MS:.1f}" for c in SEED_WAVES)
_C8_ROUNDS = SEED_QUOTED[("llamacpp_median_ttft", 1, 8)][0] / SEED_QUOTED[("llamacpp_median_ttft", 2, 8)][0]
SEED_CLOSED_LOOP_TTFT_REASON = (
    "the burst's median TTFT, (C + 1) / 2 prompts, misses the seed's round 2 from C = 16 on: median TTFT "
    f"{_seed_q('llamacpp_median_ttft', 2, 16)}, {_seed_q('llamacpp_median_ttft', 2, 32)} and "
    f"{_seed_q('llamacpp_median_ttft', 2, 64)} at C = 16, 32 and 64. The seed's client is a closed loop of {_WAVES} "
    f"waves of C requests (N = {' / '.join(str(n) for n in SEED_WAVES.values())}), not one burst. Its first wave is "
    "a burst, and there the premise holds: the run's p99 TTFT, which lies in that wave's tail, is "
    f"{_seed_q('llamacpp_p99_ttft', 2, 16)}, {_seed_q('llamacpp_p99_ttft', 2, 32)} and "
    f"{_seed_q('llamacpp_p99_ttft', 2, 64)}, the first wave's (test_each_level_against_the_burst[llamacpp_p99_ttft]). Best explanation: later "
    "requests are sent one or two at a time, as slots free, and wait for a few prompts, not for half a wave's: "
    f"{_WAITED} prompts of the predicted {SEED_PROMPT_MS} ms at C = 16 / 32 / 64, against the burst's "
    f"{' / '.join(f'{(c + 1) / 2:g}' for c in SEED_WAVES)}. Below C = 16, and in round 1's C = 32 ({_seed_q('llamacpp_median_ttft', 1, 32)}), the gap is inside the "
    f"two rounds' TTFT scatter (their C = 8 medians differ {_C8_ROUNDS:.2f}x). Band from that mechanism: at least "
    "one prompt (a request waits for its own), at most the burst's median, widened by the check's tolerance")
SEED_STEP_EXCESS_MARKS = tuple(pytest.mark.finding(SEED_STEP_EXCESS, reason=SEED_STEP_EXCESS_REASON, quantity=q,
                                                   hardware=SEED_CARD, band_from="checked-run")
                               for q in ("llamacpp_median_itl", "llamacpp_output_throughput"))
SEED_CLOSED_LOOP_TTFT_MARK = pytest.mark.finding(SEED_CLOSED_LOOP_TTFT, reason=SEED_CLOSED_LOOP_TTFT_REASON,
                                                 quantity="llamacpp_median_ttft", hardware=SEED_CARD,
                                                 band_from="explanation")
# (round, C): the findings of that level, each on the one quantity (check name) it was found on
SEED_FINDING_LEVELS: dict[tuple[int, int], tuple[pytest.MarkDecorator, ...]] = {
    (2, 16): (SEED_STEP_EXCESS_MARKS[0], SEED_CLOSED_LOOP_TTFT_MARK),
    (2, 32): (*SEED_STEP_EXCESS_MARKS, SEED_CLOSED_LOOP_TTFT_MARK),
    (2, 64): (SEED_CLOSED_LOOP_TTFT_MARK,),
}


def seed_latency_marks(rnd: int, c: int, provenance: Mapping[str, Any]) -> tuple[pytest.MarkDecorator, ...]:
    """The findings of the seed's llama.cpp level (round `rnd`, C = `c`), by the build that measured it."""
    if provenance.get("engine_version") != SEED_BUILD:
        return ()
    return SEED_FINDING_LEVELS.get((rnd, c), ())
