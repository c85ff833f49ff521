"""What the latency suite measures live on the detected card, in one run of the device plan's
program (pytest_anatomy/measure/latency_live.py): one engine, every part the tests read.

FAST (`-m "gpu and not slow"`): the decode step at every batch and the lone prefill at every
length, the parts the step model is checked on (~2 min on an H200, most of it vLLM's import and the
engine start). FULL adds the load runs (closed loop, Poisson, overload) and Llama-3.1-8B's decode and
prefill on a second engine, which the transfer tests predict with the same calibration (~5 min).
Neither runs the tiny-hidden overhead twins (LIVE_OVERHEAD below says why). The plan runs FULL when
any selected live latency test is marked slow. The shapes are the recorded H200 runs'
(scripts/device/latency_plan.py), so a live run and a recording answer the same tests. On a card whose
predicted KV pool cannot hold a decode part's sequences at once (Qwen's b=128 on a 24 GB card, Llama's b=64 and
b=128 there), the part is left out before the plan runs and its tests skip with the tokens it needs and the pool
(pytest_anatomy/latency_fit.py); every part fits an H200's.
Both run Qwen on an engine with a pinned 12 GiB KV pool (below). A decode part the run-validity check flags
(an engine-core stall: load_stats.decode_validity) is measured once more by the plan, which keeps both runs;
the tests reconcile the first the check passes, else the last (with the check's values in the note).
"""

from __future__ import annotations

from pytest_anatomy.measure.latency_live import LatencyLivePlan

MODEL = "qwen2.5-7b"
SECOND_MODEL = "llama-3.1-8b"
DECODE = (1, 2, 4, 8, 16, 32, 64, 128)
PREFILL = (128, 512, 2048, 8192, 16384, 32000)

# Qwen2.5-7B's tiny-hidden twins (pytest_anatomy/specs/configs/overhead/): 28 layers (Qwen's own), then 2
OVERHEAD = ("qwen2.5-7b-tiny-l28", "qwen2.5-7b-tiny-l2")
OVERHEAD_BATCHES = (1, 16, 64, 128)

# Neither live plan runs a twin. The 2-layer twin gave the per-layer slope that was to carry the overhead to
# Llama's 32 layers, but the twins' step is the engine's CPU loop, not an additive term
# (h200-tiny-model-step-is-the-cpu-loop, in four sessions; calibration.TINY_OVERHEAD_IS_ADDITIVE = False), so it
# calibrates nothing; it was dropped first (2026-12-02, after the 873 s full session). The 28-layer twin alone
# fits nothing either (c0 + c_layer x layers needs two layer counts: conftest.session_overhead returns None and
# only a calibration note, one_layer_count_note, read it), and its engine start cost ~50-57 s of the 957 s full
# session of 2026-12-02 02:26 (and ~50 s of the fast one). test_tiny_models_overhead_as_an_additive_term reads
# the recorded sessions that ran both; scripts/device/latency_plan.py still runs both twins by default.
LIVE_OVERHEAD: tuple[str, ...] = ()
# Both plans pin Qwen's KV pool at 12 GiB (~225k tokens; the largest decode part, 128 x 1,152 tokens, and the
# 32,000-token prefill fit), so a fast and a full session measure the same engine: no prediction depends on the
# pool's size, but the decode runs disturbed by an engine-core stall (h200-decode-stalled-run) came mostly from
# engines with the utilization-sized ~2M-token pool: 3 of 6 such sessions against 3 of 13 with the 12 GiB pool to
# 2026-12-02 16:37 (the 14:18 full session's b=16 run, flagged on both attempts, and both sessions of the tenth
# visit's card: 16:29's b=64, 16:37's b=1, 8, 32 and 64; 0 of 5 when the pin was chosen, 1 of 11 to 14:26);
# weak evidence (one-sided Fisher p ~0.26; ~0.12 when chosen, ~0.10 at 14:26), and the pin did not end them. The prefill reconciliations
# of a pinned engine are named "_pinned_pool" (latency_step_checks.pool_regime), in a fast session now as in a full
# one.
FAST = LatencyLivePlan(MODEL, DECODE, PREFILL, kv_cache_gib=12, budget_s=420, overhead_models=LIVE_OVERHEAD,
                       overhead_batches=OVERHEAD_BATCHES)
# The overload part needs the pinned pool: oversubscribed 1.6x in ~20 s, where the
# whole pool of an H200 would take ~100 s (the second model keeps its utilization-derived pool).
# Poisson at every factor the recorded sessions ran (0.25x and 0.8x added after the 2026-12-01 06:38
# session, whose 0.25x/0.8x tests had no live run to read: ~25 s for six more tests).
FULL = LatencyLivePlan(MODEL, DECODE, PREFILL, closed=(1, 8, 32, 64), poisson_factors=(0.25, 0.5, 0.8, 1.0, 1.3),
                       overload=True, second_model=SECOND_MODEL, kv_cache_gib=12, budget_s=560,
                       overhead_models=LIVE_OVERHEAD, overhead_batches=OVERHEAD_BATCHES)
