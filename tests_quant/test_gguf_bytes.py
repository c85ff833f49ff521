"""Exact GGUF bytes and bits per weight for every file type of the shootout, from tiny GGUFs written here.

The prediction is ours: llama-quantize's per-tensor types (theory/gguf_mix.py) x our block table
(specs/formats.py). The measurement is gguf-py's: the file is written by its GGUFWriter, which sizes
each tensor from its own GGML_QUANT_SIZES, and read back by its GGUFReader. The tiny model is shaped to
exercise every rule: a hidden width of 288 (a multiple of 32, not of 256: the 256-block fallbacks), an
MLP width of 512 (ffn_down keeps its k-quant), 8 layers (use_more_bits' first and last eighth),
4 query heads per KV head (Q2_K's attn_v rule) and an untied output.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from pytest_anatomy.specs.formats import GGML_TYPES
from pytest_anatomy.specs.gguf_file import GgufHeader, GgufTensor
from pytest_anatomy.theory import quant_bytes as qb
from pytest_anatomy.theory.gguf_mix import quantized_types

gguf = pytest.importorskip("gguf", reason="pip install -e '.[llama]' (gguf-py)")
np = pytest.importorskip("numpy")

EXACT = "exact: integer blocks x block bytes; gguf-py sizes the written tensors from its own table"
HIDDEN, FFN, LAYERS, VOCAB, HEADS, KV_HEADS = 288, 512, 8, 320, 8, 2


def tiny_header(layers: int = LAYERS) -> GgufHeader:
    kv = HIDDEN // HEADS * KV_HEADS
    tensors = [GgufTensor("token_embd.weight", "F16", (HIDDEN, VOCAB))]
    for i in range(layers):
        p = f"blk.{i}."
        tensors += [GgufTensor(p + "attn_norm.weight", "F32", (HIDDEN,)),
                    GgufTensor(p + "attn_q.weight", "F16", (HIDDEN, HIDDEN)),
                    GgufTensor(p + "attn_k.weight", "F16", (HIDDEN, kv)),
                    GgufTensor(p + "attn_v.weight", "F16", (HIDDEN, kv)),
                    GgufTensor(p + "attn_output.weight", "F16", (HIDDEN, HIDDEN)),
                    GgufTensor(p + "ffn_norm.weight", "F32", (HIDDEN,)),
                    GgufTensor(p + "ffn_gate.weight", "F16", (HIDDEN, FFN)),
                    GgufTensor(p + "ffn_up.weight", "F16", (HIDDEN, FFN)),
                    GgufTensor(p + "ffn_down.weight", "F16", (FFN, HIDDEN))]
    tensors += [GgufTensor("output_norm.weight", "F32", (HIDDEN,)), GgufTensor("output.weight", "F16", (HIDDEN, VOCAB))]
    return GgufHeader("tiny llama (test)", "llama", 1, layers, HIDDEN, HEADS, KV_HEADS, HIDDEN // HEADS,
                      HIDDEN // HEADS, VOCAB, tuple(tensors))


def write_gguf(path: Path, tensors: tuple[GgufTensor, ...]) -> None:
    """Every tensor in its type; quantized payloads are zero bytes in gguf-py's own byte shape."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(LAYERS)
    for t in tensors:
        shape = tuple(reversed(t.ne))
        if t.ggml_type in ("F32", "F16"):
            w.add_tensor(t.name, np.zeros(shape, np.float32 if t.ggml_type == "F32" else np.float16))
            continue
        qtype = gguf.GGMLQuantizationType[t.ggml_type]
        w.add_tensor(t.name, np.zeros(gguf.quants.quant_shape_to_byte_shape(shape, qtype), np.uint8), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_block_table_matches_gguf_py():
    for name, t in GGML_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name]] == (t.block_elements, t.block_bytes), name


@pytest.mark.parametrize("file_type", ("F16", *qb.GGUF_SHOOTOUT, "Q5_0", "Q5_1", "Q4_1"))
def test_tensor_bytes_and_bpw_of_each_file_type(file_type, tmp_path, reconcile):
    header = tiny_header()
    predicted = qb.gguf_file(header, file_type)
    path = tmp_path / f"tiny-{file_type}.gguf"
    write_gguf(path, quantized_types(header, file_type))
    reader = gguf.GGUFReader(str(path))
    data = sum(int(t.n_bytes) for t in reader.tensors)
    elements = sum(int(t.n_elements) for t in reader.tensors)
    reconcile("gguf_tensor_bytes", predicted["tensor_bytes"], float(data), why=EXACT)
    reconcile("gguf_bits_per_weight", predicted["bits_per_weight"], 8 * data / elements, rel=1e-12,
              why="exact as a fraction; 1e-12 covers the float division of both sides")
    # the file is its header plus every tensor padded to the alignment: nothing else is stored
    align = reader.alignment
    padded = sum(-(-int(t.n_bytes) // align) * align for t in reader.tensors)
    assert path.stat().st_size == reader.data_offset + padded


@pytest.mark.parametrize("ggml_type", [t for t in GGML_TYPES if t not in ("F32", "F16")])
def test_every_ggml_type_alone(ggml_type, tmp_path, reconcile):
    """Each block type in our table, one 256 x 512 tensor written by gguf-py: its bytes as gguf-py sizes them."""
    t = GgufTensor("blk.0.ffn_down.weight", ggml_type, (512, 256))
    path = tmp_path / f"{ggml_type}.gguf"
    write_gguf(path, (t,))
    (written,) = gguf.GGUFReader(str(path)).tensors
    reconcile("ggml_tensor_bytes", float(t.nbytes), float(written.n_bytes), why=EXACT)


def test_the_tiny_model_exercises_the_mix_rules():
    """Not vacuous: on this shape the file types differ in the rules the docstring names."""
    types = {ft: {t.name: t.ggml_type for t in quantized_types(tiny_header(), ft)} for ft in qb.GGUF_SHOOTOUT}
    assert types["Q4_K_M"]["blk.0.attn_q.weight"] == "Q5_0"  # Q4_K on a 288-wide row falls back
    assert types["Q4_K_M"]["blk.0.ffn_down.weight"] == "Q6_K" and types["Q4_K_M"]["blk.2.ffn_down.weight"] == "Q4_K"
    assert types["Q2_K"]["blk.0.attn_v.weight"] == "Q5_0"  # Q4_K (n_gqa 4) -> fallback
    assert types["Q2_K"]["blk.0.ffn_down.weight"] == "Q3_K"
    assert types["Q6_K"]["output.weight"] == "Q8_0" and types["Q4_0"]["output.weight"] == "Q8_0"
    size = {ft: qb.gguf_file(tiny_header(), ft)["tensor_bytes"].value for ft in qb.GGUF_SHOOTOUT}
    # The fallbacks turn the ladder over: Q3_K_M's Q3_K rows become Q4_0 and its promoted ones Q5_0/Q8_0,
    # so on a 288-wide model "3-bit" is larger than Q4_0 (SmolLM2-135M's 576 behaves the same way).
    assert size["Q3_K_M"] > size["Q4_0"] > size["Q2_K"]
    assert size["Q8_0"] > size["Q6_K"] > size["Q5_K_M"] > size["Q4_K_M"]


def test_bits_per_weight_of_a_pure_type_is_its_block_rate():
    t = (GgufTensor("blk.0.ffn_down.weight", "Q4_K", (512, 64)),)
    assert qb.gguf_bits_per_weight(t) == Fraction(9, 2)
    assert qb.gguf_bits_per_weight((t[0].retyped("Q6_K"),)) == Fraction(105, 16)


def test_the_mix_follows_llama_cpps_layer_order_not_the_files():
    """llama-quantize counts attn_v / ffn_down in (layer, name) order whatever order the file lists them in:
    a file written blk.0, blk.1, blk.10, ... (SmolLM2's) gets the same promotions as one in layer order."""
    header = tiny_header(layers=12)  # blk.10 and blk.11 sort before blk.2 by name
    shuffled = replace(header, tensors=tuple(sorted(header.tensors, key=lambda t: t.name)))
    assert [t.name for t in shuffled.tensors] != [t.name for t in header.tensors]
    assert {t.name: t.ggml_type for t in quantized_types(header, "Q4_K_M")}["blk.10.ffn_down.weight"] == "Q6_K"
    for ft in ("Q4_K_M", "Q5_K_M", "Q3_K_M"):
        assert ({t.name: t.ggml_type for t in quantized_types(shuffled, ft)}
                == {t.name: t.ggml_type for t in quantized_types(header, ft)}), ft
