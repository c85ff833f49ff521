"""A Gluon rung's first GPU run, in a child process of the live session (flashattn_runner.preflight runs it).

A Gluon kernel places its own barriers: a wrong phase or arrival count hangs the GPU, a wrong shared-memory index
can fault it, and either would take the live session's CUDA context, and with it every later rung's measurement, down
with it. Triton's interpreter cannot run Gluon (registry.NOT_INTERPRETED), so this is the kernel's first run. Here,
every autotune config at a ragged N (2 query blocks and a partial tile) in bf16 at D=128, and the first config in fp16
at D=64 with GQA, both masks each, are poisoned, run once and checked against the fp32 reference (the runner's own
check_forward); the child prints one JSON line and exits 1 on the first wrong result (a hang is the parent's timeout).

    python -m pytest_anatomy.measure.flashattn_preflight RUNG_ID
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from typing import Any

# (dtype, batch, heads, kv_heads, n, head_dim, every config?)
SHAPES = (("bf16", 1, 4, 4, 300, 128, True), ("fp16", 2, 4, 1, 200, 64, False))


def _configs(mod: Any, every: bool) -> list[dict[str, Any]]:
    chosen = mod.CONFIGS if every else mod.CONFIGS[:1]
    return [{**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages, "maxnreg": c.maxnreg} for c in chosen]


def run(rung_id: str) -> list[dict[str, Any]]:
    import torch

    from pytest_anatomy.kernels.flashattn import launch, registry
    from pytest_anatomy.measure.flashattn_runner import check_forward

    r = registry.rung(rung_id)
    mod = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}")
    out = []
    for dtype, b, h, hkv, n, d, every in SHAPES:
        tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, x, n, d, generator=g, device="cuda").to(tdt) for x in (h, hkv, hkv))
        for cfg in _configs(mod, every):
            for causal in (False, True):
                o = torch.full_like(q, float("nan"))
                lse = torch.full((b, h, n), float("nan"), device="cuda")
                launch.forward(r, q, k, v, o, lse, causal=causal, sm_scale=1 / math.sqrt(d), config=cfg)
                torch.cuda.synchronize()
                check = check_forward(q, k, v, o, lse, causal=causal, sm_scale=1 / math.sqrt(d), dtype=dtype)
                out.append({"dtype": dtype, "shape": [b, h, hkv, n, d], "causal": causal, "config": cfg,
                            "status": check["status"], "o_max_abs_error": check["o_max_abs_error"],
                            "lse_max_abs_error": check["lse_max_abs_error"]})
                if check["status"] != "ok":
                    return out
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m pytest_anatomy.measure.flashattn_preflight RUNG_ID", file=sys.stderr)
        return 2
    rows = run(args[0])
    print(json.dumps(rows))
    return 0 if rows and all(row["status"] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
