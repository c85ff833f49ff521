"""Findings of the latency plan's engine pools (test_latency_engine_pools.py), as data.

One cause: with CUDA graphs (torch.compile) and max_num_batched_tokens 8,192, the profile run's activation peak is
above the ledger's for Llama-3.1-8B and the larger Qwen2.5 models, so vLLM's pool is smaller than predicted. Each
start's band is read from the other recorded starts of its configuration on its card (other-runs); a configuration
started once on a card is banded by that start (checked-run) until a second session of it. The reason quotes the
term the engine's own log names and the explanation's arithmetic (compile_benchmark_peak; docs/FACTS.md V12), each
computed here from the recordings; test_latency_engine_pools.py checks what the reason claims against every start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction
from pytest_anatomy.theory.torch_allocator import CachingAllocatorModel
from pytest_anatomy.theory.vllm_load import rank_shapes
from pytest_anatomy.units import GiB

FINDING_ID = "vllm-compiled-profile-peak-is-inductor-benchmark-inputs"
HALF_GIB_STEP = 0.005 * GiB  # vLLM prints its ledger line in GiB with 2 decimals
# The frozen files a theory change of this term would move (their tests require today's theory to reproduce them).
FROZEN = ("tests_deployment/preregistered.json", "tests_deployment/replan.json")
SECOND_RUN = ("a second session of the same latency call on this card (docs/RECORDING.md, planned for the next "
              "visit: a second H100 session of item 1)")


def index_bytes(peak: Prediction) -> float:
    """The V2 dummy batch's index tensors, alive through the whole profile run (the peak's own term)."""
    return sum(t.value for t in peak.terms if t.name == "dummy-batch index tensors")


def compile_benchmark_peak(model: ModelSpec, n_tokens: int, peak: Prediction) -> int:
    """The explanation's peak: the random inputs Inductor's combo-kernel benchmark allocates for the first piecewise
    graph's fused embedding + first RMSNorm (the [V, h] table, the [N, h] residual and the [N, h] normed input of the
    QKV projection), each in a fresh segment of PyTorch's caching allocator (a remainder of <= 1 MiB is handed out
    with the block), with the dummy batch's index tensors; no cuBLAS workspace, no GEMM has run yet."""
    alloc = CachingAllocatorModel()
    h = model.hidden_size
    for nbytes in (rank_shapes(model, 1).vocab_rows * h * 2, n_tokens * h * 2, n_tokens * h * 2):
        alloc.malloc(nbytes)
    return int(alloc.allocated + index_bytes(peak))


@dataclass(frozen=True)
class Explained:
    """One start's ledger with the explanation's peak in place of the predicted one."""

    predicted_peak: float
    benchmark_peak: int
    predicted_blocks: int
    blocks: int  # the pool with the explanation's peak

    @property
    def peak(self) -> float:
        return max(self.predicted_peak, self.benchmark_peak)


def explain(model: ModelSpec, ledger: dict[str, Prediction], block_size: int) -> Explained:
    peak = ledger["peak_activation_bytes"]
    bench = compile_benchmark_peak(model, int(ledger["max_num_batched_tokens"].value), peak)
    available = ledger["available_kv_bytes"].value - max(0.0, bench - peak.value)
    blocks = cap.vllm_num_gpu_blocks(model, available, block_size).value
    return Explained(peak.value, bench, int(ledger["num_gpu_blocks"].value), int(blocks))


@dataclass(frozen=True)
class Row:
    """What a reason quotes about one start: the card, the engine's pool and the ledger's."""

    hardware: str
    model: str
    measured_blocks: int
    block_bytes: int  # one block across all layers
    block_size: int
    explained: Explained
    settings: dict[str, Any]

    @property
    def gap_blocks(self) -> int:
        return self.explained.predicted_blocks - self.measured_blocks


def _logs_text(logged: Sequence[dict[str, Any]], predicted_peak: float) -> str:
    if not logged:
        return ("No start of this configuration on this card kept vLLM's log; where a latency start's log is kept, it "
                "prints weights and non-torch memory as predicted and the peak above (test_latency_engine_pools.py "
                "checks each). ")
    lg = logged[0]
    return (f"vLLM's own ledger line, kept for a start of this configuration (batch {lg['log']}), names the term: {lg['ledger_weights_gib']} GiB for weights and "
            f"{lg['ledger_non_torch_gib']} GiB of non-torch memory, as predicted to the log's 0.01 GiB, and "
            f"{lg['ledger_peak_activation_gib']} GiB of peak activation against {predicted_peak / GiB:.3f} GiB "
            "predicted. ")


def reason(row: Row, logged: Sequence[dict[str, Any]], band_text: str) -> str:
    ex, s = row.explained, row.settings
    gap_tokens = row.gap_blocks * row.block_size
    return (
        f"{row.model} on {row.hardware} with CUDA graphs, max_num_batched_tokens {s.get('max_num_batched_tokens')}, "
        f"max_num_seqs {s.get('max_num_seqs')}, max_model_len {s.get('max_model_len')}: vLLM's pool is "
        f"{row.measured_blocks:,} blocks, {row.gap_blocks:,} ({gap_tokens:,} tokens, "
        f"{row.gap_blocks * row.block_bytes / 1e6:.1f} MB) under the ledger's {ex.predicted_blocks:,}. The profile "
        f"run's activation peak is above the predicted one. {_logs_text(logged, ex.predicted_peak)}"
        "Best explanation (read in vLLM 0.26.0's logged compilation config and PyTorch Inductor's scheduler): the "
        "forward is compiled inside the profile run, and vLLM's inductor config sets combo_kernels and "
        "benchmark_combo_kernel, so Inductor benchmarks combo kernels on randomly generated inputs before any GEMM has "
        "allocated the cuBLAS workspace. The inputs that fit every start (read off these starts, not yet held out) are the "
        "[V, h] embedding table and two [N, h] tensors, what the first piecewise graph's fused embedding + first "
        "RMSNorm reads and writes: "
        f"{ex.benchmark_peak:,} B through the caching allocator, above "
        f"the ledger's MLP moment ({ex.predicted_peak:,.0f} B with its workspaces) at N = "
        f"{s.get('max_num_batched_tokens'):,}. At N = 16,384 (every compiled capacity run) the MLP moment is the "
        f"larger, and those are exact. With that peak the ledger's pool here is {ex.blocks:,} blocks"
        + (", the engine's. " if ex.blocks == row.measured_blocks else f", not the engine's {row.measured_blocks:,}. ")
        + "Not applied to "
        f"the theory: a larger compiled peak moves the ledger pools {' and '.join(FROZEN)} froze (compiled engines at "
        "8,192 tokens), a change of its own with a new pre-registration. " + band_text)


def other_runs_text(count: int, days: str, lo: float, hi: float) -> str:
    return (f"Band: measured / predicted of the other {count:,} recorded start{'s' if count != 1 else ''} of this "
            f"configuration on this card ({days}), {lo:.6f}..{hi:.6f} (other-runs; block counts are exact, so the "
            "band has no width beyond theirs).")


def checked_run_text(ratio: float) -> str:
    return (f"Band: {ratio:.6f}, read off this start, the only one of its configuration on this card (checked-run): "
            f"{SECOND_RUN} would replace it.")


def pool_mark(row: Row, own_ratio: float, others: Sequence[tuple[str, float]],
              logged: Callable[[], Sequence[dict[str, Any]]]) -> Any | None:
    """The finding of one start's pool, or None where nothing diverges. `others`: (recorded_at, measured/predicted)
    of the other starts of the configuration on the card; where none exists, the start's own ratio (checked-run)."""
    if others:
        ratios = [r for _, r in others]
        if all(r == 1.0 for r in ratios):
            return None  # the configuration agrees elsewhere: this start is held to exact
        days = sorted(at[:10] for at, _ in others)
        band, source = (min(ratios), max(ratios)), "other-runs"
        text = other_runs_text(len(ratios), days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}", *band)
    elif own_ratio != 1.0:
        band, source, text = (own_ratio, own_ratio), "checked-run", checked_run_text(own_ratio)
    else:
        return None
    return pytest.mark.finding(FINDING_ID, quantity="num_gpu_blocks", hardware=row.hardware, expected=band,
                               band_from=source, reason=reason(row, logged(), text))


__all__ = ["FINDING_ID", "FROZEN", "HALF_GIB_STEP", "Explained", "Row", "compile_benchmark_peak", "explain",
           "index_bytes", "pool_mark", "reason"]
