"""Divergences recorded on one physical card: checks that missed their clean bands on a card and that no mechanism
measured here explains. Keyed by the card's NVML UUID (the recordings' provenance.gpu.uuid), so a replay of that
card's sessions and a live session on the same card carry them, and every other card is held to the clean bands."""

from __future__ import annotations

from typing import Any

import pytest
from latency_findings_common import MEASURED_ON

CARD_FINDING_ID = "h200-card-decode-residuals"
TENTH_VISIT_CARD = "GPU-4606b8e1-2c88-d014-ac77-9f50f8df958b"
# (test, model, quantity) -> measured / predicted on that card, each of its sessions (full 2026-12-02 16:29, NVML fast
# 16:37); test_card_ratios_are_the_recorded_ones recomputes them. The band is that span +- NOISE: a repeat on the card.
CARD_RATIOS: dict[str, dict[tuple[str, str, str], tuple[float, ...]]] = {TENTH_VISIT_CARD: {
    ("test_decode_roofline_without_overhead", "qwen2.5-7b", "decode_step_roofline"): (1.4263, 1.4183),
    ("test_overload_queueing_share_of_ttft", "qwen2.5-7b", "prefill_part_of_ttft_heavily_oversubscribed"): (2.1295,),
    **{("test_decode_overhead_transfers_to_a_second_model", f"llama-3.1-8b.b{b}", "decode_step_other_model"): (r,)
       for b, r in ((1, 1.0545), (2, 1.0476), (4, 1.0608), (8, 1.0603), (16, 1.0731), (32, 1.0917))}}}
# The card's repeat: the b=1 Qwen step in its two sessions differs by 0.6% (4.632 / 4.605 ms), its read ceiling by
# 0.03%; 2% covers that twice over plus a run's own repeat scatter (0.4-0.6% for these decode steps).
NOISE = 0.02
CARD_REASON = (
    "Recorded on one card (NVML UUID {uuid}, the tenth H200 visit, 2026-12-02 16:29 and 16:37), not explained. On it "
    "Qwen2.5-7B's b=1 decode step ran fastest of the ten cards recorded (4.632 / 4.605 ms; the others 4.666-4.787) "
    "while the read-bandwidth probe read 4.374 TB/s, low among them (4.386-4.469), so the fitted step overhead is 1.384 ms "
    "against 1.485-1.551 ms on the other cards and the bare roofline ratio 1.42-1.43 against 1.466-1.479; "
    "Llama-3.1-8B's steps on the same card ran slow instead (b=1 5.113 ms against 4.815-4.926 ms), 0.23-0.31 ms "
    "over the transferred prediction at b = 1-8 (an offset nearly constant in batch, so not the KV term), where "
    "the other cards' Llama steps sit 0-3% under it. Not the clock (NVML mean SM 1,877-1,980 MHz in these runs, no "
    "thermal bit), not the host (CPU busy < 0.07). Candidates, untested: bandwidth that differs by address on this "
    "card's HBM (the probe's 4 GiB buffer, Qwen's and Llama's weights land in different places), or a model-specific "
    "GEMV kernel choice. The other cards keep the clean band; this card's band is its own ratio span +- {noise:.0%} "
    "(its two sessions' repeat), so a live run on the same card tests whether it repeats.")


def card_mark(rec: Any, test: str, model: str, quantity: str) -> pytest.MarkDecorator | None:
    """The card finding for `quantity` of `test` on the card that measured `rec`, or None."""
    gpu = rec.provenance.get("gpu")
    uuid = gpu.get("uuid") if isinstance(gpu, dict) else None
    ratios = CARD_RATIOS.get(uuid or "", {}).get((test, model, quantity))
    if ratios is None:
        return None
    return pytest.mark.finding(CARD_FINDING_ID, hardware=MEASURED_ON, quantity=quantity, strict=False,
                               expected=(round(min(ratios) * (1 - NOISE), 4), round(max(ratios) * (1 + NOISE), 4)),
                               reason=CARD_REASON.format(uuid=uuid, noise=NOISE))


@pytest.fixture
def card_finding(request, latency_recording) -> None:
    """Requested before `reconcile` (which reads the marks): latency_card_findings' mark for this case on the card
    that measured its recording."""
    test = request.node.originalname
    if test == "test_decode_roofline_without_overhead":
        rec, model, quantity = latency_recording("qwen2.5-7b.decode.b1"), "qwen2.5-7b", "decode_step_roofline"
    else:
        b = request.node.callspec.params["b"]
        rec, model, quantity = (latency_recording(f"llama-3.1-8b.decode.b{b}"), f"llama-3.1-8b.b{b}",
                                "decode_step_other_model")
    mark = card_mark(rec, test, model, quantity)
    if mark is not None:
        request.node.add_marker(mark, append=False)
