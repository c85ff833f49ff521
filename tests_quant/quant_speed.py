"""What bounds llama.cpp's speed on SmolLM2-135M (test_quant_speed.py): the second visit's llama-bench of every file.

At 135M a decode step reads 86-269 MB of weights, 20-61 us at the H200's read ceiling, inside a step of ~1 ms: the
rest is the chain of kernels a token runs through. That chain is measured apart, by the llama suite: its tiny-hidden
models (hidden 256, the Qwen2.5 shapes' layer counts 24 and 28, benched with the same llama.cpp build on the same
card, tests_llama) take the same per-layer time whatever their width, so a line through their steps (less their own
small roofline) against the layer count, extrapolated to SmolLM2's 30 layers, is the overhead a 30-layer model pays.
Its two constants per weight family (intercept, per layer) are FITTED on those tiny benches only; SmolLM2's twelve
files are held out. Prefill (pp512) the same way, with the tiny models' pp512.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_anatomy import recordings
from pytest_anatomy.specs.gguf_file import GgufHeader, header_from_config
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import gguf_mix
from pytest_anatomy.theory import llamacpp_latency as ll

PREREG = json.loads((Path(__file__).parent / "preregistered.json").read_text())
FROZEN = PREREG["frozen"]
MODEL = "smollm2-135m"
N_GEN, N_PROMPT = 128, 512
# The llama suite's tiny-hidden overhead models (theory/llamacpp_latency.tiny_overhead_header, as tests_llama's
# header_for builds them): the Qwen2.5-0.5B config with the layer count in the name.
TINY_BASE = "qwen2.5-0.5b"
TINY_LAYERS = (24, 28)
# Hopper issues one warp instruction per clock from each of an SM's 4 schedulers.
SCHEDULERS_PER_SM = 4


def header(file_type: str) -> GgufHeader:
    return gguf_mix.quantized_header(header_from_config(load_model(MODEL)), file_type)


def tiny_header(layers: int, weights: str) -> GgufHeader:
    return ll.tiny_overhead_header(TINY_BASE, layers, weights)


def tiny_weights_for(file_type: str) -> str:
    """The tiny models were benched as F16, Q8_0 and Q4_K_M. Every quantized SmolLM2 file takes Q8_0's line: on this
    576-wide model even the k-quant mixes are mostly 32-block fallbacks (dominant_type), where the tiny Q4_K_M, 256
    wide, is real k-quants."""
    return "F16" if file_type == "F16" else "Q8_0"


def dominant_type(file_type: str) -> str:
    """The ggml type holding most of a file's decode bytes (Q4_K_M -> Q5_0 on SmolLM2, the fallback of Q4_K)."""
    by_type: dict[str, int] = {}
    for kernel in ll.weight_bytes_by_kernel(header(file_type)).values():
        for t, b in kernel.items():
            by_type[t] = by_type.get(t, 0) + b
    return max(by_type, key=lambda t: by_type[t])


def zero_overhead() -> ll.LlamaCalibration:
    return ll.LlamaCalibration(FROZEN["llama_read_bandwidth"], FROZEN["peak"], 0.0, source="preregistered.json frozen")


def body_s(h: GgufHeader, phase: str) -> float:
    """The bytes- and FLOP-bound part of a decode token or a 512-token prompt at the frozen ceilings and the priors."""
    if phase == "decode":
        return ll.decode_time(h, zero_overhead(), context=(N_GEN - 1) / 2).value
    return ll.prefill_time(h, zero_overhead(), N_PROMPT).value


def test_of(phase: str) -> str:
    return f"tg{N_GEN}" if phase == "decode" else f"pp{N_PROMPT}"


def seconds(tok_per_s: float, phase: str) -> float:
    return (1 if phase == "decode" else N_PROMPT) / tok_per_s


def rel_se(samples: tuple[float, ...] | list[float], median: float) -> float:
    """2 standard errors of a bench's median over the median, from a robust scatter (1.4826 x the median absolute
    deviation; the median's standard error is 1.2533 sigma / sqrt(n)): llama-bench's first repetition is often a
    cold one (pp512: 40% of the others), which the median ignores and a plain standard deviation would not."""
    s = [x for x in samples if x > 0]
    if len(s) < 2:
        return 0.0
    mad = statistics.median(abs(x - median) for x in s)
    return 2 * 1.2533 * 1.4826 * mad / math.sqrt(len(s)) / median


@dataclass(frozen=True)
class OverheadLine:
    """t_overhead(L) = c0 + per_layer x L, least squares through every tiny bench (both layer counts, every visit)."""

    weights: str
    phase: str
    points: tuple[tuple[int, float, str], ...]  # (layers, time less the tiny model's own body, recording stamp)
    c0: float
    per_layer: float
    sigma: float  # residual standard deviation (n - 2 degrees of freedom)
    cov: np.ndarray

    def at(self, layers: int) -> float:
        return self.c0 + self.per_layer * layers

    def se_at(self, layers: int) -> float:
        x = np.array([1.0, layers])
        return float(math.sqrt(self.sigma ** 2 * x @ self.cov @ x))


@functools.lru_cache(maxsize=None)
def overhead_line(results: Path, hardware: str, weights: str, phase: str) -> OverheadLine:
    """Fitted once per (card, family, phase) in a process: every SmolLM2 file of a family shares its line."""
    points = []
    for layers in TINY_LAYERS:
        body = body_s(tiny_header(layers, weights), phase)
        for path in recordings.candidates(results, hardware, "llama", f"tiny-{layers}l.{weights.lower()}.bench"):
            rec = recordings.load_file(path)
            t = seconds(rec[f"{test_of(phase)}.tok_per_s.median"].value, phase)
            points.append((layers, t - body, rec.recorded_at))
    if len({p[0] for p in points}) < 2 or len(points) < 3:
        raise LookupError(f"the tiny {weights} benches of {hardware} ({len(points)}) do not span two layer counts")
    a = np.array([[1.0, p[0]] for p in points])
    y = np.array([p[1] for p in points])
    (c0, per_layer), *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ np.array([c0, per_layer])
    sigma = float(math.sqrt(resid @ resid / (len(points) - 2))) if len(points) > 2 else 0.0
    return OverheadLine(weights, phase, tuple(points), float(c0), float(per_layer), sigma, np.linalg.inv(a.T @ a))


def weight_bytes(h: GgufHeader) -> int:
    return sum(b for by_type in ll.weight_bytes_by_kernel(h).values() for b in by_type.values())


def roofline_s(h: GgufHeader) -> float:
    """A decode token's weight bytes at the frozen read ceiling (attainment 1)."""
    return weight_bytes(h) / FROZEN["llama_read_bandwidth"]


def issue_break_even(step_s: float, h: GgufHeader, hw: Any) -> float:
    """Warp-wide instructions per 32-weight block at which issuing them alone would fill the step: every SM's
    schedulers busy for the whole step, over the quantized blocks a token reads. Above llama.cpp's tens of
    instructions per block (unpack, dp4a, scale) by orders of magnitude, the step is not issue-bound."""
    blocks = sum(t.numel for t in ll.gpu_tensors(h) if t.n_dims >= 2) / 32
    warp_instructions = step_s * hw.sm_count * SCHEDULERS_PER_SM * hw.boost_clock_hz
    return warp_instructions * 32 / blocks


def rows(results: Path, hardware: str, hw: Any, file_types: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Per file type, from its newest bench: decode step, bytes, roofline attainment, issue break-even, and measured /
    predicted of tg128 and pp512 against the tiny models' lines (what test_quant_speed reconciles; the findings and
    docs/QUANT.md quote these)."""
    out: dict[str, dict[str, float]] = {}
    for ft in file_types:
        rec = recordings.load_latest(results, hardware, "quant", f"{MODEL}.{ft.lower()}.bench")
        h = header(ft)
        row: dict[str, float] = {"weight_bytes": weight_bytes(h), "roofline_s": roofline_s(h)}
        for phase in ("decode", "prefill"):
            m = rec[f"{test_of(phase)}.tok_per_s"]
            line = overhead_line(results, hardware, tiny_weights_for(ft), phase)
            row[f"{phase}_s"] = seconds(m.value, phase)
            row[f"{phase}_tok_s"] = m.value
            row[f"{phase}_vs_tiny"] = (line.at(h.block_count) + body_s(h, phase)) / row[f"{phase}_s"]
        row["attainment"] = row["roofline_s"] / row["decode_s"]
        row["issue_break_even"] = issue_break_even(row["decode_s"], h, hw)
        out[ft] = row
    return out


# The second quant visit benched each 135M file once. A finding on those benches that no mechanism sizes is banded by
# that run (checked-run), pinned so that a later bench is judged against it rather than moving the band with it.
BENCHED_BY_RUN = "2026-12-02T14:33:07Z"


def newest_stamp(results: Path, hardware: str, file_type: str) -> str:
    """recorded_at of the file's newest 135M bench, the run the suite judges (quant_findings.judged_marks)."""
    return recordings.load_latest(results, hardware, "quant", f"{MODEL}.{file_type.lower()}.bench").recorded_at


def checked_run_band(results: Path, hardware: str, file_type: str, quantity: str, predicted: float,
                     rel: float) -> tuple[float, float]:
    """measured/predicted of the file's 135M bench `quantity` in BENCHED_BY_RUN, +- the check's tolerance `rel`."""
    rec = recordings.load_not_after(results, hardware, "quant", f"{MODEL}.{file_type.lower()}.bench", BENCHED_BY_RUN)
    ratio = rec[quantity].value / predicted
    return ratio * (1 - rel), ratio * (1 + rel)
