"""The activation term of vLLM's ledger: the torch-allocated peak of the profile run.

vLLM reads `allocated_bytes.all.peak` minus the allocation before `profile_run()`. The profile
run is one forward pass over `max_num_batched_tokens` tokens (N) split into
R = min(N, max_num_seqs) dummy requests, attention skipped, then one sampler pass over R
rows of logits. Its peak is the largest set of tensors alive at one moment, plus what the
run leaves allocated:

forward, layer >= 1, at the MLP (the widest point; I = intermediate / tp, h = hidden):
  the layer's input (the caller still holds it), the residual, the MLP input (h each),
  gate_up (2I) and the activation output (I), all [N, .] in the model dtype:
  - Llama / Mistral eager: `x = act(x)` drops gate_up before down_proj -> peak N (3I + 3h)
  - Qwen2 eager: `gate_up, _ = ...; x = act(gate_up)` keeps gate_up through down_proj,
    whose output adds one more h -> peak N (3I + 4h)
  - torch.compile (CUDA-graph mode): Inductor frees gate_up after its last use -> N (3I + 3h),
    plus one L2 of bytes, Inductor's cache-flush buffer (compiled_forward_extra)
  - tensor parallel: the all-reduce after down_proj is out of place, one more h while the
    partial sum is alive -> Qwen2 N (3I + 5h); Llama's gate_up moment stays wider while
    I (per rank) > h (mlp_peak_width)
sampler, V2 runner: the forward's hidden states [N, h], the R sampled rows [R, h] and bf16
  logits [R, vocab] (the V2 sampler works in place, Gumbel sampling in one Triton kernel)
sampler, V1 runner: as V2 plus a random [R, h] input, the logits cast to fp32, the fp32
  softmax and the fp32 exponential noise (2 + 4 + 4 + 4 B per logit) and the Triton
  top-k/top-p scratch of min(next_pow2(min(SMs, R)), SMs) rows of fp32 vocab
left allocated by the run: PyTorch's cuBLAS workspace (32 MiB on compute capability 9-12,
  8,519,680 B below: CUBLAS_WORKSPACE_CONFIG default), a 1 MiB cuBLASLt workspace
  (CUBLASLT_WORKSPACE_SIZE default) when linears carry biases (addmm with a bias epilogue runs
  on cuBLASLt), and the V2 dummy batch's int32 index tensors idx_mapping, expanded_local_pos,
  logits_indices [R] and cu_num_logits [R + 1].
"""

from __future__ import annotations

from pytest_anatomy.specs.hardware import HardwareSpec
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.torch_allocator import round_size
from pytest_anatomy.theory.vllm_load import rank_shapes
from pytest_anatomy.theory.vllm_settings import FittedConstant, ResolvedSettings
from pytest_anatomy.units import KiB

# Compute capability by catalog name (NVIDIA's CUDA GPU list): it picks PyTorch's cuBLAS workspace size.
COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "h100-sxm": (9, 0), "h200": (9, 0), "a100-80gb": (8, 0), "rtx4090": (8, 9), "l40s": (8, 9)}
CUBLAS_WORKSPACE_LARGE = 4096 * 8 * 1024  # ":4096:8" on majors 9, 10, 11, 12 (CublasHandlePool.cpp)
CUBLAS_WORKSPACE_DEFAULT = 4096 * 1024 * 2 + 16 * 1024 * 8  # ":4096:2:16:8"
CUBLASLT_WORKSPACE = 1024 * KiB  # CUBLASLT_WORKSPACE_SIZE default, 1024 KiB
# Models whose MLP module keeps gate_up alive through down_proj in eager mode (Qwen2MLP.forward).
_GATE_UP_HELD = frozenset({"qwen2"})

COMPILED_FORWARD_EXTRA = FittedConstant(
    62_914_560, "B", ("vllm-ledger.llama-3.1-8b.u0.90.len8192.graphs",),
    "torch.compile'd forward: allocated peak above N (3I + 3h) x 2 B and the workspaces; every compiled "
    "run recorded so far has N = 16384, so a constant cannot be told apart from 3,840 B per token")


def compiled_forward_extra(hardware: HardwareSpec) -> tuple[int, str]:
    """The compiled forward's allocation above the eager MLP moment: Inductor's benchmarker, autotuning
    during the profile run, zeroes an int32 buffer of L2_cache_size // 4 elements (one L2 of bytes)
    between timed launches to flush the cache. COMPILED_FORWARD_EXTRA was fitted on the H200 at 62,914,560 B,
    its L2 exactly; the first H100 run (50 MiB L2) measured 10,485,760 B less, its L2 exactly
    (results/h100-sxm/capacity/vllm-ledger.qwen2.5-7b.u0.90.len8192.graphs@20261202T183049.487749Z.json). The
    mechanism was named after that H100 miss: two cards agree, a third (another L2 size) would test it."""
    if hardware.l2_bytes:
        return int(hardware.l2_bytes), (f"compiled forward: + L2 = {hardware.l2_bytes:,} B (Inductor's benchmarker "
                                        "zeroes one L2 of int32 between timed launches; H200 and H100 agree)")
    return int(COMPILED_FORWARD_EXTRA.value), COMPILED_FORWARD_EXTRA.note() + f" ({hardware.name}: L2 size unknown)"


def mlp_peak_width(i: int, h: int, held: bool, tp: int) -> tuple[int, str]:
    """Widest live set of the MLP, in elements per token, and its formula.

    Three [N, h] tensors stay alive through the MLP (the layer input the caller holds, the
    residual, the MLP input). Two moments compete:
      gate_up -> act: gate_up (2I) and the activation output (I) coexist        -> 3I + 3h
      down_proj: act (I), gate_up too where the module holds it (Qwen2 eager), the
      down_proj output (h), and under tensor parallel the all-reduce's output (h): vLLM's
      all-reduce is out of place (torch.empty_like, then NCCL or the custom kernel) and
      runs while down_proj's partial sum is still referenced           -> I (+2I) + 4h (+h)
    Llama at TP2 stays at 3I + 3h (I + 5h is smaller while I > h, I being per rank); Qwen2 goes to 3I + 5h."""
    gate_up = 3 * i + 3 * h
    down = i + (2 * i if held else 0) + 4 * h + (h if tp > 1 else 0)
    if down > gate_up:
        return down, f"{'3I' if held else 'I'} + {4 + (tp > 1)}h"
    return gate_up, "3I + 3h"


def compute_capability(hardware: HardwareSpec) -> tuple[int, int] | None:
    """The spec's own compute capability (catalog entries and driver-derived specs carry one); the
    table by name only for a spec built without it. A spec derived from NVML for an H200 once fell
    through to "unknown" here and mispredicted the cuBLAS workspace by 23.9 MiB (live, 2026-12-01)."""
    cc = getattr(hardware, "compute_capability", None)
    return tuple(cc) if cc is not None else COMPUTE_CAPABILITY.get(hardware.name)  # type: ignore[return-value]


def cublas_workspace_bytes(hardware: HardwareSpec) -> tuple[int, str]:
    cc = compute_capability(hardware)
    if cc is not None and cc[0] in (9, 10, 11, 12):
        return CUBLAS_WORKSPACE_LARGE, f"32 MiB (compute capability {cc[0]}.{cc[1]})"
    if cc is None:
        return CUBLAS_WORKSPACE_DEFAULT, f"8,519,680 B (compute capability of {hardware.name} unknown: assumed < 9)"
    return CUBLAS_WORKSPACE_DEFAULT, f"8,519,680 B (compute capability {cc[0]}.{cc[1]})"


def _index_tensors(requests: int) -> int:
    """InputBatch.make_dummy: three int32 [R] tensors and one int32 [R + 1], each its own block."""
    return 3 * round_size(4 * requests) + round_size(4 * (requests + 1))


def _v1_sampler_small(requests: int) -> int:
    """V1 _dummy_sampler_run: six fp32 [R] metadata tensors, int64 greedy argmax, int32 top-k cast."""
    return 6 * round_size(4 * requests) + round_size(8 * requests) + round_size(4 * requests)


def peak_activation(model: ModelSpec, hardware: HardwareSpec, rs: ResolvedSettings,
                    dtype_bytes: int = 2) -> Prediction:
    """allocated_bytes.all.peak growth during profile_run, per rank (see the module docstring)."""
    tp = rs.tensor_parallel_size
    s = rank_shapes(model, tp)
    n, r, h, b = rs.max_num_batched_tokens, rs.profile_requests, model.hidden_size, dtype_bytes
    i = s.intermediate
    vocab_padded = s.vocab_rows * tp
    compiled = rs.cudagraphs
    held = model.model_type in _GATE_UP_HELD and not compiled
    mlp_width, width = mlp_peak_width(i, h, held, tp)
    phases: dict[str, float] = {"forward MLP": n * mlp_width * b}
    phases["forward attention"] = n * (3 * h + s.qkv_out + s.attn_out) * b
    extra, extra_note = compiled_forward_extra(hardware)
    if compiled:
        phases["forward MLP"] += extra
    gather = r * s.vocab_rows * b if tp > 1 else 0  # the local logits shard before the all-gather
    sampler = n * h * b + r * h * b + r * vocab_padded * b + gather
    notes = []
    if rs.runner == "v1":
        triton_rows = min(1 << (min(hardware.sm_count or 132, r) - 1).bit_length(), hardware.sm_count or 132)
        sampler += r * h * b + r * model.vocab_size * (4 + 4 + 4) + _v1_sampler_small(r)
        if r >= 8:
            sampler += triton_rows * model.vocab_size * 4
        else:
            notes.append("R < 8: V1 uses the torch sort path for top-k/top-p, whose scratch is not modelled")
        if hardware.sm_count is None:
            notes.append("SM count unknown: the Triton top-k/top-p scratch assumed 132 rows")
    phases["sampler"] = sampler
    where = max(phases, key=lambda k: phases[k])
    ws, ws_note = cublas_workspace_bytes(hardware)
    biased = model.qkv_bias or model.o_bias or model.mlp_bias
    lt = CUBLASLT_WORKSPACE if biased else 0
    idx = _index_tensors(r) if rs.runner == "v2" else 0
    value = phases[where] + ws + lt + idx
    terms = [Term(f"peak phase: {where}", phases[where], "B",
                 {"forward MLP": f"N x ({width}) x {b} B" + (" + compiled extra" if compiled else ""),
                  "forward attention": "N x (3h + qkv + attn_out) x B",
                  "sampler": "hidden [N,h] + rows [R,h] + logits [R,V]" + (" + V1 fp32 copies" if rs.runner == "v1"
                                                                          else "")}[where]),
             Term("cuBLAS workspace", ws, "B", ws_note),
             Term("cuBLASLt workspace", lt, "B", "linears with bias" if biased else "no biased linears")]
    if idx:
        terms.append(Term("dummy-batch index tensors", idx, "B", f"R = {r}"))
    for name, v in phases.items():
        if name != where:
            notes.append(f"{name} phase: {v:,.0f} B (not the peak)")
    if compiled:
        notes.append(extra_note)
    if tp > 1:
        notes.append("tensor parallel: per-rank widths (I / tp, fused QKV of this rank's heads, vocab shard + "
                     "all-gathered logits) and the all-reduce's out-of-place output at down_proj; that output "
                     "was identified from the first TP2 recordings (Qwen2.5-7B/72B +N x h x 2 B), so those "
                     "two are not independent checks of it")
    notes.append("known to about +-1 MiB: the caching allocator may hand out a cached block whole when the "
                 "remainder is <= 1 MiB, and the profile run's allocation order is not replayed")
    return Prediction(
        value, "B", "max(forward MLP, forward attention, sampler) + cuBLAS (+Lt) workspace + index tensors",
        {"max_num_batched_tokens": n, "profile_requests": r, "hidden_size": h, "intermediate_per_rank": i,
         "vocab_padded": vocab_padded, "dtype_bytes": b, "compiled": compiled, "runner": rs.runner, "tp": tp},
        terms=tuple(terms), notes=tuple(notes))
