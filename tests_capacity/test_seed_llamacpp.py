"""llama.cpp on the seed's 4090: `llama-server -ngl 99 -np 64 -c 262144 -ub 512` with Qwen2.5-7B Q4_K_M.

The seed published nvidia-smi's memory.used with the server loaded (19,089 MiB), not llama.cpp's
buffer lines. Every GPU buffer llama.cpp allocates is predicted exactly from the GGUF header
(laid out from config.json and llama-quantize's Q4_K_M rules, theory/gguf_mix.py) and the
server's flags (theory/llamacpp_memory.py): the model buffer (Q4_K and Q6_K tensors with their
CUDA row padding; token_embd stays in host memory), the KV buffer (262,144 cells in 64 streams)
and the compute buffer (the lm_head step at -ub 512). What nvidia-smi adds is the process's CUDA
context, which no buffer line reports: it is the one term not predicted, and it is bounded on
both sides (see the tolerance)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_anatomy.importers.seed import LLAMA_SETTINGS
from pytest_anatomy.specs.gguf_file import header_from_config
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory import gguf_mix, llamacpp_memory
from pytest_anatomy.units import MiB

# The seed study's data exists only as recordings: replayed on the cards that hold them.
pytestmark = pytest.mark.targets(recorded="seed-")

SEED_VLLM_LEDGER = "seed-r2-vllm-memory-ledger"  # same card, driver and day as the llama.cpp fingerprint


def test_kv_buffer_is_14336_mib(qwen):
    """Hand derivation, independent of the code path: 262144 x 28 x 2 x (4 x 128) x 2 B."""
    assert cap.llamacpp_kv_buffer_bytes(qwen, 262144).value == 262144 * 28 * 2 * 4 * 128 * 2 == 14336 * 2**20
    header = header_from_config(qwen)
    settings = llamacpp_memory.ContextSettings(n_ctx=262144, n_seq_max=64)
    assert llamacpp_memory.kv_buffer(header, settings).value == 14336 * MiB


def _seed_settings() -> llamacpp_memory.ContextSettings:
    s = LLAMA_SETTINGS
    return llamacpp_memory.ContextSettings(n_ctx=s["n_ctx"], n_seq_max=s["n_parallel"], type_k=s["type_k"],
                                           type_v=s["type_v"], n_batch=s["n_batch"], n_ubatch=s["n_ubatch"])


@pytest.mark.gpu
def test_gpu_memory_with_server_loaded(target, qwen, measured, reconcile):
    rec = measured("seed-r2-llamacpp-memory")
    f16 = header_from_config(qwen)
    header = replace(f16, tensors=gguf_mix.quantized_types(f16, LLAMA_SETTINGS["weights"]))
    buffers = llamacpp_memory.gpu_buffers_total(header, _seed_settings())
    # The CUDA context's upper end: vLLM's non-torch memory on the same card and driver (the seed's round-2
    # ledger: weights + non-torch, less the bf16 weights). A vLLM process holds the same CUDA context plus
    # what torch loads beside it (cuBLAS/cuBLASLt workspaces, its own kernels), so a llama.cpp process holds
    # at most that much outside its buffers; it holds at least nothing.
    vllm = measured(SEED_VLLM_LEDGER)
    context_max = vllm["consumed_bytes"].value - cap.weight_bytes(qwen).value
    rounding = 0.005 * 2**30 + 0.5 * MiB  # vLLM's GiB with 2 decimals, nvidia-smi's whole MiB
    hi = 1 + (context_max + rounding) / buffers.value
    reconcile("llamacpp_gpu_memory_used", buffers, rec["gpu_memory_used_bytes"], ratio=(1.0, hi),
              why=f"nvidia-smi adds the process's CUDA context to the logged buffers: at least 0, at most vLLM's "
                  f"non-torch memory on the same 4090 and driver ({context_max / MiB:.0f} MiB, which also holds "
                  "torch's libraries), plus the two logs' rounding",
              model=qwen.name)
