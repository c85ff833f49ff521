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
    quantity="llamacpp_compute_buffer_CUDA0", hardware=MEASURED_ON)


def server_marks(run: Any, provenance: Mapping[str, Any]) -> tuple[pytest.MarkDecorator, ...]:
    """The findings of a server load of `run`, by the build that measured it."""
    if provenance.get("source_commit") == BUILD_0C1E570 and run.kind in ("server-load", "server-sweep"):
        return (SERVER_COMPUTE_FINDING,)
    return ()
