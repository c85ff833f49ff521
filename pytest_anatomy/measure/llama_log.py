"""llama.cpp's load log -> numbers: the buffers it allocates and the context it built.

llama.cpp prints each buffer as `%8.2f MiB` (two decimals), so a parsed size is the logged MiB
figure; `MIB_HALF_STEP` is how far the true byte count can be from it. Lines parsed (llama.cpp
vendored in llama-cpp-python 0.3.36, ggml 0.25.3):

    load_tensors: offloaded 25/25 layers to GPU
    load_tensors:   CPU_Mapped model buffer size =   259.66 MiB
    llama_context:  CUDA_Host  output buffer size =     0.58 MiB
    llama_kv_cache:      CUDA0 KV buffer size =    48.00 MiB
    llama_kv_cache: size =   48.00 MiB (  4096 cells,  24 layers,  1/1 seqs), K (f16):   24.00 MiB, V (f16):   24.00 MiB
    sched_reserve:      CUDA0 compute buffer size =   298.50 MiB
    print_info: file size   = 373.71 MiB (6.35 BPW)
    llama_context: n_ctx                 = 4096

llama-server prints them from log verbosity 4 (`-lv 4`: the library's INFO lines are its "trace"
level; `-v` prints them too, with every debug line); llama-bench with `-v`; the Python binding with
verbose=True.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_anatomy.units import GiB, MiB

# A %.2f MiB figure is within half its last digit of the byte count, that half included: an exact tie
# (152,064 x 64 x 4 B = 37.125 MiB) prints rounded to even ("37.12"); 1 B more absorbs float arithmetic.
MIB_HALF_STEP = 0.005 * MiB + 1

_BUFFER = re.compile(r"(?P<dev>[A-Za-z0-9_]+)\s+(?P<kind>model|output|KV|compute) buffer size\s*=\s*"
                     r"(?P<mib>[0-9.]+) MiB")
_KV_SUMMARY = re.compile(r"llama_kv_cache: size =\s*(?P<mib>[0-9.]+) MiB \(\s*(?P<cells>\d+) cells,\s*(?P<layers>\d+) "
                         r"layers,\s*(?P<seqs>\d+)/(?P<seq_max>\d+) seqs\), K \((?P<tk>\w+)\):\s*(?P<k>[0-9.]+) MiB, "
                         r"V \((?P<tv>\w+)\):\s*(?P<v>[0-9.]+) MiB")
_OFFLOAD = re.compile(r"offloaded (?P<n>\d+)/(?P<of>\d+) layers to GPU")
_FILE_SIZE = re.compile(r"file size\s*=\s*(?P<size>[0-9.]+) (?P<unit>MiB|GiB) \((?P<bpw>[0-9.]+) BPW\)")
_CPARAM = re.compile(r"llama_context: (?P<key>n_seq_max|n_ctx|n_ctx_seq|n_batch|n_ubatch|flash_attn|kv_unified)"
                     r"\s*=\s*(?P<value>\S+)")


@dataclass
class LoadLog:
    """What a load log reported. Buffers are keyed (kind, device): ("model", "CUDA0") -> bytes."""

    buffers: dict[tuple[str, str], float] = field(default_factory=dict)
    kv: dict[str, object] = field(default_factory=dict)
    offloaded_layers: tuple[int, int] | None = None
    file_size_bytes: float | None = None
    file_bpw: float | None = None
    context: dict[str, str] = field(default_factory=dict)

    def buffer(self, kind: str, device: str) -> float:
        key = (kind, device)
        if key not in self.buffers:
            seen = ", ".join(f"{d} {k}" for k, d in sorted(self.buffers)) or "none"
            raise KeyError(f"the log has no {device} {kind} buffer line (it has: {seen}); llama.cpp prints "
                           "them at load from log verbosity 4 (llama-server -lv 4, llama-bench -v)")
        return self.buffers[key]


def parse_load_log(text: str) -> LoadLog:
    """Every buffer and context line of a llama.cpp log; a buffer logged twice keeps the last."""
    log = LoadLog()
    for line in text.splitlines():
        if m := _BUFFER.search(line):
            log.buffers[(m["kind"], m["dev"])] = float(m["mib"]) * MiB
        elif m := _KV_SUMMARY.search(line):
            log.kv = {"bytes": float(m["mib"]) * MiB, "cells": int(m["cells"]), "layers": int(m["layers"]),
                      "seqs": int(m["seqs"]), "seq_max": int(m["seq_max"]), "type_k": m["tk"], "type_v": m["tv"],
                      "k_bytes": float(m["k"]) * MiB, "v_bytes": float(m["v"]) * MiB}
        elif m := _OFFLOAD.search(line):
            log.offloaded_layers = (int(m["n"]), int(m["of"]))
        elif m := _FILE_SIZE.search(line):
            scale = MiB if m["unit"] == "MiB" else GiB
            log.file_size_bytes = float(m["size"]) * scale
            log.file_bpw = float(m["bpw"])
        elif m := _CPARAM.search(line):
            log.context[m["key"]] = m["value"]
    return log
