"""Renderers of the reconciliation report: terminal lines, the HTML page, pytest-html columns.

CPU only, no plugin registration needed: the renderers are pure functions of a ledger dict."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy.report.embedded import gap_fields, read_page
from pytest_anatomy.report.formatting import format_tolerance
from pytest_anatomy.report.html import embedded_payload, expand_embedded, render_html, write_report
from pytest_anatomy.report.pytest_html import (
    AnatomyHtmlColumns,
    reconciliations_from_report,
    worst_verdict,
)
from pytest_anatomy.report.terminal import MAX_WIDTH, summary_lines

pytest_plugins = ["pytester"]


def _rec(name: str, predicted: float, measured: float, unit: str, verdict: str, **extra: Any) -> dict[str, Any]:
    gap = measured - predicted
    rec: dict[str, Any] = {
        "suite": "capacity",
        "test_id": f"tests_capacity/test_seed_capacity.py::test_{name}[round2]",
        "name": name,
        "predicted": predicted,
        "measured": measured,
        "unit": unit,
        "gap_abs": gap,
        "gap_rel": gap / predicted if predicted else None,
        "ratio": measured / predicted if predicted else None,
        "tolerance": {"rel": 0.001, "abs": 0.0, "ratio": None, "why": "vLLM logs GiB to 2 decimals: +-0.08%"},
        "verdict": verdict,
        "source": "recorded",
        "hardware": "rtx4090",
        "model": "qwen2.5-7b",
        "provenance": {
            "source": "seed", "gpu": "NVIDIA GeForce RTX 4090", "driver": "580.159.03", "engine": "vllm",
            "engine_version": "0.27.1", "date": "2026-08-25T00:00:00Z", "command": "python seed_capacity.py",
            "recording": "results/rtx4090/capacity/kv@20260825T000000Z.json",
            "origin": {"repo": "seed-results/01", "path": "Results/Round2/log.txt", "sha256": "ab12" * 16},
        },
        "prediction": {
            "value": predicted, "unit": unit, "formula": "available_kv_bytes / kv_bytes_per_token",
            "inputs": {"available_kv_bytes": 6882599567.36, "kv_bytes_per_token": 57344},
            "terms": [{"name": "kv_bytes_per_token", "value": 57344, "unit": "B", "note": "2 x 28 x 4 x 128 x 2"}],
            "notes": ["block rounding ignored: 16-token blocks"],
        },
        "finding": None,
    }
    rec.update(extra)
    return rec


def sample_ledger() -> dict[str, Any]:
    """One reconciliation of each verdict, plus a zero prediction and a skip."""
    finding = {"id": "decode-launch-overhead", "reason": "~6 ms of CPU launch overhead per step is not in the roofline"}
    recs = [
        _rec("kv_tokens", 120025.4, 120064.0, "tokens", "agree"),
        _rec("decode_step", 0.01583, 0.0221, "s", "finding", suite="latency", source="live", finding=finding,
             tolerance={"rel": 0.0, "abs": 0.0, "ratio": [0.9, 1.1], "why": "roofline ignores launch cost"}),
        _rec("kv_blocks", 7501.0, 7504.0, "blocks", "resolved",
             finding={"id": "seed-kv-pool-driver", "reason": "driver 580 reserved 300 MiB more"}),
        _rec("sgemm_k03", 45e12, 21.3e12, "FLOP/s", "diverge", suite="kernels", source="live",
             tolerance={"rel": 0.15, "abs": 0.0, "ratio": None, "why": "smem tiling reaches 85% of peak"}),
        _rec("queue_wait", 0.0, 0.0004, "s", "agree", suite="latency",
             tolerance={"rel": 0.0, "abs": 0.001, "ratio": None, "why": "idle server: no queueing"}),
    ]
    return {
        "schema": "pytest-anatomy/report/v1",
        "created": "2026-11-30T01:02:03Z",
        "version": "0.1.0",
        "environment": {
            "python": "3.11.7", "platform": "Linux-6.8-x86_64", "pytest": "9.0.3",
            "packages": {"vllm": None, "torch": "2.9.0"}, "git_commit": "abc123", "hardware_option": "auto",
            "source_option": "auto", "live_gpu": None, "command": "pytest tests_capacity",
        },
        "reconciliations": recs,
        "tests": {"passed": 3, "failed": 1, "skipped": 1, "finding": 1, "resolved": 1},
        "skips": [{"test_id": "tests_capacity/test_h200.py::test_kv_tokens",
                   "reason": "no recording results/h200/capacity/...@*.json and no live GPU"}],
    }


def empty_ledger() -> dict[str, Any]:
    ledger = sample_ledger()
    ledger["reconciliations"] = []
    ledger.pop("tests")
    return ledger


class _Attrs(HTMLParser):
    """Collects every attribute value."""

    def __init__(self) -> None:
        super().__init__()
        self.attrs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [(k, v or "") for k, v in attrs]


def _parse(page: str) -> _Attrs:
    parser = _Attrs()
    parser.feed(page)
    return parser


def test_html_shows_numbers_derivation_and_findings() -> None:
    page = render_html(sample_ledger())
    for text in ("120,025.4 tokens", "120,064 tokens", "+0.03%", "15.83 ms", "22.1 ms", "+39.6%", "-52.7%"):
        assert text in page, text
    # Derivations are drawn in the browser from the embedded ledger (tests_plugin/test_report_browser.py
    # checks the drawing): the page carries each one once, as data; the script makes a row's box when it opens.
    ledger = expand_embedded(read_page(page))
    assert ledger["reconciliations"][0]["prediction"]["formula"] == "available_kv_bytes / kv_bytes_per_token"
    assert page.count('<details class="rec ') == 5 and '<div class="derivation"' not in page
    assert 'data-i="0"' in page and 'data-i="4"' in page
    texts = "\n".join(read_page(page)["text_table"])  # the texts the script writes into the page (in the ledger)
    assert "vLLM logs GiB to 2 decimals: +-0.08%" in texts
    assert 'id="findings"' in page and "decode-launch-overhead" in page and "~6 ms of CPU launch overhead" in texts
    assert "no recording results/h200/capacity" in page
    assert page.count("<details") == 5


def test_summary_per_suite_and_hardware_leads_the_page() -> None:
    page = render_html(sample_ledger())
    table = page[page.index('<table class="overview"'):page.index("</table>", page.index('<table class="overview"'))]
    assert page.index('<table class="overview"') < page.index('id="findings"')
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td><td class=\"num\">(\d+)</td>", table)
    assert rows == [("capacity", "rtx4090", "2"), ("kernels", "rtx4090", "1"), ("latency", "rtx4090", "2")]


def test_plots_and_suite_headings_count_predictions_and_list_the_other_kinds_apart() -> None:
    """Issue 10: an identity or a setting on the predicted-vs-measured diagonal is no evidence for the theory, so the
    plots draw predictions only; each suite's heading counts its predictions' verdicts and lists the other kinds
    apart (with their verdicts where some are not agree), and their rows say their kind."""
    ledger = sample_ledger()
    ledger["reconciliations"] += [_rec("kv_tokens_echo", 100.0, 100.0, "tokens", "agree", kind="setting"),
                                  _rec("kv_tokens_sum", 100.0, 150.0, "tokens", "diverge", kind="identity")]
    page = render_html(ledger)
    assert "predicted versus measured" not in page  # one prediction in tokens: a lone point, no panel
    plots = page[page.index('id="plots"'):page.index("</section>", page.index('id="plots"'))]
    assert "kv_tokens_sum" not in plots and "decode_step" in plots  # no bar for the diverging identity
    heading = re.search(r"<h3>capacity <small>([^<]*)</small>", page)
    assert heading and heading.group(1) == ("2 predictions: 1 agree, 1 resolved · apart: 1 identity (1 diverge), "
                                            "1 setting")
    assert page.count('<i class="kind">') == 2 and '<i class="kind">setting</i>' in page
    ledger["reconciliations"].append(_rec("kv_tokens_2", 100.0, 101.0, "tokens", "agree"))
    assert render_html(ledger).count("predicted versus measured") == 1


def test_single_point_predicted_vs_measured_panels_are_dropped() -> None:
    ledger = sample_ledger()  # every unit here has one positive point
    assert "predicted versus measured" not in render_html(ledger)
    ledger["reconciliations"].append(_rec("kv_tokens_2", 100.0, 101.0, "tokens", "agree"))
    assert render_html(ledger).count("predicted versus measured") == 1


def test_embedded_json_parses_back_equal() -> None:
    ledger = sample_ledger()
    assert expand_embedded(read_page(render_html(ledger))) == ledger


def test_embedded_provenance_is_written_once_per_distinct_entry() -> None:
    ledger = sample_ledger()
    for rec in ledger["reconciliations"]:
        rec["provenance"] = {"recording": "results/x.json"}
    embedded = read_page(render_html(ledger))
    assert embedded["provenance_table"] == [{"recording": "results/x.json"}]
    assert {rec["provenance"] for rec in embedded["reconciliations"]} == {0}
    assert expand_embedded(embedded) == ledger


def test_embedded_texts_are_written_once_per_distinct_text() -> None:
    """A finding's reason, a formula, a note or a tolerance's why that many rows repeat is written once in the page
    (text_table) and each row holds its index there; expanded, the rows are the JSON ledger's."""
    ledger = sample_ledger()
    reason = "one long explanation " * 20
    for rec in ledger["reconciliations"]:
        rec["finding"] = {"id": "f", "reason": reason}
        rec["tolerance"] = {**(rec.get("tolerance") or {}), "why": "the same why"}
    page = render_html(ledger)
    embedded = read_page(page)
    assert embedded["text_table"].count(reason) == 1 and embedded["text_table"].count("the same why") == 1
    assert {rec["finding"]["reason"] for rec in embedded["reconciliations"]} == {embedded["text_table"].index(reason)}
    assert expand_embedded(embedded) == ledger


def test_embedded_findings_leave_out_their_default_keys_and_get_them_back() -> None:
    """A finding mark's quantity null, hardware null and strict true are left out of the page (marked "d": 1); a
    finding with any other value, or without those keys, stays as it was; expanded, every row is the ledger's."""
    ledger = sample_ledger()
    recs = ledger["reconciliations"]
    recs[0]["finding"] = {"id": "a", "reason": "r", "quantity": None, "expected": [0.9, 1.1], "hardware": None,
                          "strict": True, "band_from": "other-runs"}
    recs[1]["finding"] = {"id": "b", "reason": "r", "quantity": None, "hardware": "card-x", "strict": True}
    recs[2]["finding"] = {"id": "c", "reason": "r"}
    embedded = read_page(render_html(ledger))
    found = [rec["finding"] for rec in embedded["reconciliations"][:3]]
    assert found[0]["d"] == 1 and not {"quantity", "hardware", "strict"} & set(found[0])
    assert "d" not in found[1] and found[1]["hardware"] == "card-x" and "d" not in found[2]
    assert expand_embedded(embedded) == ledger


def test_embedded_gap_fields_and_source_are_left_out_only_where_they_are_the_arithmetic_and_default() -> None:
    """gap_abs, gap_rel and ratio are left out (marked "g": 1) only where they are exactly reconcile's arithmetic on
    predicted and measured, and a source "recorded" only where it is that default; any other value stays, and
    expanded every row is the ledger's."""
    ledger = sample_ledger()
    recs = ledger["reconciliations"]
    for rec in recs:
        rec.update(gap_fields(rec["predicted"], rec["measured"]) or {}, source="recorded")
    recs[1]["ratio"] = recs[1]["ratio"] * (1 + 1e-15) + 1e-300  # not the arithmetic: kept
    recs[2]["source"] = "live"
    recs[3]["predicted"] = 0.0
    recs[3].update(gap_fields(0.0, recs[3]["measured"]) or {})
    del recs[4]["source"]
    embedded = read_page(render_html(ledger))["reconciliations"]
    assert embedded[0]["g"] == 1 and not {"gap_abs", "gap_rel", "ratio", "source"} & set(embedded[0])
    assert "g" not in embedded[1] and embedded[1]["ratio"] == recs[1]["ratio"]
    assert embedded[2]["source"] == "live" and embedded[3]["g"] == 1 and embedded[4]["source"] is None
    assert gap_fields(0.0, 2.0) == {"gap_abs": 2.0, "gap_rel": None, "ratio": None} and gap_fields("x", 1.0) is None
    assert expand_embedded(read_page(render_html(ledger))) == ledger


def test_embedded_test_ids_share_their_module_and_function() -> None:
    """A test id's part before its parameters is written once in the page (text_table), each row holding its index and
    its own parameters; a test id without parameters is the index alone. Expanded, the rows are the JSON ledger's."""
    ledger = sample_ledger()
    for i, rec in enumerate(ledger["reconciliations"]):
        rec["test_id"] = f"tests_capacity/test_seed_capacity.py::test_shared[case{i}]"
    ledger["reconciliations"][0]["test_id"] = "tests_capacity/test_seed_capacity.py::test_plain"
    page = render_html(ledger)
    embedded = read_page(page)
    texts = embedded["text_table"]
    assert texts.count("tests_capacity/test_seed_capacity.py::test_shared") == 1
    head = texts.index("tests_capacity/test_seed_capacity.py::test_shared")
    assert [rec["test_id"] for rec in embedded["reconciliations"][1:]] == [[head, f"[case{i}]"] for i in range(1, 5)]
    assert embedded["reconciliations"][0]["test_id"] == texts.index("tests_capacity/test_seed_capacity.py::test_plain")
    rows = page[page.index('<section id="reconciliations">'):page.index("</section>", page.index('id="reconciliations"'))]
    # once, in the text table: the gap bars' labels are whole here, so they carry no test-id tooltip
    assert "test_seed_capacity.py" not in rows and "test_seed_capacity.py::test_shared" not in page
    assert expand_embedded(embedded) == ledger


def test_rows_carry_no_search_text_the_script_builds_it() -> None:
    """The verdict filter and the search read data-verdict and data-search, which the page's script sets from each
    row's ledger entry: the rows' HTML does not repeat the test id and the rest (~0.3 MB in a full report)."""
    page = render_html(sample_ledger())
    rows = re.findall(r"<details class=\"rec [^>]*>", page)
    assert len(rows) == 5 and not any("data-search" in row or "data-verdict=" in row for row in rows)


def test_page_is_self_contained() -> None:
    page = render_html(sample_ledger())
    external = [(k, v) for k, v in _parse(page).attrs if k in ("src", "href") and re.match(r"\s*(https?:)?//", v)]
    assert external == []
    assert "<link" not in page and "@import" not in page and "url(http" not in page


def test_malicious_test_id_is_escaped() -> None:
    ledger = sample_ledger()
    evil = "tests_x.py::test_a[</script><script>alert(1)</script>]"
    ledger["reconciliations"][0]["test_id"] = evil
    ledger["reconciliations"][0]["name"] = "<img src=x onerror=alert(2)>"
    page = render_html(ledger)
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert page.count("</script>") == 3  # the ledger blob, the display units and the inline script, nothing injected
    assert expand_embedded(read_page(page)) == ledger
    assert re.fullmatch(r"[A-Za-z0-9+/]*=*", str(embedded_payload(ledger)))  # base64: nothing to escape in <script>


def test_empty_ledger_renders_sensible_page() -> None:
    page = render_html(empty_ledger())
    assert "No reconciliations ran" in page and "1 test skipped" in page
    assert "<details" not in page
    lines = summary_lines(empty_ledger())
    assert lines == ["no reconciliations ran; 1 test skipped"]
    assert "No reconciliations ran" in render_html({})  # even a ledger with no keys at all


def test_non_finite_numbers_do_not_break_the_page() -> None:
    ledger = sample_ledger()
    ledger["reconciliations"][0]["measured"] = float("nan")
    assert read_page(render_html(ledger))["reconciliations"][0]["measured"] is None


def test_terminal_summary() -> None:
    lines = summary_lines(sample_ledger())
    assert lines[0] == "5 reconciliations: 2 agree, 1 finding, 1 resolved, 1 diverge; 3 from recordings, 2 live"
    assert all(len(line) <= MAX_WIDTH for line in lines)
    assert not any("\x1b" in line for line in lines)
    rows = [line for line in lines if line.startswith(("capacity", "latency", "kernels"))]
    assert [row.split()[-1] for row in rows] == ["diverge", "finding", "resolved", "agree", "agree"]
    assert any(line.startswith("FINDING decode-launch-overhead: decode_step[round2] off by +39.6% — ~6 ms") for line in lines)
    assert any(line.startswith("RESOLVED seed-kv-pool-driver") for line in lines)


def test_terminal_caps_rows_and_wraps_long_reasons() -> None:
    ledger = sample_ledger()
    base = ledger["reconciliations"][1]
    many = []
    for i in range(30):
        rec = copy.deepcopy(base)
        rec["name"] = f"a_really_long_quantity_name_that_will_not_fit_{i}"
        rec["finding"] = {"id": f"f{i}", "reason": "word " * 60}
        many.append(rec)
    ledger["reconciliations"] = many
    lines = summary_lines(ledger)
    assert all(len(line) <= MAX_WIDTH for line in lines)
    assert "... 10 more reconciliations omitted" in "\n".join(lines)


def test_tolerance_formatting() -> None:
    assert format_tolerance({"rel": 0.001, "abs": 0.0, "ratio": None}, "tokens") == "±0.1%"
    assert format_tolerance({"rel": 0.0, "abs": 16, "ratio": [0.85, 1.1]}, "tokens") == "ratio 0.85–1.1 or ±16 tokens"
    assert format_tolerance({"rel": 0, "abs": 0, "ratio": None}, "B") == "exact"


def test_write_report_writes_html_and_json(tmp_path: Path) -> None:
    ledger = sample_ledger()
    html_path, json_path = write_report(ledger, tmp_path / "out" / "anatomy-report.html")
    assert html_path == tmp_path / "out" / "anatomy-report.html" and json_path == tmp_path / "out" / "anatomy-report.json"
    assert json.loads(json_path.read_text(encoding="utf-8")) == ledger
    assert "<!doctype html>" in html_path.read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["anatomy-report.html", "anatomy-report.json"]
    with pytest.raises(IsADirectoryError, match="give a file name"):
        write_report(ledger, tmp_path)


class _Report:
    def __init__(self, props: list[tuple[str, Any]], when: str = "call") -> None:
        self.user_properties = props
        self.when = when
        self.nodeid = "t.py::test"


def test_reconciliations_from_report() -> None:
    recs = sample_ledger()["reconciliations"]
    report = _Report([("other", "x"), ("anatomy_reconciliation", json.dumps(recs[0])), ("anatomy_reconciliation", recs[3])])
    assert reconciliations_from_report(report) == [recs[0], recs[3]]
    assert worst_verdict(reconciliations_from_report(report)) == "diverge"
    with pytest.raises(ValueError, match="is not JSON"):
        reconciliations_from_report(_Report([("anatomy_reconciliation", "{oops")]))


def test_html_columns_without_pytest_html() -> None:
    header = ["<th>Result</th>", "<th>Test</th>", "<th>Duration</th>", "<th>Links</th>"]
    AnatomyHtmlColumns().pytest_html_results_table_header(header)
    assert header[2:4] == list(AnatomyHtmlColumns.header_cells)
    recs = sample_ledger()["reconciliations"]
    cells = ["<td>a</td>", "<td>b</td>", "<td>c</td>", "<td>d</td>"]
    props = [("anatomy_reconciliation", json.dumps(recs[0] | {"name": "<b>"})), ("anatomy_reconciliation", json.dumps(recs[1]))]
    AnatomyHtmlColumns().pytest_html_results_table_row(_Report(props), cells)
    assert len(cells) == 6 and "finding (1 of 2)" in cells[2] and "&lt;b&gt;" in cells[3] and "<b>" not in cells[3]
    teardown = ["<td>a</td>", "<td>b</td>", "<td>c</td>", "<td>d</td>"]
    AnatomyHtmlColumns().pytest_html_results_table_row(_Report(props, when="teardown"), teardown)
    assert teardown[2] == '<td class="col-anatomyVerdict"></td>'


def test_html_columns_with_pytest_html(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    rec = sample_ledger()["reconciliations"][3]
    # The installed anatomy plugin (entry point "anatomy") registers the columns itself;
    # register here only when it is not loaded (-p no:anatomy, or a checkout not installed).
    pytester.makeconftest(
        """
        from pytest_anatomy.report.pytest_html import AnatomyHtmlColumns

        def pytest_configure(config):
            pm = config.pluginmanager
            if pm.hasplugin("html") and not pm.hasplugin("anatomy"):
                pm.register(AnatomyHtmlColumns(), "anatomy-html-columns")
        """
    )
    pytester.makepyfile(
        test_k=f"""
        import json
        def test_k(record_property):
            record_property("anatomy_reconciliation", {json.dumps(json.dumps(rec))})
        def test_plain():
            pass
        """
    )
    # no:benchmark: under an outer xdist worker pytest-benchmark warns at configure, and the
    # outer filterwarnings=error turns that into an INTERNALERROR unrelated to these columns.
    quiet = ("-p", "no:cacheprovider", "-p", "no:benchmark")
    result = pytester.runpytest("--html=report.html", *quiet)
    result.assert_outcomes(passed=2)
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "Verdict" in page and "anatomyVerdict" in page and "diverge" in page and "-52.7%" in page
    # without --html the class is never registered and nothing fails
    pytester.runpytest(*quiet).assert_outcomes(passed=2)


def test_findings_are_grouped_by_id_with_the_reason_once() -> None:
    reason = "the graph pool lands on top of the budget (unique-reason-text)"
    finding = {"id": "v2-graphs", "reason": reason}
    ledger = {"schema": "pytest-anatomy/report/v1", "reconciliations": [
        _rec(f"kv{i}", 100.0, 101.0 + i, "B", "finding", finding=finding) for i in range(3)]}
    html = render_html(ledger)
    section = html[html.index('id="findings"'):html.index('id="reconciliations"')]
    # the reason is in the embedded ledger's text table once, and not written into the page: the card's paragraph
    # holds its index there, which the page's script writes out (the browser test sees the text)
    embedded = read_page(html)
    assert embedded["text_table"].count(reason) == 1 and reason not in html
    assert f'<p data-text="{embedded["text_table"].index(reason)}"></p>' in section
    assert section.count('class="v-finding"') == 3 and "3 reconciliations" in section


def test_a_findings_card_says_where_its_band_comes_from() -> None:
    """Each finding's card names the source of its band (findings.BAND_SOURCES), once per distinct source, and says
    so where a recorded mark states none (ledgers written before band_from existed)."""
    from pytest_anatomy.findings import BAND_SOURCES

    sourced = {"id": "f-sourced", "reason": "r1", "expected": [1.1, 1.3], "band_from": "other-runs"}
    unsourced = {"id": "f-unsourced", "reason": "r2", "expected": [1.1, 1.3]}
    ledger = {"schema": "pytest-anatomy/report/v1", "reconciliations": [
        *(_rec(f"a{i}", 100.0, 120.0, "B", "finding", finding=sourced) for i in range(2)),
        _rec("b", 100.0, 120.0, "B", "finding", finding=unsourced)]}
    section = render_html(ledger)
    section = section[section.index('id="findings"'):section.index('id="reconciliations"')]
    assert section.count(f'<b class="band-other-runs">other-runs</b>, {BAND_SOURCES["other-runs"]}') == 1
    assert "<b>source not stated</b>" in section
    assert "Finding bands by source: 2 other-runs, 1 not stated" in render_html(ledger)  # the page's headline


def test_a_resolved_carried_finding_is_not_retired_for_its_second_card() -> None:
    """A finding written on one card and carried to another that does not need it there is reported as not needed
    on that card; resolved on the card it was written on, it is to be retired."""
    from pytest_anatomy.report.terminal import finding_lines

    def recon(hardware: str, verdict: str) -> dict:
        return {"name": "x", "test_id": f"t::test_x[{hardware}]", "predicted": 1.0, "measured": 1.01, "gap_rel": 0.01,
                "unit": "s", "verdict": verdict, "hardware": hardware,
                "finding": {"id": "f1", "reason": "r", "hardware": ["card-a", "card-b"]}}

    carried = finding_lines([recon("card-b", "resolved")])
    assert "not needed on card-b (written on card-a)" in " ".join(carried) and "retire" not in " ".join(carried)
    assert "retire the finding" in " ".join(finding_lines([recon("card-a", "resolved")]))


def test_skipped_tests_are_grouped_by_reason_and_embedded_once() -> None:
    """The page lists a reason once with its tests (a CPU run skips ~490 tests for ~100 reasons), the heading still
    counts tests, and the embedded ledger carries each reason once through its text table and gives it back whole."""
    ledger = empty_ledger()
    same = "no recording and no live GPU"
    ledger["skips"] = [{"test_id": "t.py::a", "reason": same}, {"test_id": "t.py::b", "reason": "other"},
                       {"test_id": "t.py::c", "reason": same}]
    page = render_html(ledger)
    assert page.count(f"<td>{same}</td>") == 1 and "3 tests skipped" in page
    assert page.index("<code>t.py::a</code>") < page.index("<code>t.py::c</code>") < page.index("<code>t.py::b</code>")
    embedded = read_page(page)
    refs = [s["reason"] for s in embedded["skips"]]
    assert all(isinstance(r, int) for r in refs) and refs[0] == refs[2] != refs[1]
    assert expand_embedded(embedded)["skips"] == ledger["skips"]
