"""vLLM's weight bytes per --quantization, against the parameter shapes its create_weights allocates.

The theory (theory/quant_bytes.py) goes through specs/formats.py's per-format byte rules; this test
lists the tensors vLLM creates for each fused module, dtype by dtype, straight from the config:
a second derivation that shares no code with the first.
"""

from __future__ import annotations

import pytest

from pytest_anatomy.specs.formats import FormatShapeError
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory import quant_bytes as qb

I32, F32, F16, FP8 = 4, 4, 2, 1


def _module_params(method: str, out: int, inp: int) -> int:
    """Bytes of the parameters vLLM's linear method creates for one fused module."""
    if method == "fp8":  # Fp8LinearMethod after process_weights_after_loading: weight + one scale
        return out * inp * FP8 + 1 * F32
    g = 128
    qzeros, scales = (inp // g) * (out // 8) * I32, (inp // g) * out * F16
    if method == "awq":  # qweight [in, out/8] int32
        return inp * (out // 8) * I32 + qzeros + scales
    assert method == "gptq"  # qweight [in/8, out] int32, g_idx [in] int32
    return (inp // 8) * out * I32 + qzeros + scales + inp * I32


def _by_hand(name: str, method: str) -> int:
    m = load_model(name)
    h, q, kv, ff = m.hidden_size, m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim, m.intermediate_size
    modules = [(q + 2 * kv, h), (h, q), (2 * ff, h), (h, ff)]
    per_layer = sum(_module_params(method, o, i) for o, i in modules) + 2 * h * 2  # + two bf16 RMSNorm weights
    if m.qkv_bias:
        per_layer += (q + 2 * kv) * 2
    embeddings = m.vocab_size * h * 2 * (1 if m.tie_word_embeddings else 2)
    return m.num_layers * per_layer + embeddings + h * 2  # + the final norm


@pytest.mark.parametrize("method", ["fp8", "awq", "gptq"])
@pytest.mark.parametrize("name", ["qwen2.5-7b", "llama-3.1-8b", "qwen2.5-0.5b"])
def test_weight_bytes_equal_vllms_parameter_shapes(name, method):
    assert qb.vllm_weight_bytes(load_model(name), method).value == _by_hand(name, method)


def test_unquantized_equals_the_capacity_ledgers_weights():
    for name in ("qwen2.5-7b", "llama-3.1-8b", "smollm2-135m"):
        m = load_model(name)
        assert qb.vllm_weight_bytes(m, None).value == cap.weight_bytes(m).value


def test_int4_group_128_cannot_quantize_a_576_wide_model():
    """SmolLM2-135M's hidden size 576 is 4.5 groups of 128: vLLM's AWQ/GPTQ refuse it, so the int4
    formats are measured at 7B scale only (docs/QUANT.md)."""
    m = load_model("smollm2-135m")
    with pytest.raises(FormatShapeError, match="in % 128"):
        qb.vllm_weight_bytes(m, "awq")
    assert qb.vllm_weight_bytes(m, "fp8").value < qb.vllm_weight_bytes(m, None).value


def test_an_unknown_method_is_refused_listing_the_known_ones():
    with pytest.raises(qb.UnknownQuantization) as info:
        qb.vllm_weight_bytes(load_model("qwen2.5-7b"), "int3")
    assert "fp8, awq, gptq" in str(info.value) and "\n" not in str(info.value)


def test_decode_bytes_shrink_by_the_linear_share_only():
    """fp8 halves the linear modules, not the bf16 lm_head: the step's bytes fall by less than half."""
    for name in ("qwen2.5-7b", "llama-3.1-8b"):
        m = load_model(name)
        bf16, fp8 = (qb.vllm_matmul_bytes_per_step(m, x) for x in (None, "fp8"))
        assert bf16.value == cap.weight_bytes(m, matmul_only=True).value
        assert fp8.terms[0].value == (bf16.terms[0].value / 2) + 4 * 4 * m.num_layers  # + a scale per module
        assert fp8.terms[1:] == bf16.terms[1:] and 0.5 < fp8.value / bf16.value < 0.6
