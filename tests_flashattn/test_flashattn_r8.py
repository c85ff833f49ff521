"""r8 (FA-3's inter-warpgroup ping-pong in Gluon) on the CPU: its registration, its pre-registered header against the
code and the recordings it quotes, the device call that measured it (first run 2026-12-04 18:48), its header's
measured outcome against those recordings, and the target finding it retired on the H200.

Its sm_90a compile (every config, both masks, bf16 and fp16, D 64/128, 12 warps under its register cap) is
test_flashattn_sm90.py's, as r7's is; Triton's interpreter cannot run Gluon (registry.NOT_INTERPRETED), so its
correctness is checked on the GPU, first in a child process (measure/flashattn_preflight.py).
Nothing here imports triton: the interpreter tests of this process must be the first to load it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import flashattn_cases as fc
import flashattn_findings as ff
import flashattn_io as io
import flashattn_r8_findings as r8f
import flashattn_r8_protocol as proto
import pytest
import test_flashattn_gpu as timing

from pytest_anatomy import live_plan, recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.specs import hardware
from pytest_anatomy.theory import attention as at

ROOT = Path(__file__).resolve().parents[1]
R8 = "r8-pingpong"
R7 = "r7-warp-specialized"
MASKS = ("full", "causal")
# the device call (docs/RECORDING.md, "FlashAttention rung r8"): `live_session.sh start r8
# tests_flashattn/test_flashattn_gpu.py -k r8-pingpong`, then `wait r8 300`. It ran (18:47, with r6 and r7 beside it:
# `-k "r8-pingpong or best_rung"`); its log puts the end of r8's fourth case 87.6 s into the session, start-up included
# (results/h200/live-runs/20261204T184728Z.r8.log.xz), which r8's Gluon prices (flashattn_cases) are fitted on.
R8_LIVE_SESSION_S = 87.6


def _target(rung: str, mask: str) -> fc.Case:
    return fc.Case(rung, 4, 32, 4096, 128, causal=mask == "causal")


def _mid_ms(rung: str) -> dict[str, float]:
    spec = hardware.get_hardware(ff.MEASURED_ON)
    return {m: fc.predict(_target(rung, m), fc.PLAN_CEILINGS, spec)[0].value * 1e3 for m in MASKS}


def _header() -> dict[str, str]:
    return registry.header(registry.rung(R8))


def test_r8_is_a_gluon_target_rung_profiled_after_its_first_gpu_session() -> None:
    """r8 joined the Nsight Compute run once it had passed its first GPU session (2026-12-04 18:48), as r7 did:
    its counters' IO prediction is test_flashattn_counters.py's, written before any counter of it."""
    r = registry.rung(R8)
    assert r.dialect == "gluon" and r.path.name == "r8_pingpong.py" and registry.LADDER[-1] == r
    assert R8 in registry.TARGET_RUNGS and r in registry.PROFILED
    assert recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", _target(R8, "full").name)
    assert registry.header_efficiency(r) == (r.efficiency.lo, r.efficiency.mid, r.efficiency.hi)
    # above r7's stated mid, and its low end at or under r7's slower measured mask (no gain over r7 stays in the band)
    assert r.efficiency.mid > registry.rung(R7).efficiency.mid and r.efficiency.lo <= 0.59


def test_r8s_header_states_what_the_code_predicts_at_the_target() -> None:
    """The header's target-shape times are the registry's mid at the planning ceilings, its band the stated range's
    time ratio; 'not yet measured' while no recording of r8 is on the card."""
    ms = _mid_ms(R8)
    effect = _header()["predicted_effect"]
    assert f"{ms['full']:.3f} ms full, {ms['causal']:.3f} ms causal at the mid" in effect, ms
    e = registry.rung(R8).efficiency
    assert f"(band {e.mid / e.hi:.3f}-{e.mid / e.lo:.3f} of it)" in effect
    measured = any(recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", _target(R8, m).name) for m in MASKS)
    assert (_header()["measured_outcome"] == "not yet measured.") == (not measured)


def _r7_first_session() -> dict[str, recordings.Recording]:
    paths = {m: recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn", _target(R7, m).name) for m in MASKS}
    return {m: recordings.load_file(p[0]) for m, p in paths.items()}


def _both(values: dict[str, float], fmt: str) -> str:
    return " / ".join(format(values[m], fmt) for m in MASKS)


def test_r8s_header_quotes_r7s_first_session_as_recorded() -> None:
    """Every number the prediction sets r8 against: r7's first session at the target shape (its time and both sdpa
    backends in the same call), as efficiencies at the planning ceiling, and r8's mid against those backends."""
    first = _r7_first_session()
    effect = _header()["predicted_effect"]
    ms = _mid_ms(R8)
    work_ms = {m: ms[m] * registry.rung(R8).efficiency.mid for m in MASKS}  # executed FLOPs at the ceiling, in ms
    keys = {"time": R7, "sdpa_default_time": "cuDNN", "sdpa_flash_time": "FLASH_ATTENTION"}
    for key, who in keys.items():
        t = {m: first[m][key].value * 1e3 for m in MASKS}
        assert f"({_both(t, '.3f')} ms)" in effect, (who, t)
        assert _both({m: work_ms[m] / t[m] for m in MASKS}, ".2f") in effect, who
    flash = {m: first[m]["sdpa_flash_time"].value * 1e3 for m in MASKS}
    cudnn = {m: first[m]["sdpa_default_time"].value * 1e3 for m in MASKS}
    assert f"{_both({m: flash[m] / ms[m] for m in MASKS}, '.2f').replace(' / ', 'x / ')}x FLASH_ATTENTION" in effect
    assert f"{_both({m: cudnn[m] / ms[m] for m in MASKS}, '.3f').replace(' / ', 'x / ')}x cuDNN" in effect
    assert f"the 1.5x target, {_both({m: flash[m] / timing.FLASH_SPEEDUP for m in MASKS}, '.3f')} ms" in effect
    assert f"the 0.85x target ({_both({m: cudnn[m] / timing.DEFAULT_FRACTION for m in MASKS}, '.3f')} ms)" in effect
    above = {m: work_ms[m] / (flash[m] / timing.FLASH_SPEEDUP) for m in MASKS}
    assert f"at any efficiency above {_both(above, '.2f')}" in effect


def test_r8s_prediction_uses_the_tiling_it_runs() -> None:
    """The registry prices executed FLOPs on (128, 64) tiles; r8 runs 128 x 128 (one masked diagonal tile per causal
    program instead of two 64-wide ones): the same blocks' area, so the same executed FLOPs."""
    for causal in (False, True):
        shape = at.AttentionShape.prefill(4, 32, 4096, 128, causal=causal)
        assert at.executed_flops(shape, at.Tiling(*registry.PREDICTION_TILING)).value == \
            at.executed_flops(shape, at.Tiling(128, 128)).value


def test_r8s_device_call_selects_its_four_cases_and_the_plan_prices_it_as_it_ran() -> None:
    """`-k r8-pingpong` on the timing module selects r8's 4 cases (bf16 and fp16, full and causal) and nothing else;
    `--anatomy-plan` prices that session (its child-process preflight and 4 specialisations' compiles included) at
    what it took (priced 48-59 s before it ran, with r7's Gluon prices; it took 87.6 s, so r8 has its own since)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "gpu",
                          "tests_flashattn/test_flashattn_gpu.py", "-k", R8], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    ids = [line.split("[", 1)[1].rstrip("]") for line in out.stdout.splitlines() if "::" in line]
    cases = {c for c in timing.CASES if c.rung == R8}
    # replayed, each case is collected once per card with recordings (the id's suffix); live, for the detected card
    names = {c.name for c in cases}
    assert ids and all(any(i.startswith(n + "-") for n in names) for i in ids), out.stdout[-2000:]
    assert {n for n in names if any(i.startswith(n + "-") for i in ids)} == names and len(names) == 4
    entries = [live_plan.SESSION_ENTRY, *fc.live_plan(cases, set())]
    low, high = (sum(live_plan.estimate_range(e)[i] for e in entries) for i in (0, 1))
    assert abs(low / R8_LIVE_SESSION_S - 1) < 0.05 and high > R8_LIVE_SESSION_S, (low, high)


def test_r8s_barrier_protocol_finishes_and_alternates_under_any_interleaving() -> None:
    """The model of r8's barriers (flashattn_r8_protocol, transcribed from the kernel): for 1-9 KV tiles a program
    (causal programs run 1 to N/128, full ones 32 at the target shape) and both stage counts, every random
    interleaving ends, and the warpgroups' GEMM issues alternate 0, 1, 0, 1, ... (tiles + 1 turns each)."""
    for tiles in range(1, 10):
        for stages in (2, 3):
            for seed in range(40):
                run = proto.simulate(tiles, stages, seed)
                assert run.finished, (tiles, stages, seed, run.stuck)
                assert run.turns == [0, 1] * (tiles + 1), (tiles, stages, seed, run.turns)


def test_the_protocol_model_catches_a_phase_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model is not vacuous: the second warpgroup waiting on its turn with the other parity never completes a
    program in step (it deadlocks, or takes the first turn out of order)."""
    real = proto.consumer

    def off_by_one(wg: int, tiles: int, stages: int) -> Iterator[proto.Op]:
        for kind, bar, parity in real(wg, tiles, stages):
            yield (kind, bar, parity ^ 1 if (wg == 1 and bar == "turn1") else parity)
    monkeypatch.setattr(proto, "consumer", off_by_one)
    for seed in range(10):
        run = proto.simulate(3, 2, seed)
        assert not (run.finished and run.turns == [0, 1] * 4), seed


def test_r8s_measured_outcome_quotes_its_first_session_as_recorded() -> None:
    """The header's measured outcome: r8's first session at the target shape (bf16 and fp16 times, the ratio to the
    mid at that session's ceilings, both backends in the same calls) and r6 / r7 timed in the same session."""
    first = r8f.first_session()
    outcome = " ".join(_header()["measured_outcome"].split())
    t = {m: first[m]["time"].value for m in MASKS}
    assert f"{_both({m: t[m] * 1e3 for m in MASKS}, '.3f')} ms full / causal bf16" in outcome
    fp16 = {m: recordings.load_file(recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn",
                                                          _target(R8, m).name + "-fp16")[0]) for m in MASKS}
    assert f"({_both({m: fp16[m]['time'].value * 1e3 for m in MASKS}, '.3f')} fp16" in outcome
    mid = {m: ff.to_mid_prediction(_target(R8, m), first[m]) for m in MASKS}
    assert f"{_both(mid, '.3f')}x the mid at the session's ceilings" in outcome
    ratios = {key: {m: first[m][key].value / t[m] for m in MASKS} for key in ("sdpa_flash_time", "sdpa_default_time")}
    assert f"{_both(ratios['sdpa_flash_time'], '.2f').replace(' / ', 'x / ')}x torch's FLASH_ATTENTION" in outcome
    assert f"{_both(ratios['sdpa_default_time'], '.3f').replace(' / ', 'x / ')}x cuDNN" in outcome
    assert all(ratios["sdpa_flash_time"][m] >= timing.FLASH_SPEEDUP for m in MASKS)
    assert all(ratios["sdpa_default_time"][m] >= timing.DEFAULT_FRACTION for m in MASKS)
    for rung in (R7, registry.BEST):
        speed = {m: r8f.beside(rung, first[m])["time"].value / t[m] for m in MASKS}
        assert f"{_both(speed, '.2f').replace(' / ', 'x / ')}x {rung[:2]}'s" in outcome, rung


def test_the_target_finding_is_retired_on_both_recorded_cards() -> None:
    """Both targets met since r8, on the measuring card (2026-12-04) and on the H100 (2026-12-07): the four targets
    carry no finding mark on any card, and the retirement quoted from the recordings still reads them all."""
    assert "not in this checkout" not in r8f.RETIRED_ON_H200
    for test, mode in ff.TARGETS:
        assert r8f.target_marks(test, mode) == ()


SECOND_SESSION = "2026-12-04T20:23"  # r8's second target session (results/h200/live-runs/20261204T202249Z.r8again.*)


def test_r8s_measured_outcome_quotes_its_second_session_and_counters_as_recorded() -> None:
    """The header's second session (times, both backends in the same calls) and its Nsight Compute counters at the
    target shape (reads and writes over Q + K + V and O + LSE, L2 over the tiled count at 128 x 128, the SM's
    throughput and issue slots), each formatted from the recordings."""
    outcome = " ".join(_header()["measured_outcome"].split())
    second = {}
    for m in MASKS:
        runs = map(recordings.load_file, recordings.candidates(ff.RESULTS, ff.MEASURED_ON, "flashattn",
                                                               _target(R8, m).name))
        second[m] = next(r for r in runs if r.recorded_at.startswith(SECOND_SESSION))
    t = {m: second[m]["time"].value for m in MASKS}
    assert f"{_both({m: t[m] * 1e3 for m in MASKS}, '.3f')} ms" in outcome
    for key, fmt in (("sdpa_flash_time", ".2f"), ("sdpa_default_time", ".3f")):
        ratio = {m: second[m][key].value / t[m] for m in MASKS}
        assert f"{_both(ratio, fmt).replace(' / ', 'x / ')}x" in outcome, key
        assert all(ratio[m] >= (timing.FLASH_SPEEDUP if key == "sdpa_flash_time" else timing.DEFAULT_FRACTION)
                   for m in MASKS)
    ncu = {m: recordings.load_latest(ff.RESULTS, ff.MEASURED_ON, "flashattn", f"ncu.{_target(R8, m).name}")
           for m in MASKS}
    shape = {m: _target(R8, m).shape() for m in MASKS}
    writes = {m: ncu[m]["dram_write_bytes"].value / io.expected_writes(R8, shape[m])[0].value for m in MASKS}
    l2 = {m: ncu[m]["l2_bytes"].value / at.tiled_bytes(shape[m], at.Tiling(128, 128)).value for m in MASKS}
    assert f"writes {_both(writes, '.2f')}x O + LSE" in outcome
    assert f"L2 bytes {_both(l2, '.2f')}x the tiled count" in outcome
    busy = {m: ncu[m]["sm_throughput_pct"].value for m in MASKS}
    issue = {m: ncu[m]["issue_slots_busy_pct"].value for m in MASKS}
    assert f"SM throughput {_both(busy, '.0f')}% and issue slots {_both(issue, '.0f')}% busy" in outcome
