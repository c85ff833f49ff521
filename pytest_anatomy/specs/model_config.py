"""Reading a Hugging Face config.json into ModelSpec's fields: where it comes from (a path, a
directory, a dict, a catalog name or id), how big it may be, and every field the theory uses,
checked with a one-line ModelConfigError that names the field and the fix. Strict about the
fields it uses, silent about the many it does not (HF configs carry dozens of training-only keys).
specs/model.py builds the ModelSpec from what this returns."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pytest_anatomy import suggest
from pytest_anatomy.specs import catalog
from pytest_anatomy.specs.errors import ModelConfigError
from pytest_anatomy.units import MiB

AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
LayerKind = Literal["full", "sliding"]
ConfigSource = str | Path | Mapping[str, Any]

# torch dtype names as HF writes them in `torch_dtype` / `dtype`. Exact keys only.
DTYPE_BYTES: Mapping[str, int] = MappingProxyType({
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
})
SUPPORTED_LAYER_TYPES: Mapping[str, LayerKind] = MappingProxyType(
    {"full_attention": "full", "sliding_attention": "sliding"}
)
# HF hardcodes bias=True on q/k/v (never on o) for these; their configs carry no bias key.
_QKV_BIAS_MODEL_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
# Per-head RMSNorm on q and k inside attention (q_norm / k_norm tensors of size head_dim).
_QK_NORM_MODEL_TYPES = frozenset({"qwen3", "qwen3_moe", "gemma3", "gemma3_text"})
# Sandwich norms: 4 RMSNorms per layer instead of 2.
_FOUR_NORM_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text"})
# GemmaConfig defaults tie_word_embeddings=True; Llama/Qwen/Mistral/DeepSeek default False.
_TIED_BY_DEFAULT = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text"})
# Qwen configs default use_sliding_window=False and keep a (disabled) sliding_window value.
_SLIDING_OFF_BY_DEFAULT = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen3", "qwen3_moe"})
# Gemma-2 rule (HF Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2)): even layers slide.
_ALTERNATING_SLIDING_MODEL_TYPES = frozenset({"gemma2"})


# Size bounds. Each keeps a nonsense config from running for minutes or exhausting memory (the
# weight inventory lists every tensor of every layer and expert) while staying far above any
# published model.
MAX_CONFIG_BYTES = 16 * MiB  # real config.json files are 1-10 KiB
# Tensor dimensions are int32 in vLLM's and PyTorch's GPU kernels' indexing.
MAX_DIMENSION = 2**31 - 1
# The deepest published decoder has 126 layers (Llama-3.1-405B): 8x headroom.
MAX_LAYERS = 1024
# The most routed experts published is 384 (Kimi K2): 10x headroom.
MAX_EXPERTS = 4096
# Expert tensors are listed one by one: DeepSeek-V3 has 61 x 256 = 15,616 layer-experts, 4x headroom.
MAX_LAYER_EXPERTS = 65_536


@dataclass(frozen=True)
class LayerAttention:
    """One decoder layer's attention span: full causal, or a sliding window of `window` tokens."""

    kind: LayerKind
    window: int | None = None


# ---- loading ---------------------------------------------------------------------------------

def load_source(source: ConfigSource) -> tuple[Mapping[str, Any], str, str | None]:
    """-> (raw config, label for error messages, default model name)."""
    if isinstance(source, Mapping):
        return source, "config dict", None
    if not isinstance(source, (str, Path)):
        raise ModelConfigError("source", f"has type {type(source).__name__}",
                               "pass a path to config.json, its directory, a dict or a catalog name")
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise ModelConfigError("config.json", f"is missing from directory {source}",
                                   "point at the model directory that holds config.json", str(source))
    if path.is_file():
        # A directory's config.json is named after the directory (HF snapshot layout).
        default = path.parent.name if path.name == "config.json" else path.stem
        return _read_json(path), str(path), default
    canonical = catalog.resolve(str(source))  # raises with difflib suggestions
    entry = catalog.MODELS[canonical]
    return _read_json(entry.config_path), f"catalog:{canonical} ({entry.config_path.name})", canonical


def _read_json(path: Path) -> Mapping[str, Any]:
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ModelConfigError("config.json", f"is {size:,} bytes, above the {MAX_CONFIG_BYTES:,}-byte "
                                   "bound for a config (real ones are a few KiB)",
                                   "point at the model's config.json, not its weights or another file", str(path))
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ModelConfigError(
            "config.json", f"is not UTF-8 text (byte {err.start}: {err.reason})",
            "save it as UTF-8 JSON (the model's hub page serves it so); is this the right file?",
            str(path)) from None
    except OSError as err:
        raise ModelConfigError("config.json", f"cannot be read ({err.strerror or err})",
                               "check the path and its permissions", str(path)) from None
    except RecursionError:
        raise ModelConfigError("config.json", "is nested too deeply to be a model config",
                               "use the model's config.json", str(path)) from None
    except json.JSONDecodeError as err:
        raise ModelConfigError(
            "config.json", f"is not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}",
            f"repair line {err.lineno} of {path} (a copy from the model's hub page is valid JSON)",
            str(path)) from None
    if not isinstance(data, dict):
        raise ModelConfigError("config.json", f"holds a JSON {type(data).__name__}, not an object",
                               "use the model's config.json, a single {...} object", str(path))
    return data


class _Reader:
    """Typed access to config keys; every failure names the key and the fix."""

    def __init__(self, cfg: Mapping[str, Any], source: str) -> None:
        self.cfg, self.source = cfg, source

    def error(self, key: str, problem: str, fix: str) -> ModelConfigError:
        return ModelConfigError(key, problem, fix, self.source)

    def integer(self, key: str, default: Any = ..., minimum: int = 1, maximum: int = MAX_DIMENSION,
                why: str = "tensor dimensions are int32 in GPU kernels") -> Any:
        """An int in [minimum, maximum]. Absent or null -> default; no default -> a missing-field error."""
        value = self.cfg.get(key)
        if value is None:
            if default is ...:
                present = sorted(k for k in self.cfg if isinstance(k, str))
                near = suggest.close_matches(key, present, n=3, cutoff=0.75)
                hint = f" (the config has {', '.join(near)})" if near else ""
                raise self.error(key, f"is missing{hint}",
                                 f"add `\"{key}\": <int>` as in the model's Hugging Face config.json")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be an integer, got {value!r} ({type(value).__name__})",
                             f"write {key} as a JSON integer")
        if value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}", f"set {key} to a size >= {minimum}")
        if value > maximum:
            raise self.error(key, f"is {value:,}, above the bound of {maximum:,} ({why})",
                             f"use the model's real {key}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {value!r}", f"write {key} as a JSON boolean")
        return value


# ---- parsing -------------------------------------------------------------------------------

def parse_config(raw: Mapping[str, Any], source: str, name: str | None) -> dict[str, Any]:
    """The ModelSpec fields of a config.json, every used field checked (ModelConfigError: one line)."""
    cfg: Mapping[str, Any] = raw
    text = raw.get("text_config")
    if "hidden_size" not in raw and isinstance(text, Mapping):
        # Multimodal wrappers (Gemma 3, Qwen2.5-VL in newer transformers) nest the LM here.
        cfg = {**text, "architectures": raw.get("architectures", text.get("architectures"))}
    r = _Reader(cfg, source)
    hidden = r.integer("hidden_size")
    layers = r.integer("num_hidden_layers", maximum=MAX_LAYERS,
                       why="the deepest published decoder has 126 layers; every layer's tensors are listed")
    heads, vocab, inter = r.integer("num_attention_heads"), r.integer("vocab_size"), r.integer("intermediate_size")
    kv_heads = r.integer("num_key_value_heads", default=heads)  # absent: MHA
    if heads % kv_heads:
        raise r.error("num_key_value_heads", f"({kv_heads}) does not divide num_attention_heads ({heads})",
                      "use a KV head count that divides the query head count (GQA groups are equal)")
    model_type = str(cfg.get("model_type") or "")
    archs = cfg.get("architectures") or []
    architecture = str(archs[0]) if isinstance(archs, list) and archs else model_type

    mla = cfg.get("kv_lora_rank") is not None
    mla_fields: dict[str, int | None] = {}
    if mla:
        mla_fields = {"kv_lora_rank": r.integer("kv_lora_rank"), "q_lora_rank": r.integer("q_lora_rank", None),
                      "qk_rope_head_dim": r.integer("qk_rope_head_dim"),
                      "qk_nope_head_dim": r.integer("qk_nope_head_dim")}
        head_dim = mla_fields["qk_nope_head_dim"] + mla_fields["qk_rope_head_dim"]  # type: ignore[operator]
        v_head_dim = r.integer("v_head_dim")
    else:
        head_dim = r.integer("head_dim", None)  # explicit head_dim wins (Gemma: 256 != 3584/16)
        if head_dim is None:
            if hidden % heads:
                raise r.error("head_dim", f"is absent and hidden_size {hidden} is not divisible by "
                              f"num_attention_heads {heads}", "add the model's explicit head_dim")
            head_dim = hidden // heads
        v_head_dim = head_dim
    attention: AttentionKind = ("mla" if mla else "mha" if kv_heads == heads
                                else "mqa" if kv_heads == 1 else "gqa")

    _check_rope_scaling(r)
    attention_bias = r.flag("attention_bias", False)
    qkv_bias = True if model_type in _QKV_BIAS_MODEL_TYPES else attention_bias
    sliding_window, layer_attention = _parse_attention_layout(r, model_type, layers)
    return dict(
        name=name or str(raw.get("_name_or_path") or architecture or "unnamed"),
        architecture=architecture, model_type=model_type, hidden_size=hidden, num_layers=layers,
        num_attention_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=v_head_dim,
        intermediate_size=inter, vocab_size=vocab,
        tie_word_embeddings=r.flag("tie_word_embeddings", model_type in _TIED_BY_DEFAULT),
        qkv_bias=qkv_bias, o_bias=attention_bias and model_type not in _QKV_BIAS_MODEL_TYPES,
        mlp_bias=r.flag("mlp_bias", False), qk_norm=model_type in _QK_NORM_MODEL_TYPES,
        norms_per_layer=4 if model_type in _FOUR_NORM_MODEL_TYPES else 2,
        dtype=_parse_dtype(r), max_position_embeddings=r.integer("max_position_embeddings", None),
        attention=attention, sliding_window=sliding_window, layer_attention=layer_attention,
        **_parse_moe(r, layers, inter), **mla_fields,  # type: ignore[arg-type]
        raw=MappingProxyType(copy.deepcopy(dict(raw))),
    )


def _check_rope_scaling(r: _Reader) -> None:
    """rope_scaling / rope_parameters: null or an object whose type is a string and factor a number."""
    for key in ("rope_scaling", "rope_parameters"):
        value = r.cfg.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise r.error(key, f"must be an object or null, got {value!r} ({type(value).__name__})",
                          "write it as in the model's config.json, e.g. "
                          '{"rope_type": "llama3", "factor": 8.0, ...}, or null for plain RoPE')
        kind = value.get("rope_type", value.get("type"))
        if kind is not None and not isinstance(kind, str):
            raise r.error(key, f"has rope_type {kind!r}, not a string", 'name the type, e.g. "rope_type": "yarn"')
        factor = value.get("factor")
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                                   or not math.isfinite(factor) or factor <= 0):
            raise r.error(key, f"has factor {factor!r}, not a positive number", "give the scaling factor, e.g. 8.0")
    factor = r.cfg.get("partial_rotary_factor")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                               or not 0 < factor <= 1):
        raise r.error("partial_rotary_factor", f"must be a number in (0, 1], got {factor!r}",
                      "give the fraction of head_dim that is rotated (1.0 for full RoPE)")


def _parse_dtype(r: _Reader) -> str | None:
    key = "dtype" if r.cfg.get("dtype") is not None else "torch_dtype"  # newer transformers: "dtype"
    value = r.cfg.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or value not in DTYPE_BYTES:
        hint = suggest.did_you_mean(str(value), DTYPE_BYTES, n=2)
        hint = f"{hint} " if hint else ""
        raise r.error(key, f"is {value!r}, not a known torch dtype",
                      f"{hint}use one of {', '.join(DTYPE_BYTES)}")
    return str(value)


def _parse_attention_layout(r: _Reader, model_type: str, layers: int
                            ) -> tuple[int | None, tuple[LayerAttention, ...]]:
    enabled = r.flag("use_sliding_window", model_type not in _SLIDING_OFF_BY_DEFAULT)
    # Qwen2.5 ships sliding_window=131072 with use_sliding_window=false: that is *no* window.
    window = r.integer("sliding_window", None) if enabled else None
    layer_types = r.cfg.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            n = len(layer_types) if isinstance(layer_types, list) else type(layer_types).__name__
            raise r.error("layer_types", f"has {n} entries but num_hidden_layers is {layers}",
                          "give exactly one layer type per decoder layer")
        kinds: list[LayerKind] = []
        for i, lt in enumerate(layer_types):
            if not isinstance(lt, str) or lt not in SUPPORTED_LAYER_TYPES:
                raise r.error("layer_types", f"entry {i} is {lt!r}, which is not supported yet "
                              f"(hybrid linear-attention/Mamba layers have no KV model here)",
                              f"only {' and '.join(SUPPORTED_LAYER_TYPES)} layers are modelled")
            kinds.append(SUPPORTED_LAYER_TYPES[lt])
        if "sliding" in kinds and window is None:
            raise r.error("sliding_window", "is unset or disabled but layer_types has sliding_attention "
                          "layers", "set sliding_window (and use_sliding_window: true) to the window")
    elif window is None:
        kinds = ["full"] * layers
    elif model_type in _ALTERNATING_SLIDING_MODEL_TYPES:
        kinds = ["sliding" if i % 2 == 0 else "full" for i in range(layers)]
    elif r.cfg.get("sliding_window_pattern") is not None:  # Gemma 3: every pattern-th layer is global
        pattern = r.integer("sliding_window_pattern")
        kinds = ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(layers)]
    elif r.cfg.get("max_window_layers") is not None:  # Qwen: the first max_window_layers stay full
        first_sliding = r.integer("max_window_layers", minimum=0)
        kinds = ["sliding" if i >= first_sliding else "full" for i in range(layers)]
    else:  # Mistral-7B-v0.1 style: one window on every layer
        kinds = ["sliding"] * layers
    per_layer = tuple(LayerAttention(k, window if k == "sliding" else None) for k in kinds)
    return (window if "sliding" in kinds else None), per_layer


def _parse_moe(r: _Reader, layers: int, intermediate: int) -> dict[str, Any]:
    expert_key = next((k for k in ("num_local_experts", "num_experts", "n_routed_experts")
                       if r.cfg.get(k) is not None), None)
    num_experts = r.integer(expert_key, minimum=0, maximum=MAX_EXPERTS,
                            why="the most routed experts published is 384; every expert's tensors are listed"
                            ) if expert_key else 0
    if num_experts == 0:
        return {}
    if num_experts * layers > MAX_LAYER_EXPERTS:
        raise r.error(expert_key or "num_experts",
                      f"x num_hidden_layers is {num_experts * layers:,}, above the bound of {MAX_LAYER_EXPERTS:,} "
                      "(DeepSeek-V3 has 15,616; every expert's tensors are listed)",
                      "use the model's real expert and layer counts")
    k = r.integer("num_experts_per_tok")
    if k > num_experts:
        raise r.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({expert_key}={num_experts})",
                      f"route each token to at most {num_experts} experts")
    shared_size = r.integer("shared_expert_intermediate_size", None, minimum=0) or None
    mlp_only = r.cfg.get("mlp_only_layers") or []
    if not isinstance(mlp_only, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in mlp_only):
        raise r.error("mlp_only_layers", f"must list layer indices in [0, {layers}), got {mlp_only!r}",
                      "list the dense layers by index, or use []")
    return {
        "num_experts": num_experts, "experts_per_token": k,
        "moe_intermediate_size": r.integer("moe_intermediate_size", intermediate),
        # Qwen2-MoE has one shared expert sized by shared_expert_intermediate_size.
        "num_shared_experts": r.integer("n_shared_experts", 1 if shared_size else 0, minimum=0),
        "shared_expert_intermediate_size": shared_size,
        "first_k_dense_replace": r.integer("first_k_dense_replace", 0, minimum=0),
        "moe_layer_freq": r.integer("moe_layer_freq", 1),
        "decoder_sparse_step": r.integer("decoder_sparse_step", 1),
        "mlp_only_layers": tuple(sorted(set(mlp_only))),
    }
