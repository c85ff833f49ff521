"""The quantization suite's findings: measured, explained divergences (docs/QUANT.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

# The card the quant visits ran on: a finding states where it was measured, once (test_quant_mechanisms imports it).
MEASURED_ON = "h200"

# The CPU slice (381 scored tokens): Q5_1 requantized from the Q4_1-derived reference measured KLD 0.130 nat against
# 0.098 predicted (+32.4%, band +-29.2%: the fit points' 11.9% scatter + 3 standard errors). The band below was set
# from the slice before any GPU number; the cause was established after the second visit (test_quant_mechanisms).
Q5_1_ON_THE_Q4_1_GRID = pytest.mark.finding(
    "quant-q5_1-on-the-q4_1-grid", quantity="kld[Q5_1]", expected=(1.2, 1.6), band_from="other-runs",
    reason="Q5_1 measured 1.32x the KLD its exact tensor noise predicts on the CPU slice, Q5_0 0.87x; on the same "
           "tokens Q5_1's KLD is 1.68x Q5_0's for 1.11x the noise. The GPU (second visit, ~90k tokens) measured "
           "0.1353 against 0.0981 predicted (1.38x). Cause: the reference lies on Q4_1's asymmetric 15-step grid and "
           "Q5_1's 31-step grid spans the same block minimum and maximum, so requantizing maps each 4-bit code k to "
           "round(31k/15): the error is a fixed function of the code (codes 1-7 move down, 8-14 up, by up to 0.47 of "
           "Q5_1's step), correlated with the weight (layer 0: 0.48 with each weight's offset from its block's "
           "mid-range, Q5_0's 0.01), not the independent noise the one-constant model assumes. Measured where it acts "
           "(||E x||^2 / ||W x||^2 over the slice's own activations x), Q5_1's noise is 1.33x its weight-space S "
           "where Q8_0's, Q4_0's and Q5_0's are 1.09-1.10x; one constant on that output-space noise, fitted on Q8_0 "
           "and Q4_0, predicts the held-out Q5_1 at 1.09x and Q5_0 at 0.88x, both inside their bands. On the GPU "
           "MMQ's asymmetric arithmetic adds to it (quant-asymmetric-mmq-floor). The band is the CPU slice's ratio "
           "+- 3 of its standard errors, set before the GPU visit.")

# The first GPU visit (batch 20261202T092902Z, llama-perplexity --kl-divergence, ~90k tokens at -c 512, F16 base).
# Each band is computed at run time (reconcile(finding_band=)) from the mechanism: tests_quant/quant_mechanisms.py's
# CPU computation (quant_mechanisms.json) and the device's per-tensor noise, never from the ratio it covers.
# test_quant_mechanisms.py recomputes every number these reasons quote.
MECHANISM_BAND = ("delta ln ppl follows the KLD (delta ln ppl ~= KLD holds here) and is covered by the same band; "
                  "the band is the mechanism's prediction / the frozen one, +- (3 standard errors of the CPU constants "
                  "+ the CPU slice's own non-additivities: roles summed vs all at once 8.8%, floor + weight noise vs "
                  "both at once 13.0%)")

Q8_1_ACTIVATION_FLOOR = pytest.mark.finding(
    "quant-q8_1-activation-floor", band_from="explanation",
    reason="KLD 0.004287 measured against 0.001405 predicted (3.05x). llama.cpp's CUDA MMQ (every quantized type on "
           "sm_90: turing_mma_available) rounds each quantized matmul's input to q8_1 (int8 per 32, d = amax/127); "
           "the F16 reference runs cuBLAS in f16 and does not. That floor, run on the CPU slice (numpy q8_1 on every "
           "weight matmul's input), is KLD 0.003357 with no weight noise; per-role weight noise + floor predicts "
           "0.00472, measured 0.91x of it. Unexplained: the floor adds sub-additively on the CPU (Q8_0 + q8_1 "
           "together 0.87x the sum), not modelled. " + MECHANISM_BAND)

Q6_K_FLOOR_AND_FFN_DOWN = pytest.mark.finding(
    "quant-q6_k-floor-and-ffn-down", band_from="explanation",
    reason="KLD 0.00864 measured against 0.003278 predicted (2.64x). On this 576-wide model the Q6_K file is Q8_0 "
           "except ffn_down (Q6_K), which carries 0.00959 of its S = 0.0152. Two mechanisms: the q8_1 activation "
           "floor (0.003357 on the CPU slice) and ffn_down's sensitivity, 0.569 nat per unit S on the CPU slice "
           "(2.6x the one-constant c = 0.216). Together they predict 0.00965; measured 0.90x of it. Unexplained: "
           "nothing beyond the CPU slice's statistics. " + MECHANISM_BAND)

ROLE_SENSITIVITY = pytest.mark.finding(
    "quant-k-mix-role-sensitivity", band_from="explanation",
    reason="Q4_K_M KLD 0.0561 against 0.072 predicted (0.78x), Q3_K_M 0.145 against 0.2248 (0.645x). The tensors "
           "are not equally sensitive: on the CPU slice, one role at a time in Q4_0, KLD per unit S runs from 0.048 "
           "(attn_k) to 0.569 (ffn_down), and these mixes put their noise on the insensitive roles (ffn_down is Q4_K "
           "or Q6_K: S 0.0100 and 0.0104 against Q4_0's 0.227). Per-role constants (7, fitted on the CPU slice only) "
           "+ the q8_1 floor predict 0.0526 and 0.1456: measured 1.07x and 1.00x. Unexplained: nothing beyond the "
           "band; Q2_K is the counter-case (the same model over-predicts it, 0.69x: see test_quant_mechanisms). "
           + MECHANISM_BAND)

UNCALIBRATED_REFERENCE = pytest.mark.finding(
    "quant-uncalibrated-reference", band_from="explanation",
    reason="delta ln ppl is not KLD: Q4_0 0.215 against KLD 0.309 measured, Q2_K 0.325 against 0.427, Q5_K_M 0.0972 "
           "against 0.0869, and (second visit) Q5_1 0.1445 against 0.1353. The reference (Q4_1 dequantized) is not "
           "calibrated on the text (on the CPU slice its nll 3.264 exceeds its entropy 3.010), so E_text[ln p_ref - "
           "ln p_q] = KLD + a calibration term. The CPU slice measures delta ln ppl / KLD = 0.697 for Q4_0 (used for "
           "Q2_K too: 6 of its 7 roles are Q4_0), 1.11 for Q5_K_M's legacy tensors and 1.07 for Q5_1; times the GPU's "
           "KLD they predict 0.215, 0.297, 0.0965 and 0.1446. Unknown: the sign of the term is not derived, only "
           "measured; the band is 3 standard errors of the slice's paired per-token mean of delta nll - KL, over its "
           "KLD (wide: 381 tokens).")

# test_quant_mechanisms.py's held-out check of the mechanism model itself on every GPU type.
Q5_K_M_ON_Q5_1 = pytest.mark.finding(
    "quant-q5_k_m-is-q5_1", quantity="kld_mechanism[Q5_K_M]", expected=(1.3, 1.7), band_from="other-runs",
    reason="the per-role model + floor under-predicts Q5_K_M 1.50x: 6 of its 7 roles are Q5_1, the type of "
           "quant-q5_1-on-the-q4_1-grid. On the CPU slice the mix's legacy tensors alone measure 1.46x their per-role "
           "prediction, the same excess, so it is the Q5_1 grid effect (quant-q5_1-on-the-q4_1-grid: the "
           "requantization error is a function of the Q4_1 code, correlated with the weights). The band is the CPU "
           "slice's 1.46x +- its 3 standard errors (16%).")

# ---- the second visit (batch 20261202T143307Z): Q5_1 and Q4_1 over ~90k tokens, the slices, every file's bench --------
ASYMMETRIC_MMQ_FLOOR = pytest.mark.finding(
    "quant-asymmetric-mmq-floor", quantity="slice_delta_ln_ppl[Q5_1]", band_from="explanation",
    reason="On the slice's 381 tokens llama.cpp's Q5_1 scores delta ln ppl 0.1783 where the numpy forward of the same "
           "weights (noise S 0.454008 on both) scores 0.1388: +0.0395 nat against a 0.01 tolerance, while Q8_0, "
           "Q4_0 and Q5_0 agree. llama.cpp's MMQ rounds the activations to q8_1 and, for a type with a block minimum "
           "(Q4_1, Q5_1, Q4_K, Q5_K), multiplies them by the weight's unsigned codes and adds the minimum times the "
           "block's sum of the activations taken before rounding (ggml-cuda quantize.cu; mmq.cuh "
           "vec_dot_q8_1_q8_1_mma): each activation's rounding error is multiplied by the weight's offset from its "
           "block minimum, up to twice the block's range, instead of by the weight as for the symmetric types. The "
           "numpy forward with that arithmetic (measure/q8_1.AsymmetricMmq) scores 0.1567: +0.0178 +- 0.0102 (paired "
           "standard error) over the plain forward; the rest, 0.0217 nat, is inside 3 of them (the rounding makes "
           "both forwards chaotic: each is a draw). Checked on the trap's file, whose weights are the reference's own "
           "grid (noise S 7.8e-06), so that its KLD is the kernel's alone: the same arithmetic predicts KLD 0.01454 "
           "on the slice, the GPU measured 0.01362 over ~90k tokens (0.94x), where the symmetric rounding alone "
           "gives 0.00299 (the GPU 4.55x it). Band: the numpy forward with the kernel's arithmetic +- 3 paired "
           "standard errors.")

QUANT_135M_MMVQ_TYPE_LATENCY = pytest.mark.finding(
    "quant-135m-mmvq-type-latency", band_from="checked-run",
    reason="At 135M a decode step is neither bandwidth- nor issue-bound: each file's weights at the read ceiling "
           "are 1.8-6.1% of its step, and issuing would fill the step only at over 8,000 warp instructions per "
           "32-weight block (mul_mat_vec_q spends tens). The llama suite's tiny models (hidden 256, 24 and 28 layers, "
           "the same llama.cpp build and card) measure the kernel chain: 28.8 us per layer for F16, 30.3 for Q8_0 "
           "(fitted there, over the tiny benches of three llama visits: 2026-12-02 05:07 and 07:28, 2026-12-04 15:03; "
           "the third moved the line by 2-3%). At 30 layers + bytes at the priors they predict F16 at 0.999x the "
           "measured tok/s, Q4_0 at 0.972x and Q4_1 at 0.970x, but the files dominated by Q8_0, Q5_0 or Q5_1 tensors "
           "decode slower: Q8_0 0.930x, Q6_K (Q8_0 but ffn_down) 0.911x, Q5_0 0.913x, Q5_K_M (mostly Q5_1) 0.897x, "
           "and the k-quant mix Q3_K_M (mostly Q4_0) 0.920x, outside 2 standard errors of the line and the bench "
           "(Q3_K_M only since the third visit's line); Q5_1 (0.927x) and Q4_K_M (mostly Q5_0, 0.894x) the same "
           "within their noisier benches. Each k-quant mix decodes 1.8-5.8% slower than the legacy file of its dominant type (its "
           "k-quant ffn_down). Bytes do not order "
           "them (Q8_0 reads 1.59x Q4_0's bytes and is 5.9% slower; Q5_0 reads 1.15x and is 6.8% slower). Unknown: "
           "a per-type latency of mul_mat_vec_q at rows of 576 and 1536 (Q5_0/Q5_1 load a separate high-bit word "
           "per block, Q8_0 twice the 32-bit words of a 4-bit block) that the tiny Q8_0, 256 wide, does not show; "
           "testing it needs per-kernel timings on the device. Band: each file's measured/predicted in its bench of "
           "2026-12-02 14:33 (quant_speed.BENCHED_BY_RUN) +- the check's tolerance, since the mechanism is not "
           "established: read off the run it judges while that bench is the newest (checked-run), from another run "
           "once a later bench of the file is judged (other-runs).")

QUANT_135M_PREFILL_PER_LAYER = pytest.mark.finding(
    "quant-135m-prefill-per-layer-latency", band_from="other-runs",
    reason="pp512 of F16 measured 109,586 tok/s against the theory's 347,666 (0.315x). The theory prices a prompt "
           "as its FLOPs at the prior efficiency (0.17 ms here) + the decode overhead per layer (1.28 ms), but a "
           "prompt's per-layer cost is its own: the llama suite's tiny models (hidden 256, a sixth of the FLOPs per "
           "layer) take 128.1 us per layer in pp512 against 28.8 in tg128 (llama.cpp replays a CUDA graph for "
           "batch-1 decode and launches a prompt's kernels one by one). Their pp512 line at 30 layers + this "
           "model's FLOP term predicts 114,414 tok/s; measured 0.958x of it (the three llama visits' tiny pp512 benches scatter widely). Band: that line's prediction over the "
           "theory's, +- 2 standard errors of the line and of the bench.")

QUANT_135M_MMQ_PREFILL = pytest.mark.finding(
    "quant-135m-mmq-prefill-beyond-the-tiny-models", band_from="other-runs",
    reason="pp512 of the quantized files measured 52,970-64,052 tok/s against the theory's 324,527 (0.16-0.20x), "
           "and 0.58-0.70x what the tiny models' Q8_0 pp512 line (122.3 us per layer) + this model's FLOP term "
           "predicts, where F16 reaches 0.958x of its tiny line: a quantized prompt costs 1.7-2.1x the F16 one here "
           "(the theory: 1.07x), so quantization slows prefill at 135M. Part is the per-layer launch cost "
           "(quant-135m-prefill-per-layer-latency) with MMQ's extra kernels (activations quantized to q8_1 before "
           "each matmul); the rest is unknown: MMQ at rows of 576 and 1536 costs more per layer than at the tiny "
           "models' 256 and 512 (hypothesis, untested: its tiles walk K in steps of 256, 3 and 6 steps here against "
           "1 and 2). Band: at most the tiny line (a wider matrix is no faster per layer), +2 standard errors.")

# ---- the tenth visit's vLLM starts (batch 20261202T163955Z): awq, gptq, bf16-kv-fp8, fp8-kv-fp8 -------------------
# One finding per quantity the unquantized load moves (test_quant_replay applies it with quantity=); its band is the
# pre-registration's bf16 row over its gptq row, +- the bf16 load's allocator rounding, computed at run time
# (test_quant_replay._unquantized_band); test_quant_replay.test_the_gptq_start_is_the_bf16_ledger checks the quotes.
VLLM_GPTQ_LOADED_UNQUANTIZED = pytest.mark.finding(
    "quant-vllm-gptq-loaded-unquantized", hardware=MEASURED_ON, band_from="explanation",
    reason="The gptq engine start resolved quantization=auto_gptq (its config line) but loaded every linear module "
           "unquantized: model memory 15,374,945,280 B (14.32 GiB) against 5,717,785,600 pre-registered (2.69x, "
           "+9,657,159,680 B), the KV pool as much smaller (117,170,659,840 B, 127,705 blocks against 138,231): "
           "each equal, to the byte, to the pre-registration's bf16 row, the bf16 engine with the same settings. Its "
           "torch.compile traced no quantization module, where the AWQ start's traced auto_awq.py and the Machete "
           "kernel (and loaded 5.40 GiB, 1.5% over its prediction). Cause, a plan bug, not the theory: vLLM's "
           "AutoGPTQConfig quantizes only the modules named by quantization_config's modules_in_block_to_quantize; "
           "absent, maybe_update_config fills it from the checkpoint's *.safetensors headers (every tensor not in "
           "fp16/bf16/fp32), and a dummy-weight model folder holds config.json alone, so the list is empty, "
           "is_layer_gptq_quantized matches no module and each falls back to UnquantizedLinearMethod in bf16. "
           "bits, group_size, desc_act and sym were all there (from_config requires them; checkpoint_format is not "
           "read). scripts/device/quant_plan.py now writes the list (QUANT_CONFIGS['gptq']); the re-start with it "
           "(batch 20261202T171407Z) loaded GPTQ and agrees with the pre-registered row, so the replay, which reads "
           "the newest start, no longer carries this finding. Band: the bf16 row's prediction over the gptq row's, +- "
           "the bf16 load's allocator rounding (110 MB; 121 blocks).")

# ---- llama.cpp at 7B per shootout type (speed7b, 2026-12-04 17:12 and 17:18) ----------------------------------------
QUANT_7B_KQUANT_MMVQ = pytest.mark.finding(
    "quant-7b-k-quant-mmvq-below-its-bytes", band_from="explanation",
    reason="At 7B (random weights, llama-bench tg128) the k-quant mixes Q4_K_M, Q5_K_M and Q2_K decode at 0.53-0.68x "
           "the frozen prediction (every block type streaming at one prior attainment), where Q8_0 and Q4_0 agree "
           "(0.84x, 0.82x). The llama suite's finding h200-llama-k-quant-mmvq-below-q8_0 names the mechanism for "
           "Q4_K_M: a k-quant block carries more unpacking work per weight (4-6-bit codes, 6-bit sub-block scales) for "
           "fewer bytes, so mul_mat_vec_q is bound by its instructions per weight element rather than by DRAM. Band "
           "from that mechanism and the llama suite's own Q8_0 7B benches (other sessions, never this run): at most "
           "the type's bytes at Q8_0's measured bytes per second, at least the same weight elements at Q8_0's measured "
           "time per element (an element-bound kernel no slower per weight than Q8_0's), each over the frozen "
           "prediction, with the pre-registered overhead per token in both.")
QUANT_7B_Q6K_Q3K_SLOWER = pytest.mark.finding(
    "quant-7b-q6_k-q3_k_m-slower-per-element-than-q8_0", band_from="other-runs",
    reason="Q6_K (204.8 tok/s) and Q3_K_M (215.0) decode slower than Q8_0 (254.2 in the same session, 254.4-256.0 in "
           "the llama suite's) although they read 0.83x and 0.51x its bytes: below even the element-bound floor of "
           "quant-7b-k-quant-mmvq-below-its-bytes, so their kernels spend more time per weight element than Q8_0's. "
           "Candidate, not computed: Q6_K's codes are split over two arrays (4 low and 2 high bits) with 16 int8 "
           "scales per 256, Q3_K's over a 2-bit array and a high-bit mask with 12 packed 6-bit scales: more loads "
           "and shifts per element than Q4_K's or Q2_K's layout. The mechanism is not established (per-kernel "
           "timings or instruction counts of mul_mat_vec_q per type would test it). Band: another run of the same "
           "file's batch-1 decode, its batched run's S_TG(1) (2026-12-04 18:38), over the frozen prediction, +- the "
           "card's session-to-session tg128 spread and that median's 2 robust SE, the top also by its longer "
           "context's KV read (quant_batched.lone_decode_band): a per-type cost of the file repeats there.")
KQUANT_7B_PLACED = ("Q4_K_M", "Q5_K_M", "Q2_K")
KQUANT_7B_SLOWER = ("Q6_K", "Q3_K_M")

# ---- pp512 at 7B per shootout type (the same speed7b benches) against the llama suite's prefill theory --------------
# test_quant_prefill_7b.py predicts each type from the llama suite's newest session before the run (its ceilings, its
# tiny models' prompt overhead, its MMQ efficiency fitted on its own Q8_0 7B) and recomputes every number quoted here.
QUANT_7B_Q4_K_M_MMQ_PREFILL = pytest.mark.finding(
    "quant-7b-q4_k_m-mmq-prefill-below-q8_0", hardware=MEASURED_ON, band_from="other-runs",
    reason="pp512 of Q4_K_M at 7B measured 9,951 tok/s against 11,689 predicted (0.851x). The theory prices every "
           "quantized type's prompt at the one MMQ efficiency fitted on Q8_0 (the FLOPs are the same for every type): "
           "Q4_K_M's prompt costs 7.6 ms more than that. The llama suite's own Q4_K_M 7B benches sit as far below "
           "their own sessions' predictions (2026-12-02 07:28: 0.843x, 2026-12-04 15:03: 0.860x), which that suite's "
           "prefill check passed inside +-120% budgets (plain standard deviations of benches whose first repetition "
           "is cold) until it took this suite's robust scatter on 2026-12-04 and made them its finding "
           "h200-llama-7b-q4_k_m-prefill-below-the-q8_0-fit. Mechanism named, not computed: llama.cpp's MMQ unpacks each weight tile to int8 in "
           "shared memory before the int8 tensor-core products, and a Q4_K block's 8 sub-blocks carry 6-bit scales "
           "and mins packed in 12 bytes, each applied per sub-block, where Q8_0 copies int8 codes with one scale per "
           "32. Band: the llama suite's Q4_K_M pp512 over its own session's prediction, in every session that benched "
           "it (never this run), +- (its scatter + that session's budget + this run's).")
QUANT_7B_MMQ_PREFILL_PER_TYPE = pytest.mark.finding(
    "quant-7b-mmq-prefill-per-type", hardware=MEASURED_ON, band_from="other-runs",
    reason="At 7B one MMQ efficiency (fitted on the llama suite's Q8_0) does not price every type's prompt: measured/"
           "predicted pp512 is 1.036x for Q4_0, 0.832x for Q5_K_M, 0.752x for Q3_K_M, 0.712x for Q6_K and 0.557x for "
           "Q2_K (Q8_0 0.985x agrees; Q4_K_M 0.851x is quant-7b-q4_k_m-mmq-prefill-below-q8_0). Per 512-token prompt, "
           "against 43.28 ms predicted: Q4_0 -1.51 ms, Q5_K_M +8.72, Q3_K_M +14.25, Q6_K +17.54, Q2_K +34.40. Bytes "
           "do not order them (Q6_K reads more than Q5_K_M, Q2_K the fewest of all). Candidate, not computed: the "
           "types whose sub-blocks hold 16 weights (Q6_K, Q3_K, Q2_K: a scale per 16, two per 32-wide int8 product, "
           "Q2_K a min per 16 too) are the slowest, the 32-weight k-quant sub-blocks (Q4_K, Q5_K) next, the legacy "
           "32-blocks (Q8_0, Q4_0) at the fit; Q4_0 reads 0.77 ms fewer weight bytes than Q8_0 at the read ceiling "
           "per pass over the weights, and if MMQ passes over each weight tile once per column tile of tokens, "
           "more than once per prompt, its smaller tiles make it the faster one. Unknown: the per-type cost is not "
           "derived (per-kernel timings of mul_mat_q per type on the device would establish it). Band: another run "
           "of the same file's 512-token prompts, its batched run (2026-12-04 18:38), from the lone prompt's rate "
           "(S_PP(1), which pays quant-7b-batched-lone-prompt-pays-a-fixed-cost) to 64 prompts' (S_PP(64), which "
           "does not), each over this prediction, +- this check's tolerance and those medians' 2 robust SE "
           "(quant_batched.prefill_band): a cost of the type lands there again.")
Q4_K_M_MMQ_PREFILL_BANDED = ("Q4_K_M",)
MMQ_PREFILL_PER_TYPE = ("Q4_0", "Q5_K_M", "Q3_K_M", "Q6_K", "Q2_K")

# ---- llama.cpp at batch 1 and 64 per shootout type at 7B (llama-batched-bench, 2026-12-04 18:38) ---------------------
# test_quant_batched_7b.py against batched_preregistered.json (written 18:28, before the run; quant_batched.py).
BATCHED_LONE_PROMPT_FIXED_COST = pytest.mark.finding(
    "quant-7b-batched-lone-prompt-pays-a-fixed-cost", hardware=MEASURED_ON, band_from="other-runs",
    reason="The theory says 64 prompts of 512 in per-sequence streams run 64 lone prompts' work, so S_PP(64) = S_PP(1). "
           "S_PP(64) is 1.07-1.30x the same run's S_PP(1) (F16 1.30, Q6_K 1.14, Q3_K_M 1.13, Q5_K_M 1.12, Q4_K_M 1.10, "
           "Q8_0 1.10, Q4_0 1.09, Q2_K 1.07), while S_PP(64) itself is 1.00-1.07x the types' llama-bench pp512 of "
           "another session (test_prefill_at_64_prompts_against_its_preregistration): the lone prompt is the slow one, "
           "by 3.9-7.7 ms per prompt (medians; 3.6-5.4 ms taking each type's faster warm repetition), not a fraction "
           "of its 19-76 ms. Candidate, not measured: batched-bench alternates the batch (-npl 1,64,1,64,1,64), so "
           "each lone prompt is the first decode after a 64-sequence graph, and pays the scheduler's re-reservation "
           "and a CUDA graph rebuild once; the 64-prompt batch pays it once in 16 unsynchronised decodes. Also, of "
           "three repetitions the first is cold, so the median is the slower warm one. Band: the b64/b1 ratio this "
           "type would show with the fixed excess of the other seven types of the same batch (smallest to largest), "
           "+- this check's noise.")
BATCHED_PREFILL_ABOVE_ITS_BENCH = pytest.mark.finding(
    "quant-7b-batched-prefill-k-quants-above-their-bench", hardware=MEASURED_ON, band_from="checked-run",
    reason="S_PP(64) of Q6_K, Q3_K_M and Q4_K_M is 1.074x, 1.051x and 1.023x the pre-registration (their llama-bench "
           "pp512 of 2026-12-04 17:12 / 17:18), beyond a tolerance that carries the card's session-to-session spread "
           "of pp512 (2.0%, from the types benched in several sessions); F16, Q8_0, Q4_0, Q5_K_M and Q2_K agree "
           "(1.00-1.03x). Faster, not slower, than the batch-1 bench: a 64-prompt batch runs 16 decodes without a "
           "sync, so a host cost llama-bench's lone prompt pays per prompt would vanish, but the five agreeing types "
           "show no such gain. Cause unknown; the three are the types whose 17:12 llama-bench repetitions scattered "
           "most (Q6_K 7,594-8,477 tok/s after the cold one), but that scatter reaches 1.007x of Q6_K's median, not "
           "1.074x. Band: the first batched run's ratio (quant_batched.BANDED_BY_RUN) +- the check's tolerance: read off "
           "the run it judges while that run is the newest (checked-run), from another run once a later batched run "
           "of these types is judged (other-runs).")
BATCHED_LONE_DECODE_BELOW_ITS_BENCH = pytest.mark.finding(
    "quant-7b-batched-lone-decode-below-its-bench", hardware=MEASURED_ON, band_from="checked-run",
    reason="S_TG(1) of Q4_0 and Q5_K_M is 0.968x and 0.976x the pre-registration (their llama-bench tg128 of 17:12, "
           "with the KV read of batched-bench's longer context added), outside tolerances of +-2.5% and +-1.7% that "
           "carry the card's tg128 session spread (1.5%); the other six types agree (0.976-0.999x). Cause unknown: "
           "another session and maybe another card, and a decode loop that follows a 64-sequence graph each "
           "repetition (quant-7b-batched-lone-prompt-pays-a-fixed-cost's candidate, here spread over 128 tokens). "
           "Band: the first batched run's ratio (quant_batched.BANDED_BY_RUN) +- the check's tolerance: read off the "
           "run it judges while that run is the newest (checked-run), from another run once a later batched run of "
           "Q4_0 and Q5_K_M is judged (other-runs).")
BATCHED_DECODE_BELOW_ITS_ROOFLINE = pytest.mark.finding(
    "quant-7b-batched-decode-below-its-roofline", hardware=MEASURED_ON, band_from="checked-run",
    reason="A decode step of 64 sequences takes 1.4-1.9x the pre-registered one (S_TG(64) 0.52-0.70x): F16 9.33 ms "
           "against 5.67 (+3.66), Q8_0 12.93 against 6.81 (+6.11), Q4_0 12.45 / 6.52 (+5.92), Q4_K_M 13.48 / 7.78 "
           "(+5.70), Q5_K_M 14.47 / 7.91 (+6.57), Q6_K 15.38 / 9.10 (+6.28), Q3_K_M 14.30 / 8.66 (+5.64), Q2_K 16.24 / "
           "11.39 (+4.85). The theory priced F16's step as its weight stream at the batch-1 attainment (4.15 ms) and "
           "every quantized step as MMQ's multiply at its pp512 efficiency per FLOP (Q8_0 5.26 ms), plus 64 KV reads "
           "(0.62 ms) and the batch-1 overhead (0.90-0.95 ms). Size of each candidate, none measured apart: (1) every "
           "step copies 64 rows of logits to the host, 64 x 152,064 x 4 B = 38.9 MB, 0.8-1.9 ms at 20-50 GB/s; "
           "(2) if the rest is the quantized matmuls, MMQ at 64 rows runs at 0.46-0.55 of its pp512 rate per FLOP "
           "(Q8_0 and Q4_0 take the same step, 12.9 and 12.5 ms, for 8.1 and 4.4 GB of weights: multiply-bound as "
           "priced, just slower), its 64-row tiles filling fewer SMs than 512-row ones; (3) for F16, cuBLAS at 64 "
           "columns streams the 15.2 GB at about half the batch-1 vector kernel's rate if (1) is small. Per-kernel "
           "timings at batch 64 (nsys or GGML_SCHED debug timings) would split the step. The other types of the "
           "batch do not band a type: the excess differs by kernel path (F16 +3.66 and Q2_K +4.85 ms lie below the "
           "other six's +5.64-6.57). Band: each type's ratio in the first batched run (quant_batched.BANDED_BY_RUN) +- "
           "the check's tolerance: read off the run it judges while that run is the newest (checked-run), from "
           "another run once a later batched run of the type is judged (other-runs).")
BATCHED_PREFILL_ABOVE = ("Q6_K", "Q3_K_M", "Q4_K_M")
BATCHED_LONE_DECODE_BELOW = ("Q4_0", "Q5_K_M")


def judged_marks(banding_run: str, newest_stamp: Callable[[Path, str, str], str],
                 *marks: pytest.MarkDecorator) -> Callable[[Path, str, str], tuple[pytest.MarkDecorator, ...]]:
    """A quant_runs marks value for findings banded by one pinned run (`banding_run`, a UTC stamp): while the judged
    (newest) run of the case is that run, its band is read off the run it judges (band_from="checked-run" as each mark
    says); once a later run is judged, the same band comes from another run (band_from="other-runs"). `newest_stamp`
    gives the judged run's recorded_at from (results, hardware, file type)."""
    def of(results: Path, hardware: str, file_type: str) -> tuple[pytest.MarkDecorator, ...]:
        if newest_stamp(results, hardware, file_type) <= banding_run:
            return marks
        return tuple(m.with_args(band_from="other-runs") for m in marks)
    return of
