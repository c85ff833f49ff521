"""Headline counts count predictions only; identities, settings, fit points and replays are listed apart."""
from pytest_anatomy.ledger_counts import counts_by_kind, headline, ledger_block
from pytest_anatomy.report.ci_summary import render_summary
from pytest_anatomy.report.terminal import prose_summary


def _entries() -> list[dict]:
    return ([{"verdict": "agree", "kind": "prediction", "source": "recorded", "suite": "s"}] * 3
            + [{"verdict": "finding", "kind": "prediction", "source": "recorded", "suite": "s"}]
            + [{"verdict": "agree", "kind": "identity", "source": "recorded", "suite": "s"}] * 2
            + [{"verdict": "diverge", "kind": "identity", "source": "recorded", "suite": "s"}]
            + [{"verdict": "agree", "kind": "setting", "source": "recorded", "suite": "s"}] * 4
            + [{"verdict": "agree", "source": "live", "suite": "s"}])  # no kind: a prediction


def test_counts_by_kind_keeps_each_kind_apart_in_the_declared_order() -> None:
    by_kind = counts_by_kind(_entries())
    assert list(by_kind) == ["prediction", "identity", "setting"]
    assert by_kind["prediction"] == {"agree": 4, "finding": 1, "resolved": 0, "diverge": 0}
    assert by_kind["identity"] == {"agree": 2, "finding": 0, "resolved": 0, "diverge": 1}


def test_headline_counts_predictions_and_lists_the_rest_with_their_failures() -> None:
    assert headline(_entries()) == ("12 reconciliations: 5 predictions (4 agree, 1 finding, 0 resolved, 0 diverge); "
                                    "apart: 3 identities (1 diverge), 4 settings")
    assert prose_summary({"reconciliations": _entries()}).endswith("; 11 from recordings, 1 live")


def test_a_ledger_of_predictions_reads_as_before_kinds_existed() -> None:
    only = [e for e in _entries() if e.get("kind", "prediction") == "prediction"]
    assert headline(only) == "5 reconciliations: 4 agree, 1 finding, 0 resolved, 0 diverge"


def test_the_json_block_and_the_ci_table_count_predictions_only() -> None:
    block = ledger_block(_entries())
    assert block["verdicts"] == {"agree": 4, "finding": 1}
    assert block["kinds"]["setting"] == {"agree": 4}
    text = render_summary({"reconciliations": _entries()})
    assert "| suite | hardware | agree | finding | resolved | diverge | identities | settings |" in text
    assert "| s | — | 4 | 1 | 0 | 0 | 3 | 4 |" in text


def test_a_long_headline_is_wrapped_in_the_terminal_never_cut() -> None:
    from pytest_anatomy.report.terminal import MAX_WIDTH, summary_lines

    kinds = ["identity", "setting", "fit", "replay"]
    entries = [{"verdict": "agree", "kind": k, "source": "recorded", "suite": "s"} for k in kinds * 3]
    entries += [{"verdict": "finding", "kind": "prediction", "source": "recorded", "suite": "s"}] * 1234
    lines = summary_lines({"reconciliations": entries})
    assert all(len(line) <= MAX_WIDTH for line in lines)
    assert "from recordings, 0 live" in " ".join(lines[:2]).replace("    ", " ")


def test_the_ci_summary_counts_finding_bands_by_source() -> None:
    """Each finding verdict with a band counts once under its mark's band_from (an agree under a mark does not; a
    ledger from before band_from existed counts as "not stated")."""
    def entry(verdict: str, source: str | None) -> dict:
        return {"verdict": verdict, "kind": "prediction", "suite": "s",
                "finding": {"id": "f", "reason": "r", "expected": [1.1, 1.2], "band_from": source}}

    text = render_summary({"reconciliations": [entry("finding", "other-runs")] * 3 + [entry("finding", "checked-run"),
                           entry("resolved", None), entry("agree", "explanation")]})
    assert "Finding bands by source: 3 other-runs, 1 checked-run, 1 not stated (checked-run:" in text
    assert "Finding bands" not in render_summary({"reconciliations": _entries()})


def test_a_finding_verdict_without_a_band_is_counted_not_left_out() -> None:
    """Issue 10 item 3: the line counts every finding verdict of a mark, so one without a band (a ledger from before
    bands were required, or written by another tool) shows as "no band" instead of vanishing from the count."""
    def entry(verdict: str, expected: list[float] | None, source: str | None) -> dict:
        return {"verdict": verdict, "kind": "prediction", "suite": "s",
                "finding": {"id": "f", "reason": "r", "expected": expected, "band_from": source}}

    text = render_summary({"reconciliations": [entry("finding", [0.9, 1.1], "other-runs"), entry("finding", None, None),
                                               entry("diverge", None, "checked-run"), entry("agree", None, None)]})
    assert "Finding bands by source: 1 other-runs, 2 no band (checked-run:" in text


def test_the_terminal_summary_counts_finding_bands_by_source_too() -> None:
    from pytest_anatomy.report.terminal import summary_lines

    entry = {"verdict": "finding", "kind": "prediction", "suite": "s", "source": "recorded",
             "finding": {"id": "f", "reason": "r", "expected": [1.1, 1.2], "band_from": "checked-run"}}
    assert any(line.startswith("Finding bands by source: 1 checked-run") for line in summary_lines(
        {"reconciliations": [entry]}))


def test_the_summarys_pytest_line_counts_findings_and_errors_as_nouns() -> None:
    """pytest says '2 passed, 3 findings, 1 error': outcomes are verbs, a finding and an error are counted nouns."""
    text = render_summary({"reconciliations": [], "tests": {"passed": 2, "finding": 3, "error": 1, "resolved": 1}})
    assert "pytest: 2 passed, 3 findings, 1 error, 1 resolved" in text
    assert "pytest: 1 finding" in render_summary({"reconciliations": [], "tests": {"finding": 1}})
