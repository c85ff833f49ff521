"""ladder_repeat.py's data (split out 2026-12-07 to keep each module under 500 lines): the batches of every repeated
rung's runs and of the parent run each run's gains divide by, every run's gain outside issue 14's 20% with its
request-resampled interval, the n-gram predictions at each run's measured E, and the engine numbers the reasons quote.
test_ladder_repeat.py recomputes every number here from the recordings and the kept raw batches."""

from __future__ import annotations

QWEN, LLAMA = "qwen2.5-7b", "llama-3.1-8b"
CHAT_BATCH, RAG_BATCH, PREFIX_BATCH = "20261204T202642Z", "20261204T203501Z", "20261204T204601Z"
# the third start (2026-12-05, one machine, its host recorded: host_facts): chat fp8_weights, fp8_kv and eager of
# Qwen2.5-7B and fp8_weights of Llama-3.1-8B; Llama's fp8_kv and eager in a second call; Llama's rag limits and
# prefix_cache
THIRD_BATCH, THIRD_LLAMA_BATCH, RAG_LIMITS_BATCH = "20261205T035706Z", "20261205T040537Z", "20261205T041022Z"
CARD = {CHAT_BATCH: "card GPU-41a24322", RAG_BATCH: "card GPU-41a24322", PREFIX_BATCH: "a fresh machine",
        THIRD_BATCH: "card GPU-2d2b522c", THIRD_LLAMA_BATCH: "card GPU-2d2b522c", RAG_LIMITS_BATCH: "card GPU-2d2b522c"}
# 2026-12-07 (one machine, card GPU-8f2eaa92): the rag rungs fp8_kv, eager and ngram of both models, then the chat rungs
# fp8_kv and ngram of both; eager and ngram over their batch's fp8_kv, fp8_kv over fp8_weights' first run (none ran on
# this card)
DEC7_RAG_BATCH, DEC7_CHAT_BATCH = "20261207T052337Z", "20261207T052947Z"
CARD |= {DEC7_RAG_BATCH: "card GPU-8f2eaa92", DEC7_CHAT_BATCH: "card GPU-8f2eaa92"}
# 2026-12-07 17:09 (one machine, card GPU-65905dee): the rag rungs fp8_kv, eager and ngram of Qwen2.5-7B and fp8_kv
# and eager of Llama-3.1-8B (its ngram skipped by the script's budget), then the chat rungs fp8_kv, eager and ngram of
# both; eager and ngram over their batch's fp8_kv, fp8_kv over fp8_weights' first run (none ran on this card)
DEC7B_RAG_BATCH, DEC7B_CHAT_BATCH = "20261207T170932Z", "20261207T171711Z"
CARD |= {DEC7B_RAG_BATCH: "card GPU-65905dee", DEC7B_CHAT_BATCH: "card GPU-65905dee"}

# (model, workload, rung) -> the batches of its runs, first first, and of the parent run each run's gains divide by
RUNS: dict[tuple[str, str, str], tuple[str, ...]] = {
    (QWEN, "chat", "prefix_cache"): ("20261203T000111Z", PREFIX_BATCH),
    (LLAMA, "chat", "prefix_cache"): ("20261203T142751Z", PREFIX_BATCH),
    (QWEN, "chat", "fp8_weights"): ("20261203T000111Z", THIRD_BATCH),
    (LLAMA, "chat", "fp8_weights"): ("20261203T142751Z", THIRD_BATCH),
    (QWEN, "chat", "fp8_kv"): ("20261203T000111Z", CHAT_BATCH, THIRD_BATCH, DEC7_CHAT_BATCH, DEC7B_CHAT_BATCH),
    (LLAMA, "chat", "fp8_kv"): ("20261203T142751Z", CHAT_BATCH, THIRD_LLAMA_BATCH, DEC7_CHAT_BATCH, DEC7B_CHAT_BATCH),
    (QWEN, "chat", "eager"): ("20261203T001319Z", CHAT_BATCH, THIRD_BATCH, DEC7B_CHAT_BATCH),
    (LLAMA, "chat", "eager"): ("20261203T143336Z", CHAT_BATCH, THIRD_LLAMA_BATCH, DEC7B_CHAT_BATCH),
    (QWEN, "chat", "ngram"): ("20261203T001319Z", CHAT_BATCH, DEC7_CHAT_BATCH, DEC7B_CHAT_BATCH),
    (LLAMA, "chat", "ngram"): ("20261203T143336Z", CHAT_BATCH, DEC7_CHAT_BATCH, DEC7B_CHAT_BATCH),
    (QWEN, "rag", "fp8_kv"): ("20261202T050156Z", DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (LLAMA, "rag", "fp8_kv"): ("20261203T121717Z", DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (QWEN, "rag", "eager"): ("20261202T072421Z", RAG_BATCH, DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (LLAMA, "rag", "eager"): ("20261203T121717Z", RAG_BATCH, DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (QWEN, "rag", "ngram"): ("20261202T072421Z", RAG_BATCH, DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (LLAMA, "rag", "ngram"): ("20261203T121717Z", RAG_BATCH, DEC7_RAG_BATCH),
    (LLAMA, "rag", "limits"): ("20261203T090822Z", RAG_LIMITS_BATCH),
    (LLAMA, "rag", "prefix_cache"): ("20261203T121717Z", RAG_LIMITS_BATCH)}
PARENT_RUNS: dict[tuple[str, str, str], tuple[str, ...]] = {
    (QWEN, "chat", "prefix_cache"): ("20261203T000111Z",) * 2,
    (LLAMA, "chat", "prefix_cache"): ("20261203T142751Z",) * 2,
    (QWEN, "chat", "fp8_weights"): ("20261203T000111Z",) * 2,
    (LLAMA, "chat", "fp8_weights"): ("20261203T142751Z",) * 2,
    (QWEN, "chat", "fp8_kv"): ("20261203T000111Z",) * 2 + (THIRD_BATCH, "20261203T000111Z", "20261203T000111Z"),
    (LLAMA, "chat", "fp8_kv"): ("20261203T142751Z",) * 2 + (THIRD_BATCH, "20261203T142751Z", "20261203T142751Z"),
    (QWEN, "chat", "eager"): ("20261203T000111Z", CHAT_BATCH, THIRD_BATCH, DEC7B_CHAT_BATCH),
    (LLAMA, "chat", "eager"): ("20261203T142751Z", CHAT_BATCH, THIRD_LLAMA_BATCH, DEC7B_CHAT_BATCH),
    (QWEN, "chat", "ngram"): ("20261203T000111Z", CHAT_BATCH, DEC7_CHAT_BATCH, DEC7B_CHAT_BATCH),
    (LLAMA, "chat", "ngram"): ("20261203T142751Z", CHAT_BATCH, DEC7_CHAT_BATCH, DEC7B_CHAT_BATCH),
    (QWEN, "rag", "fp8_kv"): ("20261202T050156Z",) * 3, (LLAMA, "rag", "fp8_kv"): ("20261203T121717Z",) * 3,
    (QWEN, "rag", "eager"): ("20261202T050156Z", "20261202T050156Z", DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (LLAMA, "rag", "eager"): ("20261203T121717Z", "20261203T121717Z", DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (QWEN, "rag", "ngram"): ("20261202T050156Z", "20261202T050156Z", DEC7_RAG_BATCH, DEC7B_RAG_BATCH),
    (LLAMA, "rag", "ngram"): ("20261203T121717Z", "20261203T121717Z", DEC7_RAG_BATCH),
    (LLAMA, "rag", "limits"): ("20261203T090822Z",) * 2,
    (LLAMA, "rag", "prefix_cache"): ("20261203T090822Z", RAG_LIMITS_BATCH)}


Gain = tuple[float, float, float]  # measured gain (the recordings'), its request-resampled 95% interval (ladder_raw)
# (model, workload, rung, metric) -> every run's gain, first first: every gain outside issue 14's 20% in any run
GAINS: dict[tuple[str, str, str, str], tuple[Gain, ...]] = {
    (LLAMA, "chat", "eager", "goodput"): (
        (0.2382, 0.2169, 0.2954), (0.2588, 0.2366, 0.3095), (0.0831, 0.067, 0.1039), (0.0026, 0.0, 0.0065)),
    (LLAMA, "chat", "eager", "itl_p50_s"): (
        (4.1269, 4.0648, 4.2053), (4.06, 4.0371, 4.0905), (4.9908, 4.8744, 5.2503), (7.18, 7.1033, 7.2419)),
    (LLAMA, "chat", "eager", "itl_p99_s"): (
        (1.1918, 1.1703, 1.2165), (1.3776, 1.3543, 1.3988), (1.538, 1.4817, 1.615), (1.4259, 1.4066, 1.4383)),
    (LLAMA, "chat", "eager", "output_throughput"): (
        (0.2576, 0.227, 0.309), (0.2604, 0.229, 0.3121), (0.2076, 0.1836, 0.2415), (0.2083, 0.182, 0.2376)),
    (LLAMA, "chat", "eager", "ttft_p50_s"): (
        (1.5049, 1.4476, 1.5523), (1.8875, 1.8149, 1.9794), (1.8563, 1.6047, 2.3133), (2.5722, 2.2671, 2.6881)),
    (LLAMA, "chat", "eager", "ttft_p99_s"): (
        (1.6558, 1.5188, 1.7193), (1.5377, 1.5271, 1.6708), (1.6213, 1.4925, 1.6456), (1.7272, 1.5871, 1.7425)),
    (LLAMA, "chat", "fp8_kv", "goodput"): (
        (0.881, 0.799, 0.9621), (0.959, 0.8697, 1.0556), (1.0384, 0.9555, 1.135), (0.9666, 0.8766, 1.0651),
        (0.8268, 0.7498, 0.9102)),
    (LLAMA, "chat", "fp8_kv", "itl_p99_s"): (
        (1.5755, 1.5637, 1.5888), (1.1986, 1.1929, 1.2121), (0.9315, 0.8895, 0.9589), (1.1764, 1.1611, 1.1814),
        (1.4933, 1.4892, 1.5009)),
    (LLAMA, "chat", "fp8_kv", "output_throughput"): (
        (0.881, 0.7731, 0.9873), (0.959, 0.8384, 1.0666), (1.0384, 0.9112, 1.1606), (0.9666, 0.849, 1.0884),
        (0.8268, 0.7222, 0.9266)),
    (LLAMA, "chat", "fp8_kv", "ttft_p50_s"): (
        (1.4853, 1.3282, 1.5597), (1.1515, 1.0313, 1.2142), (1.0352, 0.8559, 1.1932), (1.1199, 0.9588, 1.2626),
        (1.4692, 1.3173, 1.6712)),
    (LLAMA, "chat", "fp8_kv", "ttft_p99_s"): (
        (0.9833, 0.9597, 1.01), (1.0483, 1.0426, 1.0764), (0.8785, 0.8675, 0.8843), (1.0149, 1.0039, 1.0425),
        (1.5917, 1.5771, 1.6339)),
    (LLAMA, "chat", "fp8_weights", "itl_p99_s"): ((0.551, 0.5422, 0.5606), (0.8253, 0.8109, 0.8383)),
    (LLAMA, "chat", "fp8_weights", "ttft_p50_s"): ((0.66, 0.6072, 0.7141), (0.95, 0.8735, 1.0478)),
    (LLAMA, "chat", "fp8_weights", "ttft_p99_s"): ((0.6398, 0.6289, 0.6542), (1.0868, 1.0809, 1.1118)),
    (LLAMA, "chat", "ngram", "goodput"): (
        (2.3805, 2.1798, 2.5259), (1.9722, 1.7824, 2.0983), (1.8978, 1.7223, 2.0009), (1.8071, 1.6416, 1.9084)),
    (LLAMA, "chat", "ngram", "itl_p50_s"): (
        (0.4665, 0.459, 0.4822), (0.5118, 0.4891, 0.5503), (0.5334, 0.5171, 0.5691), (0.6653, 0.6467, 0.6776)),
    (LLAMA, "chat", "ngram", "itl_p99_s"): (
        (0.3318, 0.3172, 0.3427), (0.4575, 0.4416, 0.4758), (0.4949, 0.4616, 0.5213), (0.4832, 0.473, 0.5099)),
    (LLAMA, "chat", "ngram", "output_throughput"): (
        (2.3805, 2.0998, 2.6245), (2.0099, 1.7625, 2.2461), (1.8978, 1.6585, 2.1119), (1.8071, 1.5844, 1.9971)),
    (LLAMA, "chat", "ngram", "ttft_p50_s"): (
        (0.8152, 0.7686, 0.87), (1.1048, 1.0473, 1.1756), (1.3422, 1.1591, 1.566), (1.2764, 1.1117, 1.3426)),
    (LLAMA, "chat", "ngram", "ttft_p99_s"): (
        (1.4494, 1.2986, 1.5059), (1.9198, 1.7567, 1.9314), (1.1981, 1.0788, 1.2164), (1.1562, 1.0373, 1.1663)),
    (LLAMA, "chat", "prefix_cache", "ttft_p50_s"): ((0.935, 0.8326, 1.0453), (1.0273, 0.878, 1.1558)),
    (LLAMA, "chat", "prefix_cache", "ttft_p99_s"): ((0.6162, 0.6074, 0.6832), (0.7958, 0.7843, 0.8819)),
    (LLAMA, "rag", "eager", "goodput"): (
        (0.0394, 0.0242, 0.0566), (0.0303, 0.0148, 0.0479), (0.2959, 0.2904, 0.3078), (0.0085, 0.0021, 0.0176)),
    (LLAMA, "rag", "eager", "itl_p50_s"): (
        (5.4001, 5.304, 5.5201), (5.3022, 5.1671, 5.4836), (3.9547, 3.8868, 4.0398), (6.9324, 6.8272, 7.0277)),
    (LLAMA, "rag", "eager", "output_throughput"): (
        (0.2364, 0.2128, 0.2675), (0.2421, 0.2168, 0.2749), (0.2959, 0.2646, 0.3362), (0.2049, 0.1842, 0.2342)),
    (LLAMA, "rag", "eager", "ttft_p50_s"): (
        (2.0292, 1.9625, 2.1525), (2.0074, 1.9161, 2.256), (2.0545, 1.9181, 2.2352), (2.6341, 2.4615, 2.9129)),
    (LLAMA, "rag", "eager", "ttft_p99_s"): (
        (1.7404, 1.52, 1.8041), (1.294, 1.1125, 1.3406), (1.6253, 1.4306, 1.8938), (1.7106, 1.4837, 1.7759)),
    (LLAMA, "rag", "fp8_kv", "itl_p99_s"): (
        (0.9956, 0.9871, 0.9995), (0.742, 0.7244, 0.7436), (0.9896, 0.9638, 1.0051)),
    (LLAMA, "rag", "fp8_kv", "ttft_p50_s"): (
        (0.9898, 0.9141, 1.0434), (0.7407, 0.666, 0.8034), (0.9612, 0.8619, 1.0405)),
    (LLAMA, "rag", "fp8_kv", "ttft_p99_s"): (
        (0.9556, 0.9238, 0.9882), (0.6703, 0.5782, 0.6932), (0.9147, 0.8825, 0.9458)),
    (LLAMA, "rag", "limits", "itl_p99_s"): ((0.5946, 0.5674, 0.612), (0.6293, 0.6206, 0.6453)),
    (LLAMA, "rag", "limits", "ttft_p99_s"): ((0.8845, 0.6525, 1.4673), (0.9667, 0.733, 1.6053)),
    (LLAMA, "rag", "ngram", "goodput"): ((1.9613, 1.9298, 2.0041), (2.2394, 2.2036, 2.2931), (2.1761, 2.1351, 2.2279)),
    (LLAMA, "rag", "ngram", "itl_p50_s"): ((0.505, 0.4853, 0.5242), (0.4608, 0.4459, 0.4843), (0.4088, 0.3887, 0.4181)),
    (LLAMA, "rag", "ngram", "output_throughput"): (
        (1.9613, 1.7565, 2.1808), (2.2394, 2.0017, 2.4999), (2.1761, 1.9601, 2.4576)),
    (LLAMA, "rag", "ngram", "ttft_p50_s"): (
        (0.9594, 0.888, 1.0668), (0.8487, 0.8008, 0.9067), (1.0275, 0.9396, 1.1195)),
    (LLAMA, "rag", "prefix_cache", "itl_p99_s"): ((1.1106, 1.0791, 1.1619), (1.007, 0.9498, 1.0192)),
    (LLAMA, "rag", "prefix_cache", "ttft_p50_s"): ((0.4189, 0.3659, 0.4596), (0.4053, 0.3511, 0.4783)),
    (LLAMA, "rag", "prefix_cache", "ttft_p99_s"): ((0.172, 0.1581, 0.2347), (0.1142, 0.1062, 0.1515)),
    (QWEN, "chat", "eager", "goodput"): (
        (0.2263, 0.2021, 0.2616), (0.0974, 0.0799, 0.1157), (0.2302, 0.2038, 0.2802), (0.0451, 0.0318, 0.0615)),
    (QWEN, "chat", "eager", "itl_p50_s"): (
        (4.3476, 4.3255, 4.3797), (5.8169, 5.7126, 5.9336), (4.2155, 4.1739, 4.2586), (6.8305, 6.1561, 6.9425)),
    (QWEN, "chat", "eager", "itl_p99_s"): (
        (1.3541, 1.3307, 1.4001), (1.7495, 1.7396, 1.7625), (1.2698, 1.223, 1.3261), (1.3672, 1.3491, 1.3783)),
    (QWEN, "chat", "eager", "output_throughput"): (
        (0.2642, 0.2323, 0.3031), (0.2023, 0.1778, 0.2279), (0.2677, 0.2362, 0.3196), (0.2123, 0.1885, 0.247)),
    (QWEN, "chat", "eager", "ttft_p50_s"): (
        (1.8773, 1.7094, 2.1469), (2.6569, 2.4779, 3.0366), (1.6667, 1.5004, 2.028), (2.5129, 1.8406, 2.6279)),
    (QWEN, "chat", "eager", "ttft_p99_s"): (
        (1.5243, 1.5075, 1.679), (2.5098, 2.5026, 2.7771), (0.7658, 0.7065, 0.7801), (1.5943, 1.5905, 1.6047)),
    (QWEN, "chat", "fp8_kv", "itl_p99_s"): (
        (0.8016, 0.7767, 0.8578), (0.7455, 0.741, 0.7939), (0.7895, 0.7665, 0.7941), (0.6892, 0.65, 0.7834),
        (0.9281, 0.9206, 0.9891)),
    (QWEN, "chat", "fp8_kv", "ttft_p50_s"): (
        (0.9832, 0.8327, 1.0894), (0.9485, 0.8343, 1.0119), (0.7571, 0.6966, 0.8339), (0.871, 0.7632, 0.9536),
        (1.1494, 1.0216, 1.4155)),
    (QWEN, "chat", "fp8_kv", "ttft_p99_s"): (
        (0.9764, 0.9737, 0.9883), (0.721, 0.696, 0.7235), (0.9784, 0.9615, 0.9924), (0.6743, 0.6658, 0.6811),
        (1.097, 1.0907, 1.1079)),
    (QWEN, "chat", "fp8_weights", "goodput"): ((1.306, 1.1836, 1.4323), (0.9585, 0.8573, 1.0405)),
    (QWEN, "chat", "fp8_weights", "itl_p50_s"): ((0.8427, 0.8363, 0.8506), (1.025, 0.9977, 1.0457)),
    (QWEN, "chat", "fp8_weights", "itl_p99_s"): ((0.7043, 0.6555, 0.7171), (0.7888, 0.775, 0.8078)),
    (QWEN, "chat", "fp8_weights", "output_throughput"): ((1.306, 1.1467, 1.4613), (1.0224, 0.8914, 1.142)),
    (QWEN, "chat", "fp8_weights", "ttft_p50_s"): ((0.6455, 0.6113, 0.7406), (0.952, 0.8927, 1.0851)),
    (QWEN, "chat", "fp8_weights", "ttft_p99_s"): ((0.7614, 0.7595, 0.7648), (1.0766, 1.0624, 1.0817)),
    (QWEN, "chat", "ngram", "goodput"): (
        (2.0146, 1.8303, 2.3508), (1.6201, 1.465, 1.8533), (1.606, 1.4481, 1.8093), (1.8375, 1.683, 2.0826)),
    (QWEN, "chat", "ngram", "itl_p50_s"): (
        (0.4756, 0.4687, 0.4984), (0.6428, 0.6286, 0.6589), (0.6201, 0.6056, 0.6357), (0.5868, 0.5608, 0.6409)),
    (QWEN, "chat", "ngram", "itl_p99_s"): (
        (0.5085, 0.4292, 0.5469), (0.6491, 0.6152, 0.6876), (0.6873, 0.6186, 0.8018), (0.5626, 0.4538, 0.6196)),
    (QWEN, "chat", "ngram", "output_throughput"): (
        (2.0146, 1.7959, 2.4026), (1.6201, 1.4348, 1.9146), (1.606, 1.4136, 1.8772), (1.8375, 1.6281, 2.1489)),
    (QWEN, "chat", "ngram", "ttft_p50_s"): (
        (0.9809, 0.8828, 1.1738), (1.2548, 1.1476, 1.3829), (1.3992, 1.2715, 1.4935), (1.0363, 0.7762, 1.1093)),
    (QWEN, "chat", "ngram", "ttft_p99_s"): (
        (0.7829, 0.7253, 0.7857), (1.1835, 1.0665, 1.2276), (1.8194, 1.6289, 1.8549), (1.1017, 1.0639, 1.1544)),
    (QWEN, "chat", "prefix_cache", "itl_p99_s"): ((1.1674, 1.1453, 1.196), (0.9999, 0.9262, 1.0391)),
    (QWEN, "chat", "prefix_cache", "ttft_p50_s"): ((1.0292, 0.8957, 1.1357), (0.7431, 0.6575, 0.8687)),
    (QWEN, "chat", "prefix_cache", "ttft_p99_s"): ((0.7036, 0.6985, 0.7495), (0.6066, 0.6013, 0.646)),
    (QWEN, "rag", "eager", "goodput"): (
        (0.2624, 0.2518, 0.2756), (0.1217, 0.1037, 0.1412), (0.2842, 0.2777, 0.2963), (0.1069, 0.0864, 0.1297)),
    (QWEN, "rag", "eager", "itl_p50_s"): (
        (4.0039, 3.9546, 4.0739), (6.2192, 5.8968, 6.4443), (3.9602, 3.9152, 3.9931), (6.0254, 5.6606, 6.4232)),
    (QWEN, "rag", "eager", "itl_p99_s"): (
        (1.5304, 1.4433, 1.6057), (1.8699, 1.8309, 1.9344), (1.8405, 1.7833, 1.8815), (1.5392, 1.5282, 1.5773)),
    (QWEN, "rag", "eager", "output_throughput"): (
        (0.2652, 0.2373, 0.3014), (0.1948, 0.1738, 0.2217), (0.2842, 0.2535, 0.3207), (0.2184, 0.1955, 0.2449)),
    (QWEN, "rag", "eager", "ttft_p50_s"): (
        (2.2423, 1.9368, 2.7226), (3.3174, 2.8507, 3.5897), (2.6789, 2.4809, 2.8191), (2.3849, 2.0453, 2.7317)),
    (QWEN, "rag", "eager", "ttft_p99_s"): (
        (1.2353, 1.0921, 1.4571), (2.435, 2.115, 2.8837), (1.0705, 0.9367, 1.2972), (1.7226, 1.5605, 1.7788)),
    (QWEN, "rag", "fp8_kv", "goodput"): ((0.9728, 0.9524, 1.0034), (1.033, 1.0114, 1.0677), (0.8318, 0.8143, 0.8534)),
    (QWEN, "rag", "fp8_kv", "itl_p99_s"): ((1.0182, 0.9842, 1.063), (0.6409, 0.6374, 0.6683), (1.4537, 1.4219, 1.5063)),
    (QWEN, "rag", "fp8_kv", "output_throughput"): (
        (0.9728, 0.8642, 1.0882), (1.033, 0.9264, 1.1559), (0.8318, 0.7429, 0.9312)),
    (QWEN, "rag", "fp8_kv", "ttft_p50_s"): ((0.9836, 0.8996, 1.2053), (0.7997, 0.7456, 0.94), (1.4877, 1.4056, 1.7342)),
    (QWEN, "rag", "ngram", "goodput"): (
        (1.7621, 1.7228, 1.8156), (1.8322, 1.7923, 1.8877), (1.7544, 1.7131, 1.809), (1.5076, 1.481, 1.5519)),
    (QWEN, "rag", "ngram", "itl_p50_s"): (
        (0.4668, 0.4549, 0.4858), (0.456, 0.4473, 0.47), (0.436, 0.4148, 0.4534), (0.6952, 0.6629, 0.7325)),
    (QWEN, "rag", "ngram", "itl_p99_s"): (
        (0.6517, 0.5507, 0.8129), (0.7239, 0.6474, 0.7718), (1.0637, 0.8941, 1.1966), (0.6842, 0.6177, 0.781)),
    (QWEN, "rag", "ngram", "output_throughput"): (
        (1.7621, 1.5832, 2.0043), (1.8322, 1.6427, 2.0585), (1.7544, 1.5758, 1.9591), (1.5076, 1.3512, 1.6939)),
    (QWEN, "rag", "ngram", "ttft_p99_s"): (
        (1.1471, 0.9583, 1.3578), (1.283, 1.0706, 1.5169), (1.1822, 0.9979, 1.4407), (1.0715, 0.888, 1.108))}
# The runs whose gain misses issue 14's 20% with an interval that excludes the prediction, but which agree within the
# gain check's whole budget (ladder_repeat.within_budget: the interval's side plus the calibration's systematic terms):
# no finding. Frozen here because the budget re-simulates the ladder (~5-9 s a process) and finds() runs at collection;
# test_ladder_repeat.test_inside_budget_is_every_miss_the_budget_holds recomputes it.
INSIDE_BUDGET: frozenset[tuple[str, str, str, str, int]] = frozenset({
    (QWEN, "chat", "ngram", "output_throughput", 4), (QWEN, "chat", "ngram", "goodput", 4)})
# The n-gram rungs' gains as predicted with each run's measured E and draft share (test_ladder_replay.predicted_gains):
# the same for every run, whose drafts, accepted tokens and streamed chunks are identical (dummy weights, seeded
# requests: the drafting is deterministic)
NGRAM_PREDICTED: dict[tuple[str, str], dict[str, float]] = {
    (QWEN, "chat"): {"ttft_p50_s": 1.6807, "ttft_p99_s": 1.0338, "itl_p50_s": 0.3861, "itl_p99_s": 0.2732,
                     "output_throughput": 2.3253, "goodput": 2.3253},
    (LLAMA, "chat"): {"ttft_p50_s": 1.6645, "ttft_p99_s": 1.0336, "itl_p50_s": 0.3062, "itl_p99_s": 0.27,
                      "output_throughput": 2.4011, "goodput": 2.4011},
    (QWEN, "rag"): {"ttft_p99_s": 1.0119, "itl_p50_s": 0.2003, "itl_p99_s": 0.4482, "output_throughput": 2.8915,
                    "goodput": 2.8915},
    (LLAMA, "rag"): {"ttft_p50_s": 1.4399, "itl_p50_s": 0.2004, "output_throughput": 3.0348, "goodput": 3.0348}}

# Engine-clock and metric numbers the reasons quote, per rung: one per run, first first, each run beside the parent its
# gains divide by (ladder_raw's methods; metrics in ms by the device plan's ladder_metrics). step_1 / step_n: the median
# pure decode (ngram: verify) step of one sequence / of the workload's users; window: the median prompt window; burst:
# the opening burst's steps and ms; tail: the ITL p99 tail's tokens, one-token chunks and those early in a request.
Engine = dict[str, float]
ENGINE: dict[tuple[str, str, str], tuple[Engine, ...]] = {
    (QWEN, "chat", "fp8_kv"): (
        {"window": 19.3, "parent_window": 20.7, "ttft_p50_s": 32.77, "itl_p99_s": 25.47, "burst_steps": 10,
         "burst_ms": 222, "parent_burst_ms": 224},
        {"window": 16.4, "parent_window": 20.7, "ttft_p50_s": 31.62, "itl_p99_s": 23.69, "burst_steps": 10,
         "burst_ms": 163, "parent_burst_ms": 224},
        {"window": 24.5, "parent_window": 27.9, "ttft_p50_s": 37.22, "itl_p99_s": 28.1, "burst_steps": 10,
         "burst_ms": 310, "parent_burst_ms": 321},
        {"window": 13.9, "parent_window": 20.7, "ttft_p50_s": 29.03, "itl_p99_s": 21.9, "burst_steps": 9,
         "burst_ms": 150, "parent_burst_ms": 224},
        {"window": 26.3, "parent_window": 20.7, "ttft_p50_s": 38.31, "itl_p99_s": 29.49, "burst_steps": 9,
         "burst_ms": 245, "parent_burst_ms": 224}),
    (LLAMA, "chat", "fp8_kv"): (
        {"window": 24.5, "parent_window": 16.0, "ttft_p50_s": 42.91, "itl_p99_s": 33.7, "burst_steps": 9,
         "burst_ms": 154, "parent_burst_ms": 154},
        {"window": 16.8, "parent_window": 16.0, "ttft_p50_s": 33.27, "itl_p99_s": 25.64, "burst_steps": 10,
         "burst_ms": 169, "parent_burst_ms": 154},
        {"window": 22.2, "parent_window": 26.0, "ttft_p50_s": 43.05, "itl_p99_s": 29.84, "burst_steps": 9,
         "burst_ms": 232, "parent_burst_ms": 268},
        {"window": 16.7, "parent_window": 16.0, "ttft_p50_s": 32.35, "itl_p99_s": 25.16, "burst_steps": 9,
         "burst_ms": 160, "parent_burst_ms": 154},
        {"window": 28.3, "parent_window": 16.0, "ttft_p50_s": 42.44, "itl_p99_s": 31.94, "burst_steps": 9,
         "burst_ms": 246, "parent_burst_ms": 154}),
    (QWEN, "chat", "eager"): (
        {"step_1": 16.15, "step_n": 19.53, "parent_step_n": 4.55, "ttft_p50_s": 61.53, "parent_ttft_p50_s": 32.77,
         "burst_steps": 10, "burst_ms": 366, "parent_burst_steps": 10, "parent_burst_ms": 222},
        {"step_1": 18.59, "step_n": 26.31, "parent_step_n": 4.53, "ttft_p50_s": 84.0, "parent_ttft_p50_s": 31.62,
         "burst_steps": 10, "burst_ms": 440, "parent_burst_steps": 10, "parent_burst_ms": 163},
        {"step_1": 26.11, "step_n": 18.82, "parent_step_n": 4.58, "ttft_p50_s": 62.03, "parent_ttft_p50_s": 37.22,
         "burst_steps": 10, "burst_ms": 240, "parent_burst_steps": 10, "parent_burst_ms": 310},
        {"step_1": 31.52, "step_n": 28.65, "parent_step_n": 4.52, "ttft_p50_s": 96.28, "parent_ttft_p50_s": 38.31,
         "burst_steps": 9, "burst_ms": 392, "parent_burst_steps": 9, "parent_burst_ms": 245}),
    (LLAMA, "chat", "eager"): (
        {"step_1": 20.18, "step_n": 19.56, "parent_step_n": 4.95, "ttft_p50_s": 64.58, "parent_ttft_p50_s": 42.91},
        {"step_1": 19.87, "step_n": 19.95, "parent_step_n": 4.96, "ttft_p50_s": 62.79, "parent_ttft_p50_s": 33.27},
        {"step_1": 23.19, "step_n": 23.69, "parent_step_n": 5.02, "ttft_p50_s": 79.91, "parent_ttft_p50_s": 43.05},
        {"step_1": 29.09, "step_n": 35.37, "parent_step_n": 4.97, "ttft_p50_s": 109.18, "parent_ttft_p50_s": 42.44}),
    (QWEN, "chat", "ngram"): (
        {"step_n": 10.23, "parent_step_n": 4.55, "itl_p50_s": 2.14, "ttft_p50_s": 32.15, "parent_ttft_p50_s": 32.77,
         "itl_p99_s": 12.95, "parent_itl_p99_s": 25.47, "burst_ms": 171, "parent_burst_ms": 222,
         "tail_tokens": 362, "tail_one": 362, "tail_early": 284},
        {"step_n": 10.67, "parent_step_n": 4.53, "itl_p50_s": 2.88, "ttft_p50_s": 39.67, "parent_ttft_p50_s": 31.62,
         "itl_p99_s": 15.37, "parent_itl_p99_s": 23.69, "burst_ms": 191, "parent_burst_ms": 163,
         "tail_tokens": 362, "tail_one": 360, "tail_early": 283},
        {"step_n": 10.93, "parent_step_n": 4.54, "itl_p50_s": 2.8, "ttft_p50_s": 40.62, "parent_ttft_p50_s": 29.03,
         "itl_p99_s": 15.05, "parent_itl_p99_s": 21.9, "burst_ms": 277, "parent_burst_ms": 150,
         "tail_tokens": 363, "tail_one": 361, "tail_early": 281},
        {"step_n": 11.38, "parent_step_n": 4.52, "itl_p50_s": 2.64, "ttft_p50_s": 39.7, "parent_ttft_p50_s": 38.31,
         "itl_p99_s": 16.59, "parent_itl_p99_s": 29.49, "burst_ms": 282, "parent_burst_ms": 245, "tail_tokens": 362,
         "tail_one": 362, "tail_early": 298}),
    (LLAMA, "chat", "ngram"): (
        {"step_n": 10.36, "parent_step_n": 4.95, "itl_p50_s": 2.29, "ttft_p50_s": 34.98, "parent_ttft_p50_s": 42.91,
         "itl_p99_s": 11.18, "parent_itl_p99_s": 33.7, "burst_ms": 223, "parent_burst_ms": 154,
         "tail_tokens": 362, "tail_one": 358, "tail_early": 336},
        {"step_n": 11.27, "parent_step_n": 4.96, "itl_p50_s": 2.51, "ttft_p50_s": 36.75, "parent_ttft_p50_s": 33.27,
         "itl_p99_s": 11.73, "parent_itl_p99_s": 25.64, "burst_ms": 316, "parent_burst_ms": 169,
         "tail_tokens": 362, "tail_one": 354, "tail_early": 329},
        {"step_n": 10.76, "parent_step_n": 4.98, "itl_p50_s": 2.63, "ttft_p50_s": 43.42, "parent_ttft_p50_s": 32.35,
         "itl_p99_s": 12.45, "parent_itl_p99_s": 25.16, "burst_ms": 189, "parent_burst_ms": 160,
         "tail_tokens": 362, "tail_one": 350, "tail_early": 326},
        {"step_n": 14.7, "parent_step_n": 4.97, "itl_p50_s": 3.25, "ttft_p50_s": 54.18, "parent_ttft_p50_s": 42.44,
         "itl_p99_s": 15.43, "parent_itl_p99_s": 31.94, "burst_ms": 288, "parent_burst_ms": 246, "tail_tokens": 362,
         "tail_one": 358, "tail_early": 334}),
    (QWEN, "rag", "eager"): (
        {"step_1": 16.51, "step_n": 15.85, "parent_step_n": 3.99, "ttft_p50_s": 52.83, "parent_ttft_p50_s": 23.56},
        {"step_1": 17.98, "step_n": 25.39, "parent_step_n": 3.99, "ttft_p50_s": 78.17, "parent_ttft_p50_s": 23.56},
        {"step_1": 15.73, "step_n": 15.68, "parent_step_n": 3.99, "ttft_p50_s": 51.32, "parent_ttft_p50_s": 19.16},
        {"step_1": 22.75, "step_n": 25.45, "parent_step_n": 3.97, "ttft_p50_s": 85.0, "parent_ttft_p50_s": 35.64}),
    (LLAMA, "rag", "eager"): (
        {"step_1": 24.62, "step_n": 26.36, "parent_step_n": 4.74, "ttft_p50_s": 81.99, "parent_ttft_p50_s": 40.41,
         "ttft_p99_s": 268.65},
        {"step_1": 23.96, "step_n": 26.56, "parent_step_n": 4.74, "ttft_p50_s": 81.11, "parent_ttft_p50_s": 40.41,
         "ttft_p99_s": 199.74},
        {"step_1": 17.61, "step_n": 19.28, "parent_step_n": 4.81, "ttft_p50_s": 62.13, "parent_ttft_p50_s": 30.24,
         "ttft_p99_s": 175.98},
        {"step_1": 35.66, "step_n": 33.2, "parent_step_n": 4.72, "ttft_p50_s": 103.36, "parent_ttft_p50_s": 39.24,
         "ttft_p99_s": 252.73}),
    (QWEN, "rag", "ngram"): (
        {"step_n": 8.05, "parent_step_n": 3.99, "itl_p50_s": 1.87, "ttft_p99_s": 112.85},
        {"step_n": 7.93, "parent_step_n": 3.99, "itl_p50_s": 1.83, "ttft_p99_s": 126.22},
        {"step_n": 7.79, "parent_step_n": 3.99, "itl_p50_s": 1.76, "ttft_p99_s": 119.84},
        {"step_n": 9.8, "parent_step_n": 3.97, "itl_p50_s": 2.81, "ttft_p99_s": 131.59}),
    (LLAMA, "rag", "ngram"): (
        {"step_n": 9.98, "parent_step_n": 4.74, "itl_p50_s": 2.45, "ttft_p50_s": 38.77},
        {"step_n": 8.72, "parent_step_n": 4.74, "itl_p50_s": 2.24, "ttft_p50_s": 34.29},
        {"step_n": 8.33, "parent_step_n": 4.81, "itl_p50_s": 2.0, "ttft_p50_s": 31.07}),
    (QWEN, "chat", "prefix_cache"): (
        {"window": 29.8, "parent_window": 25.5, "ttft_p50_s": 51.64, "burst_steps": 9, "burst_ms": 293,
         "parent_burst_steps": 17, "parent_burst_ms": 422},
        {"window": 23.0, "parent_window": 25.5, "ttft_p50_s": 37.28, "burst_steps": 10, "burst_ms": 256,
         "parent_burst_steps": 17, "parent_burst_ms": 422}),
    (LLAMA, "chat", "prefix_cache"): (
        {"window": 27.5, "parent_window": 24.0, "ttft_p50_s": 43.77, "burst_steps": 9, "burst_ms": 242,
         "parent_burst_steps": 17, "parent_burst_ms": 401},
        {"window": 29.2, "parent_window": 24.0, "ttft_p50_s": 48.09, "burst_steps": 9, "burst_ms": 313,
         "parent_burst_steps": 17, "parent_burst_ms": 401}),
    (QWEN, "chat", "fp8_weights"): (
        {"window": 20.7, "parent_window": 29.8, "ttft_p50_s": 33.33, "itl_p50_s": 4.47, "itl_p99_s": 31.77,
         "step_n": 4.53, "parent_step_n": 5.36},
        {"window": 27.9, "parent_window": 29.8, "ttft_p50_s": 49.16, "itl_p50_s": 5.44, "itl_p99_s": 35.59,
         "step_n": 4.96, "parent_step_n": 5.36}),
    (LLAMA, "chat", "fp8_weights"): (
        {"window": 16.0, "parent_window": 27.5, "ttft_p50_s": 28.89, "itl_p50_s": 4.86, "itl_p99_s": 21.39,
         "step_n": 4.91, "parent_step_n": 5.89},
        {"window": 26.0, "parent_window": 27.5, "ttft_p50_s": 41.58, "itl_p50_s": 4.88, "itl_p99_s": 32.03,
         "step_n": 4.93, "parent_step_n": 5.89}),
    (LLAMA, "rag", "limits"): (
        {"window": 26.9, "itl_p99_s": 47.98, "parent_itl_p99_s": 80.69, "ttft_p99_s": 1340.98},
        {"window": 24.7, "itl_p99_s": 50.78, "parent_itl_p99_s": 80.69, "ttft_p99_s": 1465.64}),
    (LLAMA, "rag", "prefix_cache"): (
        {"window": 38.5, "parent_window": 26.9, "ttft_p50_s": 60.47, "itl_p99_s": 53.29, "parent_itl_p99_s": 47.98},
        {"window": 37.8, "parent_window": 24.7, "ttft_p50_s": 59.11, "itl_p99_s": 51.13, "parent_itl_p99_s": 50.78}),
    (QWEN, "rag", "fp8_kv"): (
        {"window": 14.4, "parent_window": 13.5, "step_n": 3.99, "parent_step_n": 3.85, "ttft_p50_s": 23.56,
         "parent_ttft_p50_s": 23.96, "ttft_p99_s": 98.38, "itl_p99_s": 19.65, "parent_itl_p99_s": 19.3},
        {"window": 11.5, "parent_window": 13.5, "step_n": 3.99, "parent_step_n": 3.85, "ttft_p50_s": 19.16,
         "parent_ttft_p50_s": 23.96, "ttft_p99_s": 101.37, "itl_p99_s": 12.37, "parent_itl_p99_s": 19.3},
        {"window": 25.7, "parent_window": 13.5, "step_n": 3.97, "parent_step_n": 3.85, "ttft_p50_s": 35.64,
         "parent_ttft_p50_s": 23.96, "ttft_p99_s": 122.81, "itl_p99_s": 28.05, "parent_itl_p99_s": 19.3}),
    (LLAMA, "rag", "fp8_kv"): (
        {"window": 28.4, "parent_window": 28.0, "step_n": 4.74, "parent_step_n": 4.58, "ttft_p50_s": 40.41,
         "parent_ttft_p50_s": 40.82, "ttft_p99_s": 154.36, "itl_p99_s": 31.36, "parent_itl_p99_s": 31.49},
        {"window": 16.4, "parent_window": 28.0, "step_n": 4.81, "parent_step_n": 4.58, "ttft_p50_s": 30.24,
         "parent_ttft_p50_s": 40.82, "ttft_p99_s": 108.28, "itl_p99_s": 23.37, "parent_itl_p99_s": 31.49},
        {"window": 24.6, "parent_window": 28.0, "step_n": 4.72, "parent_step_n": 4.58, "ttft_p50_s": 39.24,
         "parent_ttft_p50_s": 40.82, "ttft_p99_s": 147.75, "itl_p99_s": 31.17, "parent_itl_p99_s": 31.49})}
