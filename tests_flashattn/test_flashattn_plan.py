"""The N sweep's and the Nsight Compute run's plans on the CPU, before the GPU visit.

The sweep's header table is its pre-registration: it must be what the code predicts (the same
model at the first H200 session's ceilings), its cases must keep B*H*N fixed and the recording
names the runner writes, and the live plan must price the cases beyond the timing tests'
within the visit's 45 s. The profile script must launch exactly what the counter tests read.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import flashattn_cases as fc
import flashattn_counter_findings as cf
import flashattn_findings as ff
import flashattn_io as io
import test_flashattn_gpu as timing
import test_flashattn_sweep as sweep

from pytest_anatomy import live_plan, recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.specs import hardware
from pytest_anatomy.theory import attention as at

ROOT = Path(__file__).resolve().parents[1]
SWEEP_BUDGET_S = 45.0  # the GPU visit's allowance for the cases the sweep adds
SWEEP_R7_BUDGET_S = 50.0  # and for r7's at the same shapes (priced 45.7 s: 12 new compiles, 3 configs autotuned each)
# r7's sweep alone, one device call (`live_session.sh start ... -k r7-warp-specialized`, then `wait`): the lead's
# allowance, and what the script adds around the pytest session (pip install -e, ~5 s; wait's xz -9 packing, ~5-10 s)
R7_SWEEP_CALL_BUDGET_S = 150.0
LIVE_SESSION_SCRIPT_S = 15.0
R7_LIVE_SESSION_S = 47.5  # results/h200/live-runs/20261204T145709Z.r7.json: r7's 4 target cases, its first session


def test_sweep_cases_keep_tokens_times_heads_fixed_and_are_named_as_recorded() -> None:
    assert [replace(c, rung=registry.BEST) for c in sweep.SWEEP_R7] == sweep.SWEEP  # r7 at r6's shapes
    for c in sweep.SWEEP + sweep.SWEEP_R7 + sweep.SWEEP_R8:
        assert c.batch * c.heads * c.n == sweep.HEAD_TOKENS, c
        assert c.rung in registry.TARGET_RUNGS
        assert re.fullmatch(rf"fa2\.{c.rung}\.b\d+h\d+(kv\d+)?n\d+d(64|128)\.(full|causal)", c.name), c.name
    assert {c.n for c in sweep.SWEEP} == {512, 1024, 2048, 4096, 8192, 16384, 32768}
    assert {c.head_dim for c in sweep.SWEEP} == {64, 128}
    assert any(c.kv_heads for c in sweep.SWEEP) and {c.causal for c in sweep.SWEEP} == {False, True}


def test_sweep_header_table_is_what_the_code_predicts() -> None:
    """Every case's predicted ms (3 decimals) stands on its shape's row of the docstring table."""
    doc = sweep.__doc__ or ""
    spec = hardware.get_hardware("h200")
    for c in sweep.SWEEP + sweep.SWEEP_R7 + sweep.SWEEP_R8:
        label = sweep.table_label(c)
        rows = [line for line in doc.splitlines() if line.strip().startswith(label + " ")]
        assert len(rows) == 1, f"no single table row for {label}"
        pred, band, _ = fc.predict(c, fc.PLAN_CEILINGS, spec)
        assert f"{pred.value * 1e3:.3f}" in rows[0], (c.name, pred.value, rows[0])
        assert f"{band[1]:.3f}" in rows[0] and f"{band[0]:.3f}" in rows[0], (c.name, band, rows[0])


def test_sweep_fits_the_visit_and_the_plan_prices_it() -> None:
    """r6's 18 cases beyond the timing tests within the first visit's 45 s; r7's 20 (its target MHA cases are timing
    cases) within 50 s more, its own compiles counted."""
    extra = [c for c in sweep.SWEEP if c not in set(timing.CASES)]
    assert len(extra) == 18
    seconds = fc.estimate_s(extra, timing.CASES)
    assert 30.0 < seconds <= SWEEP_BUDGET_S, seconds
    extra_r7 = [c for c in sweep.SWEEP_R7 if c not in set(timing.CASES)]
    assert len(extra_r7) == 20
    assert 20.0 < fc.estimate_s(extra_r7, timing.CASES + extra) <= SWEEP_R7_BUDGET_S


def _plan_s(timing: set, sweep: set) -> tuple[float, float]:
    entries = [live_plan.SESSION_ENTRY, *fc.live_plan(timing, sweep)]
    return (sum(live_plan.estimate_range(e)[0] for e in entries), sum(live_plan.estimate_range(e)[1] for e in entries))


def test_the_plan_prices_r7s_first_session_as_it_ran() -> None:
    """`--anatomy-plan` on r7's 4 target cases (bf16 and fp16, full and causal) gives what that session took: the
    Gluon entry's constants were fitted on it, the session and per-case prices on the full sessions before r7."""
    cases = {c for c in timing.CASES if c.rung == registry.TARGET_RUNGS[1]}
    assert len(cases) == 4
    low, high = _plan_s(cases, set())
    assert abs(low / R7_LIVE_SESSION_S - 1) < 0.05 and high > R7_LIVE_SESSION_S, (low, high)


def test_r7s_sweep_runs_alone_in_one_device_call() -> None:
    """`-k r7-warp-specialized` on the sweep selects r7's 22 cases and nothing else (its ids name the rung, r6's do
    not), and the plan prices that session, with live_session.sh's own work around it, inside the call's 150 s:
    no timing test builds its kernels, so the preflight and all 6 specialisations' compiles are its own."""
    r7 = registry.TARGET_RUNGS[1]
    assert [c for c in sweep.SWEEP + sweep.SWEEP_R7 if r7 in c.name] == sweep.SWEEP_R7 and len(sweep.SWEEP_R7) == 22
    assert len({fc.compile_key(c) for c in sweep.SWEEP_R7}) == 6  # D 128 / 64 / GQA, full / causal
    low, high = _plan_s(set(), set(sweep.SWEEP_R7))
    assert 60.0 < low < high and high + LIVE_SESSION_SCRIPT_S <= R7_SWEEP_CALL_BUDGET_S, (low, high)


def test_the_cost_model_counts_the_rungs_autotune_configs() -> None:
    """Parsed, not imported: importing a kernel module here would import triton before the
    interpreter tests of this process could select the interpreter."""
    for rung_id, count in fc.AUTOTUNE_CONFIGS.items():
        source = registry.rung(rung_id).path.read_text(encoding="utf-8")
        configs = source[source.index("CONFIGS = ["):source.index("]\n", source.index("CONFIGS = ["))]
        assert configs.count("triton.Config(") == count, rung_id


def _dry_run(*args: str) -> list[tuple[int, str]]:
    out = subprocess.run([sys.executable, "scripts/device/flashattn_profile.py", "--dry-run", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    return [(int(line.split()[0]), f"ncu.{line.split()[1]}.{line.split()[2]}") for line in out]


def test_profile_script_launches_what_the_counter_tests_read() -> None:
    """Every rung at the target shape, each Gluon rung included since its first GPU session (r7 and r8, 2026-12-04:
    before it, PROFILED left it out, and this test said so), then the best rung's long shapes; `--rungs r7` (`r8`)
    keeps that Gluon rung's two launches alone, numbered as in the full list (the manifest's marker grids)."""
    listed = _dry_run()
    assert [name for _, name in listed] == [io.name(launch) for launch in io.launches()]
    assert len(listed) == 2 * len(registry.PROFILED) + 4 and registry.PROFILED == registry.LADDER
    for gluon in registry.TARGET_RUNGS[1:]:
        assert _dry_run("--rungs", gluon.split("-")[0]) == _dry_run("--rungs", gluon) == [
            (i, name) for i, name in listed if f".{gluon}." in name] and len(_dry_run("--rungs", gluon)) == 2


def test_the_gluon_rungs_l2_band_stands_on_the_recorded_fa2_rungs() -> None:
    """r7's pre-registered L2 band (flashattn_io.GLUON_L2_BAND) holds what r3-r6 counted at the target shape on the
    H200, per mask, and its reason quotes those counts as they are recorded."""
    for causal in (False, True):
        mask = "causal" if causal else "full"
        ratios = []
        for r in ("r3-fa2", "r4-causal-split", "r5-exp2", "r6-tma-pipelined"):
            rec = cf.ncu(f"{r}.b4h32n4096d128.{mask}")
            ratios.append(rec["l2_bytes"].value / at.tiled_bytes(io.shape_of(rec.data["launch"]["settings"]),
                                                                 io.tiling_of(rec)).value)
        lo, hi = io.GLUON_L2_BAND[causal]
        assert lo < min(ratios) and max(ratios) < hi, (mask, ratios)
        band, why = io.l2_band({"rung": registry.TARGET_RUNGS[1], "causal": causal})
        assert band == (lo, hi) and f"{min(ratios):.2f}-{max(ratios):.2f} {'causal' if causal else 'of the'}" in why


def test_the_gluon_rungs_header_states_what_the_code_predicts_at_the_target() -> None:
    """r7's pre-registered target-shape times (its header, at the planning ceilings), and 'not yet measured' while no
    recording of it is on the card."""
    r7 = registry.rung(registry.TARGET_RUNGS[1])
    header = registry.header(r7)
    spec = hardware.get_hardware(ff.MEASURED_ON)
    ms = [fc.predict(fc.Case(r7.id, 4, 32, 4096, 128, causal=c), fc.PLAN_CEILINGS, spec)[0].value * 1e3
          for c in (False, True)]
    assert f"{ms[0]:.2f} ms full, {ms[1]:.2f} ms causal at the mid" in header["predicted_effect"], ms
    names = [fc.Case(r7.id, 4, 32, 4096, 128, causal=c).name for c in (False, True)]
    measured = any(recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", n) for n in names)
    assert (header["measured_outcome"] == "not yet measured.") == (not measured)
