"""Byte accounting of weight formats and KV-cache dtypes, checked against hand arithmetic."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_anatomy.specs.formats import (
    GGML_TYPES,
    KV_CACHE_DTYPES,
    LLAMACPP_KV_TYPES,
    WEIGHT_FORMATS,
    FormatShapeError,
    UnknownFormatError,
    awq_format,
    get_kv_cache_dtype,
    get_llamacpp_kv_type,
    get_weight_format,
    gptq_format,
)
from pytest_anatomy.units import MiB

# Qwen2.5-7B's MLP: up/gate_proj is [18944, 3584] (out, in), down_proj is [3584, 18944].
UP, DOWN = (18944, 3584), (3584, 18944)
N = 3584 * 18944  # 67,895,296 weights

# Hand arithmetic, one line per format: (bytes for UP, bytes for DOWN).
EXPECTED = {
    "fp32": (4 * N, 4 * N),                                    # 271,581,184
    "bf16": (2 * N, 2 * N),                                    # 135,790,592
    "fp16": (2 * N, 2 * N),
    "F16": (2 * N, 2 * N),
    "fp8": (N + 4, N + 4),                                     # + one fp32 weight_scale
    "int8": (N + 18944 * 4, N + 3584 * 4),                     # + fp32 scale per output row
    # qweight N/2 + (in/128 groups x out cols) x (0.5 B packed zero + 2 B fp16 scale)
    "awq": (N // 2 + 28 * 18944 * 5 // 2, N // 2 + 148 * 3584 * 5 // 2),  # 35,273,728 both
    "gptq": (35_273_728 + 3584 * 4, 35_273_728 + 18944 * 4),   # + int32 g_idx per input row
    "Q8_0": (N // 32 * 34,) * 2,                               # 72,138,752
    "Q4_0": (N // 32 * 18,) * 2,                               # 38,191,104
    "Q4_1": (N // 32 * 20,) * 2,
    "Q5_0": (N // 32 * 22,) * 2,
    "Q5_1": (N // 32 * 24,) * 2,
    "Q2_K": (N // 256 * 84,) * 2,                              # 22,278,144
    "Q3_K": (N // 256 * 110,) * 2,
    "Q4_K": (N // 256 * 144,) * 2,                             # 38,191,104 (= Q4_0: both 4.5 bpw)
    "Q5_K": (N // 256 * 176,) * 2,
    "Q6_K": (N // 256 * 210,) * 2,                             # 55,695,360
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_qwen_mlp_matrix_bytes(name: str) -> None:
    fmt = get_weight_format(name)
    assert (fmt.bytes_for(UP), fmt.bytes_for(DOWN)) == EXPECTED[name]


def test_spot_values_written_out() -> None:
    assert get_weight_format("awq").bytes_for(UP) == 35_273_728
    assert get_weight_format("Q6_K").bytes_for(DOWN) == 55_695_360
    assert get_weight_format("int8").breakdown(UP) == {
        "data": 67_895_296, "group_metadata": 0, "per_output_channel": 75_776, "per_input_row": 0,
        "per_tensor": 0}


@pytest.mark.parametrize(("name", "elements", "nbytes"), [
    ("Q8_0", 32, 34), ("Q4_0", 32, 18), ("Q4_1", 32, 20), ("Q5_0", 32, 22), ("Q5_1", 32, 24),
    ("IQ4_NL", 32, 18), ("Q2_K", 256, 84), ("Q3_K", 256, 110), ("Q4_K", 256, 144), ("Q5_K", 256, 176),
    ("Q6_K", 256, 210), ("F16", 1, 2), ("BF16", 1, 2), ("F32", 1, 4),
])
def test_ggml_block_sizes(name: str, elements: int, nbytes: int) -> None:
    # ggml-common.h static_asserts, e.g. sizeof(block_q4_K) == 2*sizeof(ggml_half) + K_SCALE_SIZE + QK_K/2.
    t = GGML_TYPES[name]
    assert (t.block_elements, t.block_bytes) == (elements, nbytes)


def test_bits_per_weight_ordering_and_values() -> None:
    order = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_0", "F16"]
    bits = [get_weight_format(n).bits_per_weight for n in order]
    assert bits == sorted(bits) and len(set(bits)) == len(bits)
    # The "effectively N bits per weight" comments in ggml-common.h.
    assert bits[:5] == [Fraction(21, 8), Fraction(55, 16), Fraction(9, 2), Fraction(11, 2), Fraction(105, 16)]
    assert get_weight_format("awq").bits_per_weight == 4 + Fraction(8 * 5, 2 * 128)  # 4.15625
    assert get_weight_format("int8").bits_per_weight == 8  # per-row scale vanishes asymptotically
    assert get_weight_format("int8").bits_per_weight_for(DOWN) == Fraction(8 * EXPECTED["int8"][1], N)


def test_group_size_variants() -> None:
    assert awq_format(128) == WEIGHT_FORMATS["awq"] and gptq_format(128) == WEIGHT_FORMATS["gptq"]
    g64 = awq_format(64)
    assert g64.name == "awq-g64" and g64.bytes_for(UP) == N // 2 + 56 * 18944 * 5 // 2
    assert g64.bits_per_weight > WEIGHT_FORMATS["awq"].bits_per_weight


@pytest.mark.parametrize(("name", "shape", "needs"), [
    ("awq", (18944, 3600), "in % 128"),   # 3600 not a multiple of the group
    ("awq", (18940, 3584), "out % 8"),    # qweight/qzeros pack 8 outputs per int32
    ("Q4_K", (4096, 4000), "in % 256"),   # no partial super-blocks
    ("bf16", (0, 4096), "positive"),
])
def test_unpackable_shapes_are_rejected(name: str, shape: tuple[int, int], needs: str) -> None:
    with pytest.raises(FormatShapeError, match=needs):
        get_weight_format(name).bytes_for(shape)


def test_unknown_weight_format_errors() -> None:
    with pytest.raises(UnknownFormatError, match="Did you mean 'Q4_K'"):
        get_weight_format("q4_k")
    with pytest.raises(UnknownFormatError, match="llama.cpp file type"):
        get_weight_format("Q4_K_M")
    with pytest.raises(KeyError, match="'bf16' or 'BF16'"):
        get_weight_format("bf61")


# --- vLLM KV cache -----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "head_bytes"), [
    ("bfloat16", 256), ("float16", 256), ("fp8", 128), ("fp8_e4m3", 128), ("fp8_e5m2", 128),
    ("int8_per_token_head", 128 + 4), ("fp8_per_token_head", 128 + 4),
    ("nvfp4", 64 + 8),  # hd/2 fp4 data + hd/16 fp8 block scales
])
def test_kv_head_bytes_head_size_128(name: str, head_bytes: int) -> None:
    assert get_kv_cache_dtype(name).kv_head_bytes(128) == head_bytes


def test_qwen_kv_bytes_per_token() -> None:
    # seed: 2 (K,V) x 28 layers x 4 KV heads x 128 x 2 B = 57,344 B = 56 KiB.
    auto = get_kv_cache_dtype("auto")
    assert 28 * auto.token_bytes_per_layer(4, 128, model_dtype="bfloat16") == 57_344
    assert auto.resolve("bfloat16").name == "auto=bfloat16"
    # vLLM page: bs x kvh x (hd + hd_v) x B + 2 x bs x kvh x 4 for per-token-head scales.
    per_head = get_kv_cache_dtype("int8_per_token_head")
    assert 16 * per_head.token_bytes_per_layer(4, 128) == 16 * 4 * 256 + 2 * 16 * 4 * 4


def test_auto_needs_model_dtype() -> None:
    with pytest.raises(ValueError, match="pass model_dtype="):
        get_kv_cache_dtype("auto").kv_head_bytes(128)
    with pytest.raises(UnknownFormatError, match="Did you mean 'bfloat16'"):
        get_kv_cache_dtype("auto").resolve("bfloat61")


def test_unknown_and_unmodelled_kv_dtypes() -> None:
    with pytest.raises(UnknownFormatError, match="not modelled here"):
        get_kv_cache_dtype("fp8_ds_mla")
    with pytest.raises(UnknownFormatError, match="Did you mean 'bfloat16'"):
        get_kv_cache_dtype("bf16")
    assert set(KV_CACHE_DTYPES) >= {"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2",
                                    "int8_per_token_head", "fp8_per_token_head", "nvfp4"}


# --- llama.cpp KV cache ------------------------------------------------------------------


def test_llamacpp_q4_0_is_3_56x_smaller_than_f16() -> None:
    # REFERENCE 1.3: f16 4096 MiB -> q4_0 1152 MiB.
    elements = 4096 * MiB // 2
    assert get_llamacpp_kv_type("q4_0").bytes_for(elements) == 1152 * MiB
    assert Fraction(4096, 1152) == Fraction(32, 9)  # 3.56x


def test_llamacpp_q8_0_ledger_line() -> None:
    # "size = 4352.00 MiB (262144 cells, 8 layers, 1/1 seqs), K (q8_0): 2176.00 MiB": 1024 K values/cell.
    q8 = get_llamacpp_kv_type("q8_0")
    assert q8.bytes_for(262_144 * 8 * 1024) == 2176 * MiB
    assert q8.bytes_for(32) == 34


def test_llamacpp_kv_types() -> None:
    assert set(LLAMACPP_KV_TYPES) == {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}
    with pytest.raises(FormatShapeError, match="multiple of its block of 32"):
        get_llamacpp_kv_type("q4_0").bytes_for(100)
    with pytest.raises(UnknownFormatError, match="Did you mean 'q4_0'"):
        get_llamacpp_kv_type("Q4_0")


# --- properties --------------------------------------------------------------------------

_FORMATS = st.sampled_from(sorted(WEIGHT_FORMATS.values(), key=lambda f: f.name))


@st.composite
def _format_and_shape(draw: st.DrawFn) -> tuple:
    fmt = draw(_FORMATS)
    out = fmt.out_multiple * draw(st.integers(1, 4096))
    inp = fmt.in_multiple * draw(st.integers(1, 64))
    return fmt, out, inp


@given(_format_and_shape())
def test_bytes_grow_with_either_dimension(case: tuple) -> None:
    fmt, out, inp = case
    base = fmt.bytes_for((out, inp))
    assert fmt.bytes_for((out + fmt.out_multiple, inp)) > base
    assert fmt.bytes_for((out, inp + fmt.in_multiple)) > base
    assert base == sum(fmt.breakdown((out, inp)).values())
    assert fmt.bits_per_weight_for((out, inp)) >= fmt.bits_per_weight


@given(_format_and_shape(), st.integers(1, 4096))
def test_splitting_rows_is_additive(case: tuple, extra: int) -> None:
    # A row-split (tensor parallel over `out`) costs exactly the shared terms once more.
    fmt, out, inp = case
    more = fmt.out_multiple * extra
    shared = fmt.per_tensor_bytes + inp * fmt.per_input_row_bytes
    assert fmt.bytes_for((out + more, inp)) == fmt.bytes_for((out, inp)) + fmt.bytes_for((more, inp)) - shared


@given(st.sampled_from(sorted(GGML_TYPES)), st.integers(0, 10**6))
def test_ggml_bytes_are_linear_in_blocks(name: str, blocks: int) -> None:
    t = GGML_TYPES[name]
    nbytes = t.bytes_for(blocks * t.block_elements)
    assert nbytes == blocks * t.block_bytes
    assert Fraction(8 * nbytes, max(1, blocks * t.block_elements)) == (t.bits_per_element if blocks else 0)


@given(st.sampled_from(sorted(set(KV_CACHE_DTYPES) - {"auto"})), st.integers(1, 32))
def test_kv_head_bytes_monotone_and_below_bf16(name: str, sixteenths: int) -> None:
    dtype, bf16 = get_kv_cache_dtype(name), get_kv_cache_dtype("bfloat16")
    hd = 16 * sixteenths
    assert dtype.kv_head_bytes(hd + 16) > dtype.kv_head_bytes(hd)
    assert dtype.kv_head_bytes(hd) <= bf16.kv_head_bytes(hd)
