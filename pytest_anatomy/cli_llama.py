"""`pytest-anatomy predict capacity|latency --engine llama.cpp`: llama.cpp's answers from config.json.

capacity: the buffers llama.cpp would log at load with every layer on the GPU (theory/llamacpp_memory.py),
for the GGUF that llama-quantize makes of the model in --weights (theory/gguf_mix.py), or the header of
a real file (--gguf PATH): model buffer on the GPU and in host memory, KV, output and compute buffers,
and their GPU total (the CUDA context comes on top).

latency: batch-1 decode (`itl_ms`, `throughput_tok_s`) and one prompt's prefill (`prefill_ms`) from
theory/llamacpp_latency.py, with the newest recorded ceilings of --hardware (else its datasheet) and
the prior constants (kernel attainment, prefill efficiency, overhead per layer), which the notes name.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

LLAMA_ENGINE = "llama.cpp"


def add_arguments(p: argparse.ArgumentParser, *, latency: bool) -> None:
    """The llama.cpp flags both questions take (names as llama-server spells them)."""
    g = p.add_argument_group("llama.cpp (with --engine llama.cpp)")
    g.add_argument("--weights", default="Q4_K_M", help="llama-quantize file type: F16, BF16, Q8_0, Q4_K_M, Q5_K_M, "
                                                      "Q6_K, Q4_0 ... (Q4_K_M)")
    g.add_argument("--gguf", type=Path, default=None, help="a real .gguf file: its header instead of --weights")
    if not latency:
        g.add_argument("-c", "--ctx-size", type=int, default=4096, help="llama.cpp context, all slots (4096)")
        g.add_argument("-np", "--parallel", type=int, default=1, help="slots (sequences) (1)")
        g.add_argument("--kv-unified", action="store_true", help="one KV stream shared by every slot")
        g.add_argument("-ctk", "--cache-type-k", default="f16", help="K cache type: f16, q8_0, q4_0 ... (f16)")
        g.add_argument("-ctv", "--cache-type-v", default="f16", help="V cache type (f16); quantized needs -fa on")
        g.add_argument("-ub", "--ubatch-size", type=int, default=512, help="physical batch (512)")
        g.add_argument("-fa", "--flash-attn", choices=("on", "off"), default="on", help="flash attention (on)")


def _header(args: argparse.Namespace):
    from pytest_anatomy.specs.gguf_file import header_from_config, read_gguf_header
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import gguf_mix

    if args.gguf is not None:
        return read_gguf_header(args.gguf)
    f16 = header_from_config(load_model(args.model))
    return gguf_mix.quantized_header(f16, gguf_mix.normalize_file_type(args.weights))


def capacity_answers(args: argparse.Namespace) -> dict[str, Any]:
    from pytest_anatomy.theory import gguf_mix
    from pytest_anatomy.theory import llamacpp_memory as lm
    from pytest_anatomy.theory.planning import NotModeledQuantity

    header = _header(args)
    s = lm.ContextSettings(n_ctx=args.ctx_size, n_seq_max=args.parallel, kv_unified=args.kv_unified,
                           type_k=args.cache_type_k, type_v=args.cache_type_v, n_ubatch=args.ubatch_size,
                           flash_attn=args.flash_attn == "on")
    out: dict[str, Any] = {
        "gguf_tensor_bytes": gguf_mix.tensor_bytes(header.tensors, args.weights if args.gguf is None else header.source),
        "model_buffer_gpu_bytes": lm.model_buffer_gpu(header, s),
        "model_buffer_host_bytes": lm.model_buffer_host(header),
        "kv_buffer_bytes": lm.kv_buffer(header, s),
        "output_buffer_host_bytes": lm.output_buffer(header, s),
    }
    try:
        out["compute_buffer_gpu_bytes"] = lm.compute_buffer_gpu(header, s)
        out["gpu_buffers_bytes"] = lm.gpu_buffers_total(header, s)
    except lm.ComputeBufferNotModeled as exc:
        out["compute_buffer_gpu_bytes"] = NotModeledQuantity("B", str(exc))
        out["gpu_buffers_bytes"] = NotModeledQuantity("B", "needs the compute buffer: " + str(exc))
    return out


def latency_answers(args: argparse.Namespace) -> dict[str, Any]:
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.theory import llamacpp_latency as ll
    from pytest_anatomy.theory.prediction import Prediction

    header = _header(args)
    hw = get_hardware(args.hardware)
    read, matmul, source = _ceilings(hw, Path(args.results) if getattr(args, "results", None) else Path("results"))
    if args.bandwidth_gbs is not None:
        read, source = args.bandwidth_gbs * 1e9, "--bandwidth-gbs"
    if args.peak_tflops is not None:
        matmul = args.peak_tflops * 1e12
    quantized = any(ll.decode_kernel(t.ggml_type) == ll.QUANTIZED_DECODE_KERNEL for t in header.tensors)
    per_layer = ll.PRIOR_OVERHEAD_PER_LAYER_S["quantized" if quantized else "F16"]
    overhead = args.step_overhead_ms / 1e3 if args.step_overhead_ms is not None else per_layer * header.block_count
    calib = ll.LlamaCalibration(read, matmul, overhead, source=f"ceilings: {source}; kernel constants: priors")
    notes = (f"ceilings: {source}", "kernel attainment, prefill efficiency and the overhead per layer are priors "
             "(theory/llamacpp_latency.py), not yet fitted on a llama.cpp run of this card")
    itl = ll.decode_time(header, calib, context=args.input_len + args.output_len / 2)
    prefill = ll.prefill_time(header, calib, args.input_len)
    itl_ms = Prediction(itl.value * 1e3, "ms", itl.formula, itl.inputs, itl.terms, notes)
    return {"itl_ms": itl_ms,
            "prefill_ms": Prediction(prefill.value * 1e3, "ms", prefill.formula, prefill.inputs, prefill.terms, notes),
            "throughput_tok_s": Prediction(1 / itl.value, "tokens/s", "1 / itl at batch 1 (one slot decoding)",
                                           itl.inputs, notes=notes)}


def _ceilings(hw, results: Path) -> tuple[float, float, str]:
    """The newest recorded ceilings of this card, else its datasheet."""
    from pytest_anatomy import recordings

    try:
        rec = recordings.load_latest(results, hw.name, "ceilings", "ceilings")
        return (rec["read_bandwidth.value"].value, rec["matmul_bf16.value"].value,
                f"results/{hw.name}/ceilings recorded {rec.recorded_at}")
    except Exception:  # noqa: BLE001 - any missing or partial recording: the datasheet answers instead
        return hw.require("memory_bandwidth"), hw.peak("bf16"), f"{hw.name} datasheet (no recorded ceilings)"


def run(args: argparse.Namespace) -> int:
    from pytest_anatomy.cli_common import error as _error
    from pytest_anatomy.specs.gguf_file import GgufError
    from pytest_anatomy.specs.hardware import MissingHardwareFactError, UnknownHardwareError
    from pytest_anatomy.specs.model import ModelConfigError
    from pytest_anatomy.theory.planning import NotModeledQuantity, to_json
    from pytest_anatomy.units import format_quantity

    try:
        answers = latency_answers(args) if args.what == "latency" else capacity_answers(args)
    except (GgufError, ModelConfigError, UnknownHardwareError, MissingHardwareFactError, KeyError, ValueError,
            NotImplementedError) as exc:
        return _error(exc)
    if args.json:
        print(json.dumps(to_json(answers), indent=2))
        return 0
    print(f"{args.what} of {args.model} under llama.cpp ({args.gguf or args.weights})")
    for name, a in answers.items():
        if isinstance(a, NotModeledQuantity):
            print(f"  {name:26s} not modeled: {a.reason}")
        else:
            value = f"{a.value:.4g} ms" if a.unit == "ms" else format_quantity(a.value, a.unit)
            print(f"  {name:26s} {value:>16s}   = {a.formula}")
    return 0
