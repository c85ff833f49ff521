"""The findings' mechanism bands rest on step counts of the kernels as written: checked by walking the loops."""

from __future__ import annotations

import flashattn_counter_findings as cf
import flashattn_findings as ff
import pytest
from flashattn_interp import use_interpreter_or_skip

from pytest_anatomy.theory import attention as at


def r2_steps(n: int, causal: bool, bm: int, bn: int, q_group: int) -> int:
    """(KV tile, query block) steps of one head, following fa1_fwd's loop bounds line by line."""
    n_qblocks = -(-n // bm)
    steps = 0
    for group in range(-(-n_qblocks // q_group)):
        qb0, qb1 = group * q_group, min(group * q_group + q_group, n_qblocks)
        kv_end = min(qb1 * bm, n) if causal else n
        for start_n in range(0, kv_end, bn):
            first = max(qb0, start_n // bm) if causal else qb0
            steps += max(0, qb1 - first)
    return steps


@pytest.mark.parametrize("n", [64, 200, 512, 4096])
@pytest.mark.parametrize("causal", [False, True])
def test_r2_step_count_is_the_kernels_loop(n: int, causal: bool) -> None:
    # r2's config lives in its Triton module: import triton the way the interpreter tests need it
    # (TRITON_INTERPRET first), or this process's later interpreter tests would have to skip
    use_interpreter_or_skip()
    from pytest_anatomy.kernels.flashattn import r2_fa1

    cfg = r2_fa1.CONFIGS[0].kwargs
    assert (cfg["BLOCK_M"], cfg["BLOCK_N"]) == (cf.R2_TILING.block_m, cf.R2_TILING.block_n)
    shape = at.AttentionShape.prefill(1, 1, n, 128, causal=causal)
    pairs, ws, q = cf.r2_step_bytes(shape)
    assert pairs == r2_steps(n, causal, cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["Q_GROUP"])
    assert (ws, q) == (128 * 128 * 4 + 2 * 128 * 4, 128 * 128 * 2)


def test_mechanism_bands_lie_beyond_the_pre_registered_limits() -> None:
    """Each band starts at the limit the pre-registration set and reaches further, never inside it."""
    for _, _, (lo, hi) in cf.COUNTERS.values():
        assert lo < hi
    assert cf.r2_read_band(False)[0] == 1.3 and cf.r2_write_band(False)[0] == 1.02
    assert cf.coalesced_l2_band(at.Tiling(128, 128))[1] == 0.8
    assert cf.causal_stream_band()[0] == 1.25 and cf.dirty_at_start_band()[0] == 1.02


def test_causal_stream_bound_counts_the_programs_whose_prefix_exceeds_l2() -> None:
    # 128x128 tiles: 64 KiB of K+V each, 960 fit in 60 MiB; programs 960..1023 of each head stream their own prefix
    own_tiles = sum(i + 1 for i in range(1024) if (i + 1) * 64 * 1024 > cf.L2_BYTES)
    assert own_tiles == sum(range(961, 1025))
    pred = at.streamed_kv_reads(at.AttentionShape.prefill(1, 4, 131072, 128, causal=True), at.Tiling(128, 128), 132)
    q, head = 4 * 131072 * 128 * 2, 2 * 131072 * 128 * 2
    assert cf.causal_stream_band()[1] == round((q + 4 * (head + own_tiles * 64 * 1024)) / pred.value, 2)


@pytest.mark.parametrize("test", sorted(ff.TARGET_BACKENDS))
@pytest.mark.parametrize("mode", ["full", "causal"])
def test_no_recorded_run_lies_above_its_noise_band(test: str, mode: str) -> None:
    """Each recorded H200 run of a target case, judged as the checked run against all the others
    (target_noise_band): none lies above its band's upper edge, the edge that says r6 regressed. Runs below 1.0 met
    the target (the finding resolves there, strict=False). A session whose ratio exceeds every other run's by more
    than its own timing noise fails here as well as live."""
    from pytest_anatomy import recordings

    name = f"fa2.r6-tma-pipelined.b4h32n4096d128.{mode}"
    runs = [recordings.load_file(p) for p in recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", name)]
    assert len(runs) > ff.MIN_OTHER_RUNS
    above = []
    for run in runs:
        band = ff.target_noise_band(test, run, [r for r in runs if r.recorded_at != run.recorded_at])
        assert band is not None
        if ff.target_ratio(test, run) > band[1]:
            above.append((run.recorded_at, round(ff.target_ratio(test, run), 4), band))
    assert not above
