"""fd2, flash-decoding with the reduction fused (kernels/flashattn/decode_fused.py), on the CPU before its first run:
its registration beside the two-kernel variant, its header's prediction against the recorded lines it is computed
from (flashattn_fd2), the saving test's arithmetic, and the device call that will time it.

Its correctness under Triton's interpreter is test_flashattn_interpreter.py's (the counter's reset included), its
sm_90 lowering (the barrier before the acq_rel atomic, the registers) test_flashattn_sm90.py's. Nothing here imports
triton: the interpreter tests of this process must be the first to load it.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import flashattn_cases as fc
import flashattn_decode_line as dl
import flashattn_fd2 as fd2
import pytest
import test_flashattn_gpu as timing
from flashattn_findings import session_ceilings

from pytest_anatomy import live_plan, recordings
from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.measure.flashattn_runner import decode_name

ROOT = Path(__file__).resolve().parents[1]
RECORDING_MD = ROOT / "docs" / "RECORDING.md"
SECTION = "## Flash-decoding with the reduction fused: prediction written before any run (issue 22)"
LIVE_SESSION_SCRIPT_S = 15.0  # live_session.sh's install and packing (test_flashattn_plan.py)


def _fd2_recorded() -> bool:
    return any(recordings.candidates(dl.RESULTS, dl.MEASURED_ON, "flashattn", decode_name(context=c, variant=fd2.FUSED.id,
                                                                                          **dl.SHAPE))
               for c in timing.DECODE_CONTEXTS)


def test_fd2_is_a_variant_beside_the_two_kernel_one_and_its_recordings_are_apart() -> None:
    """The two-kernel variant keeps its names (every recorded `fd.` session replays as before); fd2's recordings are
    `fd2.`, a prefix no `fd.` name starts with; the saving is stated in the registry, its mid the first
    pre-registration's kernel boundary less the fused tail."""
    assert [v.id for v in registry.DECODE_VARIANTS] == ["fd-split-reduce", "fd2-fused-reduce"]
    assert not registry.DECODE_VARIANTS[0].fused_reduce and registry.DECODE_VARIANTS[1].fused_reduce
    assert decode_name(8, 32, 8, 8192, 128) == "fd.b8h32kv8l8192d128"
    assert decode_name(8, 32, 8, 8192, 128, "fd2-fused-reduce") == "fd2.b8h32kv8l8192d128"
    assert fd2.FUSED.path.name == "decode_fused.py" and fd2.SPLIT.path.name == "decode.py"
    s = registry.DECODE_FUSED_SAVING
    assert math.isclose(s.mid, registry.DECODE_LAUNCH_S - registry.DECODE_FUSED_TAIL_S) and 0 < s.lo < s.mid < s.hi
    with pytest.raises(KeyError, match="no flash-decoding variant"):
        registry.decode_variant("fd3")


def test_the_header_states_what_the_recorded_lines_predict() -> None:
    """decode_fused.py's 'Predicted effect' holds flashattn_fd2.prediction_text, every number recomputed from the 25
    recorded lines and the registry; 'Measured outcome' says not yet measured while no fd2 recording exists."""
    header = registry.header(fd2.FUSED)
    assert " ".join(fd2.prediction_text().split()) in header["predicted_effect"]
    assert (header["measured_outcome"] == "not yet measured.") == (not _fd2_recorded())


def test_the_prediction_stands_on_the_recorded_sessions() -> None:
    """Each line passes through its session's own 8k call, so fd2 at zero saving is that call's measured fraction of
    the read ceiling; at the stated saving (lo to hi) every one of the 25 lines is at or above the 85% target, where
    the two-kernel calls are on either side of it."""
    p = fd2.line_prediction()
    assert p.sessions == 25 and 10.0 < p.fixed_us.median < 11.0
    lo, _ = dl.FIT_CONTEXTS
    for path in recordings.candidates(dl.RESULTS, dl.MEASURED_ON, "flashattn", dl.decode_name(lo)):
        rec = recordings.load_file(path)
        if rec.recorded_at >= dl.FIT_BEFORE:
            continue
        measured = dl.kv_bytes(lo) / rec["time"].value / session_ceilings(rec).read_bandwidth
        assert any(math.isclose(measured, fd2.fraction(line, ceil.read_bandwidth, lo, 0.0), rel_tol=1e-9)
                   for line, ceil in dl.session_lines())
    assert p.met_8k["lo"] == p.met_8k["mid"] == p.met_8k["hi"] == p.sessions > p.met_8k["split"] > 0
    assert p.at_8k["split"].lo < fd2.TARGET_FRACTION < p.at_8k["lo"].lo
    assert p.at_64k["split"].median < p.at_64k["mid"].median < p.at_64k["split"].median * 1.01


def test_the_saving_tests_band_is_the_stated_saving_widened_by_the_timing_noise() -> None:
    t, s = 71.2e-6, registry.DECODE_FUSED_SAVING
    pred, band, why = fd2.saving_prediction(t, 0.0, 0.0)
    assert math.isclose(pred.value, t - s.mid)
    assert math.isclose(band[0] * pred.value, t - s.hi) and math.isclose(band[1] * pred.value, t - s.lo)
    _, wide, _ = fd2.saving_prediction(t, 0.3e-6, 0.4e-6)
    assert math.isclose((wide[1] - band[1]) * pred.value, 0.5e-6) and math.isclose((band[0] - wide[0]) * pred.value,
                                                                                   0.5e-6)
    assert "1.0-5.0 us (mid 2.5)" in why and pred.notes[0].startswith("STATED, not fitted")


def _device_call() -> str:
    text = RECORDING_MD.read_text(encoding="utf-8")
    assert SECTION in text, "docs/RECORDING.md has no fd2 pre-registration section"
    body = text[text.index(SECTION):]
    end = body.find("\n## ", len(SECTION))  # the section runs to the next one (later sections may follow it)
    return " ".join(body[:end if end >= 0 else len(body)].split())


def test_the_device_call_selects_fd2s_tests_and_is_priced_in_recording_md() -> None:
    """`-k fd2` on the timing module selects fd2's saving test at 8k and 64k and its 85% target test at 8k-128k (7 per
    card), nothing of the two-kernel variant's own tests; it measures fd2's 5 contexts and the two-kernel 8k and 64k
    beside them. docs/RECORDING.md's section gives that command and the plan's price."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "gpu",
                          "tests_flashattn/test_flashattn_gpu.py", "-k", "fd2"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    ids = [line.split("::", 1)[1] for line in out.stdout.splitlines() if "::" in line]
    want = {f"test_fused_reduction_saves_its_stated_time[fd2.b8h32kv8l{c}d128" for c in dl.FIT_CONTEXTS} | {
        f"test_flash_decoding_at_least_85pct_of_read_bandwidth[fd2.b8h32kv8l{d.context}d128"
        for d, v in timing.TARGET_DECODES if v.fused_reduce}
    cards = {i[i.index("d128") + 5:].rstrip("]") for i in ids}  # replayed: once per card with recordings
    assert len(want) == 7 and {i[:i.index("d128") + 4] for i in ids} == want and len(ids) == 7 * len(cards), ids
    measured = {(d, "fd2") for d, v in timing.TARGET_DECODES if v.fused_reduce} | {
        (d, "fd") for d in timing.DECODES if d.context in dl.FIT_CONTEXTS}
    entries = [live_plan.SESSION_ENTRY, *fc.live_plan(measured, set())]
    low, high = (sum(live_plan.estimate_range(e)[i] for e in entries) for i in (0, 1))
    call = _device_call()
    assert ("live_session.sh start fd2 tests_flashattn/test_flashattn_gpu.py -k fd2 --anatomy-record" in call
            and "live_session.sh wait fd2" in call)
    assert f"{low:.0f}-{high:.0f} s by the plan" in call, (low, high)
    assert f"~{low + LIVE_SESSION_SCRIPT_S:.0f}-{high + LIVE_SESSION_SCRIPT_S:.0f} s" in call


def test_the_64k_merge_finding_is_banded_by_the_h200s_measured_saving_not_by_the_run_it_judges() -> None:
    """fd2-64k-merge-costs-what-the-launch-saved: its band is a saving from 0 to the H200's first fd2 session's 64k
    saving (itself under the stated low end), widened by the noise; the stated saving's band lies apart from it, so
    the finding says something the prediction does not. Marked on 64k only, on the second card only."""
    saving, noise = fd2.first_saving(fd2.MEASURED_ON)
    assert 0.0 < saving < fd2.SAVING.lo and noise > 0.0
    split, own_noise = 710.54e-6, 1.0e-6  # any two-kernel time at 64k: the band's edges are savings around it
    lo, hi = fd2.merge_band(fd2.MERGE_CONTEXT, fd2.MERGE_CARD, split, own_noise, own_noise)
    mid = split - fd2.SAVING.mid
    total = math.hypot(own_noise, own_noise, noise)
    assert lo == pytest.approx((split - saving - total) / mid, abs=1e-5)
    assert hi == pytest.approx((split + total) / mid, abs=1e-5)
    assert hi > fd2.saving_prediction(split, own_noise, own_noise)[1][1]  # no saving at all is outside the stated band
    (mark,) = fd2.merge_marks(fd2.MERGE_CONTEXT)
    assert mark.kwargs["hardware"] != fd2.MEASURED_ON and mark.kwargs["band_from"] == "other-runs"
    # the H100's saving is quoted from its recordings
    assert fd2.saving_us(fd2.first_saving(mark.kwargs["hardware"])[0]) in mark.kwargs["reason"]
    assert fd2.merge_marks(8192) == () and fd2.merge_band(8192, fd2.MERGE_CARD, split, own_noise, own_noise) is None
    assert fd2.merge_band(fd2.MERGE_CONTEXT, fd2.MEASURED_ON, split, own_noise, own_noise) is None  # no mark there


def test_the_merge_finding_straddles_the_stated_band_across_the_h100s_sessions() -> None:
    """strict=False because the H100's two fd2 sessions land either side: the first saved less than its stated band
    allows (diverged), the second inside it once widened by its noise (resolves the finding on replay)."""
    (mark,) = fd2.merge_marks(fd2.MERGE_CONTEXT)
    assert mark.kwargs["strict"] is False
    first, second = (fd2.saving_of(fd2.H100, n)[0] for n in (0, 1))
    assert first < 0.0 < fd2.SAVING.lo - second  # no saving in the first, under the stated low end in the second
    assert fd2.saving_us(second) in mark.kwargs["reason"]


def test_the_merge_band_names_the_recording_it_lacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree without the H200's fd2 session (the H100's 2026-12-07 05:42 call ran on a copy slimmed of results/) gets
    MissingRecording naming the file, which the live test turns into a one-line skip after both times are recorded;
    it raised an IndexError there."""
    import flashattn_findings as ff
    from pytest_anatomy import recordings

    monkeypatch.setattr(ff, "RESULTS", tmp_path)
    fd2.saving_of.cache_clear()
    try:
        first = decode_name(context=fd2.MERGE_CONTEXT, variant=fd2.FUSED.id, **dl.SHAPE)
        with pytest.raises(recordings.MissingRecording, match=re.escape(f"{ff.MEASURED_ON}/flashattn/{first}@*")):
            fd2.merge_band(fd2.MERGE_CONTEXT, fd2.MERGE_CARD, 710.54e-6, 1.0e-6, 1.0e-6)
    finally:
        fd2.saving_of.cache_clear()
