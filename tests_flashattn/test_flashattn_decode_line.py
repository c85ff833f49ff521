"""The flash-decoding line (flashattn_decode_line): its arithmetic, and the finding it bands on the recorded H200."""

from __future__ import annotations

import flashattn_decode_line as dl
import pytest
from flashattn_findings import session_ceilings

from pytest_anatomy import recordings


def test_a_line_needs_the_longer_context_to_take_longer() -> None:
    with pytest.raises(ValueError, match="no line"):
        dl.Line.through((1e8, 2e-5), (1e9, 1e-5))


def test_the_lines_are_drawn_only_from_sessions_before_the_contexts_they_band() -> None:
    lines = dl.session_lines()
    first_of_new = min(recordings.load_file(p).recorded_at
                       for p in recordings.candidates(dl.RESULTS, dl.MEASURED_ON, "flashattn", dl.decode_name(1024)))
    assert dl.FIT_BEFORE < first_of_new and len(lines) == 25
    for line, ceil in lines:  # every session's line: a fixed cost of ~10 us, a stream at about the read ceiling
        assert 9e-6 < line.fixed_s < 12e-6 and 0.99 < line.bytes_per_s / ceil.read_bandwidth < 1.04


@pytest.mark.parametrize("context", [1024, 2048, 16384, 32768, 131072])
def test_each_recorded_context_lies_in_the_band_the_earlier_lines_give(context: int) -> None:
    """The finding's claim on the recorded session: its measured / mid prediction inside the earlier lines' range,
    which lies outside the pre-registered tolerance (else no finding would be marked)."""
    (mark,) = dl.decode_line_marks(context)
    lo, hi = mark.kwargs["expected"]
    rec = recordings.load_latest(dl.RESULTS, dl.MEASURED_ON, "flashattn", dl.decode_name(context))
    ceil = session_ceilings(rec)
    ratio = rec["time"].value / dl.mid_prediction(context, ceil, rec.provenance["sm_count"])
    assert lo <= ratio <= hi
    tol = dl.pre_registered_tolerance(context, ceil, rec.provenance["sm_count"])
    assert not (tol[0] <= lo and hi <= tol[1])
    assert mark.kwargs["strict"] == (context not in dl.STRADDLERS)


@pytest.mark.parametrize("context", dl.BANDED_CONTEXTS)
def test_each_line_finding_lies_on_one_side_of_the_tolerance_its_cause_names(context: int) -> None:
    """One finding per cause and side (issue 10 item 3): the fixed part's finding bands only contexts above the
    pre-registered tolerance (its whole band above the tolerance's middle, its top above the upper edge), the full
    stream's only contexts below it (its whole band under the lower edge)."""
    (mark,) = dl.decode_line_marks(context)
    lo, hi = mark.kwargs["expected"]
    rec = recordings.load_latest(dl.RESULTS, dl.MEASURED_ON, "flashattn", dl.decode_name(context))
    tol = dl.pre_registered_tolerance(context, session_ceilings(rec), rec.provenance["sm_count"])
    if mark.args[0] == dl.FIXED_COST_ID:
        assert hi > tol[1] and lo > 1.0 and "Short contexts take longer" in mark.kwargs["reason"]
    else:
        assert mark.args[0] == dl.FULL_STREAM_ID
        assert hi < tol[0] and "Long contexts take less time" in mark.kwargs["reason"]
    assert {dl.decode_line_marks(c)[0].args[0] for c in dl.BANDED_CONTEXTS} == {dl.FIXED_COST_ID, dl.FULL_STREAM_ID}


def test_no_session_the_findings_judge_draws_a_line_of_their_bands() -> None:
    """The checked session's own 8k and 64k never enter the bands: every session holding a banded context is left out
    of the lines whatever the cutoff (here none), so the band cannot follow the run it judges."""
    checked = {recordings.load_latest(dl.RESULTS, dl.MEASURED_ON, "flashattn", dl.decode_name(c))
               .provenance["ceilings_recorded_at"] for c in dl.BANDED_CONTEXTS}
    assert checked <= dl.banded_sessions()
    by_session: dict[str, dict[int, float]] = {}
    for c in dl.FIT_CONTEXTS:
        for p in recordings.candidates(dl.RESULTS, dl.MEASURED_ON, "flashattn", dl.decode_name(c)):
            rec = recordings.load_file(p)
            by_session.setdefault(rec.provenance["ceilings_recorded_at"], {})[c] = rec["time"].value
    lo, hi = dl.FIT_CONTEXTS
    own = [dl.Line.through((dl.kv_bytes(lo), by_session[k][lo]), (dl.kv_bytes(hi), by_session[k][hi]))
           for k in checked if len(by_session.get(k, {})) == 2]
    assert own, "the checked sessions timed 8k and 64k too: their lines exist to be left out"
    every = [line for line, _ in dl.session_lines("9999")]  # no cutoff: only the exclusion keeps them out
    assert not set(own) & set(every)
    assert len(every) == sum(1 for k, pair in by_session.items() if len(pair) == 2 and k not in dl.banded_sessions())


@pytest.mark.parametrize("context", [4096, 8192, 65536])
def test_no_line_finding_where_the_lines_agree_or_the_points_lie(context: int) -> None:
    assert dl.decode_line_marks(context) == ()
