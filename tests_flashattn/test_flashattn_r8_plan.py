"""r8's Nsight Compute launches and its N sweep on the CPU, before either has run (issue 22; docs/RECORDING.md, "r8's
Nsight Compute counters and N sweep: the calls, prepared before either ran").

What must hold before the device calls: the profile run selects r8 (`--rungs r8`, its two launches numbered as in the
full list); r8's pre-registered L2 band stands on r7's recorded counts at the same tiles, and its reason quotes them;
r8's sweep cases exist, each with a prediction and a row of the sweep's pre-registered table; `-k r8-pingpong` on the
sweep selects r8's 22 cases alone, priced inside one device call; and no recording of any of them is older than the
pre-registration (the target-shape cases excepted: the timing tests recorded those at 18:48, and they are the timing
tests' own). Nothing here imports triton.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import flashattn_cases as fc
import flashattn_findings as ff
import flashattn_io as io
import test_flashattn_gpu as timing
import test_flashattn_sweep as sweep

from pytest_anatomy import live_plan, recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.specs import hardware
from pytest_anatomy.theory import attention as at

ROOT = Path(__file__).resolve().parents[1]
R7, R8 = registry.TARGET_RUNGS[1], registry.TARGET_RUNGS[2]
MASKS = {"full": False, "causal": True}
# when r8's counter band and sweep table were written (after r8's first session, 18:48, and r7's counters, 16:38)
PREREGISTERED_AT = "2026-12-04T19:50"
# the sweep's device call alone (`live_session.sh start r8sweep ... -k r8-pingpong`, then `wait`): the device tool's
# per-call limit, and what live_session.sh adds around the pytest session (pip install -e, xz packing)
CALL_LIMIT_S = 600.0
LIVE_SESSION_SCRIPT_S = 15.0


def _dry_run(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "scripts/device/flashattn_profile.py", "--dry-run", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [" ".join(line.split()) for line in out.splitlines()]


def test_the_profile_run_selects_r8s_two_launches() -> None:
    """`flashattn_profile.sh --rungs r8`: launches 15 and 16 of the 20 (r8 at the target shape, full then causal)."""
    assert _dry_run("--rungs", "r8") == [f"15 fa2.{R8} b4h32n4096d128.full", f"16 fa2.{R8} b4h32n4096d128.causal"]
    assert len(_dry_run()) == 20


R7_NCU_PASS = "20261204T163848Z"  # r7's one Nsight Compute pass (2026-12-04 16:38)


def _r7_counted(mask: str) -> float:
    rec = recordings.load_latest(ff.RESULTS, ff.MEASURED_ON, "flashattn", f"ncu.fa2.{R7}.b4h32n4096d128.{mask}",
                                 stamp=R7_NCU_PASS)
    assert io.tiling_of(rec) == at.Tiling(128, 128)  # the tiles r8 runs
    return rec["l2_bytes"].value / at.tiled_bytes(io.shape_of(rec.data["launch"]["settings"]), io.tiling_of(rec)).value


def test_r8s_l2_band_is_r7s_counted_ratio_within_15_percent() -> None:
    """R8_L2_BAND: r7's recorded L2 bytes over the tiled count at the target shape (the same 128 x 128 tiles), +-15%
    rounded to two decimals, and the reason quotes that ratio; r8's reads and writes take r3-r7's bands."""
    for mask, causal in MASKS.items():
        counted = _r7_counted(mask)
        assert round(counted, 3) == io.R7_L2_COUNTED[causal]
        lo, hi = io.R8_L2_BAND[causal]
        assert (lo, hi) == (round(counted * 0.85, 2), round(counted * 1.15, 2))
        band, why = io.l2_band({"rung": R8, "causal": causal})
        assert band == (lo, hi) and f"({counted:.3f} of the tiled count" in why and "+-15%" in why
    shape = at.AttentionShape.prefill(4, 32, 4096, 128)
    assert io.expected_reads(R8, shape, True)[1] == io.expected_reads(R7, shape, True)[1] == (0.98, 1.15)
    assert io.expected_writes(R8, shape)[1] == 1


def test_the_counter_header_states_r8s_tiled_counts() -> None:
    """The header's r8 paragraph quotes the tiled counts at 128 x 128 the test computes, and R8_L2_BAND."""
    import test_flashattn_counters as counters

    doc = counters.__doc__ or ""
    para = doc[doc.index("PRE-REGISTRATION, r8"):]
    for mask, causal in MASKS.items():
        tiled = at.tiled_bytes(at.AttentionShape.prefill(4, 32, 4096, 128, causal=causal), at.Tiling(128, 128)).value
        assert f"{mask} {tiled / 1e9:.2f} GB" in para
        lo, hi = io.R8_L2_BAND[causal]
        assert f"{mask} [{lo}, {hi}]" in " ".join(para.split())


def _stamped_after(names: list[str]) -> list[str]:
    """Recordings of `names` on the measuring card older than the pre-registration (none may be)."""
    out = []
    for name in names:
        for path in recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", name):
            if recordings.load_file(path).recorded_at < PREREGISTERED_AT:
                out.append(path.name)
    return out


def test_r8s_predictions_predate_any_run_of_them() -> None:
    """No counter recording of r8, and no recording of an r8 sweep case beyond the timing tests' target-shape cases,
    is older than the pre-registration: the bands and the table were written before the runs they judge."""
    ncu = [io.name(launch) for launch in io.launches() if launch["rung"] == R8]
    cases = [c.name for c in sweep.SWEEP_R8 if c not in set(timing.CASES)]
    assert len(ncu) == 2 and len(cases) == 20
    assert _stamped_after(ncu + cases) == []


def test_r8s_sweep_cases_are_r7s_shapes_with_a_table_row_each() -> None:
    """22 cases (D=128 N 512-32k, D=64 at 512 and 32k, GQA at 4k and 32k; full and causal), each predicted from
    r8's stated efficiency (its header's 0.58 / 0.74 / 0.90) with a row "r8 <shape>" of the sweep's table."""
    assert [c.name.replace(R8, R7) for c in sweep.SWEEP_R8] == [c.name for c in sweep.SWEEP_R7]
    spec = hardware.get_hardware(ff.MEASURED_ON)
    doc = sweep.__doc__ or ""
    for c in sweep.SWEEP_R8:
        rows = [line for line in doc.splitlines() if line.strip().startswith(sweep.table_label(c) + " ")]
        assert len(rows) == 1 and sweep.table_label(c).startswith("r8 "), c.name
        pred, band, why = fc.predict(c, fc.PLAN_CEILINGS, spec)
        assert f"{pred.value * 1e3:.3f}" in rows[0] and "0.58-0.9 (mid 0.74)" in why, (c.name, rows[0])
    assert registry.header_efficiency(registry.rung(R8)) == (0.58, 0.74, 0.90)


def test_r8s_sweep_runs_alone_in_one_device_call() -> None:
    """`-k r8-pingpong` on the sweep selects r8's 22 cases and nothing else, and `--anatomy-plan` prices that session
    (r8's preflight and its 6 kernel specialisations' compiles its own, at r8's fitted prices) with live_session.sh's
    work well inside one call's limit."""
    assert [c for c in sweep.SWEEP + sweep.SWEEP_R7 + sweep.SWEEP_R8 if R8 in c.name] == sweep.SWEEP_R8
    assert len({fc.compile_key(c) for c in sweep.SWEEP_R8}) == 6
    entries = [live_plan.SESSION_ENTRY, *fc.live_plan(set(), set(sweep.SWEEP_R8))]
    low, high = (sum(live_plan.estimate_range(e)[i] for e in entries) for i in (0, 1))
    assert 100.0 < low < high and high + LIVE_SESSION_SCRIPT_S <= CALL_LIMIT_S / 3, (low, high)
    assert f"{low:.0f}-{high:.0f} s by `--anatomy-plan`" in " ".join((sweep.__doc__ or "").split())


def test_the_recording_section_states_the_calls_and_their_prices() -> None:
    """docs/RECORDING.md's section for these calls: the three commands as the tests select them, and the sweep's price
    as the plan gives it."""
    doc = (ROOT / "docs" / "RECORDING.md").read_text(encoding="utf-8")
    head = "## r8's Nsight Compute counters and N sweep: the calls, prepared before either ran (issue 22)"
    section = " ".join(doc[doc.index(head):].split())
    assert "PROFILE_TIMEOUT_S=240 bash scripts/device/flashattn_profile.sh --rungs r8" in section
    assert "start r8sweep tests_flashattn/test_flashattn_sweep.py -k r8-pingpong --anatomy-record" in section
    assert 'start r8again tests_flashattn/test_flashattn_gpu.py -k "r8-pingpong or best_rung"' in section
    entries = [live_plan.SESSION_ENTRY, *fc.live_plan(set(), set(sweep.SWEEP_R8))]
    low, high = (sum(live_plan.estimate_range(e)[i] for e in entries) for i in (0, 1))
    assert f"{low:.0f}-{high:.0f} s for the pytest session" in section
    for causal in (False, True):
        assert f"{io.R8_L2_BAND[causal]}".replace("(", "[").replace(")", "]") in section
