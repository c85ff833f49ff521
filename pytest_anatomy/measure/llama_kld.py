"""llama-perplexity's KL-divergence mode: the base model's logits saved once, each quantized file
compared with them (`--kl-divergence-base FILE` with `-f TEXT` writes; with `--kl-divergence` reads).

The statistics block llama-perplexity prints in that mode (perplexity.cpp, kl_divergence):
    Mean PPL(Q)                   :  24.123456 ±   0.123456
    Mean PPL(base)                :  23.987654 ±   0.123456
    Mean ln(PPL(Q)/PPL(base))     :   0.005648 ±   0.000321
    Mean    KLD:   0.004321 ±   0.000012
Each is parsed as (value, its standard error); a missing line is absent from the result rather than
guessed, and a run that printed none of them is an error naming its log tail.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from pytest_anatomy.measure.llama_cpp import LlamaRunError, binary, parse_perplexity

_NUM = r"(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)"
_STATS = {
    "ppl_quant": re.compile(r"Mean PPL\(Q\)\s*:\s*" + _NUM + r"\s*±\s*" + _NUM),
    "ppl_base": re.compile(r"Mean PPL\(base\)\s*:\s*" + _NUM + r"\s*±\s*" + _NUM),
    "delta_ln_ppl": re.compile(r"Mean ln\(PPL\(Q\)/PPL\(base\)\)\s*:\s*" + _NUM + r"\s*±\s*" + _NUM),
    "kld": re.compile(r"Mean\s+KLD:\s*" + _NUM + r"\s*±\s*" + _NUM),
}


def parse_kld(text: str) -> dict[str, dict[str, float]]:
    out = {}
    for name, pattern in _STATS.items():
        m = pattern.search(text)
        if m:
            out[name] = {"value": float(m[1]), "stderr": float(m[2])}
    if "kld" not in out:
        tail = "\n".join(text.splitlines()[-20:])
        raise LlamaRunError(f"llama-perplexity --kl-divergence printed no 'Mean KLD' line:\n{tail}")
    return out


def save_base(model: str | Path, text_file: str | Path, base: str | Path, *, n_ctx: int,
              timeout_s: float = 600) -> dict[str, Any]:
    """The reference's perplexity over the text, its logits written to `base` for the comparisons."""
    cmd = [str(binary("llama-perplexity")), "-m", str(model), "-f", str(text_file), "-c", str(n_ctx), "-ngl", "99",
           "--kl-divergence-base", str(base)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise LlamaRunError(f"llama-perplexity (base) exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return {**parse_perplexity(proc.stdout + proc.stderr), "command": cmd}


def compare(model: str | Path, base: str | Path, *, n_ctx: int, timeout_s: float = 600) -> dict[str, Any]:
    cmd = [str(binary("llama-perplexity")), "-m", str(model), "-c", str(n_ctx), "-ngl", "99",
           "--kl-divergence-base", str(base), "--kl-divergence"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise LlamaRunError(f"llama-perplexity --kl-divergence exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return {**parse_kld(proc.stdout + proc.stderr), "command": cmd}
