"""`predict capacity|latency --quantization METHOD`: the unquantized answers with the weights re-priced.

Capacity: vLLM's model_memory_bytes is the bf16 load replay (theory/vllm_load.py, exact on the H200)
less the linear modules' bf16 bytes plus the method's bytes (theory/quant_bytes.py); every byte
freed goes to the KV pool through the same ledger arithmetic (available -> blocks -> tokens ->
concurrency). Not re-derived per method, and said so in the notes: the caching allocator's rounding
of the new tensor sizes (< 1 MiB on a 7B), online fp8's transient bf16 copy during loading (freed
before the KV budget is taken), and any workspace a quantized kernel allocates during the profile run.

Latency: a decode step's weight stream shrinks to the method's bytes (the lm_head stays in the model
dtype); the step's other terms are unchanged. Prefill's compute: fp8 W8A8 runs on fp8 tensor cores
(the card's fp8 peak), the int4 weight-only methods dequantize to fp16 and run on the bf16 peak.
"""

from __future__ import annotations

from dataclasses import replace

from pytest_anatomy.specs.hardware import HardwareSpec, MissingHardwareFactError
from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.theory.quant_bytes import VLLM_METHODS, check_method, vllm_matmul_bytes_per_step, vllm_weight_bytes

# Which tensor cores a method's prefill GEMMs run on: fp8 activations x fp8 weights, or fp16 after dequantization.
GEMM_PEAK = {"fp8": "fp8", "awq": "bf16", "gptq": "bf16"}
_NOT_REPRICED = ("not re-derived for the method: the allocator's rounding of the new tensor sizes, online fp8's "
                 "transient bf16 copy while loading, workspaces of the quantized kernels in the profile run")


def weight_saving(model: ModelSpec, method: str, tp: int = 1) -> Prediction:
    """Bytes per rank the method frees against the unquantized load (positive: freed)."""
    check_method(method)
    before, after = vllm_weight_bytes(model, None, tp), vllm_weight_bytes(model, method, tp)
    return Prediction(before.value - after.value, "B", "unquantized parameter bytes - method's parameter bytes",
                      {"quantization": method, "tp": tp},
                      terms=(Term("unquantized", before.value, "B"), Term(f"- {method}", -after.value, "B")))


def requantize_capacity(answers: dict, model: ModelSpec, method: str, *, tp: int, block_size: int | None,
                        kv_cache_dtype: str, max_model_len: int) -> dict:
    """The capacity answers with the weights at `method`'s bytes and the pool grown by what they free."""
    block_size = block_size or cap.DEFAULT_BLOCK_SIZE
    saved = weight_saving(model, method, tp)
    note = f"--quantization {method}: weights re-priced by theory/quant_bytes.py; {_NOT_REPRICED}"
    out = dict(answers)
    out["weight_bytes"] = replace(vllm_weight_bytes(model, method, tp), notes=(note,))
    out["matmul_weight_bytes"] = vllm_matmul_bytes_per_step(model, method)
    mm = answers.get("model_memory_bytes")
    if not isinstance(mm, Prediction):
        return out  # the ledger is not modelled for this model: nothing to re-price
    out["model_memory_bytes"] = Prediction(
        mm.value - saved.value, "B", "unquantized load (replayed) - bytes the method frees", {"quantization": method},
        terms=(Term("unquantized load", mm.value, "B", mm.formula), Term("- freed by the method", -saved.value, "B")),
        notes=(note,))
    avail = answers["available_kv_bytes"]
    if avail.formula.startswith("given"):
        return out  # the engine's own pool (--available-kv-gib) was measured with the method: nothing to add
    out["available_kv_bytes"] = Prediction(
        avail.value + saved.value, "B", "unquantized available KV + bytes the method frees", {"quantization": method},
        terms=(Term("unquantized available", avail.value, "B"), Term("+ freed by the method", saved.value, "B")),
        notes=(note,))
    blocks = cap.vllm_num_gpu_blocks(model, out["available_kv_bytes"].value, block_size, kv_cache_dtype, tp)
    out["num_gpu_blocks"] = blocks
    out["kv_tokens"] = cap.vllm_kv_tokens(model, int(blocks.value), block_size)
    out["max_concurrency"] = cap.vllm_max_concurrency(int(blocks.value), max_model_len, block_size)
    return out


def known_methods() -> str:
    return ", ".join(VLLM_METHODS)


def peak_ratio(hardware: HardwareSpec, method: str) -> tuple[float, str]:
    """The method's GEMM peak over the bf16 peak the calibration measured, and why."""
    check_method(method)
    if GEMM_PEAK[method] == "bf16":
        return 1.0, f"{method}: int4 weights dequantized to fp16 in the kernel, GEMMs on the bf16/fp16 tensor cores"
    try:
        return hardware.peak("fp8") / hardware.peak("bf16"), "fp8 W8A8: activations quantized per token, GEMMs on fp8 tensor cores (datasheet fp8/bf16 ratio applied to the calibrated peak)"
    except (KeyError, ValueError, MissingHardwareFactError):
        return 1.0, f"{hardware.name} has no fp8 tensor cores: vLLM runs fp8 weight-only (Marlin W8A16) on the bf16 peak"


def step_time(model: ModelSpec, hardware: HardwareSpec, ceilings: lat.Ceilings, calib: lat.EngineCalibration,
              work: lat.StepWork, method: str) -> Prediction:
    """latency.step_time with the weight stream at the method's bytes and its GEMM peak:
    max((bytes - freed weight bytes) / BW, FLOPs / (eta x peak x ratio)) + t_overhead."""
    base = lat.step_bytes(model, work)
    freed = vllm_matmul_bytes_per_step(model, None).value - vllm_matmul_bytes_per_step(model, method).value
    ratio, why = peak_ratio(hardware, method)
    flops = lat.step_flops(model, work)
    memory_s = (base.value - freed) / ceilings.bandwidth
    eta = calib.eta_at(work.new_tokens)
    compute_s = flops.value / (eta * ceilings.peak * ratio)
    bound = "memory" if memory_s >= compute_s else "compute"
    return Prediction(
        max(memory_s, compute_s) + calib.step_overhead_s, "s",
        "max((bytes - weight bytes freed) / BW, FLOPs / (eta x peak x method's peak ratio)) + t_overhead",
        {"quantization": method, "new_tokens": work.new_tokens, "decode_tokens": work.decode_tokens,
         "calibration": calib.name},
        terms=(*base.terms, Term(f"- weight bytes freed by {method}", -freed, "B"), Term("bytes / BW", memory_s, "s"),
               *flops.terms, Term("FLOPs / (eta x peak x ratio)", compute_s, "s", f"eta = {eta:.3f}, ratio {ratio:.3g}"),
               Term("t_overhead", calib.step_overhead_s, "s", calib.name), *ceilings.terms()),
        notes=(f"{bound}-bound", why, "eta and t_overhead are the unquantized calibration's: the quantized kernels' "
               "own are measured by the GPU visit (tests_quant/preregistered.json)", calib.describe()))


def decode_step_time(model: ModelSpec, hardware: HardwareSpec, ceilings: lat.Ceilings,
                     calib: lat.EngineCalibration, batch: int, context: float, method: str) -> Prediction:
    return step_time(model, hardware, ceilings, calib, lat.decode_work(batch, context), method)


def prefill_time(model: ModelSpec, hardware: HardwareSpec, ceilings: lat.Ceilings, calib: lat.EngineCalibration,
                 tokens: int, max_num_batched_tokens: int | None, method: str) -> Prediction:
    steps = [step_time(model, hardware, ceilings, calib, w, method)
             for w in lat.prefill_work(tokens, max_num_batched_tokens)]
    return Prediction(sum(s.value for s in steps), "s", "sum over chunks of the quantized step time",
                      {"tokens": tokens, "chunks": len(steps), "quantization": method},
                      terms=tuple(Term(f"chunk {i + 1}", s.value, "s", s.notes[0]) for i, s in enumerate(steps[:8])),
                      notes=steps[0].notes[1:])


def batch_prefill_time(model: ModelSpec, hardware: HardwareSpec, ceilings: lat.Ceilings, calib: lat.EngineCalibration,
                       batch: int, tokens: int, max_num_batched_tokens: int | None, method: str,
                       first_step_prompts: int | None = None) -> Prediction:
    """`batch` prompts of `tokens` arriving together (latency.batch_prefill_work's steps), each step at the
    method's bytes and GEMM peak: the engine span from the first schedule to the last first token."""
    works = lat.batch_prefill_work(batch, tokens, max_num_batched_tokens, first_step_prompts)
    return lat.sum_of_steps([step_time(model, hardware, ceilings, calib, w, method) for w in works], works,
                            "sum over steps of the quantized step time",
                            {"batch": batch, "tokens": tokens, "max_num_batched_tokens": max_num_batched_tokens,
                             "quantization": method, "calibration": calib.name})
