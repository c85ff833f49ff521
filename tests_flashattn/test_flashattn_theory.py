"""Theory of the attention forward and of flash-decoding: pure arithmetic, checked by brute force."""

from __future__ import annotations

import math

import pytest

# hypothesis is a dev dependency; the reconciliation report (README's main command) installs only
# the core and must still run every suite.
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory import attention as at

H200 = get_hardware("h200")
TARGET = at.AttentionShape.prefill(4, 32, 4096, 128)
TILE = at.Tiling(*registry.PREDICTION_TILING)
CEIL = at.Ceilings(790e12, 4.46e12, "example numbers of the order the H200 sessions measured")


def brute_causal(n: int, bm: int, bn: int) -> tuple[int, int]:
    """Walk every (query block, KV tile) pair the split kernel visits and classify it."""
    unmasked = masked = 0
    for i in range(-(-n // bm)):
        rows = range(i * bm, min((i + 1) * bm, n))
        for j in range(-(-n // bn)):
            cols = range(j * bn, min((j + 1) * bn, n))
            if cols[0] > rows[-1]:
                continue  # the kernel never visits tiles right of the block's last row
            if (j + 1) * bn <= i * bm:
                unmasked += 1  # left of the first row: every key visible to every row
            else:
                masked += 1
    return unmasked, masked


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 700), bm_pow=st.integers(4, 7), ratio=st.sampled_from([1, 2, 4]))
def test_causal_blocks_exact_for_any_n(n: int, bm_pow: int, ratio: int) -> None:
    bm = 2**bm_pow
    bn = max(16, bm // ratio)
    assert at.causal_blocks(n, at.Tiling(bm, bn)) == brute_causal(n, bm, bn)


def test_full_flops_formula() -> None:
    assert at.attention_flops(TARGET).value == 4 * 4 * 32 * 4096 * 4096 * 128


@given(n=st.integers(1, 5000))
def test_causal_useful_flops_count_visible_pairs(n: int) -> None:
    s = at.AttentionShape.prefill(1, 1, n, 64, causal=True)
    assert at.attention_flops(s).value == 4 * 64 * n * (n + 1) // 2


def test_causal_executed_flops_exceed_useful_by_the_diagonal_band() -> None:
    causal = at.AttentionShape.prefill(4, 32, 4096, 128, causal=True)
    executed = at.executed_flops(causal, TILE).value
    useful = at.attention_flops(causal).value
    # 496 + 32*... tiles: the diagonal band adds BLOCK_M*BLOCK_N/2 - BLOCK_M/2 pairs' worth per tile pair
    unmasked, masked = at.causal_blocks(4096, TILE)
    assert (unmasked, masked) == (992, 64)
    assert executed == 4 * 32 * (992 + 64) * 4 * 128 * 64 * 128
    assert 1.0 < executed / useful < 1.04


def test_compulsory_bytes_share_kv_under_gqa() -> None:
    mha = at.compulsory_bytes(TARGET).value
    gqa = at.compulsory_bytes(at.AttentionShape.prefill(4, 32, 4096, 128, kv_heads=8)).value
    qkvo = 4 * 32 * 4096 * 128 * 2
    lse = 4 * 32 * 4096 * 4
    assert mha == 4 * qkvo + lse
    assert gqa == 2 * qkvo + 2 * qkvo // 4 + lse


def test_tiled_bytes_reread_kv_once_per_query_block() -> None:
    per_head = (4096 // 128) * 2 * 4096 * 128 * 2
    t = at.tiled_bytes(TARGET, TILE)
    kv = next(term.value for term in t.terms if term.name == "K+V re-reads")
    assert kv == 4 * 32 * per_head
    gqa = at.tiled_bytes(at.AttentionShape.prefill(4, 32, 4096, 128, kv_heads=8), TILE)
    assert gqa.value == t.value  # each query head's blocks still ask for their K/V


def test_l2_absorbs_the_rereads_at_4096_but_not_at_128k() -> None:
    l2, sms = H200.require("l2_bytes"), H200.require("sm_count")
    assert 2 * 4096 * 128 * 2 < l2  # one head's K+V (2 MiB) fits in the 60 MiB L2
    assert at.l2_absorbs(TARGET, TILE, l2, sms)
    assert at.dram_bytes(TARGET, TILE, l2, sms).value == at.compulsory_bytes(TARGET).value
    long = at.AttentionShape.prefill(1, 32, 131072, 128)
    assert not at.l2_absorbs(long, TILE, l2, sms)
    assert at.dram_bytes(long, TILE, l2, sms).value == at.tiled_bytes(long, TILE).value


def test_forward_time_is_compute_bound_at_the_target() -> None:
    eff = at.Efficiency(0.4, 0.55, 0.72, "stated")
    p = at.forward_time(TARGET, TILE, CEIL, eff, l2_bytes=H200.require("l2_bytes"), sm_count=132)
    terms = {t.name: t.value for t in p.terms}
    assert p.value == terms["t_compute"] > terms["t_memory"]
    assert p.value == pytest.approx(at.executed_flops(TARGET, TILE).value / (0.55 * 790e12))


def test_efficiency_band_is_the_stated_range() -> None:
    eff = at.Efficiency(0.4, 0.5, 0.8, "stated")
    assert eff.ratio_band() == pytest.approx((0.625, 1.25))
    with pytest.raises(ValueError, match="why"):
        at.Efficiency(0.4, 0.5, 0.8, " ")
    with pytest.raises(ValueError, match="lo <= mid <= hi"):
        at.Efficiency(0.6, 0.5, 0.8, "x")


def test_naive_time_adds_the_s_round_trip_and_ignores_the_mask() -> None:
    eff = at.Efficiency(0.25, 0.4, 0.6, "stated")
    full = at.naive_time(TARGET, TILE, CEIL, eff, l2_bytes=H200.require("l2_bytes"), sm_count=132)
    causal = at.naive_time(at.AttentionShape.prefill(4, 32, 4096, 128, causal=True), TILE, CEIL, eff,
                           l2_bytes=H200.require("l2_bytes"), sm_count=132)
    s_bytes = 3 * 4 * 32 * 4096 * 4096 * 4
    assert at.materialized_s_bytes(TARGET).value == s_bytes
    assert full.value == causal.value
    assert full.value > s_bytes / CEIL.read_bandwidth


def test_decode_time_is_kv_bytes_over_bandwidth_plus_the_reduction() -> None:
    d = at.DecodeShape(8, 32, 8, 65536, 128)
    splits = at.decode_splits(d, 132, registry.DECODE_BLOCK_N)
    p = at.decode_time(d, splits, CEIL, launch_s=registry.DECODE_LAUNCH_S)
    kv = 2 * 8 * 8 * 65536 * 128 * 2
    terms = {t.name: t.value for t in p.terms}
    assert at.decode_kv_bytes(d).value == kv
    assert terms["t_kv"] == kv / CEIL.read_bandwidth
    assert terms["t_reduce"] < 0.05 * terms["t_kv"]  # partials are small next to K/V at 64k


@given(b=st.integers(1, 64), hkv=st.sampled_from([1, 2, 4, 8, 32]), ctx=st.integers(1, 200_000),
       sms=st.sampled_from([80, 108, 132, 142]))
def test_decode_splits_rule_equals_the_kernel_launchers(b: int, hkv: int, ctx: int, sms: int) -> None:
    from pytest_anatomy.kernels.flashattn.decode_rules import splits_for

    d = at.DecodeShape(b, hkv * 4, hkv, ctx, 128)
    assert at.decode_splits(d, sms, registry.DECODE_BLOCK_N) == splits_for(b, hkv, ctx, sms)


@given(ctx=st.integers(1, 200_000), asked=st.integers(1, 64), block_n=st.sampled_from([16, 32, 64, 128]))
def test_launched_splits_cover_the_context_in_equal_whole_tiles_with_none_empty(ctx: int, asked: int,
                                                                               block_n: int) -> None:
    """The count is that of the shortest whole-tile chunk that needs no more than `asked` splits, found by search here
    (not by the function's arithmetic): it covers the context, and its last split holds at least one token."""
    n = at.launched_splits(ctx, asked, block_n)
    tiles = -(-ctx // block_n)
    chunk = block_n * next(k for k in range(1, tiles + 1) if -(-ctx // (k * block_n)) <= asked)
    assert 1 <= n <= asked and n == -(-ctx // chunk)
    assert n * chunk >= ctx > (n - 1) * chunk


def test_launched_splits_at_the_decode_shape_on_132_sms() -> None:
    """The rule asks 9 at every context of B=8 H_kv=8 (4 x 132 / 64 programs, rounded up); whole tiles of 64 launch 8 at
    1k-4k (chunks of 128, 256, 512 tokens) and 9 from 8k (960 at 8k)."""
    launched = {ctx: at.launched_splits(ctx, at.decode_splits(at.DecodeShape(8, 32, 8, ctx, 128), 132, 64), 64)
                for ctx in (1024, 2048, 4096, 8192, 16384, 65536, 131072)}
    assert launched == {1024: 8, 2048: 8, 4096: 8, 8192: 9, 16384: 9, 65536: 9, 131072: 9}
    assert at.launched_splits(8192, 8, 64) == at.launched_splits(65536, 8, 64) == 8  # the short contexts' grid fits


@pytest.mark.parametrize("bad", [(0, 1, 64), (1, 0, 64), (1, 1, 0)])
def test_launched_splits_refuses_non_positive_inputs(bad: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError, match=">= 1"):
        at.launched_splits(*bad)


@pytest.mark.parametrize("bad, says", [(dict(kv_heads=5), "must divide heads"), (dict(heads=0), "heads > 0"),
                                       (dict(causal=True, seq_kv=10), "seq_q == seq_kv")])
def test_bad_shapes_say_what_is_wrong(bad: dict, says: str) -> None:
    kw = {**dict(batch=1, heads=32, seq_q=16, seq_kv=16, head_dim=64), **bad}
    with pytest.raises(at.AttentionShapeError, match=says):
        at.AttentionShape(**kw)


@pytest.mark.parametrize("r", registry.LADDER, ids=lambda r: r.id)
def test_rung_headers_state_the_registry_efficiency(r: registry.Rung) -> None:
    h = registry.header(r)
    assert registry.header_efficiency(r) == (r.efficiency.lo, r.efficiency.mid, r.efficiency.hi)
    assert h["what_changes"] and h["measured_outcome"]
    at.Efficiency(r.efficiency.lo, r.efficiency.mid, r.efficiency.hi, r.efficiency.why)


def test_decode_header_states_the_registry_bandwidth_fraction() -> None:
    from pathlib import Path

    text = (Path(registry.HERE) / "decode.py").read_text(encoding="utf-8")
    e = registry.DECODE_BANDWIDTH
    assert f"f = {e.lo:.2f}-{e.hi:.2f} (mid {e.mid:.2f})" in text
    assert math.isclose(registry.DECODE_LAUNCH_S, 4e-6) and "4 us" in text


def test_gqa_shrinks_the_l2_working_set_by_the_group() -> None:
    sms = H200.require("sm_count")
    mha = at.l2_working_set(TARGET, TILE, sms)
    gqa = at.l2_working_set(at.AttentionShape.prefill(4, 32, 4096, 128, kv_heads=8), TILE, sms)
    # 132 programs / 32 query blocks per head -> 5 (+1 straddling) query heads in flight, whose K/V
    # are 6 heads' worth, or 3 groups of 4 under GQA (6 consecutive heads span at most 3 groups)
    assert next(t.value for t in mha.terms if t.name == "kv_heads_in_flight") == 6
    assert next(t.value for t in gqa.terms if t.name == "kv_heads_in_flight") == 3
    assert gqa.value < mha.value


def test_streamed_kv_reads_lie_between_compulsory_and_tiled() -> None:
    """One wave per KV head when every program is resident at once (compulsory reads); a pass per
    wave otherwise: B=1 H=4 N=128k at BLOCK_M=128 and 132 programs is 4,096 programs in 32 waves,
    35 (wave, KV head) pairs (three waves straddle two heads): 8.75 passes per head."""
    shape = at.AttentionShape.prefill(1, 4, 131072, 128)
    tiling = at.Tiling(128, 64)
    comp = at.compulsory_bytes(shape)
    q_kv = sum(t.value for t in comp.terms if t.name in ("Q", "K+V"))
    assert at.streamed_kv_reads(shape, tiling, 4096).value == q_kv
    p = at.streamed_kv_reads(shape, tiling, 132)
    assert {t.name: t.value for t in p.terms}["kv_passes"] == 8.75
    assert q_kv < p.value < at.tiled_bytes(shape, tiling).value
    gqa = at.AttentionShape.prefill(1, 8, 131072, 128, kv_heads=2)  # a wave over 4 query heads reads one KV head
    assert {t.name: t.value for t in at.streamed_kv_reads(gqa, tiling, 4096).terms}["kv_passes"] == 1.0
    with pytest.raises(at.AttentionShapeError, match="resident programs"):
        at.streamed_kv_reads(shape, tiling, 0)
