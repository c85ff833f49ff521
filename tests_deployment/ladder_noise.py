"""The rung gains that agree with their prediction within issue 14's 20% target but not within their error budget
(gain_budget.py, issue 10 item 2: the measured gain's request-resampled interval plus the calibration's spread): the
47 checks that turned from agree to diverge when the 20% tolerance became a budget (2026-12-05), 16 of the third
start's runs (2026-12-05 03:57-04:15), 11 of the 2026-12-07 05:23 runs (card GPU-8f2eaa92) and 15 of the 17:09 ones
(card GPU-65905dee), declared as findings with their
size, split by sign (a reason never explains both). The prediction errs by more than the runs' own request
noise and the calibration's scatter; for most gains why is not established, and each reason names the mechanism of
the rung's existing findings only as a candidate.

Bands (test_ladder_replay's gain check): where the rung ran again (ladder_repeat.RUNS), every other run's interval, each
side widened by sqrt(2) (cause_findings.repeat_ratio_band), over the predicted gain, when they all hold this run's gain
(their intersection; other-runs); else, where two or more other runs exist, their hull when it holds it (other-runs: the
size moves from engine start to start by that much, ladder_repeat.joined_band); else this run's own interval over the
predicted gain (checked-run), the reason naming the run that would replace it. Since 2026-12-07 14:35 only the other
runs on this run's side of the prediction band it (its finding, above or below, names the side), and a band they set is
cut at the prediction (it never holds a gain on the other side: issue 10 item 3). An other-runs band holding the
prediction makes the finding not strict (ladder_repeat.strict: another start may land inside its budget). GAINS quotes every such run's gain [resampled 95% interval] and the predicted gain (the n-gram rung's at the
run's measured E); test_ladder_noise.py recomputes them from the recordings and kept raw batches.
"""

from __future__ import annotations

import pytest

import cause_findings as cf
import ladder_repeat as lrp
from ladder_findings import MEASURED_ON

QWEN, LLAMA = lrp.QWEN, lrp.LLAMA
Key = tuple[str, str, str, str, int]  # (model, workload, rung, metric, run: 1 first, then each repeat)
# measured gain, its request-resampled 95% interval, the predicted gain: every MISSES run and every other run of its
# rung where the rung ran again
GAINS: dict[Key, tuple[float, float, float, float]] = {
    (LLAMA, "chat", "eager", "itl_p99_s", 1): (1.1918, 1.1703, 1.2165, 1.1088),
    (LLAMA, "chat", "eager", "itl_p99_s", 2): (1.3776, 1.3543, 1.3988, 1.1088),
    (LLAMA, "chat", "eager", "itl_p99_s", 3): (1.538, 1.4817, 1.615, 1.1088),
    (LLAMA, "chat", "eager", "itl_p99_s", 4): (1.4259, 1.4066, 1.4383, 1.1088),
    (LLAMA, "chat", "fp8_kv", "goodput", 1): (0.881, 0.799, 0.9621, 1.0526),
    (LLAMA, "chat", "fp8_kv", "goodput", 2): (0.959, 0.8697, 1.0556, 1.0526),
    (LLAMA, "chat", "fp8_kv", "goodput", 3): (1.0384, 0.9555, 1.135, 1.0526),
    (LLAMA, "chat", "fp8_kv", "goodput", 4): (0.9666, 0.8766, 1.0651, 1.0526),
    (LLAMA, "chat", "fp8_kv", "goodput", 5): (0.8268, 0.7498, 0.9102, 1.0526),
    (LLAMA, "chat", "fp8_kv", "itl_p50_s", 1): (1.0076, 0.9986, 1.0176, 0.9127),
    (LLAMA, "chat", "fp8_kv", "itl_p50_s", 2): (1.0098, 1.0023, 1.0188, 0.9127),
    (LLAMA, "chat", "fp8_kv", "itl_p50_s", 3): (1.0118, 1.0022, 1.0194, 0.9127),
    (LLAMA, "chat", "fp8_kv", "itl_p50_s", 4): (1.0123, 1.0045, 1.0218, 0.9127),
    (LLAMA, "chat", "fp8_kv", "itl_p50_s", 5): (1.0048, 0.9963, 1.0148, 0.9127),
    (LLAMA, "chat", "fp8_kv", "itl_p99_s", 1): (1.5755, 1.5637, 1.5888, 1.0),
    (LLAMA, "chat", "fp8_kv", "itl_p99_s", 2): (1.1986, 1.1929, 1.2121, 1.0),
    (LLAMA, "chat", "fp8_kv", "itl_p99_s", 3): (0.9315, 0.8895, 0.9589, 1.0),
    (LLAMA, "chat", "fp8_kv", "itl_p99_s", 4): (1.1764, 1.1611, 1.1814, 1.0),
    (LLAMA, "chat", "fp8_kv", "itl_p99_s", 5): (1.4933, 1.4892, 1.5009, 1.0),
    (LLAMA, "chat", "fp8_kv", "output_throughput", 1): (0.881, 0.7731, 0.9873, 1.0526),
    (LLAMA, "chat", "fp8_kv", "output_throughput", 2): (0.959, 0.8384, 1.0666, 1.0526),
    (LLAMA, "chat", "fp8_kv", "output_throughput", 3): (1.0384, 0.9112, 1.1606, 1.0526),
    (LLAMA, "chat", "fp8_kv", "output_throughput", 4): (0.9666, 0.849, 1.0884, 1.0526),
    (LLAMA, "chat", "fp8_kv", "output_throughput", 5): (0.8268, 0.7222, 0.9266, 1.0526),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 1): (1.4853, 1.3282, 1.5597, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 2): (1.1515, 1.0313, 1.2142, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 3): (1.0352, 0.8559, 1.1932, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 4): (1.1199, 0.9588, 1.2626, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 5): (1.4692, 1.3173, 1.6712, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p99_s", 1): (0.9833, 0.9597, 1.01, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p99_s", 2): (1.0483, 1.0426, 1.0764, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p99_s", 3): (0.8785, 0.8675, 0.8843, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p99_s", 4): (1.0149, 1.0039, 1.0425, 1.0),
    (LLAMA, "chat", "fp8_kv", "ttft_p99_s", 5): (1.5917, 1.5771, 1.6339, 1.0),
    (LLAMA, "chat", "fp8_weights", "goodput", 1): (1.3404, 1.2093, 1.4781, 1.3236),
    (LLAMA, "chat", "fp8_weights", "goodput", 2): (1.1462, 1.0341, 1.2456, 1.3236),
    (LLAMA, "chat", "fp8_weights", "itl_p50_s", 1): (0.8368, 0.8293, 0.844, 0.7183),
    (LLAMA, "chat", "fp8_weights", "itl_p50_s", 2): (0.8405, 0.8349, 0.8479, 0.7183),
    (LLAMA, "chat", "fp8_weights", "output_throughput", 1): (1.3404, 1.159, 1.5053, 1.3236),
    (LLAMA, "chat", "fp8_weights", "output_throughput", 2): (1.1462, 0.9941, 1.2821, 1.3236),
    (LLAMA, "chat", "fp8_weights", "ttft_p99_s", 1): (0.6398, 0.6289, 0.6542, 1.0),
    (LLAMA, "chat", "fp8_weights", "ttft_p99_s", 2): (1.0868, 1.0809, 1.1118, 1.0),
    (LLAMA, "chat", "limits", "itl_p99_s", 1): (1.2015, 1.1848, 1.215, 0.9731),
    (LLAMA, "chat", "limits", "ttft_p99_s", 1): (1.0518, 0.9493, 1.0669, 1.1911),
    (LLAMA, "chat", "ngram", "itl_p99_s", 1): (0.3318, 0.3172, 0.3427, 0.27),
    (LLAMA, "chat", "ngram", "itl_p99_s", 2): (0.4575, 0.4416, 0.4758, 0.27),
    (LLAMA, "chat", "ngram", "itl_p99_s", 3): (0.4949, 0.4616, 0.5213, 0.27),
    (LLAMA, "chat", "ngram", "itl_p99_s", 4): (0.4832, 0.473, 0.5099, 0.27),
    (LLAMA, "chat", "ngram", "ttft_p99_s", 1): (1.4494, 1.2986, 1.5059, 1.0336),
    (LLAMA, "chat", "ngram", "ttft_p99_s", 2): (1.9198, 1.7567, 1.9314, 1.0336),
    (LLAMA, "chat", "ngram", "ttft_p99_s", 3): (1.1981, 1.0788, 1.2164, 1.0336),
    (LLAMA, "chat", "ngram", "ttft_p99_s", 4): (1.1562, 1.0373, 1.1663, 1.0336),
    (LLAMA, "chat", "prefix_cache", "itl_p50_s", 1): (0.9797, 0.9729, 0.9852, 0.9997),
    (LLAMA, "chat", "prefix_cache", "itl_p50_s", 2): (0.9709, 0.963, 0.9779, 0.9997),
    (LLAMA, "chat", "prefix_cache", "itl_p99_s", 1): (1.0676, 1.0429, 1.0859, 0.9324),
    (LLAMA, "chat", "prefix_cache", "itl_p99_s", 2): (1.1014, 1.0789, 1.1223, 0.9324),
    (LLAMA, "chat", "prefix_cache", "ttft_p99_s", 1): (0.6162, 0.6074, 0.6832, 0.5486),
    (LLAMA, "chat", "prefix_cache", "ttft_p99_s", 2): (0.7958, 0.7843, 0.8819, 0.5486),
    (LLAMA, "rag", "eager", "itl_p99_s", 1): (1.3153, 1.3002, 1.326, 1.1921),
    (LLAMA, "rag", "eager", "itl_p99_s", 2): (1.3629, 1.3499, 1.4041, 1.1921),
    (LLAMA, "rag", "eager", "itl_p99_s", 3): (1.3321, 1.3227, 1.3774, 1.1921),
    (LLAMA, "rag", "eager", "itl_p99_s", 4): (1.359, 1.303, 1.4198, 1.1921),
    (LLAMA, "rag", "fp8_kv", "goodput", 1): (0.9879, 0.9719, 1.0114, 1.1439),
    (LLAMA, "rag", "fp8_kv", "goodput", 2): (1.1312, 1.113, 1.1629, 1.1439),
    (LLAMA, "rag", "fp8_kv", "goodput", 3): (1.0105, 0.9942, 1.0349, 1.1439),
    (LLAMA, "rag", "fp8_kv", "itl_p50_s", 1): (1.0254, 1.0086, 1.0487, 0.8398),
    (LLAMA, "rag", "fp8_kv", "itl_p50_s", 2): (1.0321, 1.0132, 1.0555, 0.8398),
    (LLAMA, "rag", "fp8_kv", "itl_p50_s", 3): (1.0148, 0.9977, 1.0346, 0.8398),
    (LLAMA, "rag", "fp8_kv", "itl_p99_s", 1): (0.9956, 0.9871, 0.9995, 1.0),
    (LLAMA, "rag", "fp8_kv", "itl_p99_s", 2): (0.742, 0.7244, 0.7436, 1.0),
    (LLAMA, "rag", "fp8_kv", "itl_p99_s", 3): (0.9896, 0.9638, 1.0051, 1.0),
    (LLAMA, "rag", "fp8_kv", "output_throughput", 1): (0.9879, 0.8792, 1.1027, 1.1439),
    (LLAMA, "rag", "fp8_kv", "output_throughput", 2): (1.1312, 1.0128, 1.2675, 1.1439),
    (LLAMA, "rag", "fp8_kv", "output_throughput", 3): (1.0105, 0.8994, 1.128, 1.1439),
    (LLAMA, "rag", "fp8_kv", "ttft_p99_s", 1): (0.9556, 0.9238, 0.9882, 1.0),
    (LLAMA, "rag", "fp8_kv", "ttft_p99_s", 2): (0.6703, 0.5782, 0.6932, 1.0),
    (LLAMA, "rag", "fp8_kv", "ttft_p99_s", 3): (0.9147, 0.8825, 0.9458, 1.0),
    (LLAMA, "rag", "fp8_weights", "goodput", 1): (1.3835, 1.3612, 1.4159, 1.2857),
    (LLAMA, "rag", "limits", "itl_p50_s", 1): (1.0401, 1.0242, 1.0494, 1.0009),
    (LLAMA, "rag", "limits", "itl_p50_s", 2): (1.0588, 1.0428, 1.0766, 1.0009),
    (LLAMA, "rag", "ngram", "itl_p99_s", 1): (0.4992, 0.414, 0.5393, 0.4191),
    (LLAMA, "rag", "ngram", "itl_p99_s", 2): (0.4003, 0.3818, 0.4516, 0.4191),
    (LLAMA, "rag", "ngram", "itl_p99_s", 3): (0.4602, 0.4452, 0.5646, 0.4191),
    (LLAMA, "rag", "ngram", "ttft_p99_s", 1): (0.9965, 0.8135, 1.0324, 1.0119),
    (LLAMA, "rag", "ngram", "ttft_p99_s", 2): (0.8447, 0.6951, 0.8749, 1.0119),
    (LLAMA, "rag", "ngram", "ttft_p99_s", 3): (1.191, 1.0018, 1.3886, 1.0119),
    (LLAMA, "rag", "prefix_cache", "itl_p50_s", 1): (0.873, 0.8636, 0.8853, 0.9989),
    (LLAMA, "rag", "prefix_cache", "itl_p50_s", 2): (0.8658, 0.8513, 0.8787, 0.9989),
    (LLAMA, "rag", "prefix_cache", "ttft_p99_s", 1): (0.172, 0.1581, 0.2347, 0.1),
    (LLAMA, "rag", "prefix_cache", "ttft_p99_s", 2): (0.1142, 0.1062, 0.1515, 0.1),
    (QWEN, "chat", "eager", "itl_p99_s", 1): (1.3541, 1.3307, 1.4001, 1.1016),
    (QWEN, "chat", "eager", "itl_p99_s", 2): (1.7495, 1.7396, 1.7625, 1.1016),
    (QWEN, "chat", "eager", "itl_p99_s", 3): (1.2698, 1.223, 1.3261, 1.1016),
    (QWEN, "chat", "eager", "itl_p99_s", 4): (1.3672, 1.3491, 1.3783, 1.1016),
    (QWEN, "chat", "fp8_kv", "goodput", 1): (1.0238, 0.9335, 1.1269, 1.0246),
    (QWEN, "chat", "fp8_kv", "goodput", 2): (1.0668, 0.9728, 1.1797, 1.0246),
    (QWEN, "chat", "fp8_kv", "goodput", 3): (1.1987, 1.0896, 1.3346, 1.0246),
    (QWEN, "chat", "fp8_kv", "goodput", 4): (1.1067, 1.0092, 1.2274, 1.0246),
    (QWEN, "chat", "fp8_kv", "goodput", 5): (0.9404, 0.8575, 1.0267, 1.0246),
    (QWEN, "chat", "fp8_kv", "itl_p50_s", 1): (1.0091, 1.0018, 1.0157, 0.9565),
    (QWEN, "chat", "fp8_kv", "itl_p50_s", 2): (1.0025, 0.9946, 1.0101, 0.9565),
    (QWEN, "chat", "fp8_kv", "itl_p50_s", 3): (0.8392, 0.8242, 0.8606, 0.9565),
    (QWEN, "chat", "fp8_kv", "itl_p50_s", 4): (1.0098, 1.0027, 1.0166, 0.9565),
    (QWEN, "chat", "fp8_kv", "itl_p50_s", 5): (1.0081, 1.0013, 1.0164, 0.9565),
    (QWEN, "chat", "fp8_kv", "itl_p99_s", 1): (0.8016, 0.7767, 0.8578, 1.0),
    (QWEN, "chat", "fp8_kv", "itl_p99_s", 2): (0.7455, 0.741, 0.7939, 1.0),
    (QWEN, "chat", "fp8_kv", "itl_p99_s", 3): (0.7895, 0.7665, 0.7941, 1.0),
    (QWEN, "chat", "fp8_kv", "itl_p99_s", 4): (0.6892, 0.65, 0.7834, 1.0),
    (QWEN, "chat", "fp8_kv", "itl_p99_s", 5): (0.9281, 0.9206, 0.9891, 1.0),
    (QWEN, "chat", "fp8_kv", "output_throughput", 1): (1.0238, 0.8998, 1.1463, 1.0246),
    (QWEN, "chat", "fp8_kv", "output_throughput", 2): (1.0668, 0.9376, 1.1945, 1.0246),
    (QWEN, "chat", "fp8_kv", "output_throughput", 3): (1.1987, 1.064, 1.3441, 1.0246),
    (QWEN, "chat", "fp8_kv", "output_throughput", 4): (1.1067, 0.9721, 1.2474, 1.0246),
    (QWEN, "chat", "fp8_kv", "output_throughput", 5): (0.9404, 0.824, 1.0573, 1.0246),
    (QWEN, "chat", "fp8_kv", "ttft_p50_s", 1): (0.9832, 0.8327, 1.0894, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p50_s", 2): (0.9485, 0.8343, 1.0119, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p50_s", 3): (0.7571, 0.6966, 0.8339, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p50_s", 4): (0.871, 0.7632, 0.9536, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p50_s", 5): (1.1494, 1.0216, 1.4155, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p99_s", 1): (0.9764, 0.9737, 0.9883, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p99_s", 2): (0.721, 0.696, 0.7235, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p99_s", 3): (0.9784, 0.9615, 0.9924, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p99_s", 4): (0.6743, 0.6658, 0.6811, 1.0),
    (QWEN, "chat", "fp8_kv", "ttft_p99_s", 5): (1.097, 1.0907, 1.1079, 1.0),
    (QWEN, "chat", "fp8_weights", "itl_p50_s", 1): (0.8427, 0.8363, 0.8506, 0.7055),
    (QWEN, "chat", "fp8_weights", "itl_p50_s", 2): (1.025, 0.9977, 1.0457, 0.7055),
    (QWEN, "chat", "fp8_weights", "ttft_p99_s", 1): (0.7614, 0.7595, 0.7648, 1.0),
    (QWEN, "chat", "fp8_weights", "ttft_p99_s", 2): (1.0766, 1.0624, 1.0817, 1.0),
    (QWEN, "chat", "limits", "itl_p50_s", 1): (0.9917, 0.9871, 0.9968, 1.0003),
    (QWEN, "chat", "limits", "itl_p99_s", 1): (1.1693, 1.1599, 1.1945, 0.9743),
    (QWEN, "chat", "ngram", "itl_p50_s", 1): (0.4756, 0.4687, 0.4984, 0.3861),
    (QWEN, "chat", "ngram", "itl_p50_s", 2): (0.6428, 0.6286, 0.6589, 0.3861),
    (QWEN, "chat", "ngram", "itl_p50_s", 3): (0.6201, 0.6056, 0.6357, 0.3861),
    (QWEN, "chat", "ngram", "itl_p50_s", 4): (0.5868, 0.5608, 0.6409, 0.3861),
    (QWEN, "chat", "ngram", "ttft_p99_s", 1): (0.7829, 0.7253, 0.7857, 1.0338),
    (QWEN, "chat", "ngram", "ttft_p99_s", 2): (1.1835, 1.0665, 1.2276, 1.0338),
    (QWEN, "chat", "ngram", "ttft_p99_s", 3): (1.8194, 1.6289, 1.8549, 1.0338),
    (QWEN, "chat", "ngram", "ttft_p99_s", 4): (1.1017, 1.0639, 1.1544, 1.0338),
    (QWEN, "chat", "prefix_cache", "itl_p50_s", 1): (0.9986, 0.9895, 1.0053, 0.9998),
    (QWEN, "chat", "prefix_cache", "itl_p50_s", 2): (0.9939, 0.9882, 0.9996, 0.9998),
    (QWEN, "chat", "prefix_cache", "ttft_p50_s", 1): (1.0292, 0.8957, 1.1357, 0.6173),
    (QWEN, "chat", "prefix_cache", "ttft_p50_s", 2): (0.7431, 0.6575, 0.8687, 0.6173),
    (QWEN, "chat", "prefix_cache", "ttft_p99_s", 1): (0.7036, 0.6985, 0.7495, 0.5482),
    (QWEN, "chat", "prefix_cache", "ttft_p99_s", 2): (0.6066, 0.6013, 0.646, 0.5482),
    (QWEN, "rag", "fp8_kv", "goodput", 1): (0.9728, 0.9524, 1.0034, 1.0704),
    (QWEN, "rag", "fp8_kv", "goodput", 2): (1.033, 1.0114, 1.0677, 1.0704),
    (QWEN, "rag", "fp8_kv", "goodput", 3): (0.8318, 0.8143, 0.8534, 1.0704),
    (QWEN, "rag", "fp8_kv", "itl_p50_s", 1): (1.0372, 1.0328, 1.0425, 0.9125),
    (QWEN, "rag", "fp8_kv", "itl_p50_s", 2): (1.0454, 1.0399, 1.0512, 0.9125),
    (QWEN, "rag", "fp8_kv", "itl_p50_s", 3): (1.0452, 1.0396, 1.0505, 0.9125),
    (QWEN, "rag", "fp8_kv", "ttft_p99_s", 1): (0.9453, 0.8042, 1.086, 1.0),
    (QWEN, "rag", "fp8_kv", "ttft_p99_s", 2): (0.974, 0.8054, 1.1186, 1.0),
    (QWEN, "rag", "fp8_kv", "ttft_p99_s", 3): (1.18, 1.1448, 1.3559, 1.0),
    (QWEN, "rag", "fp8_weights", "goodput", 1): (1.4338, 1.4048, 1.4777, 1.3186),
    (QWEN, "rag", "limits", "itl_p50_s", 1): (1.0299, 1.0202, 1.0412, 1.0005),
    (QWEN, "rag", "ngram", "ttft_p50_s", 1): (1.3654, 1.1893, 1.5566, 1.4359),
    (QWEN, "rag", "ngram", "ttft_p50_s", 2): (1.2776, 1.1078, 1.4454, 1.4359),
    (QWEN, "rag", "ngram", "ttft_p50_s", 3): (1.6312, 1.4696, 1.7854, 1.4359),
    (QWEN, "rag", "ngram", "ttft_p50_s", 4): (1.2853, 1.2206, 1.4274, 1.4359),
    (QWEN, "rag", "prefix_cache", "itl_p50_s", 1): (0.9058, 0.8982, 0.913, 0.9994),
    (QWEN, "rag", "prefix_cache", "ttft_p99_s", 1): (0.1223, 0.1159, 0.168, 0.0991),
}
# the runs whose gain is outside its budget and inside 20% (no other finding covers them)
MISSES: frozenset[Key] = frozenset(k for k in GAINS if k not in {
    (LLAMA, "chat", "fp8_kv", "goodput", 2), (LLAMA, "chat", "fp8_kv", "itl_p99_s", 1),
    (LLAMA, "chat", "fp8_kv", "output_throughput", 2), (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 1),
    (LLAMA, "chat", "fp8_kv", "ttft_p99_s", 1), (LLAMA, "chat", "ngram", "itl_p99_s", 2),
    (LLAMA, "chat", "prefix_cache", "ttft_p99_s", 2), (LLAMA, "rag", "ngram", "ttft_p99_s", 1),
    (QWEN, "chat", "eager", "itl_p99_s", 2), (QWEN, "chat", "fp8_kv", "ttft_p99_s", 2),
    (QWEN, "chat", "ngram", "itl_p50_s", 2), (QWEN, "chat", "ngram", "ttft_p99_s", 1),
    (QWEN, "chat", "prefix_cache", "itl_p50_s", 1), (QWEN, "chat", "prefix_cache", "ttft_p50_s", 1),
    (QWEN, "chat", "prefix_cache", "ttft_p99_s", 1),
    # the third start's (2026-12-05) other runs of these gains: 20% misses (ladder_repeat's) or inside their budget
    (LLAMA, "chat", "eager", "itl_p99_s", 3), (LLAMA, "chat", "fp8_kv", "goodput", 3),
    (LLAMA, "chat", "fp8_kv", "output_throughput", 3), (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 3),
    (LLAMA, "chat", "fp8_weights", "goodput", 1), (LLAMA, "chat", "fp8_weights", "output_throughput", 1),
    (LLAMA, "chat", "fp8_weights", "ttft_p99_s", 1), (LLAMA, "rag", "prefix_cache", "ttft_p99_s", 1),
    (QWEN, "chat", "fp8_kv", "goodput", 1), (QWEN, "chat", "fp8_kv", "goodput", 2),
    (QWEN, "chat", "fp8_kv", "output_throughput", 1), (QWEN, "chat", "fp8_kv", "output_throughput", 2),
    (QWEN, "chat", "fp8_weights", "itl_p50_s", 2), (QWEN, "chat", "fp8_weights", "ttft_p99_s", 1),
    # the 2026-12-07 runs (batches 20261207T052337Z/052947Z) and the other runs of the gains they miss inside 20%: 20%
    # misses (ladder_repeat's) or inside their budget
    (LLAMA, "chat", "fp8_kv", "goodput", 4), (LLAMA, "chat", "fp8_kv", "output_throughput", 4),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 4), (LLAMA, "chat", "ngram", "itl_p99_s", 3),
    (LLAMA, "chat", "ngram", "ttft_p99_s", 1), (LLAMA, "chat", "ngram", "ttft_p99_s", 2),
    (LLAMA, "rag", "fp8_kv", "goodput", 2), (LLAMA, "rag", "fp8_kv", "itl_p99_s", 2),
    (LLAMA, "rag", "fp8_kv", "output_throughput", 2), (LLAMA, "rag", "fp8_kv", "ttft_p99_s", 2),
    (LLAMA, "rag", "ngram", "itl_p99_s", 1), (LLAMA, "rag", "ngram", "itl_p99_s", 2),
    (LLAMA, "rag", "ngram", "ttft_p99_s", 3), (QWEN, "chat", "fp8_kv", "goodput", 4),
    (QWEN, "chat", "fp8_kv", "output_throughput", 4), (QWEN, "chat", "fp8_kv", "ttft_p50_s", 1),
    (QWEN, "chat", "fp8_kv", "ttft_p50_s", 2), (QWEN, "chat", "fp8_kv", "ttft_p50_s", 3),
    (QWEN, "chat", "fp8_kv", "ttft_p99_s", 4), (QWEN, "chat", "ngram", "itl_p50_s", 3),
    (QWEN, "chat", "ngram", "ttft_p99_s", 3), (QWEN, "rag", "fp8_kv", "goodput", 2),
    (QWEN, "rag", "ngram", "ttft_p50_s", 1), (QWEN, "rag", "ngram", "ttft_p50_s", 2),
    # the 2026-12-07 17:09-17:25 runs (batches 20261207T170932Z/171711Z, card GPU-65905dee) and the other runs of
    # the gains they miss inside 20%: 20% misses (ladder_repeat's) or inside their budget
    (LLAMA, "chat", "eager", "itl_p99_s", 4), (LLAMA, "chat", "fp8_kv", "goodput", 5),
    (LLAMA, "chat", "fp8_kv", "itl_p99_s", 5), (LLAMA, "chat", "fp8_kv", "output_throughput", 5),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s", 5), (LLAMA, "chat", "fp8_kv", "ttft_p99_s", 5),
    (LLAMA, "chat", "ngram", "itl_p99_s", 4), (LLAMA, "rag", "fp8_kv", "itl_p99_s", 3),
    (QWEN, "chat", "fp8_kv", "goodput", 5), (QWEN, "chat", "fp8_kv", "itl_p99_s", 1),
    (QWEN, "chat", "fp8_kv", "itl_p99_s", 2), (QWEN, "chat", "fp8_kv", "itl_p99_s", 3),
    (QWEN, "chat", "fp8_kv", "itl_p99_s", 4), (QWEN, "chat", "fp8_kv", "output_throughput", 5),
    (QWEN, "chat", "ngram", "itl_p50_s", 4), (QWEN, "rag", "fp8_kv", "goodput", 3),
    (QWEN, "rag", "fp8_kv", "ttft_p99_s", 1), (QWEN, "rag", "fp8_kv", "ttft_p99_s", 2),
    (QWEN, "rag", "ngram", "ttft_p50_s", 4)})

ABOVE_ID, BELOW_ID = "h200-gain-above-prediction-inside-target", "h200-gain-below-prediction-inside-target"
# the candidate mechanism per rung: the rung's existing findings, not established for these gains
CANDIDATE = {
    "limits": "the tuned engine's graph-less prompt-carrying steps (h200-prompt-step-excess)",
    "prefix_cache": "the step completing a prompt running above the step model (h200-prompt-step-excess)",
    "fp8_weights": "fp8 shortening the steps the theory prices at bf16's peak (h200-fp8-weights-shorten-prompt-steps)",
    "fp8_kv": "the fp8 attention path not reaching the decode speed-up halved KV bytes predict (docs/DEPLOYMENT.md: "
              "the open question of the first ladder)",
    "eager": "the host-bound eager step (h200-eager-steps-host-bound)",
    "ngram": "verify steps run serially without async scheduling (h200-ngram-verify-steps-serial)",
}
REASON = ("{workload} {step} run {run} ({model}): {metric} gain {g:.4g} measured [{lo:.4g}, {hi:.4g} resampled], "
          "{p:.4g} predicted: {size:+.1%} off, inside issue 14's 20% target but outside the error budget (the interval "
          "excludes the prediction by more than the calibration's spread). Why is unknown; candidate: {candidate}. ")


def band(key: Key) -> tuple[tuple[float, float], str, str]:
    """(band, band_from, sentence) of a miss (module docstring): every other run's band together where they hold this
    run's gain (their intersection, else with two or more other runs their hull: ladder_repeat.joined_band)."""
    g, lo, hi, p = GAINS[key]
    every = [k for k in sorted(GAINS) if k[:4] == key[:4] and k[4] != key[4]]
    # only the runs on this run's side of the prediction band it (its finding, ABOVE_ID or BELOW_ID, names the side)
    others = [k for k in every if (GAINS[k][0] > GAINS[k][3]) == (g > p)]
    apart = ("" if len(others) == len(every) else
             " " + " and ".join(f"run {k[4]}" for k in every if k not in others).capitalize()
             + " ran on the other side of the prediction: no band for this run's.")
    if others:
        bands = []
        for other in others:
            og, olo, ohi, _ = GAINS[other]
            rlo, rhi = cf.repeat_ratio_band(og, (olo, ohi))
            bands.append((other[4], og, olo, ohi, (round(og * rlo / p, 4), round(og * rhi / p, 4))))
        said = "; ".join(f"Run {n}: {og:.4g} [{olo:.4g}, {ohi:.4g} resampled], widened by sqrt(2): [{b[0]:.4g}, "
                         f"{b[1]:.4g}]" for n, og, olo, ohi, b in bands)
        joined = lrp.joined_band(g / p, [x[4] for x in bands])
        if joined:  # cut at the prediction: the band never holds a gain on the other side of it
            joined = (lrp.on_its_side(joined[0], g / p, (1.0, 1.0)), joined[1])
        if joined and joined[1] == "intersection":
            return joined[0], "other-runs", (said + " over the predicted gain, which all hold this run's: the size "
                                             "repeated." + apart
                                             + (lrp.STRICT_SAID if lrp.holds_prediction(joined[0]) else ""))
        if joined:
            held = [f"run {x[0]}" for x in bands if x[4][0] <= g / p <= x[4][1]]
            missed = [f"run {x[0]}" for x in bands if not x[4][0] <= g / p <= x[4][1]]
            return joined[0], "other-runs", said + " over the predicted gain" + lrp.hull_said(g / p, joined[0], held,
                                                                                              missed) + apart
        hull = "" if len(bands) == 1 else (
            f" and outside their hull [{min(x[4][0] for x in bands):.4g}, {max(x[4][1] for x in bands):.4g}] (outside "
            "the range every other start measured)")
        return ((round(lo / p, 4), round(hi / p, 4)), "checked-run",
                said + ", not all of which hold this run's" + hull + ": the size did not repeat; the band is this run's "
                "own interval (checked-run) until a further run of the rung says which size is the engine's." + apart)
    return ((round(lo / p, 4), round(hi / p, 4)), "checked-run",
            ("Checked-run: the band is this run's own interval; the same rung run again on another engine start (same "
             "model, workload and knobs) would band it from another run." if not every else
             "Checked-run: the band is this run's own interval; no other run of the rung lies on its side.") + apart)


def noise_marks(model: str, workload: str, step: str, run: int) -> list[pytest.MarkDecorator]:
    """The findings of one run's gains that miss their budget inside the 20% target."""
    marks = []
    for key in sorted(MISSES):
        if key[:3] != (model, workload, step) or key[4] != run:
            continue
        g, lo, hi, p = GAINS[key]
        b, band_from, said = band(key)
        reason = REASON.format(workload=workload, step=step, run=run, model=model, metric=key[3], g=g, lo=lo, hi=hi,
                               p=p, size=g / p - 1, candidate=CANDIDATE[step]) + said
        marks.append(pytest.mark.finding(ABOVE_ID if g > p else BELOW_ID, reason=reason,
                                         quantity=f"{workload}.{step}.{key[3]}.gain", expected=b,
                                         hardware=MEASURED_ON, band_from=band_from,
                                         strict=lrp.strict(b, band_from)))
    return marks
