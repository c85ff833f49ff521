"""parse_vllm_log on literal log lines of each vLLM era (CPU only).

The 0.26.0 samples are written from the format strings in the vLLM 0.26.0 wheel
(`gpu_worker.py`, `gpu_model_runner.py`, `v1/worker/gpu/model_runner.py`, `utils/mem_utils.py`,
`v1/core/kv_cache_utils.py`, `v1/engine/core.py`, `platforms/cuda.py`), with the prefix that
`decorate_logs` adds in the engine-core process. The older samples are public log excerpts.
"""

from __future__ import annotations

import pytest

from pytest_anatomy.measure.vllm_log import FIELDS, ledger_lines, parse_vllm_log

P = "(EngineCore pid=4242) "

# vLLM 0.26.0, V2 model runner (the default for dense models), enforce_eager, DEBUG level.
V026_V2_EAGER = f"""\
{P}INFO 11-30 00:20:01 [v1/worker/gpu_worker.py:340] Using V2 Model Runner
{P}DEBUG 11-30 00:20:01 [v1/worker/gpu_worker.py:351] worker init memory snapshot: torch_peak=0.0GiB, \
free_memory=139.27GiB, total_memory=139.8GiB, cuda_memory=0.53GiB, torch_memory=0.0GiB, non_torch_memory=0.53GiB, \
timestamp=1764461201.52, auto_measure=True
{P}DEBUG 11-30 00:20:01 [v1/worker/gpu_worker.py:352] worker requested memory: 125.82GiB
{P}INFO 11-30 00:20:02 [platforms/cuda.py:483] Using FLASH_ATTN attention backend out of potential backends: \
['FLASH_ATTN', 'TRITON_ATTN', 'FLEX_ATTENTION'].
{P}INFO 11-30 00:20:05 [v1/worker/gpu/model_runner.py:305] Model loading took 14.19 GiB and 3.214567 seconds
{P}DEBUG 11-30 00:20:08 [v1/worker/gpu_worker.py:547] Initial free memory: 139.27 GiB; Requested memory: 0.900000 \
(util), 125.82 GiB
{P}DEBUG 11-30 00:20:08 [v1/worker/gpu_worker.py:553] Free memory after profiling: 122.9 GiB (total), 109.45 GiB \
(within requested)
{P}DEBUG 11-30 00:20:08 [v1/worker/gpu_worker.py:558] Memory profiling takes 2.31 seconds. Total non KV cache \
memory: 16.41GiB; torch peak memory increase: 2.02GiB; non-torch forward increase memory: 0.2GiB; weights \
memory: 14.19GiB.
{P}INFO 11-30 00:20:08 [v1/worker/gpu_worker.py:559] Available KV cache memory: 109.41 GiB
{P}INFO 11-30 00:20:08 [v1/core/kv_cache_utils.py:2177] GPU KV cache size: 2,048,000 tokens
{P}INFO 11-30 00:20:08 [v1/core/kv_cache_utils.py:2178] Maximum concurrency for 8,192 tokens per request: 250.00x
{P}INFO 11-30 00:20:10 [v1/worker/gpu_worker.py:848] Free memory on device (139.27/139.8 GiB) on startup. Desired GPU \
memory utilization is (0.9, 125.82 GiB). Actual usage is 14.19 GiB for weight, 2.02 GiB for peak activation, 0.2 GiB \
for non-torch memory, and 0.0 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with \
`--kv-cache-memory=117325578240` (109.27 GiB) to fit into requested memory, or `--kv-cache-memory=131789873152` \
(122.74 GiB) to fully utilize gpu memory. Current kv cache memory in use is 109.41 GiB.
{P}INFO 11-30 00:20:12 [v1/engine/core.py:348] init engine (profile, create kv cache, warmup model) took 12.34 s
"""

# vLLM 0.26.0, V1 model runner (VLLM_USE_V2_MODEL_RUNNER=0) with torch.compile and CUDA graphs: the only
# runner whose profile_cudagraph_memory() estimates graphs, so these lines appear only here.
V026_V1_GRAPHS = f"""\
{P}INFO 11-30 01:00:05 [v1/worker/gpu_model_runner.py:5348] Model loading took 14.19 GiB memory and 3.123456 seconds
{P}INFO 11-30 01:00:20 [compilation/backends.py:1155] Dynamo bytecode transform time: 6.12 s
{P}INFO 11-30 01:00:31 [compilation/monitor.py:53] torch.compile and initial profiling/warmup run together took 25.31 \
s in total
{P}INFO 11-30 01:00:32 [v1/worker/gpu_model_runner.py:6612] Profiling CUDA graph memory: PIECEWISE=51 \
(largest=512), FULL=35 (largest=256)
{P}DEBUG 11-30 01:00:35 [v1/worker/gpu_model_runner.py:6692] Estimated PIECEWISE CUDA graph memory: 210.50 MiB \
first-capture + (51-1) \u00d7 3.25 MiB per-graph
{P}DEBUG 11-30 01:00:36 [v1/worker/gpu_model_runner.py:6692] Estimated FULL CUDA graph memory: 120.00 MiB \
first-capture + (35-1) \u00d7 1.00 MiB per-graph
{P}INFO 11-30 01:00:36 [v1/worker/gpu_model_runner.py:6738] Estimated CUDA graph memory: 0.58 GiB total
{P}INFO 11-30 01:00:36 [v1/worker/gpu_worker.py:559] Available KV cache memory: 108.83 GiB
{P}INFO 11-30 01:00:36 [v1/worker/gpu_worker.py:570] CUDA graph memory profiling is enabled (default since v0.21.0). \
The current --gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8958 without CUDA graph memory \
profiling. To maintain the same effective KV cache size as before, increase --gpu-memory-utilization to 0.9042. To \
disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.
{P}INFO 11-30 01:00:52 [v1/worker/gpu_model_runner.py:6845] Graph capturing finished in 14 secs, took 0.61 GiB
{P}INFO 11-30 01:00:52 [v1/worker/gpu_worker.py:790] CUDA graph pool memory: 0.61 GiB (actual), 0.58 GiB \
(estimated), difference: 0.03 GiB (4.9%).
{P}INFO 11-30 01:00:53 [v1/engine/core.py:340] init engine (profile, create kv cache, warmup model) took 45.12 s \
(compilation: 25.31 s)
"""

# Newer main branch (shared/REFERENCE.md 1.1): one-line KV size, "consumed memory", "total consumed".
MAIN_NEWER = """\
INFO 01-10 [kv_cache_utils.py:1] GPU KV cache size: 2,042,016 tokens, Maximum concurrency for 2,048 tokens per \
request: 997.08x
INFO 01-10 [gpu_worker.py:1] Free memory on device (139.27/139.8 GiB) on startup. Desired GPU memory utilization is \
(0.92, 128.62 GiB). Actual usage is 14.39 GiB for consumed memory (weights + non-torch), 2.02 GiB for peak activation, \
and 0.61 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with --kv-cache-memory=119000000000 (110.83 \
GiB) to fit into requested memory, or --kv-cache-memory=130000000000 (121.07 GiB) to fully utilize gpu memory. Current \
kv cache memory in use is 111.6 GiB.
DEBUG 01-10 [gpu_worker.py:1] Memory profiling takes 2.31 seconds. Total non KV cache memory: 16.41GiB; torch peak \
memory increase: 2.02GiB; total consumed (from mem_get_info): 14.39GiB; weights memory: 14.19GiB.
WARNING 01-10 [gpu_worker.py:1] CUDA graph memory profiling is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). \
Without it, CUDA graph memory is not accounted for during KV cache allocation, which may require lowering \
--gpu-memory-utilization to avoid OOM. Consider re-enabling it (the default as of v0.21.0) and increasing \
--gpu-memory-utilization from 0.9200 to 0.9244.
"""

# Early V1 engine (~0.8), as public log parsers quote it: a multi-line INFO message.
V1_EARLY = """\
INFO 03-14 09:12:55 [gpu_model_runner.py:1289] Model loading took 14.9888 GiB and 13.204526 seconds
INFO 03-14 09:13:07 [gpu_worker.py:227] Memory profiling takes 11.85 seconds
the current vLLM instance can use total_gpu_memory (79.11GiB) x gpu_memory_utilization (0.90) = 71.20GiB
model weights take 14.99GiB; non_torch_memory takes 0.35GiB; PyTorch activation peak memory takes 1.24GiB;
the rest of the memory reserved for KV Cache is 54.62GiB.
INFO 03-14 09:13:08 [kv_cache_utils.py:566] GPU KV cache size: 447,088 tokens
INFO 03-14 09:13:08 [kv_cache_utils.py:570] Maximum concurrency for 32,768 tokens per request: 13.64x
"""

# V0 engine (~0.6-0.7), public log excerpts.
V0 = """\
INFO 12-22 10:55:34 model_runner.py:1097] Loading model weights took 8.5107 GB
INFO 12-22 10:55:34 worker.py:241] Memory profiling takes 0.69 seconds
INFO 12-22 10:55:34 worker.py:241] the current vLLM instance can use total_gpu_memory (79.25GiB) x \
gpu_memory_utilization (0.15) = 11.89GiB
INFO 12-22 10:55:34 worker.py:241] model weights take 8.51GiB; non_torch_memory takes 0.26GiB; PyTorch activation peak \
memory takes 0.94GiB; the rest of the memory reserved for KV Cache is 2.18GiB.
INFO 12-22 10:55:35 gpu_executor.py:76] # GPU blocks: 715, # CPU blocks: 1310
INFO 12-22 10:55:35 gpu_executor.py:80] Maximum concurrency for 2048 tokens per request: 5.59x
INFO 12-22 10:55:40 model_runner.py:1527] Graph capturing finished in 5 secs, took 0.32 GiB
"""


def test_every_field_is_none_on_an_empty_log() -> None:
    facts = parse_vllm_log("")
    assert set(facts) == set(FIELDS)
    assert all(facts[k] is None for k in FIELDS if k != "warnings") and facts["warnings"] == []


def test_v026_v2_eager_ledger() -> None:
    f = parse_vllm_log(V026_V2_EAGER)
    assert f["model_runner"] == "v2"
    assert (f["model_loading_gib"], f["model_loading_s"]) == (14.19, 3.214567)
    assert f["init_snapshot_gib"]["non_torch_memory"] == 0.53 and f["init_free_gib"] == 139.27
    assert (f["init_total_gib"], f["requested_gib"], f["gpu_memory_utilization"]) == (139.8, 125.82, 0.9)
    assert (f["after_profile_free_gib"], f["after_profile_free_within_requested_gib"]) == (122.9, 109.45)
    assert (f["profile_s"], f["profile_non_kv_gib"], f["profile_torch_peak_increase_gib"]) == (2.31, 16.41, 2.02)
    assert (f["profile_non_torch_increase_gib"], f["profile_weights_gib"]) == (0.2, 14.19)
    assert f["profile_total_consumed_gib"] is None
    assert f["available_kv_cache_gib"] == 109.41
    assert (f["kv_cache_size_tokens"], f["max_concurrency_tokens_per_request"], f["max_concurrency_x"]) == \
        (2_048_000, 8192, 250.0)
    assert (f["ledger_free_gib"], f["ledger_total_gib"], f["ledger_util"], f["ledger_requested_gib"]) == \
        (139.27, 139.8, 0.9, 125.82)
    assert (f["ledger_weights_gib"], f["ledger_peak_activation_gib"], f["ledger_non_torch_gib"]) == (14.19, 2.02, 0.2)
    assert f["ledger_cudagraph_gib"] == 0.0 and f["ledger_consumed_gib"] is None
    assert (f["ledger_kv_fit_requested_bytes"], f["ledger_kv_fit_requested_gib"]) == (117325578240, 109.27)
    assert (f["ledger_kv_fit_gpu_bytes"], f["ledger_kv_fit_gpu_gib"]) == (131789873152, 122.74)
    assert f["ledger_kv_in_use_gib"] == 109.41
    assert f["attention_backend"] == "FLASH_ATTN"
    assert f["attention_backend_candidates"] == ["FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION"]
    assert (f["init_engine_s"], f["compilation_s"]) == (12.34, None)
    # V2 runner: no graph estimate in 0.26.0, so none of the estimate lines exist
    assert f["cudagraph_estimate_gib"] is None and f["cudagraph_profiling_enabled"] is None


def test_v026_v1_graphs_cudagraph_terms() -> None:
    f = parse_vllm_log(V026_V1_GRAPHS)
    assert (f["model_loading_gib"], f["model_loading_s"]) == (14.19, 3.123456)
    assert f["cudagraph_profile_groups"] == {"PIECEWISE": {"count": 51, "largest": 512},
                                             "FULL": {"count": 35, "largest": 256}}
    assert f["cudagraph_estimate_per_mode"]["PIECEWISE"] == {"first_capture_mib": 210.5, "num_graphs": 51,
                                                             "per_graph_mib": 3.25}
    assert f["cudagraph_estimate_per_mode"]["FULL"]["num_graphs"] == 35
    assert f["cudagraph_estimate_gib"] == 0.58
    assert f["cudagraph_profiling_enabled"] is True
    assert (f["cudagraph_util_current"], f["cudagraph_util_equivalent"], f["cudagraph_util_suggested"]) == \
        (0.9, 0.8958, 0.9042)
    assert (f["cudagraph_capture_s"], f["cudagraph_capture_gib"]) == (14.0, 0.61)
    assert (f["cudagraph_pool_actual_gib"], f["cudagraph_pool_estimated_gib"]) == (0.61, 0.58)
    assert (f["cudagraph_pool_diff_gib"], f["cudagraph_pool_diff_pct"]) == (0.03, 4.9)
    assert (f["init_engine_s"], f["compilation_s"]) == (45.12, 25.31)
    assert (f["torch_compile_s"], f["dynamo_s"]) == (25.31, 6.12)


def test_newer_main_wording() -> None:
    f = parse_vllm_log(MAIN_NEWER)
    assert (f["kv_cache_size_tokens"], f["max_concurrency_tokens_per_request"], f["max_concurrency_x"]) == \
        (2_042_016, 2048, 997.08)
    assert (f["ledger_consumed_gib"], f["ledger_peak_activation_gib"], f["ledger_cudagraph_gib"]) == (14.39, 2.02, 0.61)
    assert f["ledger_weights_gib"] is None and f["ledger_non_torch_gib"] is None
    assert (f["ledger_kv_fit_requested_bytes"], f["ledger_kv_fit_gpu_gib"]) == (119000000000, 121.07)
    assert (f["profile_total_consumed_gib"], f["profile_non_torch_increase_gib"]) == (14.39, None)
    assert f["cudagraph_profiling_enabled"] is False
    assert (f["cudagraph_util_current"], f["cudagraph_util_suggested"]) == (0.92, 0.9244)
    assert len(f["warnings"]) == 1 and f["warnings"][0].startswith("CUDA graph memory profiling is disabled")


def test_early_v1_multiline_profile() -> None:
    f = parse_vllm_log(V1_EARLY)
    assert (f["model_loading_gib"], f["profile_s"]) == (14.9888, 11.85)
    assert (f["init_total_gib"], f["gpu_memory_utilization"], f["requested_gib"]) == (79.11, 0.9, 71.2)
    assert (f["profile_weights_gib"], f["profile_non_torch_increase_gib"]) == (14.99, 0.35)
    assert (f["profile_torch_peak_increase_gib"], f["available_kv_cache_gib"]) == (1.24, 54.62)
    assert (f["kv_cache_size_tokens"], f["max_concurrency_x"]) == (447_088, 13.64)


def test_v0_blocks_and_profile() -> None:
    f = parse_vllm_log(V0)
    assert f["model_loading_gib"] == 8.5107 and f["model_loading_s"] is None
    assert (f["v0_num_gpu_blocks"], f["v0_num_cpu_blocks"]) == (715, 1310)
    assert (f["max_concurrency_tokens_per_request"], f["max_concurrency_x"]) == (2048, 5.59)
    assert (f["available_kv_cache_gib"], f["requested_gib"]) == (2.18, 11.89)
    assert (f["cudagraph_capture_s"], f["cudagraph_capture_gib"]) == (5.0, 0.32)
    assert parse_vllm_log("INFO executor_base.py:110] # CUDA blocks: 5517, # CPU blocks: 9362")["v0_num_gpu_blocks"] \
        == 5517


def test_v0_profiling_results_line() -> None:
    line = ("INFO worker.py:1] Memory profiling results: duration=4.10 seconds, total_gpu_memory=79.10GiB, "
            "initial_memory_usage=15.40GiB, peak_torch_memory=16.60GiB, memory_usage_post_profile=15.50GiB, "
            "non_torch_memory=0.40GiB, kv_cache_size=54.20GiB, gpu_memory_utilization=0.90.")
    f = parse_vllm_log(line)
    assert (f["init_total_gib"], f["available_kv_cache_gib"], f["gpu_memory_utilization"]) == (79.1, 54.2, 0.9)
    assert (f["profile_non_torch_increase_gib"], f["profile_s"]) == (0.4, 4.1)


def test_failure_lines_and_other_paths() -> None:
    text = (
        f"{P}INFO 11-30 [v1/worker/gpu_worker.py:461] Initial free memory 139.27 GiB, reserved 40.0 GiB memory for KV "
        "Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the "
        "gpu_memory_utilization config.\n"
        f"{P}INFO 11-30 [platforms/interface.py:640] Setting kv cache block size to 64 for FLASH_ATTN backend.\n"
        f"{P}INFO 11-30 [v1/core/kv_cache_utils.py:2120] Overriding num_gpu_blocks=1000 with "
        "num_gpu_blocks_override=512\n"
        f"{P}INFO 11-30 [v1/core/kv_cache_utils.py:1990] Auto-fit max_model_len: reduced from 131072 to 65536 to fit "
        "in "
        "available GPU memory (8.0 GiB available for KV cache)\n"
        f"{P}ERROR 11-30 [v1/engine/core.py:1] ValueError: To serve at least one request with the model's max seq len "
        "(32768), (4.0 GiB KV cache is needed, which is larger than the available KV cache memory (2.18 GiB). Based on "
        "the available memory, the estimated maximum model length is 17824. Try increasing `gpu_memory_utilization`\n"
        "WARNING 11-30 [config/vllm.py:585] Model Runner V2 does not yet support prompt embeds; using the V1 model "
        "runner instead.\n"
    )
    f = parse_vllm_log(text)
    assert (f["init_free_gib"], f["kv_cache_memory_reserved_gib"]) == (139.27, 40.0)
    assert f["block_size_set_by_backend"] == 64 and f["num_gpu_blocks_override"] == 512
    assert (f["max_model_len_autofit_from"], f["max_model_len_autofit_to"]) == (131072, 65536)
    assert (f["kv_needed_max_model_len"], f["kv_needed_gib"], f["kv_needed_available_gib"]) == (32768, 4.0, 2.18)
    assert f["kv_estimated_max_model_len"] == 17824
    assert f["model_runner"] == "v1"


def test_ansi_colours_and_tqdm_carriage_returns() -> None:
    text = ("\x1b[32mINFO\x1b[0m \x1b[90m11-30 00:00:00 [gpu_worker.py:559]\x1b[0m Available KV cache memory: 7.5 GiB\n"
            "Capturing CUDA graphs: 50%|#####     | 25/51\rCapturing CUDA graphs: 100%|##########| 51/51"
            "\rINFO 11-30 [gpu_model_runner.py:1] Graph capturing finished in 9 secs, took 0.45 GiB\n")
    f = parse_vllm_log(text)
    assert f["available_kv_cache_gib"] == 7.5
    assert (f["cudagraph_capture_s"], f["cudagraph_capture_gib"]) == (9.0, 0.45)


def test_first_occurrence_wins_and_negative_values() -> None:
    text = ("Available KV cache memory: -0.5 GiB\nAvailable KV cache memory: 9.0 GiB\n"
            "the rest of the memory reserved for KV Cache is -7.83GiB.\n")
    assert parse_vllm_log(text)["available_kv_cache_gib"] == -0.5


@pytest.mark.parametrize("sample", [V026_V2_EAGER, V026_V1_GRAPHS, MAIN_NEWER, V1_EARLY, V0])
def test_ledger_lines_keep_every_parsed_line(sample: str) -> None:
    kept = ledger_lines(sample + "INFO some unrelated line\n")
    assert "INFO some unrelated line" not in kept
    assert any("KV" in line or "GiB" in line for line in kept)
    assert len(ledger_lines("GiB line\n" * 500, limit=10)) == 1  # duplicates collapse
