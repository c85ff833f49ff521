"""The tensors of a GGUF file: read from a file's header, or laid out from a config.json.

A GGUF header lists every tensor's name, ggml type and shape before any tensor data, so the
byte ledger of a model (theory/gguf_mix.py, theory/llamacpp_memory.py) needs the header alone.
Shapes are in ggml order: `ne[0]` is the row length (the input dimension of a matmul weight,
HF's last dimension), which is what block quantization and CUDA's row padding look at.

Reading a file uses gguf-py (PyPI `gguf`, maintained in llama.cpp's tree; the `llama` extra),
imported inside the function so nothing here costs an import at collection time.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_anatomy.specs.formats import GGML_TYPES, GgmlType
from pytest_anatomy.specs.model import ModelSpec

# The architectures whose llama.cpp tensor names tensors_from_config lays out (dense decoders).
LAYOUT_ARCHITECTURES = {"qwen2": "qwen2", "llama": "llama", "mistral": "llama", "qwen3": "qwen3"}


class GgufError(ValueError):
    """A GGUF file that cannot be read, or a model whose GGUF layout is not modelled."""


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of a GGUF file: `ne` in ggml order (ne[0] = row length)."""

    name: str
    ggml_type: str  # llama.cpp spelling: "Q4_K", "F16"
    ne: tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.ne)

    @property
    def n_dims(self) -> int:
        """ggml_n_dims: trailing dimensions of 1 do not count (a bias is 1-D)."""
        dims = len(self.ne)
        while dims > 1 and self.ne[dims - 1] == 1:
            dims -= 1
        return dims

    @property
    def layer(self) -> int | None:
        parts = self.name.split(".")
        return int(parts[1]) if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit() else None

    def type_info(self) -> GgmlType:
        if self.ggml_type not in GGML_TYPES:
            raise GgufError(f"{self.name}: ggml type {self.ggml_type} has no block size in "
                            f"pytest_anatomy/specs/formats.py GGML_TYPES; add it from ggml-common.h")
        return GGML_TYPES[self.ggml_type]

    @property
    def nbytes(self) -> int:
        """ggml_nbytes: rows x ggml_row_size(type, ne[0])."""
        rows = self.numel // self.ne[0]
        return rows * self.type_info().bytes_for(self.ne[0])

    def retyped(self, ggml_type: str) -> GgufTensor:
        return GgufTensor(self.name, ggml_type, self.ne)


@dataclass(frozen=True)
class GgufHeader:
    """What the ledger needs from a GGUF header: the architecture, the hyper-parameters the KV
    cache and the output buffer use, and every tensor."""

    source: str
    architecture: str
    file_type: int | None
    block_count: int
    embedding_length: int
    head_count: int
    head_count_kv: int
    key_length: int
    value_length: int
    vocab_size: int
    tensors: tuple[GgufTensor, ...]

    @property
    def tied_embeddings(self) -> bool:
        """llama.cpp ties the output to token_embd when the file has no output.weight."""
        return not any(t.name == "output.weight" for t in self.tensors)

    def tensor(self, name: str) -> GgufTensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise GgufError(f"{self.source}: no tensor {name!r}")


_SCALARS = ("architecture", "file_type", "block_count", "embedding_length", "head_count", "head_count_kv",
            "key_length", "value_length", "vocab_size")


def header_to_dict(h: GgufHeader) -> dict[str, object]:
    """A header as JSON-able data (a device batch records the header of every file it measured)."""
    return {"source": h.source, **{k: getattr(h, k) for k in _SCALARS},
            "tensors": [[t.name, t.ggml_type, *t.ne] for t in h.tensors]}


def header_from_dict(d: dict[str, Any], source: str | None = None) -> GgufHeader:
    try:
        tensors = tuple(GgufTensor(str(row[0]), str(row[1]), tuple(int(x) for x in row[2:]))
                        for row in d["tensors"])
        return GgufHeader(source=source or str(d.get("source", "recorded header")), tensors=tensors,
                          **{k: d[k] for k in _SCALARS})  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise GgufError(f"a recorded GGUF header lacks {exc} or has the wrong shape; it must hold "
                        f"{', '.join(_SCALARS)} and tensors as [name, type, ne...] rows") from None


def gguf_reader(path: str | Path) -> Any:
    """gguf-py's GGUFReader of `path` (read-only), parsing through a plain ndarray view of the mapped file: the same
    fields and tensors, ~3x faster. gguf-py slices its np.memmap once per value it reads, and every slice of a memmap
    is a memmap built in Python (__array_finalize__): SmolLM2's 49k-token vocabulary and 49k merges are ~250k of them,
    2.1 s of a 2.8 s parse; through the ndarray view, 0.7 s. The tensors' data stay views of the mapping."""
    return _plain_view_reader()(str(path), "r")


@functools.cache
def _plain_view_reader() -> type:
    import gguf
    import numpy as np

    class PlainViewReader(gguf.GGUFReader):  # type: ignore[misc]
        def _get(self, offset: int, dtype: Any, count: int = 1, override_order: Any = None) -> Any:
            # gguf-py 0.19.0's GGUFReader._get (pinned: the llama extra), on self.data viewed as an ndarray
            plain = self.__dict__.get("_plain")
            if plain is None:
                plain = self._plain = self.data.view(np.ndarray)
            count = int(count)
            end = offset + int(np.empty([], dtype=dtype).itemsize) * count
            arr = plain[offset:end].view(dtype=dtype)[:count]
            return arr.view(arr.dtype.newbyteorder(self.byte_order if override_order is None else override_order))

    return PlainViewReader


def read_gguf_header(path: str | Path) -> GgufHeader:
    """Parse a GGUF file's header with gguf-py (tensor data is memory-mapped, never read)."""
    p = Path(path)
    if not p.is_file():
        raise GgufError(f"{p}: no such GGUF file; pass the path of a .gguf model")
    try:
        import gguf  # noqa: F401 - optional (the llama extra): its absence is said here, before gguf_reader
    except ImportError:
        raise GgufError("reading a GGUF file needs gguf-py: pip install -e '.[llama]' (PyPI gguf)") from None
    try:
        reader = gguf_reader(p)
    except (ValueError, OSError) as exc:
        raise GgufError(f"{p}: not a readable GGUF file ({exc}); pass an unmodified .gguf") from None

    def field(key: str) -> object | None:
        f = reader.get_field(key)
        return None if f is None else f.contents()

    arch = str(field("general.architecture"))
    n_head = _int(field(f"{arch}.attention.head_count"), p, "head_count")
    n_embd = _int(field(f"{arch}.embedding_length"), p, "embedding_length")
    head_dim = n_embd // n_head
    tokens = field("tokenizer.ggml.tokens")
    vocab = field(f"{arch}.vocab_size") or (len(tokens) if isinstance(tokens, list) else None)
    tensors = tuple(
        GgufTensor(t.name, t.tensor_type.name, tuple(int(d) for d in t.shape)) for t in reader.tensors)
    return GgufHeader(
        source=str(p), architecture=arch, file_type=_opt_int(field("general.file_type")),
        block_count=_int(field(f"{arch}.block_count"), p, "block_count"), embedding_length=n_embd,
        head_count=n_head, head_count_kv=_opt_int(field(f"{arch}.attention.head_count_kv")) or n_head,
        key_length=_opt_int(field(f"{arch}.attention.key_length")) or head_dim,
        value_length=_opt_int(field(f"{arch}.attention.value_length")) or head_dim,
        vocab_size=_int(vocab, p, "vocab_size"), tensors=tensors)


def _opt_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _int(value: object, path: Path, key: str) -> int:
    if value is None:
        raise GgufError(f"{path}: the header has no {key}; the ledger needs it (is this a decoder LLM GGUF?)")
    return int(value)  # type: ignore[call-overload]


def tensors_from_config(model: ModelSpec, dtype: str = "F16", layers: int | None = None) -> tuple[GgufTensor, ...]:
    """The tensors llama.cpp's converter (convert_hf_to_gguf.py) writes for `model`, in its order:
    2-D weights in `dtype`, 1-D norms and biases in F32 (the converter keeps them F32 at any
    --outtype). `layers` overrides the layer count (make_random_gguf.py's --layers)."""
    arch = LAYOUT_ARCHITECTURES.get(model.model_type)
    if arch is None or model.is_moe or model.is_mla or model.norms_per_layer != 2:
        raise GgufError(f"{model.name}: the GGUF tensor layout is modelled for dense {', '.join(LAYOUT_ARCHITECTURES)} "
                        f"models only, not model_type {model.model_type!r}; read a real file's header instead")
    h, q, kv = model.hidden_size, model.num_attention_heads * model.head_dim, model.num_kv_heads * model.head_dim
    vkv = model.num_kv_heads * model.v_head_dim
    ff = model.intermediate_size

    def w(name: str, rows: int, cols: int) -> GgufTensor:
        return GgufTensor(name, dtype, (cols, rows))  # HF [out, in] -> ggml ne = (in, out)

    def v(name: str, n: int) -> GgufTensor:
        return GgufTensor(name, "F32", (n,))

    out = [w("token_embd.weight", model.vocab_size, h)]
    for i in range(layers or model.num_layers):
        p = f"blk.{i}."
        out += [v(p + "attn_norm.weight", h), w(p + "attn_q.weight", q, h), w(p + "attn_k.weight", kv, h),
                w(p + "attn_v.weight", vkv, h)]
        if model.qkv_bias:
            out += [v(p + "attn_q.bias", q), v(p + "attn_k.bias", kv), v(p + "attn_v.bias", vkv)]
        if model.qk_norm:
            out += [v(p + "attn_q_norm.weight", model.head_dim), v(p + "attn_k_norm.weight", model.head_dim)]
        out += [w(p + "attn_output.weight", h, model.num_attention_heads * model.v_head_dim),
                v(p + "ffn_norm.weight", h), w(p + "ffn_gate.weight", ff, h), w(p + "ffn_up.weight", ff, h),
                w(p + "ffn_down.weight", h, ff)]
    out.append(v("output_norm.weight", h))
    if not model.tie_word_embeddings:
        out.append(w("output.weight", model.vocab_size, h))
    return tuple(out)


def header_from_config(model: ModelSpec, dtype: str = "F16", layers: int | None = None) -> GgufHeader:
    """The header a converter (or make_random_gguf.py) writes for `model` in `dtype`."""
    tensors = tensors_from_config(model, dtype, layers)
    return GgufHeader(
        source=f"config:{model.name}", architecture=LAYOUT_ARCHITECTURES[model.model_type], file_type=None,
        block_count=layers or model.num_layers, embedding_length=model.hidden_size,
        head_count=model.num_attention_heads, head_count_kv=model.num_kv_heads, key_length=model.head_dim,
        value_length=model.v_head_dim, vocab_size=model.vocab_size, tensors=tensors)
