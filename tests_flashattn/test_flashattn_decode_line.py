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


@pytest.mark.parametrize("context", [4096, 8192, 65536])
def test_no_line_finding_where_the_lines_agree_or_the_points_lie(context: int) -> None:
    assert dl.decode_line_marks(context) == ()
