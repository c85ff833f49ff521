"""The split kernel as launched against its compile on this CPU machine (added 2026-12-07, after the H100's 12:56
session first recorded the launched kernel's registers and shared bytes in its config).

decode_split's sm_90 compile record (aot.py) holds 255 registers a thread and 22,528 B of shared memory: 2 programs an
SM. The launched kernel recorded 72 and 38,912 B: 5 an SM. The explanation tested here: at launch Triton specialises
every pointer and every integer argument that is a multiple of 16 (tt.divisibility=16), which aligns the K/V loads
into 16-byte vectors and lets the compiler pipeline them through shared memory; aot compiles without those
attributes. Compiled again here with them, at the recorded call's own argument values, decode_split must give exactly
the recorded registers and shared bytes, and without them the record's. Fresh process: this one may interpret.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from typing import Any

import aot_records
import flashattn_line_findings as lf
import pytest

from pytest_anatomy.theory import attention as at

# not imported here: a process that imported triton cannot interpret (flashattn_interp); the compile runs apart
TRITON = importlib.util.find_spec("triton") is not None

SCRIPT = r"""
import json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from pytest_anatomy.kernels.flashattn import aot, decode
args = json.loads(sys.argv[1])
fn = decode.decode_split
ce = {"D": args["D"], "BLOCK_H": args["BLOCK_H"], "BLOCK_N": args["BLOCK_N"]}
sig = aot._signature(fn, "bf16", ce, args["D"])
names = [p.name for p in fn.params]
out = {}
for label, divisible in (("specialised", set(args["divisible"])), ("plain", set())):
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if n in divisible}
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=ce, attrs=attrs),
                       target=GPUTarget("cuda", args["arch"], 32),
                       options={"num_warps": args["num_warps"], "num_stages": 2})
    out[label] = {"registers": aot.resource_usage(k.asm["cubin"]).get("registers"), "shared_bytes": k.metadata.shared}
print(json.dumps(out))
"""


def _divisible(rec: Any) -> list[str]:
    """The arguments Triton's launch marks divisible by 16 in the recorded call: the five pointers (torch's allocations
    are 256-byte aligned) and the integers that are multiples of 16 (q [B,H,1,D], k and v [B,H_kv,L,D] contiguous)."""
    s = rec.provenance["settings"]
    cfg = rec.provenance["config"]
    h, hkv, ctx, d = s["heads"], s["kv_heads"], s["context"], s["head_dim"]
    ints = {"sqb": h * d, "sqh": d, "skb": hkv * ctx * d, "skh": ctx * d, "skn": d, "svb": hkv * ctx * d,
            "svh": ctx * d, "svn": d, "H": h, "GROUP": h // hkv, "CTX": ctx, "SPLITS": cfg["splits"],
            "chunk": cfg["chunk"]}
    assert at.cdiv(ctx, cfg["chunk"]) == cfg["splits"]  # the recorded config is the launched grid
    return ["Q", "K", "V", "PO", "PL", *sorted(n for n, v in ints.items() if v % 16 == 0)]


@pytest.mark.skipif(not TRITON, reason="no triton here to compile with")
def test_the_launched_split_kernel_is_the_specialised_compile() -> None:
    rec = lf.latest_call(lf.SPLIT, 65536)
    cfg, cc = rec.provenance["config"], rec.provenance["gpu"]["compute_capability"]
    if "registers" not in cfg:
        pytest.skip(f"{rec.name} predates the recorded registers")
    args = {"D": rec.provenance["settings"]["head_dim"], "BLOCK_H": cfg["BLOCK_H"], "BLOCK_N": cfg["BLOCK_N"],
            "num_warps": cfg["num_warps"], "arch": cc[0] * 10 + cc[1], "divisible": _divisible(rec)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(args)], capture_output=True, text=True,
                          timeout=300, env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["specialised"] == {"registers": cfg["registers"], "shared_bytes": cfg["shared_bytes"]}
    assert got["plain"] != got["specialised"]  # the compile record's kind of compile is not what launches


def test_the_compile_records_aligned_split_kernel_is_the_launched_one() -> None:
    """The sm_90 compile record's decode_split, compiled with aot.aligned_args (every pointer and every integer outside
    aot.NOT_MULTIPLE_OF_16 marked, not the recorded call's own values), holds the launched kernel's registers and shared
    bytes, where its plain compile does not: the record's `aligned` facts stand for the launch (read, no compile)."""
    rec = lf.latest_call(lf.SPLIT, 65536)
    cfg = rec.provenance["config"]
    if "registers" not in cfg:
        pytest.skip(f"{rec.name} predates the recorded registers")
    doc = aot_records.load("sm90-compile-record.json")
    assert doc is not None
    (row,) = [r for r in doc["rows"] if r["kernel"] == "decode_split"]
    assert (row["constexprs"]["BLOCK_H"], row["constexprs"]["BLOCK_N"], row["num_warps"]) == (
        cfg["BLOCK_H"], cfg["BLOCK_N"], cfg["num_warps"])  # the record compiles the launch the recording made
    launched = {"registers": cfg["registers"], "shared_bytes": cfg["shared_bytes"]}
    assert {k: row["aligned"][k] for k in launched} == launched
    assert {k: row[k] for k in launched} != launched
