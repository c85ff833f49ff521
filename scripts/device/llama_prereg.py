"""The llama.cpp device plan's pre-registration: the visit's decode numbers, written before it (scripts/device/llama_plan.py runs it; kept apart from the plan for size)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


# --- pre-registration: the numbers this visit should measure, written before it -----------------------
# Priors: the newest H200 ceilings recording before the visit, theory/llamacpp_latency.py's PRIOR constants,
# and a per-layer overhead from the device README's one llama.cpp measurement (Qwen2.5-0.5B, -fa 1, tg128:
# F16 775.2, Q4_K_M 822.3 tok/s, minus their roofline at the priors), scaled by layers. The 0.5B F16 and
# Q4_K_M decodes are where that overhead came from, so they are not pre-registered.
PRIOR_CEILINGS = "results/h200/ceilings/ceilings@20261201T051555.000000Z.json"
README_TG128 = {"F16": 775.2, "Q4_K_M": 822.3}
PREREG_BAND = {"attainment": 0.15, "overhead": 0.30}  # the priors' relative uncertainty, summed per term


def preregister() -> dict[str, Any]:
    from dataclasses import replace

    from pytest_anatomy.specs.gguf_file import header_from_config
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import gguf_mix
    from pytest_anatomy.theory import llamacpp_latency as ll

    ceil = json.loads((REPO / PRIOR_CEILINGS).read_text())["measurements"]
    read, mm = ceil["read_bandwidth.value"]["value"], ceil["matmul_bf16.value"]["value"]

    def header(model: str, weights: str):
        return gguf_mix.quantized_header(header_from_config(load_model(model)), weights)

    zero = ll.LlamaCalibration(read, mm, 0.0, source="priors")
    per_layer = {w: (1 / v - ll.decode_time(header("qwen2.5-0.5b", w), zero, context=63.5).value) / 24
                 for w, v in README_TG128.items()}
    rows = []
    for model in ("qwen2.5-0.5b", "qwen2.5-7b"):
        for weights in ("F16", "Q8_0", "Q4_K_M"):
            if model == "qwen2.5-0.5b" and weights in README_TG128:
                continue
            h = header(model, weights)
            overhead = per_layer["F16" if weights == "F16" else "Q4_K_M"] * h.block_count
            t = ll.decode_time(h, replace(zero, overhead_s=overhead), context=63.5)
            bytes_s = t.value - overhead
            band = (PREREG_BAND["attainment"] * bytes_s + PREREG_BAND["overhead"] * overhead) / t.value
            rows.append({"run": f"{model}.{weights.lower()}.bench", "quantity": "tg128.tok_per_s.median",
                         "predicted": 1 / t.value, "ratio": [1 / (1 + band), 1 / (1 - band)],
                         "terms_s": {"bytes": bytes_s, "overhead": overhead}})
    return {"written_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "priors": {"ceilings": PRIOR_CEILINGS, "read_bandwidth": read, "attainment": dict(ll.PRIOR_ATTAINMENT),
                       "overhead_per_layer_s": per_layer, "overhead_source": "shared/device/llama/README.md tg128",
                       "band": PREREG_BAND},
            "predictions": rows}
