"""Per-architecture throughput per SM per clock: what turns a detected card's SM count and
clock into peak FLOP/s when the card is not in the catalog (or the catalog is bypassed).

Dense (no sparsity) numbers, tensor-core rows with fp32 accumulate, per SM per clock, each from
the architecture's whitepaper and checked against one datasheet product of that architecture
(the check is the comment: SMs x clock x ops = the datasheet's TFLOP/s). GeForce cards of
Ampere/Ada/Blackwell run fp16/bf16 with fp32 accumulate at half the rate of the workstation and
data-centre parts of the same chip: `consumer_halves_tensor` says so, and NVML's name tells
which a card is ("GeForce" in its name).

NVIDIA quotes Hopper's tensor peaks at 1.83 GHz (989.4 TFLOP/s bf16 = 132 x 4096 x 1.83 GHz)
while NVML reports a 1.98 GHz maximum SM clock, so a Hopper spec derived from NVML states a
tensor peak 8% above the datasheet; the fp32 peak (67 TFLOP/s = 132 x 256 x 1.98 GHz) matches.
Predictions that use a peak are calibrated against a measured matmul ceiling in-session, so
this offset lands in the compute efficiency, and the report names the spec's source.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class Architecture:
    name: str
    fp32_cores_per_sm: int
    # dense FLOP (or int ops) per SM per clock, by dtype; fp32 = 2 x fp32 cores (FMA)
    ops_per_sm_per_clock: Mapping[str, int]
    source: str
    consumer_halves_tensor: bool = False

    def ops(self, dtype: str, consumer: bool) -> int | None:
        value = self.ops_per_sm_per_clock.get(dtype)
        if value is None:
            return None
        if consumer and self.consumer_halves_tensor and dtype in ("bf16", "fp16", "tf32", "fp8"):
            return value // 2
        return value


def _arch(name: str, cores: int, source: str, consumer_halves: bool = False, **ops: int) -> Architecture:
    return Architecture(name, cores, MappingProxyType({"fp32": 2 * cores, **ops}), source, consumer_halves)


_VOLTA = "NVIDIA Tesla V100 GPU Architecture whitepaper (V100 SXM2: 80 x 1.53 GHz x 1024 = 125 TFLOP/s fp16)"
_TURING = "NVIDIA Turing GPU Architecture whitepaper (T4: 40 x 1.59 GHz x 1024 = 65 TFLOP/s fp16)"
_AMPERE = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (A100: 108 x 1.41 GHz x 2048 = 312 TFLOP/s bf16)"
_GA10X = ("NVIDIA Ampere GA102 GPU Architecture whitepaper (A40: 84 x 1.74 GHz x 1024 = 149.7 TFLOP/s fp16 with "
          "fp32 accumulate; RTX 3090 at half that rate with fp32 accumulate)")
_ADA = ("NVIDIA Ada Lovelace GPU Architecture whitepaper v2.1 (L40S: 142 x 2.52 GHz x 1024 = 362 TFLOP/s bf16; "
        "RTX 4090: 128 x 2.52 GHz x 512 = 165.2 TFLOP/s)")
_HOPPER = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 132 x 1.83 GHz x 4096 = 989.4 TFLOP/s bf16)"
_BLACKWELL = "NVIDIA Blackwell Architecture technical brief (B200: 148 SMs, 2.25 PFLOP/s dense bf16 = 148 x 8192 x 1.86 GHz)"
_BLACKWELL_RTX = "NVIDIA RTX Blackwell GPU Architecture whitepaper (RTX 5090: 170 x 2.41 GHz x 512 = 209.5 TFLOP/s fp16, fp32 acc.)"

ARCHITECTURES: Mapping[tuple[int, int], Architecture] = MappingProxyType({
    (7, 0): _arch("volta", 64, _VOLTA, fp16=1024),
    (7, 5): _arch("turing", 64, _TURING, fp16=1024, int8=2048),
    (8, 0): _arch("ampere", 64, _AMPERE, tf32=1024, bf16=2048, fp16=2048, int8=4096),
    (8, 6): _arch("ampere-ga10x", 128, _GA10X, True, tf32=512, bf16=1024, fp16=1024, int8=2048),
    (8, 7): _arch("ampere-orin", 128, _GA10X, False, tf32=512, bf16=1024, fp16=1024, int8=2048),
    (8, 9): _arch("ada", 128, _ADA, True, tf32=512, bf16=1024, fp16=1024, fp8=2048, int8=2048),
    (9, 0): _arch("hopper", 128, _HOPPER, tf32=2048, bf16=4096, fp16=4096, fp8=8192, int8=8192),
    (10, 0): _arch("blackwell", 128, _BLACKWELL, tf32=4096, bf16=8192, fp16=8192, fp8=16384, int8=16384),
    (12, 0): _arch("blackwell-rtx", 128, _BLACKWELL_RTX, True, tf32=512, bf16=1024, fp16=1024, fp8=2048,
                   int8=2048),
})


def architecture(compute_capability: tuple[int, int] | None) -> Architecture | None:
    if compute_capability is None:
        return None
    return ARCHITECTURES.get((int(compute_capability[0]), int(compute_capability[1])))
