"""`pytest-anatomy predict capacity|latency --engine llama.cpp`: llama.cpp's answers from config.json.

capacity: the buffers llama.cpp would log at load with every layer on the GPU (theory/llamacpp_memory.py),
for the GGUF that llama-quantize makes of the model in --weights (theory/gguf_mix.py), or the header of
a real file (--gguf PATH): model buffer on the GPU and in host memory, KV, output and compute buffers (the
GPU's, and the host's: llama-server's graph inputs and embedding gather), and their GPU total (the CUDA context
comes on top).

latency: each slot's context (-c / -np, or all of -c with --kv-unified), batch-1 decode (`itl_ms`,
`throughput_tok_s`) and one prompt's prefill (`prefill_ms`) from theory/llamacpp_latency.py, and with -np N > 1
llama-server's burst of N requests (`server_itl_ms`, `server_ttft_median_ms`, `server_throughput_tok_s`). The
constants: where --results holds a session with the speed suite's fit runs for --hardware (the H200's llama visits),
the kernel constants fitted on them exactly as tests_llama/llama_speed.py fits them, that session's ceilings, the
tiny model's overhead and the server marginal fitted on a sweep of the same file; elsewhere the priors with the
card's newest recorded ceilings (else its datasheet). The output says which, and from which recordings.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

LLAMA_ENGINE = "llama.cpp"
SUITE = "llama"  # the recordings' suite (results/<hw>/llama/), as tests_llama reads them
SWEEP_FIT_LEVEL = 8  # the sweep level the server marginal is fitted at (tests_llama/test_llama_crossover.py FIT_LEVEL)
# tests_llama/llama_findings.py: above C = 8 the H200's measured step grew more slowly than the constant marginal
MARGINAL_FINDING = "h200-llama-server-marginal-shrinks-above-batch-8"
KQUANT_FINDING = "h200-llama-k-quant-mmvq-below-q8_0"
# src/llama-cparams.h: llama_context refuses more sequences ("n_seq_max must be <= 256"). With at most 256 slots every
# slot of a split cache keeps at least one padded stream of 256 cells, whatever -c is.
LLAMA_MAX_SEQ = 256


def add_arguments(p: argparse.ArgumentParser, *, latency: bool) -> None:
    """The llama.cpp flags both questions take (names as llama-server spells them)."""
    g = p.add_argument_group("llama.cpp (with --engine llama.cpp)")
    g.add_argument("--weights", default="Q4_K_M", help="llama-quantize file type: F16, BF16, Q8_0, Q4_K_M, Q5_K_M, "
                                                      "Q6_K, Q4_0 ... (Q4_K_M)")
    g.add_argument("--gguf", type=Path, default=None, help="a real .gguf file: its header instead of --weights")
    g.add_argument("-c", "--ctx-size", type=int, default=4096,
                   help="llama.cpp context, all slots (4096); each slot gets -c / -np cells unless --kv-unified")
    g.add_argument("-np", "--parallel", type=int, default=1,
                   help="slots (sequences) (1)" + ("; N > 1 also answers llama-server's burst of N requests"
                                                   if latency else ""))
    g.add_argument("--kv-unified", action="store_true", help="one KV stream shared by every slot")
    if not latency:
        g.add_argument("-ctk", "--cache-type-k", default="f16", help="K cache type: f16, q8_0, q4_0 ... (f16)")
        g.add_argument("-ctv", "--cache-type-v", default="f16", help="V cache type (f16); quantized needs -fa on")
        g.add_argument("-ub", "--ubatch-size", type=int, default=512, help="physical batch (512)")
        g.add_argument("-fa", "--flash-attn", choices=("on", "off"), default="on", help="flash attention (on)")


def _predicted_header(model: str, weights: str):
    """The header llama-quantize writes of `model` in `weights`: the converter's F16 layout, then the type's mix."""
    from pytest_anatomy.specs.gguf_file import header_from_config
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import gguf_mix

    return gguf_mix.quantized_header(header_from_config(load_model(model)), gguf_mix.normalize_file_type(weights))


def _header(args: argparse.Namespace):
    from pytest_anatomy.specs.gguf_file import read_gguf_header

    if args.gguf is not None:
        return read_gguf_header(args.gguf)
    return _predicted_header(args.model, args.weights)


def context_settings(args: argparse.Namespace):
    """-c, -np and the rest as llama.cpp's ContextSettings; a value llama.cpp cannot start with is one ValueError
    naming the flag and what to pass instead (both questions share it)."""
    from pytest_anatomy.theory import llamacpp_memory as lm

    if args.ctx_size < 1:
        raise ValueError(f"-c/--ctx-size {args.ctx_size}: n_ctx must be >= 1; pass the context in tokens, e.g. -c 8192")
    if not 1 <= args.parallel <= LLAMA_MAX_SEQ:
        raise ValueError(f"-np/--parallel {args.parallel}: n_seq_max must be >= 1 and <= {LLAMA_MAX_SEQ} (llama-server "
                         f"needs a slot; llama.cpp's LLAMA_MAX_SEQ caps them); pass -np 1 to {LLAMA_MAX_SEQ}")
    if getattr(args, "ubatch_size", 1) < 1:
        raise ValueError(f"-ub/--ubatch-size {args.ubatch_size}: n_ubatch must be >= 1; pass e.g. -ub 512")
    extra = {} if not hasattr(args, "cache_type_k") else dict(  # capacity's own flags; latency keeps the defaults
        type_k=args.cache_type_k, type_v=args.cache_type_v, n_ubatch=args.ubatch_size,
        flash_attn=args.flash_attn == "on")
    # llama-server reserves one output per slot (n_outputs_max = -np: tools/server/server-context.cpp load_model)
    return lm.ContextSettings(n_ctx=args.ctx_size, n_seq_max=args.parallel, kv_unified=args.kv_unified,
                              n_outputs_max=args.parallel, **extra)


def check_fits(args: argparse.Namespace, header: Any, settings: Any) -> None:
    """Every layer on the GPU (-ngl 99, as modelled): GPU buffers above the card's memory are refused with the
    largest -c that fits (the KV buffer grows with -c; the model and compute buffers do not)."""
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.theory import llamacpp_memory as lm
    from pytest_anatomy.units import GiB

    hw = get_hardware(args.hardware)
    card = hw.nvml_memory_bytes or hw.require("memory_bytes")

    def need(n_ctx: int) -> float:
        s = replace(settings, n_ctx=n_ctx)
        compute = lm.compute_buffer_gpu(header, s).value if s.flash_attn else 0.0  # -fa off: a lower bound
        return lm.model_buffer_gpu(header, s).value + lm.kv_buffer(header, s).value + compute

    total = need(settings.n_ctx)
    if total <= card:
        return
    lo, hi = 0, settings.n_ctx  # largest n_ctx with need(n_ctx) <= card, 0 if none
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(mid) <= card else (lo, mid - 1)
    fix = f"pass -c {lo} or less" if lo >= settings.n_seq_max else \
        "the weights alone do not fit: pass a smaller --weights (e.g. Q4_K_M) or a larger --hardware"
    raise ValueError(f"-c {settings.n_ctx} -np {settings.n_seq_max}: llama.cpp's GPU buffers need {total / GiB:,.2f} "
                     f"GiB, more than the {hw.name}'s {card / GiB:,.2f} GiB with every layer offloaded (as modelled; "
                     f"the CUDA context comes on top): {fix}")


def capacity_answers(args: argparse.Namespace) -> dict[str, Any]:
    from pytest_anatomy.theory import gguf_mix
    from pytest_anatomy.theory import llamacpp_memory as lm
    from pytest_anatomy.theory.planning import NotModeledQuantity

    s = context_settings(args)
    header = _header(args)
    check_fits(args, header, s)
    out: dict[str, Any] = {
        "gguf_tensor_bytes": gguf_mix.tensor_bytes(header.tensors,
                                                   args.weights if args.gguf is None else header.source),
        "model_buffer_gpu_bytes": lm.model_buffer_gpu(header, s),
        "model_buffer_host_bytes": lm.model_buffer_host(header),
        "kv_buffer_bytes": lm.kv_buffer(header, s),
        "output_buffer_host_bytes": lm.output_buffer(header, s),
        "compute_buffer_host_bytes": lm.compute_buffer_host(header, s),
    }
    try:
        out["compute_buffer_gpu_bytes"] = lm.compute_buffer_gpu(header, s)
        out["gpu_buffers_bytes"] = lm.gpu_buffers_total(header, s)
    except lm.ComputeBufferNotModeled as exc:
        out["compute_buffer_gpu_bytes"] = NotModeledQuantity("B", str(exc))
        out["gpu_buffers_bytes"] = NotModeledQuantity("B", "needs the compute buffer: " + str(exc))
    return out


def slot_context(args: argparse.Namespace, settings: Any):
    """The cells one slot may fill, as capacity's KV buffer lays them out; refuses a request that does not fit."""
    from pytest_anatomy.theory import llamacpp_memory as lm
    from pytest_anatomy.theory.prediction import Prediction

    per_stream, streams, total = lm.kv_cells(settings)
    need, n = args.input_len + args.output_len, settings.n_seq_max
    if settings.kv_unified:
        if total < n * need:
            raise ValueError(f"-c {settings.n_ctx} --kv-unified gives {total:,} cells to share among {n} slots; {n} "
                             f"requests of {args.input_len} + {args.output_len} tokens need {n * need:,}: pass "
                             f"-c {n * need} or more, or fewer -np")
        return Prediction(total, "tokens", "-c padded to 256, one stream every slot shares (--kv-unified)",
                          {"n_ctx": settings.n_ctx, "n_seq_max": settings.n_seq_max, "kv_unified": True})
    if per_stream < need:
        raise ValueError(f"-c {settings.n_ctx} -np {settings.n_seq_max} gives each slot {per_stream:,} KV cells "
                         f"(llama.cpp splits -c into -np streams); a request of {args.input_len} + {args.output_len} = "
                         f"{need:,} tokens does not fit: pass -c {settings.n_seq_max * need} or more (or --kv-unified)")
    return Prediction(per_stream, "tokens", "(-c padded to 256) / -np, padded to 256: each slot's own KV stream",
                      {"n_ctx": settings.n_ctx, "n_seq_max": n, "streams": streams, "kv_unified": False})


@dataclass(frozen=True)
class Constants:
    """What a latency answer is computed with, and where each part came from (printed with the answers)."""

    decode: Any  # LlamaCalibration: ceilings, attainments, overhead per decode token
    prompt_per_ubatch: Any  # LlamaCalibration: ceilings, efficiencies, overhead per n_ubatch graph run
    marginal_s: float  # server step's cost per extra busy slot above its KV read
    marginal_fitted: bool
    lines: tuple[str, ...]
    fitted: bool

    def prompt(self, n_tokens: int, n_ubatch: int) -> Any:
        from pytest_anatomy.theory import llamacpp_latency as ll

        return replace(self.prompt_per_ubatch,
                       overhead_s=ll.prompt_overhead_s(self.prompt_per_ubatch.overhead_s, n_tokens, n_ubatch))


def _completed(results: Path, hw: str, name: str, anchor: Any, suite: str = SUITE) -> Any:
    """The recording of `name` from `anchor`'s session, if the device plan completed it (not skipped, no error)."""
    from pytest_anatomy import recordings

    try:
        rec = recordings.load_beside(results, hw, suite, name, anchor)
    except recordings.MissingRecording:
        return None
    return rec if rec.provenance.get("status") in (None, "ok") else None


def _fit_runs(layers: int) -> set[str]:
    """The names of every bench the fits read: the 7B fit files and their tiny overhead models."""
    from pytest_anatomy.theory import llamacpp_latency as ll

    tiny = ll.overhead_model(ll.FIT_MODEL, layers) or ""
    return {f"{m}.{w.lower()}.bench" for _, w in (*ll.DECODE_FITS, *ll.PREFILL_FITS) for m in (ll.FIT_MODEL, tiny)}


def _fit_session(results: Path, hw: str) -> tuple[Any, Any] | None:
    """(anchor, ceilings): the newest session whose fit benches all completed, with its own ceilings."""
    from pytest_anatomy import recordings
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import llamacpp_latency as ll

    names = _fit_runs(load_model(ll.FIT_MODEL).num_layers)
    for path in reversed(recordings.candidates(results, hw, SUITE, f"{ll.FIT_MODEL}.f16.bench")):
        anchor = recordings.load_file(path)
        ceilings = _completed(results, hw, "ceilings", anchor, suite="ceilings")
        if ceilings is not None and all(_completed(results, hw, n, anchor) for n in names):
            return anchor, ceilings
    return None


def _tok_s(rec: Any, phase: str) -> float:
    """A bench's median tokens/s in the llama-bench test its phase is fitted on (tg128 or pp512)."""
    from pytest_anatomy.theory import llamacpp_latency as ll

    test = f"tg{ll.BENCH_N_GEN}" if phase == "decode" else f"pp{ll.BENCH_N_PROMPT}"
    return rec[f"{test}.tok_per_s.median"].value


def _tiny_overhead(results: Path, hw: str, anchor: Any, base: str, layers: int, weights: str, read: float,
                   matmul: float, phase: str) -> float | None:
    """The overhead the tiny model of `base` in `weights` measured in the session, None where it was not benched."""
    from pytest_anatomy.theory import llamacpp_latency as ll

    tiny = ll.overhead_model(base, layers)
    rec = _completed(results, hw, f"{tiny}.{weights.lower()}.bench", anchor) if tiny else None
    if rec is None:
        return None
    return ll.tiny_overhead_s(ll.tiny_overhead_header(base, layers, weights), _tok_s(rec, phase), read, matmul, phase)


def _fitted_constants(results: Path, hw: str, model: str, weights: str | None, header: Any) -> Constants | None:
    """The speed suite's calibration (tests_llama/llama_speed.py SessionCalibration) of the newest session that
    has the fit runs, for `model` in `weights`; None when --results has no such session for this card."""
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import llamacpp_latency as ll

    session = _fit_session(results, hw)
    if session is None:
        return None
    anchor, ceil = session
    read, matmul = ceil["read_bandwidth.value"].value, ceil["matmul_bf16.value"].value
    fit_layers = load_model(ll.FIT_MODEL).num_layers
    constants = {}
    for phase, fits in (("decode", ll.DECODE_FITS), ("prefill", ll.PREFILL_FITS)):
        runs = [(k, _predicted_header(ll.FIT_MODEL, w),
                 _tok_s(_completed(results, hw, f"{ll.FIT_MODEL}.{w.lower()}.bench", anchor), phase),
                 _tiny_overhead(results, hw, anchor, ll.FIT_MODEL, fit_layers, w, read, matmul, phase))
                for k, w in fits]
        constants[phase] = ll.fit_constants(phase, read, matmul, runs)  # type: ignore[arg-type]
    att, eff = constants["decode"][0], constants["prefill"][1]
    over_line, over_decode, over_prompt = _overheads(results, hw, anchor, load_model(model).name, weights, header,
                                                     read, matmul)
    decode = ll.LlamaCalibration(read, matmul, over_decode, att, eff, source=f"fitted, session {anchor.recorded_at}")
    listed = {name: ", ".join(f"{k} {v:.3f}" for k, v in sorted(c.items())) for name, c in (("att", att), ("eff", eff))}
    lines = (
        f"kernel constants: fitted on the {ll.FIT_MODEL} F16 and Q8_0 llama-bench runs of {hw} session "
        f"{anchor.recorded_at} (tests_llama/llama_speed.py, each after its "
        f"{ll.overhead_model(ll.FIT_MODEL, fit_layers)} overhead): decode attainment {listed['att']} of the read "
        f"ceiling (tg{ll.BENCH_N_GEN}); prefill efficiency {listed['eff']} of the matmul ceiling "
        f"(pp{ll.BENCH_N_PROMPT})",
        f"ceilings: that session's, results/{hw}/ceilings recorded {ceil.recorded_at}: read "
        f"{read / 1e12:.3f} TB/s, bf16 matmul {matmul / 1e12:.1f} TFLOP/s",
        over_line)
    marginal_s, fitted, line = (_sweep_marginal(results, hw, anchor, load_model(model).name, weights, header, decode)
                                or _prior_marginal())
    return Constants(decode, replace(decode, overhead_s=over_prompt), marginal_s, fitted, (*lines, line), fitted=True)


def _overheads(results: Path, hw: str, anchor: Any, name: str, weights: str | None, header: Any, read: float,
               matmul: float) -> tuple[str, float, float]:
    """(where from, per decode token, per prompt ubatch): the session's tiny model of this model and file type, else
    the prior per layer."""
    from pytest_anatomy.theory import llamacpp_latency as ll

    found = [_tiny_overhead(results, hw, anchor, name, header.block_count, weights, read, matmul, phase)
             if weights else None for phase in ("decode", "prefill")]
    decode, prompt = found
    if decode is None or prompt is None:
        prior = _prior_overhead_s(header)
        return (f"overhead: prior {prior * 1e3:.3f} ms per token and per ubatch of prompt (no tiny model of {name} in "
                f"{weights or 'this file type'} benched in that session: theory/llamacpp_latency.py "
                "PRIOR_OVERHEAD_PER_LAYER_S x layers)", prior, prior)
    tiny = ll.overhead_model(name, header.block_count)
    return (f"overhead: {tiny}.{(weights or '').lower()}.bench of that session, less its roofline: "
            f"{decode * 1e3:.3f} ms per decode token, {prompt * 1e3:.3f} ms per prompt ubatch (its "
            f"pp{ll.BENCH_N_PROMPT})", decode, prompt)


def _sweep_marginal(results: Path, hw: str, anchor: Any, model: str, weights: str | None, header: Any,
                    calib: Any) -> tuple[float, bool, str] | None:
    """The server marginal fitted on a sweep of this file from the fit session: its C = 1 and C = 8 median ITLs."""
    from pytest_anatomy import recordings
    from pytest_anatomy.theory import llamacpp_latency as ll

    prefix = f"{model}.{(weights or '').lower()}.server-sweep"
    for name in recordings.list_recordings(results, hw, SUITE, prefix) if weights else ():
        rec = _completed(results, hw, name, anchor)
        lv = SWEEP_FIT_LEVEL
        if rec is None or not {"c1.itl_s.median", f"c{lv}.itl_s.median"} <= set(rec.measurements):
            continue
        sweep = (rec.provenance.get("settings") or {}).get("sweep") or {}
        context = sweep["n_prompt"] + sweep["n_gen"] / 2
        m = ll.fit_server_marginal(header, calib, rec["c1.itl_s.median"].value, rec[f"c{lv}.itl_s.median"].value,
                                   lv, context)
        return m, True, (f"server marginal: {m * 1e3:.3f} ms per extra busy slot above its KV read, fitted on the "
                         f"C = 1 and C = {lv} median ITLs of {name} ({rec.recorded_at})")
    return None


def _prior_marginal() -> tuple[float, bool, str]:
    from pytest_anatomy.theory import llamacpp_latency as ll

    m = ll.SEED_MARGINAL_ABOVE_FLOOR_S
    return m, False, (f"server marginal: prior {m * 1e3:.3f} ms per extra busy slot above its KV read (the seed "
                      "RTX 4090's llama.cpp, kept whole: the host-bound branch of docs/LLAMA.md), unchecked here")


def _prior_overhead_s(header: Any) -> float:
    from pytest_anatomy.theory import llamacpp_latency as ll

    quantized = any(ll.decode_kernel(t.ggml_type) == ll.QUANTIZED_DECODE_KERNEL for t in header.tensors)
    return ll.PRIOR_OVERHEAD_PER_LAYER_S["quantized" if quantized else "F16"] * header.block_count


def _prior_constants(hw: Any, results: Path, header: Any) -> Constants:
    from pytest_anatomy.theory import llamacpp_latency as ll

    read, matmul, source = _ceilings(hw, results)
    overhead = _prior_overhead_s(header)
    calib = ll.LlamaCalibration(read, matmul, overhead, source=f"ceilings: {source}; kernel constants: priors")
    marginal, fitted, line = _prior_marginal()
    return Constants(calib, calib, marginal, fitted, (
        "kernel constants: prior (theory/llamacpp_latency.py PRIOR_ATTAINMENT / PRIOR_EFFICIENCY, written before any "
        f"llama.cpp run): decode attainment {ll.PRIOR_ATTAINMENT[ll.UNQUANTIZED_KERNEL]:.3f}, prefill efficiency "
        f"{ll.PRIOR_EFFICIENCY[ll.UNQUANTIZED_KERNEL]:.3f}; no session of {hw.name} in {results} has the "
        f"{ll.FIT_MODEL} fit runs they are fitted on",
        f"ceilings: {source}",
        f"overhead: prior {overhead * 1e3:.3f} ms per token and per ubatch of prompt (PRIOR_OVERHEAD_PER_LAYER_S x "
        "layers, from one H200 run)", line), fitted=False)


def _file_type(args: argparse.Namespace, header: Any) -> str | None:
    """The llama-quantize file type the answer is for (it names the overhead and sweep runs); None: the file's type
    is not one llama-quantize names."""
    from pytest_anatomy.theory import gguf_mix

    if args.gguf is None:
        return gguf_mix.normalize_file_type(args.weights)
    return next((name for name, (code, _) in gguf_mix.FILE_TYPES.items() if code == header.file_type), None)


def constants(args: argparse.Namespace, header: Any) -> Constants:
    """The fitted constants where --results has them for --hardware, else the priors; then the CLI overrides."""
    from pytest_anatomy.specs.hardware import get_hardware

    hw = get_hardware(args.hardware)
    results = Path(getattr(args, "results", None) or "results")
    c = _fitted_constants(results, hw.name, args.model, _file_type(args, header), header) \
        or _prior_constants(hw, results, header)
    over = {}
    if args.bandwidth_gbs is not None:
        over["read_bandwidth"] = args.bandwidth_gbs * 1e9
    if args.peak_tflops is not None:
        over["matmul_flops"] = args.peak_tflops * 1e12
    lines = c.lines + ((f"overridden on the command line: {', '.join(sorted(over))}",) if over else ())
    decode = replace(c.decode, **over)
    if args.step_overhead_ms is not None:  # the decode step's; a prompt keeps its own per-ubatch overhead
        decode = replace(decode, overhead_s=args.step_overhead_ms / 1e3)
        lines += ("decode overhead per token: --step-overhead-ms",)
    return replace(c, decode=decode, prompt_per_ubatch=replace(c.prompt_per_ubatch, **over), lines=lines)


def _ms(p: Any, notes: tuple[str, ...]) -> Any:
    return replace(p, value=p.value * 1e3, unit="ms", notes=notes)


def latency_answers(args: argparse.Namespace) -> dict[str, Any]:
    from pytest_anatomy.theory import llamacpp_latency as ll
    from pytest_anatomy.theory.prediction import Prediction

    settings = context_settings(args)
    slot = slot_context(args, settings)
    header = _header(args)
    check_fits(args, header, settings)
    c = constants(args, header)
    notes = c.lines + _finding_notes(c, header)
    itl = ll.decode_time(header, c.decode, context=args.input_len + args.output_len / 2)
    prompt = c.prompt(args.input_len, settings.n_ubatch)
    out = {"slot_context_tokens": replace(slot, notes=notes),
           "itl_ms": _ms(itl, notes),
           "prefill_ms": _ms(ll.prefill_time(header, prompt, args.input_len), notes),
           "throughput_tok_s": Prediction(1 / itl.value, "tokens/s", "1 / itl at batch 1 (one slot decoding)",
                                          itl.inputs, notes=notes)}
    if settings.n_seq_max > 1:
        out.update(_server_answers(args, header, c, prompt, settings.n_seq_max, notes))
    return out


def _server_answers(args: argparse.Namespace, header: Any, c: Constants, prompt: Any, n: int,
                    notes: tuple[str, ...]) -> dict[str, Any]:
    """llama-server's burst of N = -np requests (theory/llamacpp_latency.py server_burst), with its validity."""
    from pytest_anatomy.theory import llamacpp_latency as ll

    burst = ll.server_burst(header, c.decode, n, args.input_len, args.output_len, c.marginal_s, prompt_calib=prompt)
    tput = burst["throughput_tok_s"]
    if not c.marginal_fitted:
        valid = ("the server marginal is a prior (no sweep of this file in a fitted session): these three are the "
                 "prior's answer, unchecked")
    elif n <= SWEEP_FIT_LEVEL:
        valid = f"C = {n} lies within the sweep levels the marginal is fitted on (C = 1 and {SWEEP_FIT_LEVEL})"
    else:
        step1 = ll.decode_time(header, c.decode, context=args.input_len + args.output_len / 2).value
        prompts = n * ll.prefill_time(header, prompt, args.input_len).value
        ceiling = n * args.output_len / (prompts + args.output_len * step1)
        valid = (f"C = {n} is above the sweep level the marginal is fitted at (C = {SWEEP_FIT_LEVEL}); finding "
                 f"{MARGINAL_FINDING} (tests_llama/llama_findings.py): there the measured step grew more slowly than "
                 "the constant marginal, between the C = 1 step and this one, so server_itl_ms is an upper bound and "
                 f"server_throughput_tok_s a lower bound (at most {ceiling:,.1f} tokens/s, every step at the C = 1 "
                 "step)")
    server_notes = (*notes, valid)
    return {"server_itl_ms": _ms(burst["itl_s"], server_notes),
            "server_ttft_median_ms": _ms(burst["ttft_median_s"], server_notes),
            "server_throughput_tok_s": replace(tput, notes=server_notes)}


def _finding_notes(c: Constants, header: Any) -> tuple[str, ...]:
    """The speed findings a fitted answer carries: k-quant weights decode below the MMVQ constant fitted on Q8_0."""
    kquants = sorted({t.ggml_type for t in header.tensors if t.ggml_type.endswith("_K")})
    if not c.fitted or not kquants:
        return ()
    return (f"finding {KQUANT_FINDING} (tests_llama/llama_findings.py): {', '.join(kquants)} rows decode below the "
            "MMVQ constant fitted on Q8_0 (instruction-bound, not byte-bound): itl_ms is a lower bound and "
            "throughput_tok_s an upper bound, the byte-bound end of that finding's band",)


def _ceilings(hw: Any, results: Path) -> tuple[float, float, str]:
    """The newest recorded ceilings of this card, else its datasheet."""
    from pytest_anatomy import recordings

    try:
        rec = recordings.load_latest(results, hw.name, "ceilings", "ceilings")
        return (rec["read_bandwidth.value"].value, rec["matmul_bf16.value"].value,
                f"results/{hw.name}/ceilings recorded {rec.recorded_at}")
    except Exception:  # noqa: BLE001 - any missing or partial recording: the datasheet answers instead
        return hw.require("memory_bandwidth"), hw.peak("bf16"), f"{hw.name} datasheet (no recorded ceilings)"


def _title(args: argparse.Namespace) -> str:
    settings = f"-c {args.ctx_size} -np {args.parallel}" + (" --kv-unified" if args.kv_unified else "")
    lengths = f", {args.input_len} in / {args.output_len} out" if args.what == "latency" else ""
    return f"{args.what} of {args.model} under llama.cpp ({args.gguf or args.weights}{lengths}, {settings})"


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
    print(_title(args))
    for name, a in answers.items():
        if isinstance(a, NotModeledQuantity):
            print(f"  {name:26s} not modeled: {a.reason}")
        else:
            value = f"{a.value:.4g} ms" if a.unit == "ms" else format_quantity(a.value, a.unit)
            print(f"  {name:26s} {value:>16s}   = {a.formula}")
    notes = list(dict.fromkeys(n for a in answers.values() if not isinstance(a, NotModeledQuantity) for n in a.notes))
    for note in notes if args.what == "latency" else ():
        print(f"  - {note}")
    return 0
