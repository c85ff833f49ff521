"""llama.cpp on the seed's 4090: `llama-server -ngl 99 -np 64 -c 262144` with Qwen2.5-7B Q4_K_M.

The seed published nvidia-smi's memory.used with the server loaded (19,089 MiB). The KV buffer
is exact (262,144 cells x 28 layers x (512 + 512) x 2 B = 14,336 MiB) and the weights follow from
llama.cpp's Q4_K_M type mix, so their sum is a lower bound; the rest is the CUDA context and
llama.cpp's compute buffers, which are not modelled."""

from __future__ import annotations

import pytest

from pytest_anatomy.importers.seed import LLAMA_SETTINGS
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.quant import llamacpp_gpu_weight_bytes

# The seed study's data exists only as recordings: replayed on the cards that hold them.
pytestmark = pytest.mark.targets(recorded="seed-")


def test_kv_buffer_is_14336_mib(qwen):
    """Hand derivation, independent of the code path: 262144 x 28 x 2 x (4 x 128) x 2 B."""
    assert cap.llamacpp_kv_buffer_bytes(qwen, 262144).value == 262144 * 28 * 2 * 4 * 128 * 2 == 14336 * 2**20


@pytest.mark.gpu
def test_gpu_memory_with_server_loaded(target, qwen, measured, reconcile):
    rec = measured("seed-r2-llamacpp-memory")
    kv = cap.llamacpp_kv_buffer_bytes(qwen, LLAMA_SETTINGS["n_ctx"], LLAMA_SETTINGS["type_k"],
                                      LLAMA_SETTINGS["type_v"])
    weights = llamacpp_gpu_weight_bytes(qwen, LLAMA_SETTINGS["weights"])
    pred = Prediction(
        kv.value + weights.value, "B", "GPU weights (Q4_K_M mix, token_embd on host) + KV buffer (f16)",
        {"n_ctx": LLAMA_SETTINGS["n_ctx"], "ftype": LLAMA_SETTINGS["weights"]},
        terms=(Term("weights on GPU", weights.value, "B"), Term("KV buffer", kv.value, "B", kv.formula)),
        notes=("lower bound: the CUDA context and llama.cpp's compute buffers are not modelled",),
    )
    reconcile("llamacpp_gpu_memory_used", pred, rec["gpu_memory_used_bytes"], ratio=(1.0, 1.08),
              why="the prediction omits the CUDA context (~0.3-0.5 GiB) and compute buffers (-ub 512 over a "
                  "152k vocab, ~0.3-0.6 GiB): together at most ~1.5 GiB = 8% of 19 GiB",
              model=qwen.name)
