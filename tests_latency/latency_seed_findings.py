"""The seed's RTX 4090 findings (test_latency_seed_decode.py, test_latency_seed_load.py).
"""

from __future__ import annotations

import pytest
from latency_decode_findings import marginal_cost_span
from latency_findings_common import LLAMA, QWEN

ATTAINMENT = pytest.mark.finding(
    "seed-decode-floor-attainment",
    reason="At the datasheet 1,008 GB/s with no overhead term the decode floor is a lower bound: vLLM reaches "
           "81-89% of it (the seed's 'roofline attainment', claim 4). The gap is a fixed ~1.8 ms per step "
           "(kernel gaps, sampling, norms: what the calibrated overhead term carries) plus a per-sequence cost "
           "above the KV bytes (see test_marginal_cost_per_request).",
    expected=(1.10, 1.26))

HIGH_C = pytest.mark.finding(
    "seed-decode-per-sequence-cost",
    reason="At C >= 32 the calibrated step model is 10-12% fast: each extra sequence costs 0.106 ms per step "
           "where its KV bytes at 1,008 GB/s cost 0.066 ms (1.6x, test_marginal_cost_per_request). Candidates: "
           "paged-attention decode reading 16-token KV blocks below streaming bandwidth, and GEMMs with M = C "
           "rows losing efficiency as C grows (the roofline max() assumes a perfect GEMV-to-GEMM transition).",
    expected=(1.09, 1.16))

HIGH_C_MEDIAN = pytest.mark.finding("seed-decode-per-sequence-cost", reason=HIGH_C.kwargs["reason"],
                                    quantity="itl_median", expected=HIGH_C.kwargs["expected"])

PAIRED_PROMPTS = pytest.mark.finding(
    "seed-c4-p99-below-prefill-step",
    reason="At C=4 the simulated closed loop spreads the 3 other prompts of each request's lifetime over 3 "
           "separate steps: 3 of 255 ITLs (1.2%) carry a prefill, just above the 1% a p99 needs, so it predicts a "
           "prefill step (~100 ms). Measured p99 is a decode step (17.6 ms; 17.4 and 21.4 ms in round 1): fewer "
           "than 1% of ITLs straddled a prompt, i.e. prompts ran in pairs, as the measured TTFT median of 288 ms "
           "(a 2,048-token step, not a lone 1,024-token one) also says. The simulation does not model the "
           "client/HTTP delay that groups the replacements.",
    expected=(0.1, 0.3))

SEED_MARGINAL_COST = pytest.mark.finding(
    "seed-decode-per-sequence-cost",
    reason="Each extra concurrent request adds 0.106 ms to the decode step, 1.6x its KV reads at the datasheet "
           "bandwidth (0.066 ms), as the seed found (claim 10). The H200 shows the same excess "
           f"({marginal_cost_span(QWEN, LLAMA)}x, test_latency_steps.py::test_marginal_cost_per_sequence). Mechanism not isolated (no per-kernel timing was recorded): decode "
           "attention over paged 16-token blocks and the batch's GEMM efficiency are the candidates.",
    expected=(1.4, 1.8))

SEED_TTFT_GROUPING = pytest.mark.finding(
    "seed-closed-loop-ttft-grouping",
    reason="The engine part of the mean TTFT at C=64 (queue 380 + prefill 479 ms) is 26% above the "
           "simulation: the simulated closed loop admits each replacement prompt alone as soon as a slot frees, "
           "while in the seed's run replacements arrived through HTTP and tokenization (141 ms frontend residual) "
           "and were prefilled in groups behind each other (the same grouping as the C=4 p99 finding).",
    expected=(1.1, 1.45))

SEED_LITTLES_LAW = pytest.mark.finding(
    "seed-littles-law-waiting-includes-preempted",
    reason="Little's law is an identity for a run that starts and ends empty, yet L / lambda = 140 s exceeds the "
           "histogram's mean queue time (135.0 s) by 3.7%: the 1 Hz `num_requests_waiting` gauge also counts the "
           "38 preempted requests waiting to be recomputed, while the queue-time histogram records only each "
           "request's first wait. 3.7% of 128 x 135 s is ~17 s per preemption, the order of a re-wait here.",
    expected=(0.95, 0.99))
