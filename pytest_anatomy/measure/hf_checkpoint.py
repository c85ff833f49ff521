"""A llama-architecture GGUF written back as a Hugging Face checkpoint folder (config.json + safetensors), so that
vLLM and llm-compressor read the very weights the quant suite's reference is: SmolLM2's Q4_1 file dequantized to
f16 (docs/QUANT.md). Used on the device (vLLM's reference and its online fp8) and here (the GPTQ checkpoint's input).

Two things differ from the GGUF's layout:
- llama.cpp's converter permutes attn_q / attn_k rows within each head so that ggml's "normal" rope rotates
  adjacent pairs (x[2i], x[2i+1]); Hugging Face's rope rotates the halves (x[i], x[i + d/2]). `unpermute` undoes
  convert_hf_to_gguf's `permute` (a row reorder within each head, exact);
- the names: llama.cpp's blk.N.attn_q ... back to model.layers.N.self_attn.q_proj ...
The safetensors format is written by hand (8-byte header length, a JSON header, the raw little-endian data): a
page of code instead of a dependency; `read_safetensors` reads it (and llm-compressor's output) back.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pytest_anatomy.measure import numpy_llama

_LAYER_NAMES = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}
_GLOBAL_NAMES = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                 "output.weight": "lm_head.weight"}
_DTYPES = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int32): "I32",
           np.dtype(np.int64): "I64", np.dtype(np.uint8): "U8"}
_FROM_CODE = {"F16": np.float16, "F32": np.float32, "I32": np.int32, "I64": np.int64, "U8": np.uint8,
              "BF16": np.uint16}


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Hugging Face q/k rows -> GGUF rows (convert_hf_to_gguf's permute): within each head, the two halves of the
    head dimension are interleaved so that adjacent rows pair up for ggml's rope."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """GGUF q/k rows -> Hugging Face rows: the inverse of `permute`."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_name(gguf_name: str) -> str:
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    parts = gguf_name.split(".")
    if len(parts) != 4 or parts[0] != "blk" or parts[2] not in _LAYER_NAMES:
        raise ValueError(f"{gguf_name}: not a llama-architecture tensor this export knows")
    return f"model.layers.{parts[1]}.{_LAYER_NAMES[parts[2]]}.{parts[3]}"


def hf_tensors(cfg: numpy_llama.LlamaConfig, weights: Mapping[str, np.ndarray]) -> Iterator[tuple[str, np.ndarray]]:
    """(Hugging Face name, f16 array) of every GGUF tensor, q/k un-permuted. The f16 cast is the reference's own
    (llama-quantize --outtype f16 and the CPU slice cast the dequantized Q4_1 weights the same way)."""
    for name, w in weights.items():
        if ".attn_q." in name:
            w = unpermute(w, cfg.n_head)
        elif ".attn_k." in name:
            w = unpermute(w, cfg.n_head_kv)
        yield hf_name(name), np.ascontiguousarray(w.astype(np.float16))


def hf_config(cfg: numpy_llama.LlamaConfig, reader: Any, *, tied: bool, vocab_size: int) -> dict[str, Any]:
    def field(key: str, default: Any = None) -> Any:
        f = reader.get_field(key)
        return default if f is None else f.contents()

    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float16",
        "hidden_size": cfg.n_embd, "intermediate_size": cfg.n_ff, "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_head, "num_key_value_heads": cfg.n_head_kv, "head_dim": cfg.head_dim,
        "rms_norm_eps": cfg.rms_eps, "rope_theta": cfg.rope_base, "hidden_act": "silu",
        "max_position_embeddings": int(field("llama.context_length", 2048)), "vocab_size": vocab_size,
        "tie_word_embeddings": tied, "attention_bias": False, "mlp_bias": False,
        "bos_token_id": field("tokenizer.ggml.bos_token_id"), "eos_token_id": field("tokenizer.ggml.eos_token_id"),
    }


def write_safetensors(path: Path, tensors: Mapping[str, np.ndarray]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, arr in tensors.items():
        header[name] = {"dtype": _DTYPES[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for arr in tensors.values():
            f.write(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        arr = np.frombuffer(data, dtype=_FROM_CODE[meta["dtype"]], count=(end - begin) // np.dtype(
            _FROM_CODE[meta["dtype"]]).itemsize, offset=8 + n + begin)
        out[name] = arr.reshape(meta["shape"])
    return out


def write_reference(gguf_path: Path, out_dir: Path) -> dict[str, Any]:
    """The GGUF's tensors dequantized (gguf-py), cast to f16 and written as a Hugging Face llama folder.
    Returns the config written."""
    cfg, weights, reader = numpy_llama.read_gguf(gguf_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    tensors = dict(hf_tensors(cfg, weights))
    vocab = int(weights["token_embd.weight"].shape[0])
    config = hf_config(cfg, reader, tied="output.weight" not in weights, vocab_size=vocab)
    (out_dir / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    write_safetensors(out_dir / "model.safetensors", tensors)
    return config


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="Write a llama GGUF as a Hugging Face f16 checkpoint folder.")
    p.add_argument("gguf", type=Path)
    p.add_argument("out_dir", type=Path)
    args = p.parse_args(argv)
    if not args.gguf.is_file():
        raise SystemExit(f"hf_checkpoint: {args.gguf} does not exist; run `python -m pytest_anatomy fetch-quant-data`")
    config = write_reference(args.gguf, args.out_dir)
    print(f"wrote {args.out_dir} ({config['num_hidden_layers']} layers, vocab {config['vocab_size']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
