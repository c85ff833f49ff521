"""docs/QUANT.md's tables of the second visit, rendered from the recordings and quant_mechanisms.json (not typed):
test_quant_docs.py checks that the page holds them verbatim; `python tests_quant/quant_tables.py` prints them."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import quant_mechanisms as qm
import quant_speed as qs

from pytest_anatomy import recordings

PREREG = json.loads((Path(__file__).parent / "preregistered.json").read_text())
Q = PREREG["quality"]


def _latest(results: Path, hardware: str, name: str) -> recordings.Recording:
    return recordings.load_latest(results, hardware, "quant", f"{qs.MODEL}.{name}")


def _ratio(r: float) -> str:
    return f"{r:.2f}" if r < 100 else f"{r:,.0f}"


def quality(results: Path, hardware: str) -> str:
    cpu = qm.load()
    lines = ["| type | S (device) | KLD measured | c x S (measured/predicted) | CPU slice through MMQ's arithmetic "
             "(measured/predicted) | delta ln ppl measured |", "| --- | --- | --- | --- | --- | --- |"]
    for ft in ("Q5_1", "Q4_1"):
        k, s = _latest(results, hardware, f"{ft.lower()}.kld"), _latest(results, hardware, f"{ft.lower()}.noise")
        kld, pred, mmq = k["kld"].value, Q["c"] * s["noise_S"].value, cpu[f"{ft}+asym"]["kld"]
        label = ft if ft != "Q4_1" else "Q4_1 (the trap: a probe of the kernel, not a result)"
        lines.append(f"| {label} | {s['noise_S'].value:.3g} | {kld:.4g} +- {k['kld_stderr'].value:.2g} | "
                     f"{pred:.3g} ({_ratio(kld / pred)}x) | {mmq:.4g} ({kld / mmq:.2f}x) | "
                     f"{k['delta_ln_ppl'].value:.4g} |")
    return "\n".join(lines)


def slices(results: Path, hardware: str) -> str:
    base = _latest(results, hardware, "f16.slice")["perplexity"].value
    lines = ["| type | numpy forward (pre-registered) | llama.cpp | gap (nat) |", "| --- | --- | --- | --- |",
             f"| F16 (perplexity) | {Q['cpu_slice']['ppl_ref']:.4g} | {base:.5g} | "
             f"{math.log(base / Q['cpu_slice']['ppl_ref']):+.4f} |"]
    for ft, numpy in Q["cpu_slice"]["delta_ln_ppl"].items():
        gpu = math.log(_latest(results, hardware, f"{ft.lower()}.slice")["perplexity"].value / base)
        lines.append(f"| {ft} | {numpy:.4f} | {gpu:.4f} | {gpu - numpy:+.4f} |")
    return "\n".join(lines)


def speed(results: Path, hardware: str) -> str:
    from pytest_anatomy.quant_prereg import FILE_TYPES
    from pytest_anatomy.specs.hardware import get_hardware

    rows = qs.rows(results, hardware, get_hardware(hardware), FILE_TYPES)
    tg = PREREG["speed"]["llama.cpp"][qs.MODEL]
    lines = ["| file | mostly | weights (MB) | tg128 tok/s | pre-registered | roofline attainment | tiny line "
             "(measured/predicted) | pp512 tok/s | tiny line (measured/predicted) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for ft, r in rows.items():
        lines.append(f"| {ft} | {qs.dominant_type(ft) if ft != 'F16' else 'F16'} | {r['weight_bytes'] / 1e6:.1f} | "
                     f"{r['decode_tok_s']:.1f} | {tg[ft]['tg128_tok_per_s']:.1f} "
                     f"({r['decode_tok_s'] / tg[ft]['tg128_tok_per_s']:.2f}x) | {r['attainment']:.1%} | "
                     f"{r['decode_vs_tiny']:.3f} | {r['prefill_tok_s']:,.0f} | {r['prefill_vs_tiny']:.3f} |")
    return "\n".join(lines)


# The capacity suite's bf16 engine start with the quant plan's ledger settings (u 0.9, max_model_len 8192, CUDA graphs)
BF16_SAME_SETTINGS = "vllm-ledger.qwen2.5-7b.u0.90.len8192.graphs"


def vllm(results: Path, hardware: str) -> str:
    lines = ["| case | quantity | pre-registered (bf16 rows: the bf16 engine, measured) | measured | difference |",
             "| --- | --- | --- | --- | --- |"]
    for case, row in PREREG["vllm"].items():
        if not recordings.candidates(results, hardware, "quant", f"vllm-ledger.qwen2.5-7b.{case}"):
            continue
        rec = recordings.load_latest(results, hardware, "quant", f"vllm-ledger.qwen2.5-7b.{case}")
        requested = rec["requested_memory_bytes"].value
        rest = rec["peak_activation_bytes"].value + rec["non_torch_increase_bytes"].value
        pairs = [(q, row[q], rec[q].value) for q in ("model_memory_bytes", "available_kv_bytes", "num_gpu_blocks")]
        pairs.append(("peak activation + non-torch", requested - row["model_memory_bytes"] - row["available_kv_bytes"],
                      rest))
        lines += [f"| {case} | {q} | {p:,.0f} | {m:,.0f} | {m - p:+,.0f} |" for q, p, m in pairs]
        bf16 = recordings.load_latest(results, hardware, "capacity", BF16_SAME_SETTINGS)
        for q in ("peak_activation_bytes", "non_torch_increase_bytes"):
            lines.append(f"| {case} | {q}, bf16 with the same settings | {bf16[q].value:,.0f} | {rec[q].value:,.0f} | "
                         f"{rec[q].value - bf16[q].value:+,.0f} |")
    return "\n".join(lines)


TABLES = {"quality": quality, "slices": slices, "speed": speed, "vllm": vllm}

if __name__ == "__main__":
    from pytest_anatomy.quant_prereg import CARD

    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "results"
    for name, render in TABLES.items():
        print(f"<!-- {name} -->\n{render(root, sys.argv[2] if len(sys.argv) > 2 else CARD)}\n")
