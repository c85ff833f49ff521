"""Findings of the FlashAttention suite, per card measured (the numbers in a reason are that card's).

First H200 run: 2026-12-01 (results/h200/flashattn/*@20261201T0459*, live, NVML-derived spec).
Every rung landed inside its pre-registered band; the misses are the targets against torch's
backends, which the pre-registration itself expected (kernels/flashattn/registry.py: r6 falls short
"unless it lands at the top of its range"; it landed at 0.90-1.18 of its mid prediction), and
flash-decoding at 64k, which beat its pre-registered band. Bands: the first run's ratio +-10%.
"""

from __future__ import annotations

import pytest

MEASURED_ON = "h200"


def band(ratio: float, spread: float = 0.10) -> tuple[float, float]:
    return (round(ratio * (1 - spread), 3), round(ratio * (1 + spread), 3))


NO_WARP_SPECIALIZATION = (
    "r6 (TMA descriptors, 2-3 stage pipeline) runs at its pre-registered speed: 2.43 ms full / 1.27 ms causal at "
    "B=4 H=32 N=4096 D=128 bf16, {ratio_text}. torch's FLASH_ATTENTION backend (FA-2, no Hopper features) took "
    "3.29 / 1.83 ms and the default backend (cuDNN's Hopper kernel) 1.62 / 0.95 ms: r6 is 1.36x / 1.43x FLASH "
    "(target 1.5x) and 0.67x / 0.75x cuDNN (target 0.85x). What r6 lacks is what cuDNN's kernel has: warp-group "
    "specialisation (producer warps issuing TMA, consumer warpgroups issuing wgmma back to back, softmax of one tile "
    "overlapped with the MMAs of the next); Triton 3.6 offers warp_specialize on Blackwell only.")
TARGETS = {
    ("test_best_rung_at_least_1_5x_flash_attention_backend", "full"): 1.107,
    ("test_best_rung_at_least_1_5x_flash_attention_backend", "causal"): 1.046,
    ("test_best_rung_at_least_0_85x_default_sdpa", "full"): 1.278,
    ("test_best_rung_at_least_0_85x_default_sdpa", "causal"): 1.139,
}
DECODE_AT_THE_CEILING = (
    "At 64k tokens of context flash-decoding streams its 2.15 GB of K/V in 0.492 ms: 4.37 TB/s, 101% of the "
    "session's read ceiling (4.32 TB/s, one fp32 torch.sum over 2 GiB), above the 75-95% the pre-registration "
    "allowed. The ceiling is one kernel's, not the card's: 1,024 split-K blocks each streaming contiguous K/V "
    "keep more bytes in flight than torch's single reduction. At 8k (268 MB, 71 us) it reaches 88%: the split-K "
    "reduction and launch (~5 us) weigh 7% there.")
DECODE = {("test_flash_decoding_time_against_its_prediction", "fd.b8h32kv8l65536d128"): 0.835}


def target_marks(test: str, case: str) -> tuple[pytest.MarkDecorator, ...]:
    if (test, case) in TARGETS:
        ratio = TARGETS[(test, case)]
        text = "0.94 / 0.95 of its mid prediction"
        return (pytest.mark.finding("h200-fa2-without-warp-specialization", hardware=MEASURED_ON, expected=band(ratio),
                                    reason=NO_WARP_SPECIALIZATION.format(ratio_text=text)),)
    if (test, case) in DECODE:
        return (pytest.mark.finding("h200-flash-decoding-beats-the-read-ceiling", hardware=MEASURED_ON,
                                    expected=band(DECODE[(test, case)]), reason=DECODE_AT_THE_CEILING),)
    return ()
