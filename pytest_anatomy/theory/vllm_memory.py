"""vLLM's whole memory ledger from config.json + GPU + settings: one function per term.

vLLM 0.26.0 (`Worker.determine_available_memory`, `vllm/utils/mem_utils.memory_profiling`):

    available_kv = requested - (model_memory + peak_activation + non_torch_increase)
                   - cudagraph_estimate
    requested    = ceil(total_memory x gpu_memory_utilization)    (cudaMemGetInfo total)

- model_memory: torch-allocated growth while loading (theory/vllm_load.py: exact replay);
- peak_activation: torch-allocated peak growth of the profile run (theory/vllm_activation.py);
- non_torch_increase: growth of (device used - torch reserved) since the first snapshot:
  lazily loaded CUDA modules and library handles. No mechanism here gives its size, so it is
  one fitted constant per parallel layout (NON_TORCH_INCREASE; NON_TORCH_INCREASE_TP at TP2);
- cudagraph_estimate: 0 for the V2 model runner (`profile_cudagraph_memory` returns 0 in
  0.26.0, so the graph pool captured later lands on top of the budget); the V1 runner captures
  the first two graphs of each mode and extrapolates `max(first) + sum((n - 1) x per_graph)`,
  here one fitted cost per captured graph (V1_GRAPH_COST) times the graph count.
  With `kv_cache_memory_bytes` set, vLLM skips all this and takes that number.

Then blocks = available // page // layers per rank, the minimum over TP ranks
(theory/capacity.py), tokens = blocks x block_size, max concurrency = blocks /
cdiv(max_model_len, block_size).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.vllm_activation import compute_capability, peak_activation
from pytest_anatomy.theory.vllm_load import DEEPGEMM_WORKSPACE, check_supported, replay_load
from pytest_anatomy.theory.vllm_settings import FittedConstant, LedgerSettings, ResolvedSettings, resolve

__all__ = [
    "LEDGER_TERMS", "NON_TORCH_INCREASE", "NON_TORCH_INCREASE_TP", "V1_GRAPH_COST", "V2_GRAPH_POOL_COST", "available_kv",
    "cudagraph_estimate", "cudagraph_pool",
    "model_memory", "non_torch_increase", "num_gpu_blocks_min_over_ranks", "peak_activation", "predict_ledger",
    "requested_memory", "resolve",
]

LEDGER_TERMS = ("model_memory_bytes", "peak_activation_bytes", "non_torch_increase_bytes", "cudagraph_estimate_bytes")
NON_TORCH_INCREASE = FittedConstant(
    241_172_480, "B", ("vllm-ledger.qwen2.5-7b.u0.90.len8192.eager",),
    "non-torch growth from the first snapshot to after the profile run (CUDA modules, library handles)")
# Tensor parallel: the same growth measured on three TP2 engines, byte for byte (qwen2.5-7b,
# qwen2.5-72b, llama-3.1-70b: 69,206,016 B each); fitted on the first, the others held out.
NON_TORCH_INCREASE_TP = FittedConstant(
    69_206_016, "B", ("vllm-ledger.qwen2.5-7b.u0.90.len8192.eager.tp2",),
    "non-torch growth per rank at tensor parallel 2: 164 MiB less than one GPU's, because the distributed "
    "start-up (NCCL communicator, custom all-reduce, their warm-up collectives) loads CUDA modules and "
    "library state before vLLM's first snapshot; which allocations exactly is not established")
# The V1 runner's only recording: 476 MiB for 51 PIECEWISE + 51 FULL graphs.
V1_GRAPH_COST = FittedConstant(
    499_122_176 / 102, "B", ("vllm-ledger.qwen2.5-7b.u0.90.len8192.graphs.v1runner",),
    "V1 runner's CUDA-graph estimate per captured graph, averaged over first-capture and per-graph costs")
# The V2 runner's graph pool, which lands on top of gpu_memory_utilization (not in the ledger: cudagraph_estimate is 0),
# per captured graph: Llama-3.1-8B fp8 at max_num_seqs 1024 with graphs to 8,192 tokens, 531 PIECEWISE + 83 FULL graphs,
# "Graph capturing finished in 63 secs, took 4.31 GiB" (deployment batch 20261203T184616Z). Held out, the other
# recorded V2 engines: 102 graphs (to 512) took 0.82-0.98 GiB (0.72 priced), 90 (Qwen to 1,024) 0.62 (0.63 priced),
# 12-18 graphs 0.08-0.16 GiB (0.08-0.13 priced): a price for whether a capture list fits, not an exact term.
V2_GRAPH_POOL_COST = FittedConstant(
    4.31 * 2**30 / 614, "B", ("llama-3.1-8b.chat.plan_top+graphs-to-budget",),
    "V2 runner's CUDA-graph pool per captured graph (PIECEWISE + FULL), captured after the KV cache is allocated")
_FP8_QUERY_QUANT = frozenset({"fp8", "fp8_e4m3"})  # FlashAttention 3 takes fp8 queries for these


def _deepgemm_workspace(hardware: HardwareSpec, rs: ResolvedSettings) -> bool:
    """QuantFP8 for fp8 queries imports DeepGEMM when vLLM supports it (sm90, sm100, sm120 families)."""
    cc = compute_capability(hardware)
    return rs.kv_cache_dtype in _FP8_QUERY_QUANT and cc is not None and cc[0] in (9, 10, 12)


def model_memory(model: ModelSpec, hardware: HardwareSpec, rs: ResolvedSettings, rank: int = 0) -> Prediction:
    """Weights as loaded on one rank: exact parameter bytes + rope cache + scale buffers (+ DeepGEMM
    workspace with fp8 KV) + the caching allocator's rounding, by replaying the allocations."""
    dg = _deepgemm_workspace(hardware, rs)
    replay = replay_load(model, tp=rs.tensor_parallel_size, rank=rank, deepgemm_workspace=dg)
    max_pos = model.max_position_embeddings
    terms = (
        Term("parameters (per rank)", replay.parameter_bytes, "B", "sum of numel x 2 B, vocab padded to 64"),
        Term("rotary cos/sin cache", replay.rope_cache_bytes, "B", f"{max_pos} positions x rotary_dim x 2 B"),
        Term("attention scale buffers", replay.scale_buffer_bytes, "B", "4 fp32 scalars per layer"),
        Term("DeepGEMM cuBLASLt workspace", replay.deepgemm_workspace_bytes, "B",
             "fp8 KV: QuantFP8 imports DeepGEMM" if dg else "not loaded"),
        Term("caching-allocator rounding", replay.allocator_overhead, "B",
             "512 B rounding, 2 MiB segments, whole blocks under max_split_size=20 MiB"),
    )
    notes = []
    if dg:
        notes.append(f"fp8 KV: DeepGEMM's {DEEPGEMM_WORKSPACE:,} B workspace is allocated in the first "
                     "Attention layer, after the rope temporaries were freed (it may take one of them)")
    if rs.tensor_parallel_size > 1:
        notes.append("tensor parallel: this rank's shard; norms and the rope cache are replicated")
    return Prediction(replay.allocated, "B", "replay of vLLM's load-time allocations through the caching allocator",
                      {"model": model.name, "tp": rs.tensor_parallel_size, "rank": rank,
                       "max_position_embeddings": max_pos, "kv_cache_dtype": rs.kv_cache_dtype},
                      terms=terms, notes=tuple(notes))


def non_torch_increase(hardware: HardwareSpec, rs: ResolvedSettings) -> Prediction:
    """One fitted constant per parallel layout (NON_TORCH_INCREASE, NON_TORCH_INCREASE_TP for
    tensor parallel 2); see its provenance in the notes."""
    tp = rs.tensor_parallel_size
    constant = NON_TORCH_INCREASE if tp == 1 else NON_TORCH_INCREASE_TP
    notes = [constant.note()]
    if hardware.name != "h200":
        notes.append(f"{hardware.name}: the constant was measured on an H200; lazily loaded CUDA modules "
                     "differ by architecture and driver")
    if rs.runner == "v1":
        notes.append("the V1 runner was measured 8 MiB higher (one recording): not in this constant")
    if tp > 2:
        notes.append(f"tensor parallel {tp}: the constant was measured at TP2 only; NCCL's channel buffers "
                     "and the custom all-reduce's IPC buffers may grow with the group size")
    return Prediction(constant.value, "B", "fitted constant", {"runner": rs.runner, "tp": tp},
                      notes=tuple(notes))


def cudagraph_estimate(rs: ResolvedSettings) -> Prediction:
    """What determine_available_memory subtracts for CUDA graphs in vLLM 0.26.0."""
    if not rs.cudagraphs:
        return Prediction(0, "B", "enforce_eager: no graphs", {"cudagraphs": False})
    if rs.runner == "v2":
        return Prediction(0, "B", "V2 runner: profile_cudagraph_memory() returns 0", {"runner": "v2"},
                          notes=(("the graph pool captured after the KV cache is allocated is not in the budget: "
                                  "it lands on top of gpu_memory_utilization"),))
    piecewise, full = len(rs.cudagraph_capture_sizes), rs.num_full_graphs
    graphs = piecewise + full
    return Prediction(
        round(graphs * V1_GRAPH_COST.value), "B", "(PIECEWISE + FULL graphs) x fitted cost per graph",
        {"piecewise_graphs": piecewise, "full_graphs": full, "capture_sizes": rs.cudagraph_capture_sizes},
        terms=(Term("graphs", graphs, "graphs", f"{piecewise} PIECEWISE + {full} FULL"),
               Term("cost per graph", V1_GRAPH_COST.value, "B", "fitted")),
        notes=(V1_GRAPH_COST.note(), ("vLLM's own estimate is max(first capture) + sum((n - 1) x per-graph); "
                                      "a per-graph average is exact only for the capture list it was fitted on")))


def cudagraph_pool(rs: ResolvedSettings) -> Prediction:
    """The CUDA-graph pool the engine captures after allocating the KV cache. The V2 runner (0.26.0's default) takes
    it from no budget: it lands on top of gpu_memory_utilization (the KV pool is the same with any capture list: 118,699
    blocks with graphs to 512 and to 8,192 on Llama-3.1-8B fp8, batches 20261203T143336Z and 20261203T184616Z), so
    an engine fits only if the pool fits in the memory the request leaves. Priced per graph (V2_GRAPH_POOL_COST); the
    V1 runner's is cudagraph_estimate's, inside the budget."""
    if not rs.cudagraphs:
        return Prediction(0, "B", "enforce_eager: no graphs", {"cudagraphs": False})
    cost = V2_GRAPH_POOL_COST if rs.runner == "v2" else V1_GRAPH_COST
    piecewise, full = len(rs.cudagraph_capture_sizes), rs.num_full_graphs
    return Prediction(
        round((piecewise + full) * cost.value), "B", "(PIECEWISE + FULL graphs) x fitted pool per graph",
        {"piecewise_graphs": piecewise, "full_graphs": full, "runner": rs.runner,
         "max_capture_size": max(rs.cudagraph_capture_sizes, default=0)},
        terms=(Term("graphs", piecewise + full, "graphs", f"{piecewise} PIECEWISE + {full} FULL"),
               Term("pool per graph", cost.value, "B", "fitted")),
        notes=(cost.note(),) + ((("V2 runner: on top of gpu_memory_utilization, not taken from the KV pool"),)
                               if rs.runner == "v2" else ()))


def requested_memory(hardware: HardwareSpec, rs: ResolvedSettings) -> Prediction:
    """ceil(total x util) with total = the CUDA-visible total (cudaMemGetInfo)."""
    total = hardware.cuda_visible_memory_bytes or hardware.nvml_memory_bytes or hardware.memory_bytes
    if total is None:
        raise cap.NotModeled(f"{hardware.name}: no memory size in the hardware spec")
    pred = cap.requested_memory(int(total), rs.gpu_memory_utilization)
    if hardware.cuda_visible_memory_bytes is None:
        pred = Prediction(pred.value, pred.unit, pred.formula, pred.inputs, notes=(
            f"{hardware.name}: CUDA-visible total unknown; used {total:,} B, which overstates what vLLM sees",))
    return pred


def available_kv(requested: Prediction, terms: Mapping[str, Prediction],
                 kv_cache_memory_bytes: int | None = None) -> Prediction:
    """requested - model - peak - non_torch - cudagraph, or kv_cache_memory_bytes when pinned."""
    if kv_cache_memory_bytes is not None:
        return Prediction(kv_cache_memory_bytes, "B", "kv_cache_memory_bytes (pinned: the ledger is skipped)",
                          {"kv_cache_memory_bytes": kv_cache_memory_bytes},
                          notes=("vLLM still runs the profile pass but ignores gpu_memory_utilization",))
    parts = [Term("requested", requested.value, "B", requested.formula)]
    parts += [Term(f"- {name}", -terms[name].value, "B", terms[name].formula) for name in LEDGER_TERMS]
    value = requested.value - sum(terms[name].value for name in LEDGER_TERMS)
    return Prediction(value, "B", "requested - (model + peak_activation + non_torch) - cudagraph_estimate",
                      {"requested": requested.value}, terms=tuple(parts))


def num_gpu_blocks_min_over_ranks(model: ModelSpec, per_rank_available: list[float], block_size: int,
                                  kv_cache_dtype: str, tp: int) -> Prediction:
    """Each rank divides its own available memory into pages; the engine takes the minimum."""
    if len(per_rank_available) != tp:
        raise ValueError(f"need one available-KV figure per rank ({tp}), got {len(per_rank_available)}")
    per_rank = [cap.vllm_num_gpu_blocks(model, a, block_size, kv_cache_dtype, tp) for a in per_rank_available]
    low = min(range(tp), key=lambda k: per_rank[k].value)
    best = per_rank[low]
    if tp == 1:
        return best
    return Prediction(best.value, "blocks", "min over ranks of (available_kv // page_bytes // layers_per_group)",
                      {**best.inputs, "tp": tp, "per_rank_blocks": [p.value for p in per_rank], "min_rank": low},
                      terms=best.terms, notes=best.notes)


def predict_ledger(model: ModelSpec, hardware: HardwareSpec,
                   settings: LedgerSettings | Mapping[str, Any], *,
                   subtract_cudagraph: bool = True) -> dict[str, Prediction]:
    """Every ledger term, the available KV memory, blocks, tokens and max concurrency (rank 0's
    terms; blocks are the minimum over ranks). Raises NotModeled for unsupported architectures.
    subtract_cudagraph=False is the rule of vLLM releases before 0.21.0 (theory/vllm_versions.py):
    the CUDA-graph estimate is not taken from the KV budget."""
    if not isinstance(settings, LedgerSettings):
        settings = LedgerSettings.from_mapping(settings)
    check_supported(model)
    rs = resolve(hardware, settings)
    kv_dtype = rs.kv_cache_dtype
    out: dict[str, Prediction] = {
        "max_num_batched_tokens": _setting(rs, "max_num_batched_tokens", "tokens"),
        "max_num_seqs": _setting(rs, "max_num_seqs", "requests"),
        "block_size": _setting(rs, "block_size", "tokens"),
        "requested_memory_bytes": requested_memory(hardware, rs),
    }
    per_rank_available = []
    for rank in range(rs.tensor_parallel_size):
        terms = {"model_memory_bytes": model_memory(model, hardware, rs, rank),
                 "peak_activation_bytes": peak_activation(model, hardware, rs),
                 "non_torch_increase_bytes": non_torch_increase(hardware, rs),
                 "cudagraph_estimate_bytes": cudagraph_estimate(rs) if subtract_cudagraph else Prediction(
                     0, "B", "not subtracted by this vLLM version (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS "
                     "off by default before 0.21.0)", {"subtract_cudagraph": False})}
        avail = available_kv(out["requested_memory_bytes"], terms, rs.kv_cache_memory_bytes)
        per_rank_available.append(avail.value)
        if rank == 0:
            out.update(terms)
            out["available_kv_bytes"] = avail
    blocks = num_gpu_blocks_min_over_ranks(model, per_rank_available, rs.block_size, kv_dtype,
                                           rs.tensor_parallel_size)
    out["num_gpu_blocks"] = blocks
    out["kv_tokens"] = cap.vllm_kv_tokens(model, int(blocks.value), rs.block_size)
    out["max_concurrency"] = cap.vllm_max_concurrency(int(blocks.value), rs.max_model_len, rs.block_size)
    return out


def _setting(rs: ResolvedSettings, name: str, unit: str) -> Prediction:
    value = getattr(rs, name)
    return Prediction(value, unit, rs.sources.get(name, "given"), {name: value})


def ledger_identity_gap(measurements: Mapping[str, float]) -> float:
    """available - (requested - terms) from one run's own numbers: 0 when vLLM's formula holds."""
    expected = measurements["requested_memory_bytes"] - sum(measurements[t] for t in LEDGER_TERMS)
    return measurements["available_kv_bytes"] - expected

