"""llama.cpp's memory ledger from a GGUF header, checked where no GPU is needed.

- the block sizes against gguf-py (llama.cpp's own Python package);
- a GGUF written here is read back into the same header the config.json layout predicts;
- llama-quantize's Q4_K_M mix on the shapes that exercise each rule (the 256-block fallback of a
  896-wide model, the Q6_K promotions of a 28-layer one);
- the ledger against the load log the H200 printed for Qwen2.5-0.5B (quoted in the device README,
  shared/device/llama/README.md: a `given` measurement, exact at the log's two decimals).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_anatomy.measure.llama_log import MIB_HALF_STEP, parse_load_log
from pytest_anatomy.specs.formats import GGML_TYPES
from pytest_anatomy.specs.gguf_file import (
    header_from_config,
    read_gguf_header,
    tensors_from_config,
)
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import gguf_mix
from pytest_anatomy.theory import llamacpp_memory as lm
from pytest_anatomy.units import MiB

DATA = Path(__file__).parent / "data"
F16_LOG = DATA / "h200-binding-qwen2.5-0.5b-f16-load.log"
DEVICE_README = Path(__file__).resolve().parents[2] / "shared" / "device" / "llama" / "README.md"
LOG_ROUNDING = "llama.cpp logs MiB with 2 decimals: the byte count is within half a hundredth of a MiB"


# The card the shared README's quoted load log was measured on (../shared/device/llama/README.md).
LOG_CARD = "h200"

def test_block_sizes_match_gguf_py():
    gguf = pytest.importorskip("gguf", reason="pip install -e '.[llama]' (gguf-py)")
    for name, t in GGML_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name]] == (t.block_elements, t.block_bytes), name


def test_quoted_log_is_the_device_readme_verbatim():
    """The test data is the README's excerpt, byte for byte (skips where shared/ is not beside the repo)."""
    if not DEVICE_README.is_file():
        pytest.skip(f"{DEVICE_README} is not here (shared/ lies beside the checkout on project machines)")
    assert F16_LOG.read_text() in DEVICE_README.read_text()


def _write_gguf(path: Path, model, layers: int) -> None:
    gguf = pytest.importorskip("gguf", reason="pip install -e '.[llama]' (gguf-py)")
    np = pytest.importorskip("numpy")
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_block_count(layers)
    w.add_embedding_length(model.hidden_size)
    w.add_head_count(model.num_attention_heads)
    w.add_head_count_kv(model.num_kv_heads)
    w.add_vocab_size(model.vocab_size)
    w.add_file_type(1)
    for t in tensors_from_config(model, "F16", layers):
        shape = tuple(reversed(t.ne))
        w.add_tensor(t.name, np.zeros(shape, np.float16 if t.ggml_type == "F16" else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_header_read_back_equals_the_config_layout(tmp_path):
    tiny = load_model({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
                       "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                       "intermediate_size": 96, "vocab_size": 300, "tie_word_embeddings": True,
                       "torch_dtype": "bfloat16"}, "tiny-qwen2")
    path = tmp_path / "tiny.gguf"
    _write_gguf(path, tiny, 2)
    header = read_gguf_header(path)
    expected = header_from_config(tiny)
    assert header.tensors == expected.tensors
    assert (header.block_count, header.head_count, header.head_count_kv, header.vocab_size, header.key_length) == (
        2, 4, 2, 300, 16)
    assert header.tied_embeddings and header.file_type == 1


def test_a_missing_or_foreign_file_is_one_line(tmp_path):
    from pytest_anatomy.specs.gguf_file import GgufError

    with pytest.raises(GgufError, match="no such GGUF file"):
        read_gguf_header(tmp_path / "absent.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all" * 10)
    pytest.importorskip("gguf")
    with pytest.raises(GgufError, match="not a readable GGUF file"):
        read_gguf_header(junk)


def test_q4_k_m_on_a_896_wide_model_falls_back_to_32_blocks():
    """Qwen2.5-0.5B: 896 is not a multiple of 256, so Q4_K -> Q5_0 and Q6_K -> Q8_0; ffn_down (4864 = 19 x 256) keeps
    the k-quants. The tied token_embd is quantized as the output (Q6_K -> Q8_0)."""
    h = header_from_config(load_model("qwen2.5-0.5b"))
    types = {t.name: t.ggml_type for t in gguf_mix.quantized_types(h, "Q4_K_M")}
    assert types["token_embd.weight"] == "Q8_0"
    assert types["blk.0.attn_q.weight"] == "Q5_0" and types["blk.0.attn_v.weight"] == "Q8_0"
    assert types["blk.3.attn_v.weight"] == "Q5_0"  # not a use_more_bits layer
    assert types["blk.0.ffn_down.weight"] == "Q6_K" and types["blk.3.ffn_down.weight"] == "Q4_K"
    assert types["blk.0.attn_norm.weight"] == "F32" and types["blk.0.attn_q.bias"] == "F32"


def test_q4_k_m_promotions_on_28_layers():
    """Qwen2.5-7B: attn_v and ffn_down Q6_K on the 14 use_more_bits layers of 28, output Q6_K, token_embd Q4_K."""
    more = [i for i in range(28) if gguf_mix.use_more_bits(i, 28)]
    assert more == [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27]
    h = header_from_config(load_model("qwen2.5-7b"))
    q = gguf_mix.quantized_types(h, "Q4_K_M")
    six = sorted(t.name for t in q if t.ggml_type == "Q6_K")
    assert len(six) == 2 * 14 + 1 and "output.weight" in six
    assert next(t for t in q if t.name == "token_embd.weight").ggml_type == "Q4_K"
    # Hand count: bytes per type for the 7B (the published Q4_K_M file is 4.68 GB, header included).
    assert gguf_mix.bytes_by_type(q) == {"F32": 1_333_248, "Q4_K": 3_427_909_632, "Q6_K": 1_247_877_120}


def test_unmodelled_file_type_is_refused():
    h = header_from_config(load_model("qwen2.5-0.5b"))
    with pytest.raises(ValueError, match="IQ2_XS.*not modelled"):
        gguf_mix.quantized_types(h, "IQ2_XS")


def test_kv_cells_per_stream_and_unified():
    """-c 8192 -np 3: 2730 cells per slot padded to 2816, so 8448 cells in all; unified keeps 8192."""
    assert lm.kv_cells(lm.ContextSettings(n_ctx=8192, n_seq_max=3)) == (2816, 3, 8448)
    assert lm.kv_cells(lm.ContextSettings(n_ctx=8192, n_seq_max=3, kv_unified=True)) == (8192, 1, 8192)
    assert lm.kv_cells(lm.ContextSettings(n_ctx=4000)) == (4096, 1, 4096)


def test_reserved_graphs_and_their_host_terms():
    """The terms the log's 0.01 MiB cannot resolve, from llama.cpp's source: -np 3 rounds the prompt graph's 512
    tokens up to 513 (graph_reserve); a server reserves one output per slot; with more slots than -ub the generation
    graph (one token and one output per slot) is the larger; a q8_0 K cache of 128-wide heads gets a 128 x 128
    rotation (build_input_k_rot), V's stays 64 x 64."""
    assert lm.reserve_graphs(lm.ContextSettings.from_flags(["-c", "8000", "-np", "3"], server=True)) == (
        (513, 3), (3, 3))
    assert lm.reserve_graphs(BINDING) == ((512, 512), (1, 1))
    many = lm.ContextSettings.from_flags(["-c", "8192", "-np", "64", "-ub", "32"], server=True)
    assert lm.reserve_graphs(many) == ((64, 32), (64, 64))
    assert lm.compute_buffer_host(_q("qwen2.5-0.5b", "F16"), many).inputs["n_outputs"] == 64
    seven = _q("qwen2.5-7b", "Q8_0")
    rot = {t.name: t.value for t in lm.compute_buffer_host(seven, lm.ContextSettings(type_k="q8_0", type_v="q8_0")).terms}
    assert (rot["attn_inp_k_rot"], rot["attn_inp_v_rot"]) == (128 * 128 * 4, 64 * 64 * 4)
    assert "attn_inp_k_rot" not in {t.name for t in lm.compute_buffer_host(seven).terms}


def test_quantized_kv_rows_are_padded_to_512():
    """q8_0 K rows of 128 elements: each layer's tensor carries one 384-element partial row of padding."""
    h = header_from_config(load_model("qwen2.5-0.5b"))
    s = lm.ContextSettings(n_ctx=4096, type_k="q8_0", type_v="q8_0")
    per_tensor = 4096 * 128 // 32 * 34 + 384 // 32 * 34
    assert lm.kv_buffer(h, s).value == 24 * 2 * (per_tensor + (-per_tensor) % 128)


@pytest.fixture(scope="module")
def f16_log():
    return parse_load_log(F16_LOG.read_text())


def _q(model: str, ftype: str):
    h = header_from_config(load_model(model))
    return replace(h, tensors=gguf_mix.quantized_types(h, ftype))


# The binding's context for that log (shared/device/llama/binding_test.py): n_ctx 4096, n_batch = n_ubatch = 512, one
# sequence, and llama-cpp-python 0.3.36's Llama(flash_attn=False) default: LLAMA_FLASH_ATTN_TYPE_DISABLED. Its
# n_outputs_max is llama.cpp's default, n_batch (the binding leaves it 0).
BINDING = lm.ContextSettings(n_ctx=4096, n_seq_max=1, n_batch=512, n_ubatch=512, flash_attn=False)
# compute_buffer_gpu prices the lm_head step, a rule it states for flash attention only; on this load (attention
# without it) the step is still the peak: 298.50 MiB logged, as predicted (the f32 score matrix of 14 heads x 4096 x 512
# is 112 MiB). The fa-off rule in general stays unmodelled (lm.ComputeBufferNotModeled).
BINDING_LM_HEAD = replace(BINDING, flash_attn=True)


@pytest.mark.parametrize("kind,device,predict", [
    pytest.param("model", "CUDA0", lambda h: lm.model_buffer_gpu(h, BINDING), id="model-CUDA0"),
    pytest.param("model", "CPU_Mapped", lm.model_buffer_host, id="model-CPU_Mapped"),
    pytest.param("KV", "CUDA0", lambda h: lm.kv_buffer(h, BINDING), id="KV-CUDA0"),
    pytest.param("output", "CUDA_Host", lambda h: lm.output_buffer(h, BINDING), id="output-CUDA_Host"),
    pytest.param("compute", "CUDA0", lambda h: lm.compute_buffer_gpu(h, BINDING_LM_HEAD), id="compute-CUDA0"),
    pytest.param("compute", "CUDA_Host", lambda h: lm.compute_buffer_host(h, BINDING), id="compute-CUDA_Host"),
])
def test_h200_f16_load_log(f16_log, reconcile, kind, device, predict):
    """Every buffer line of the F16 load the device README quotes, from the header alone."""
    pred = predict(_q("qwen2.5-0.5b", "F16"))
    reconcile(f"llamacpp_{kind.lower()}_buffer_{device}", pred, f16_log.buffer(kind, device), abs=MIB_HALF_STEP,
              why=LOG_ROUNDING, model="qwen2.5-0.5b", hardware=LOG_CARD)


@pytest.mark.parametrize("device,logged_mib", [("CUDA0", 373.73), ("CPU_Mapped", 137.94)])
def test_h200_q4_k_m_model_buffers(reconcile, device, logged_mib):
    """The Q4_K_M model buffers the device README reports (its KV and compute lines were not captured)."""
    h = _q("qwen2.5-0.5b", "Q4_K_M")
    pred = lm.model_buffer_gpu(h) if device == "CUDA0" else lm.model_buffer_host(h)
    reconcile(f"llamacpp_model_buffer_{device}", pred, logged_mib * MiB, abs=MIB_HALF_STEP, why=LOG_ROUNDING,
              model="qwen2.5-0.5b", hardware=LOG_CARD)


def test_h200_q4_k_m_file_size(reconcile):
    """llama-quantize's output, 373.71 MiB (the README's figure, as print_info's `file size` line prints it)."""
    h = _q("qwen2.5-0.5b", "Q4_K_M")
    reconcile("gguf_tensor_bytes", gguf_mix.tensor_bytes(h.tensors, "Q4_K_M"), 373.71 * MiB, abs=MIB_HALF_STEP,
              why=LOG_ROUNDING, model="qwen2.5-0.5b", hardware=LOG_CARD)


def test_log_without_buffer_lines_says_how_to_get_them():
    with pytest.raises(KeyError, match="log verbosity 4"):
        parse_load_log("srv  load_model: loading model\n").buffer("model", "CUDA0")
