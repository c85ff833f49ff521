"""How much a calibrated transfer moves from one physical card to the next: a noise term no session can see.

The transfer check (test_decode_overhead_transfers_to_a_second_model) predicts Llama-3.1-8B's decode step with the
step overhead fitted on Qwen2.5-7B's b=1 step in the same session, on the same card. Its session-level budget (the
run's repeat scatter, the read ceiling's, the calibration's) is what one session can measure. But every H200 session
recorded ran on a different card (NVML UUID), and the transferred step's measured / predicted ratio moves from card
to card by more than that budget: 0.973-1.008 at b=1 on sixteen cards, 1.0207 and 1.0215 on two others (the eleventh
visit's card, which latency_card_findings names, and the 2026-12-04 09:53 session's GPU-afc51c9f, which no card finding
names) and 1.055 on the tenth visit's card (latency_card_findings). A user's card is one more draw from that
population, so the budget carries the spread of the ratio over the recorded cards: 2 sample standard deviations,
over every recorded card but the one checked (a replay of a recorded session is never judged by a spread that
contains itself; a live session on a new card gets all of them). This is measured noise, not a fit: no prediction
moves, only the tolerance, and the term's size is whatever the recorded cards say. It double-counts a little, since
each card's ratio carries its own run's repeat scatter too.
The population is H200 cards, the only kind with more than one recorded card; a check on another kind (the H100's
recording, a user's card) carries the same term as the best measured estimate of a card-to-card spread, and says so.

LLAMA_TRANSFER_RATIOS is recomputed from the recordings by test_latency_card_spread.py (each session's Llama runs
against the Qwen calibration known when they ran), and the same test replays the leave-one-out rule on every
recorded card, so the cards it would have flagged are stated, not hidden.
"""

from __future__ import annotations

import statistics
from typing import Any

from latency_card_findings import gpu_uuid

# Llama-3.1-8B's b=1 run's stamp in each recorded H200 session -> (the card's NVML UUID, None where the first session
# recorded none; {batch: measured / predicted decode step}), with the Qwen calibration known when the session ran.
# Every session ran on a different card. Written 2026-12-03; the thirteenth visit's row (08:29, a new card), the
# fourteenth's (12:06, a new card), the fifteenth's (14:16, a new card), the seventeenth's (21:25, a new card,
# GPU-d9670574), the eighteenth's (23:32, a new card, GPU-c23a57d2), the nineteenth call's (00:09, a new card,
# GPU-04f89884) and the 2026-12-04 visit's two full sessions' (09:53, a new card, GPU-afc51c9f; 10:05, a new card,
# GPU-dbafddd4, whose NVML fast session at 10:12 ran no Llama) added from their recordings.
LLAMA_TRANSFER_RATIOS: dict[str, tuple[str | None, dict[int, float]]] = {
    "2026-11-30T02:02:39Z": (None, {1: 0.9856, 2: 0.9928, 4: 0.998, 8: 1.0143, 16: 1.0224, 32: 1.0538, 64: 1.0854,
                                    128: 1.1565}),
    "2026-12-01T04:47:39.340850Z": ("GPU-6675dacb-c790-99c8-2ff1-b9e48ae07d62", {
        1: 0.9924, 2: 0.991, 4: 0.9947, 8: 1.0029, 16: 1.0152, 32: 1.0536, 64: 1.0904, 128: 1.1764}),
    "2026-12-01T06:44:22.000000Z": ("GPU-483b2718-0f2f-e111-88e6-125b57dd46ad", {
        1: 0.9727, 2: 0.9815, 4: 0.9885, 8: 0.9981, 16: 1.0108, 32: 1.046, 64: 1.0774, 128: 1.1664}),
    "2026-12-01T11:24:59.000000Z": ("GPU-b780f725-fe96-b196-3303-e4a68e6a6860", {
        1: 0.9814, 2: 0.9855, 4: 0.9832, 8: 1.0023, 16: 1.0124, 32: 1.0416, 64: 1.0791, 128: 1.1662}),
    "2026-12-02T00:05:58.000000Z": ("GPU-59a592ec-8d7a-139f-4028-61d0dcf6f404", {
        1: 0.9868, 2: 0.991, 4: 0.9919, 8: 0.9992, 16: 1.0156, 32: 1.0514, 64: 1.0815, 128: 1.1643}),
    "2026-12-02T02:33:51.000000Z": ("GPU-50d5b51d-af74-e3bd-024e-55711778500e", {
        1: 0.9875, 2: 0.9921, 4: 0.9943, 8: 1.0049, 16: 1.0243, 32: 1.0584, 64: 1.0841, 128: 1.157}),
    "2026-12-02T04:52:35.000000Z": ("GPU-a5ee4b21-aebe-b7d8-305f-269f19d21866", {
        1: 0.9852, 2: 0.9853, 4: 0.9973, 8: 1.0049, 16: 1.0236, 32: 1.0479, 64: 1.0877, 128: 1.1603}),
    "2026-12-02T07:14:23.000000Z": ("GPU-550b3c65-d4d3-5f54-fc72-189beafd5693", {
        1: 0.995, 2: 0.991, 4: 0.9968, 8: 1.0045, 16: 1.0171, 32: 1.048, 64: 1.0823, 128: 1.1407}),
    "2026-12-02T14:18:58.000000Z": ("GPU-2b680da4-1774-5f8c-5166-bafa5a3cceda", {
        1: 0.9808, 2: 0.9856, 4: 0.991, 8: 1.0072, 16: 1.0204, 32: 1.052, 64: 1.0901, 128: 1.1705}),
    "2026-12-02T16:29:14.000000Z": ("GPU-4606b8e1-2c88-d014-ac77-9f50f8df958b", {
        1: 1.0545, 2: 1.0476, 4: 1.0608, 8: 1.0603, 16: 1.0731, 32: 1.0917, 64: 1.0869, 128: 1.1536}),
    "2026-12-02T23:51:19.000000Z": ("GPU-73fa8706-ce48-203a-a046-de71f8340015", {
        1: 1.0207, 2: 1.0143, 4: 1.0265, 8: 1.0278, 16: 1.0394, 32: 1.0731, 64: 1.0941, 128: 1.1753}),
    "2026-12-03T08:29:08.000000Z": ("GPU-60943228-de65-6991-ad8b-d9c80f5f3816", {
        1: 0.9981, 2: 0.9986, 4: 1.0021, 8: 1.0055, 16: 1.0153, 32: 1.0537, 64: 1.0854, 128: 1.1588}),
    "2026-12-03T12:06:46.000000Z": ("GPU-833ea41f-d2f3-976a-f934-6a5189dac197", {
        1: 0.9788, 2: 0.9798, 4: 0.9888, 8: 0.9995, 16: 1.0138, 32: 1.0488, 64: 1.0802, 128: 1.1699}),
    "2026-12-03T14:16:33.000000Z": ("GPU-0a76d8fe-6073-86f2-0516-66e0165022a2", {
        1: 0.9775, 2: 0.9801, 4: 0.986, 8: 1.0022, 16: 1.0094, 32: 1.0463, 64: 1.0811, 128: 1.1719}),
    "2026-12-03T21:25:39.000000Z": ("GPU-d9670574-18c1-092f-4446-74e0fbde79f7", {
        1: 1.0009, 2: 0.9959, 4: 1.0004, 8: 1.0089, 16: 1.0231, 32: 1.0572, 64: 1.0882, 128: 1.1554}),
    "2026-12-03T23:32:23.000000Z": ("GPU-c23a57d2-b30a-3b01-01b9-2f73f1e56003", {
        1: 0.9905, 2: 0.995, 4: 1.0014, 8: 1.0159, 16: 1.0268, 32: 1.0599, 64: 1.0833, 128: 1.1595}),
    "2026-12-04T00:09:44.000000Z": ("GPU-04f89884-04f2-2263-d359-6a6530989849", {
        1: 1.0082, 2: 1.0048, 4: 1.0126, 8: 1.0205, 16: 1.0329, 32: 1.0637, 64: 1.0943, 128: 1.1622}),
    "2026-12-04T09:53:42.000000Z": ("GPU-afc51c9f-30ad-12b6-c1c3-b5d17830ad8f", {
        1: 1.0215, 2: 1.0173, 4: 1.0282, 8: 1.0365, 16: 1.0417, 32: 1.0705, 64: 1.1003, 128: 1.189}),
    "2026-12-04T10:05:35.000000Z": ("GPU-dbafddd4-1f1f-70e6-238d-42e29000204a", {
        1: 0.9793, 2: 0.9872, 4: 0.9983, 8: 1.0009, 16: 1.0198, 32: 1.0458, 64: 1.0873, 128: 1.1505}),
}
# A card no card finding names whose Llama-3.1-8B small-batch steps ran as far over the transfer as the eleventh
# card's (2026-12-04 09:53: b=1 ratio 1.0215 against its 1.0207; SECOND_CARD_REASON says so). Not given a finding of
# its own, since the eleventh card no longer stands out from it, but set apart where a test asks which cards make the
# card-to-card spread (test_latency_card_spread): without the named cards and this one the rest scatter under 2%.
UNNAMED_ODD_CARDS = frozenset({"GPU-afc51c9f-30ad-12b6-c1c3-b5d17830ad8f"})
# card -> {batch: ratio}: the table above by card, a session without a UUID named by its stamp (taken as its own card)
CARD_TRANSFER_RATIOS: dict[str, dict[int, float]] = {
    uuid or stamp: by_b for stamp, (uuid, by_b) in LLAMA_TRANSFER_RATIOS.items()}
SPREAD_SIGMAS = 2.0  # two standard deviations: ~95% of cards if the spread were normal (it is heavier-tailed)
MIN_CARDS = 3  # fewer recorded cards give no spread worth the name: the term is then 0 and the reason says so


def card_of(rec: Any) -> str:
    """The card that measured `rec`: its NVML UUID, or its session's stamp when the recording carries none."""
    return gpu_uuid(rec) or rec.recorded_at


def card_spread(ratios: dict[str, dict[int, float]], b: int, checked_card: str) -> float:
    """SPREAD_SIGMAS sample standard deviations of the ratio at batch `b` over every card but `checked_card`
    (relative: the ratios are measured / predicted); 0 with fewer than MIN_CARDS such cards."""
    others = [by_b[b] for card, by_b in ratios.items() if card != checked_card and b in by_b]
    return SPREAD_SIGMAS * statistics.stdev(others) if len(others) >= MIN_CARDS else 0.0


def transfer_card_spread(b: int, rec: Any) -> float:
    """The transfer check's card-to-card term for Llama's step at batch `b`, measured on the card of `rec`."""
    return card_spread(CARD_TRANSFER_RATIOS, b, card_of(rec))


CARD_SPREAD_WHY = (" and the card-to-card spread of this transfer (2 standard deviations of its measured / predicted "
                   "ratio over every other recorded H200 card, one session each, carried to any other card as the only "
                   "measured card-to-card spread: a session's calibration cannot see it)")
# The largest session-level budget (repeat + ceiling + calibration spread) a Llama transfer check has carried in the
# recorded sessions is ~1.9%; with the card term beside it, a batch whose excess over the prediction is smaller than
# both on some card may agree there, so its finding cannot be strict (a strict finding fails when it agrees).
SESSION_BUDGET = 0.02


def transfer_may_agree(b: int) -> bool:
    """Whether Llama's transferred step at batch `b` came within the session budget plus the card spread on any
    recorded card: then a finding on it may resolve on one card and hold on the next."""
    spread = card_spread(CARD_TRANSFER_RATIOS, b, checked_card="")
    return min(abs(by_b[b] - 1) for by_b in CARD_TRANSFER_RATIOS.values()) < spread + SESSION_BUDGET
