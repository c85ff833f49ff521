"""tests_quant/preregistered.json: every prediction for the quantization suite's GPU visit, before it.

Computed from the theory and from constants frozen in the file itself (the H200 calibration of the
newest recorded session at writing time, the quality constant fitted on the CPU slice), so that
`tests_quant/test_quant_preregistered.py` can recompute the file from its own constants at any later
commit: a change of the theory shows as a difference, a new recording does not.

Sections:
  gguf       exact tensor bytes and BPW of each llama.cpp file type of SmolLM2-135M (the quality model)
             and Qwen2.5-7B (the speed model), from the f16 GGUF llama-quantize starts from
  vllm       Qwen2.5-7B on the H200: weight bytes, model memory, available KV, KV blocks per method,
             and with an fp8 KV cache
  speed      batch-1 decode per method (vLLM) and per file type (llama.cpp), from the frozen calibration
  quality    SmolLM2-135M vs its Q4_1-derived f16 reference: c (fitted on the CPU slice), S and the
             predicted KLD and delta ln ppl of every file type whose noise gguf-py computes today; the
             k-quant types' S is measured on the device from llama-quantize's own file (KLD = c x S)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_anatomy.specs.gguf_file import header_from_config
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import gguf_mix
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory import llamacpp_latency as ll
from pytest_anatomy.theory import quant_bytes as qb
from pytest_anatomy.theory import quant_planning as qp
from pytest_anatomy.theory.planning import capacity
from pytest_anatomy.theory.prediction import Prediction

SCHEMA = "pytest-anatomy/quant-preregistration/v1"
# The llama.cpp priors' uncertainty (tests_llama/preregistered.json's band): kernel attainment +-15% of the
# bytes term, the overhead per layer +-30% of its term.
LLAMA_BAND = {"attainment": 0.15, "overhead": 0.3}
QUALITY_MODEL, SPEED_MODEL, CARD = "smollm2-135m", "qwen2.5-7b", "h200"
# The vLLM engine starts of the visit: (label, --quantization, kv_cache_dtype).
VLLM_CASES = (("bf16", None, "auto"), ("fp8", "fp8", "auto"), ("awq", "awq", "auto"), ("gptq", "gptq", "auto"),
              ("bf16-kv-fp8", None, "fp8"), ("fp8-kv-fp8", "fp8", "fp8"))
LEDGER = dict(gpu_memory_utilization=0.9, max_model_len=8192, max_num_seqs=256)
DECODE_CONTEXT = 1024 + 128  # batch-1 decode of 256 tokens after a 1024-token prompt: mean context
# The shootout, the CPU slice's held-out legacy types and the Q4_1 trap: every file the visit writes.
FILE_TYPES = ("F16", *qb.GGUF_SHOOTOUT, "Q5_0", "Q5_1", "Q4_1")


def _round(x: float) -> float:
    return float(f"{x:.12g}")  # JSON-stable: the same number whichever float path produced it


def gguf_section() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in (QUALITY_MODEL, SPEED_MODEL):
        f16 = header_from_config(load_model(name))
        out[name] = {ft: {k: _round(p.value) for k, p in qb.gguf_file(f16, ft).items()} for ft in FILE_TYPES}
    return out


def vllm_section() -> dict[str, Any]:
    model, hw = load_model(SPEED_MODEL), get_hardware(CARD)
    out: dict[str, Any] = {}
    for label, method, kv in VLLM_CASES:
        answers = capacity(model, hw, kv_cache_dtype=kv, **LEDGER)  # type: ignore[arg-type]
        if method:
            answers = qp.requantize_capacity(answers, model, method, tp=1, block_size=None, kv_cache_dtype=kv,
                                             max_model_len=LEDGER["max_model_len"])  # type: ignore[arg-type]
        values = {}
        for k in ("weight_bytes", "model_memory_bytes", "available_kv_bytes", "num_gpu_blocks"):
            a = answers[k]
            assert isinstance(a, Prediction), (k, a)  # dense qwen2: every ledger term is modelled
            values[k] = _round(a.value)
        rounding = next(t.value for t in _unquantized_memory(model, hw, kv).terms if "allocator" in t.name)
        out[label] = {"quantization": method, "kv_cache_dtype": kv, **values, "allocator_rounding_bytes": rounding}
    return out


def _unquantized_memory(model: Any, hw: Any, kv: str) -> Prediction:
    """The bf16 load's replayed model memory: its allocator-rounding term is the size of what the quantized
    prediction does not re-derive (the rounding of the new tensor sizes), hence the band it is checked in."""
    answer = capacity(model, hw, kv_cache_dtype=kv, **LEDGER)["model_memory_bytes"]  # type: ignore[arg-type]
    assert isinstance(answer, Prediction)
    return answer


def speed_section(frozen: Mapping[str, float]) -> dict[str, Any]:
    """vLLM b=1 decode per method and llama.cpp tg128 per file type, from the frozen constants."""
    model, hw = load_model(SPEED_MODEL), get_hardware(CARD)
    ceilings = lat.Ceilings(CARD, frozen["bandwidth"], frozen["peak"], "frozen in preregistered.json",
                            "frozen in preregistered.json")
    calib = lat.EngineCalibration("frozen in preregistered.json", frozen["step_overhead_s"],
                                  frozen["compute_efficiency"])
    vllm = {}
    for label, method, _kv in VLLM_CASES[:4]:
        step = (lat.decode_step_time(model, ceilings, calib, 1, DECODE_CONTEXT) if method is None
                else qp.decode_step_time(model, hw, ceilings, calib, 1, DECODE_CONTEXT, method))
        pre = (lat.prefill_time(model, ceilings, calib, 8192, 8192) if method is None
               else qp.prefill_time(model, hw, ceilings, calib, 8192, 8192, method))
        vllm[label] = {"itl_s": _round(step.value), "prefill_8192_s": _round(pre.value)}
    llama: dict[str, Any] = {}
    for name in (SPEED_MODEL, QUALITY_MODEL):
        f16 = header_from_config(load_model(name))
        llama[name] = {}
        for ft in FILE_TYPES:
            header = f16 if ft == "F16" else _retyped(f16, ft)
            per_layer = ll.PRIOR_OVERHEAD_PER_LAYER_S["F16" if ft == "F16" else "quantized"]
            cal = ll.LlamaCalibration(frozen["llama_read_bandwidth"], frozen["peak"], per_layer * header.block_count)
            tg = ll.decode_tokens_per_s(header, cal)
            overhead = next(t.value for t in tg.terms if t.name.startswith("overhead"))
            weights = sum(b for by_type in ll.weight_bytes_by_kernel(header).values() for b in by_type.values())
            llama[name][ft] = {"tg128_tok_per_s": _round(tg.value), "overhead_s": _round(overhead),
                               "bytes_s": _round(1 / tg.value - overhead), "weight_bytes_per_token": weights}
    return {"vllm": vllm, "llama.cpp": llama}


def _retyped(header: Any, file_type: str) -> Any:
    from dataclasses import replace

    return replace(header, tensors=gguf_mix.quantized_types(header, file_type))


def quality_section(c: float, fit_on: Mapping[str, tuple[float, float]], noise: Mapping[str, float],
                    held_out: tuple[str, ...], cpu_slice: Mapping[str, Any]) -> dict[str, Any]:
    """c and its fit points, and per file type with a computed S: S, KLD = c x S, delta ln ppl = KLD. And the
    CPU slice's own measurements (reference perplexity, delta ln ppl per type), which the visit's llama.cpp
    replays on the same tokens: a second implementation of the same forward."""
    return {"cpu_slice": {k: (_round(v) if isinstance(v, float) else {f: _round(x) for f, x in v.items()})
                          for k, v in cpu_slice.items()},
            "c": _round(c), "fit_on": {k: [_round(s), _round(k_)] for k, (s, k_) in sorted(fit_on.items())},
            "held_out_on_cpu": list(held_out),
            "types": {ft: {"S": _round(s), "kld": _round(c * s), "delta_ln_ppl": _round(c * s)}
                      for ft, s in sorted(noise.items())},
            "k_quant_rule": "KLD = c x S with S measured on the device: each tensor of llama-quantize's file "
                            "dequantized by gguf-py against the f16 reference (no numpy k-quant quantizer)"}


def build(frozen: Mapping[str, float], quality: Mapping[str, Any], written_utc: str, commit: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "written_utc": written_utc, "theory_commit": commit, "frozen": dict(frozen),
            "ledger_settings": dict(LEDGER), "decode_context": DECODE_CONTEXT, "gguf": gguf_section(),
            "vllm": vllm_section(), "speed": speed_section(frozen), "quality": dict(quality)}
