"""The cp.async rungs with their copies landing only when the thread waits on their group.

The emulator lands a cp.async at issue by default, which hides a stage read before its wait: s17's prologue did that
(found before its first run only when s18 brought this mode, docs/RECORDING.md). Every fp32 rung that pipelines through
cp.async commit groups runs here in that mode as well (s17 and s18 in their own tests), at block and k-tile edges:
each is correct on the device, so a failure here is a race a later change brought in, or this mode's own error.
"""

from __future__ import annotations


import pytest
import rung_checks as rc

from pytest_anatomy.kernels import sgemm

# Block edges in M and N, a ragged last k-tile (K % 16 != 0), K below one k-tile, N % 4 != 0 (scalar copies), and
# 32 rows (the FFN's M); small enough that a fiber per thread runs each in about a second.
SHAPES = ({"M": 150, "N": 260, "K": 100}, {"M": 129, "N": 131, "K": 33}, {"M": 32, "N": 260, "K": 64},
          {"M": 200, "N": 256, "K": 7})
# rung -> the define its emulator stand-ins read (a copy queued until its group's wait)
LATE_COPY = {"s9-cp-async-pipeline": "S9_EMU_LATE_COPY", "s13-fp32-multistage": "S13_EMU_LATE_COPY",
             "s15-fp32-thread-tile-8x16": "S15_EMU_LATE_COPY", "s16-fp32-ktile32": "S16_EMU_LATE_COPY"}


@pytest.mark.parametrize("rung", sorted(LATE_COPY))
def test_matches_float64_with_copies_landing_at_their_wait(rung: str) -> None:
    late = rc.with_defines(next(v for v in sgemm.LADDER if v.id == rung), (LATE_COPY[rung], 1))
    rc.assert_matches_float64(late, "sgemm", SHAPES, 1900 + sorted(LATE_COPY).index(rung))


def test_every_pipelined_fp32_rung_runs_in_this_mode_somewhere() -> None:
    """A rung whose source commits cp.async groups is here, or in its own test (s17, s18): a new one must join."""
    from pytest_anatomy.kernels.registry import CUDA_DIR

    pipelined = {v.id for v in sgemm.LADDER if v.theory is not None and not v.theory.tensor_core
                 and "cp.async.commit_group" in (CUDA_DIR / v.source).read_text(encoding="utf-8")}
    assert pipelined == set(LATE_COPY) | {"s17-fp32-ktile32-lean", "s18-fp32-small-m-splitk"}
