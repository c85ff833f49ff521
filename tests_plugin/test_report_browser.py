"""The report of every suite, as README's main command writes it, checked for size and in a real browser.

The page is the one --report-page names, when given (any page written with --anatomy-report; a run of every suite
and tests_llama under xdist writes a superset of the main command's page). Without the option, one background run of
the suites from the committed recordings (~200 s of one core, 2026-12-03; start_full_report says what it leaves out)
builds the main command's report and feeds every test here.

The browser tests drive Debian's `chromium --headless`, one browser over the DevTools protocol
(headless_chromium.py): a copy of the page with a probe script appended filters, searches, expands
and collapses, then writes what it saw (row counts, each plot's tick label boxes from
getBoundingClientRect, a few drawn derivations) into the DOM, which the test reads back; the page
itself, in a second tab, is photographed view by view. They skip, saying how to install it, when
chromium is absent.

Screenshots land in the test's tmp folder; set ANATOMY_REPORT_SHOTS=DIR to keep them there too."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from report_page_scripts import PROBE, PROBE_RESULT, READY, VIEW

from pytest_anatomy import run_share
from pytest_anatomy.cli import SUITE_DIRS
from pytest_anatomy.report.embedded import read_page
from pytest_anatomy.report.formatting import exact_value, format_value

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed; `apt-get install -y chromium` (Debian) to check the report in a browser")

# 5 MB: the page is read whole before it is usable (the browser parses every row, the script
# JSON.parse()s the embedded ledger), and it is passed around as a CI artifact and an attachment.
# With every derivation written out as HTML it weighed 7.5 MB and opened and filtered sluggishly;
# drawn on demand from the embedded ledger it was ~4.2 MB. The tenth visit's sessions took it to
# 5.27 MB (28 failed tests' tracebacks, ~0.24 MB of them, and more rows); each repeated reason,
# formula, note and why written once (text_table) and the rows unindented, the same run is 4.67 MB.
# The H200 live session and the chat ladder took it to 5.01 MB; the embedded ledger without the
# JSON's spaces, each test id's module and function once, the rows' search text set by the script,
# a scatter plot's whiskers and a plot's grid one path each: the same run is 4.10 MB.
# The twenty-third visit (r7's sweep, s14, vLLM's quality, the 7B types, ~150 new findings) took it to 5.21 MB; a
# prediction's terms as rows with their names in the text table, each distinct inputs once (inputs_table), the default
# kind and tolerance keys left out: the same run is 4.89 MB. The twenty-fourth visit (llama.cpp at batch 64, vLLM's
# prefill, s15, x8, r8) took it to 5.09 MB; each finding card's reason written once, in the embedded text table (the
# script fills the card), a finding's default keys left out, no gap column and no class per cell in the finding rows:
# the same run is 4.89 MB. The twenty-fifth visit (s16, x9, r8's counters and sweep, the deployment repeat, tooltips
# made by the script) left it at 4.88 MB; a row's gap_abs, gap_rel and ratio left out where they are reconcile's
# arithmetic on predicted and measured (the script recomputes them) and the default source "recorded" left out: 4.69 MB.
# tests_llama, left out of the main command's suites until 2026-12-05, in them: 4.92 MB (with the 14 failed tests'
# tracebacks of that day's merge, tests_kernels and tests_deployment). Issue 10's work took it to 4.95 MB; the embedded
# ledger gzip-compressed in base64 (report/embedded.py pack: its 2.6 MB of JSON as 0.39 MB), the same run is 2.74 MB,
# leaving room for the next visits' recordings without another squeeze.
MAX_REPORT_BYTES = 5_000_000


# The background build this process started, kept so it is reaped (wait_for_background) rather than garbage-collected
# while running (a ResourceWarning, an error under this suite's filterwarnings).
BACKGROUND: list[subprocess.Popen[bytes]] = []


def _shared_folder(config: pytest.Config) -> Path:
    """Where the report of every suite is written: above the xdist workers' own tmp folders (shared by them)."""
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return (base if getattr(config, "workerinput", None) is None else base.parent) / "full-report"


def start_full_report(config: pytest.Config) -> None:
    """Start building README's main command's report (every suite, from recordings; minus its README update) in the
    background, once per run: the first process to create the shared folder starts it, the others only read it.
    Started when collection ends (tests_plugin/conftest.py), so its ~2 minutes of one core overlap the rest of the
    suite instead of holding a worker, and a second worker never waits idle on it; the tests below wait for it."""
    folder = _shared_folder(config)
    try:
        folder.mkdir()
    except FileExistsError:
        return  # another worker started it
    out = folder / "anatomy-report.html"
    suites = [d for d in SUITE_DIRS if (ROOT / d).is_dir()]
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    # The quant suite's slice forwards are computed once per run, by whichever process needs them first: this build
    # shares them with the workers through the run's folder (tests_quant/quality_slice.once)
    env["ANATOMY_QUANT_SLICE_SHARED"] = str(folder.parent / "quant-slice")
    # and so are the parsed raw files and compiler outputs this run's processes share (pytest_anatomy/run_share.py)
    shared = run_share.folder_of(config)
    if shared is not None:
        env[run_share.ENV] = str(shared)
    # -p no:xdist: one process, as the main command runs; the wrapper writes the exit status and output when done
    # Without the table checks (*_is_the_recorded_one(s)): they recompute a committed table from every recorded session
    # and reconcile nothing, so the page keeps every reconciliation, finding and plot of the main command's (4,275,753
    # against 4,276,661 bytes, 2026-12-03: only the test counts differ), and the build takes ~200 s of one core, not
    # ~300; the workers of this run check those tables themselves.
    cmd = [sys.executable, "-m", "pytest", *suites, f"--anatomy-report={out}", "-q", "-p", "no:cacheprovider",
           "-p", "no:xdist", "-k", "not recorded_one"]
    wrapper = ("import subprocess, sys, pathlib; f = pathlib.Path(sys.argv[1]); "
               "r = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=900); "
               "(f / 'output.txt').write_text(r.stdout[-3000:] + r.stderr[-3000:]); "
               "(f / 'done').write_text(str(r.returncode))")
    BACKGROUND.append(subprocess.Popen([sys.executable, "-c", wrapper, str(folder), *cmd], cwd=ROOT, env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))


def wait_for_background() -> None:
    """Reap the build this process started (at its session's end: another worker may have read the report)."""
    while BACKGROUND:
        BACKGROUND.pop().wait(timeout=900)


@pytest.fixture(scope="module")
def full_report(request: pytest.FixtureRequest) -> Path:
    """The report of every suite: the page --report-page names (README's test command: its first run's), else the
    background build (start_full_report), waited for: started at collection's end where these tests were collected,
    else here."""
    given = request.config.getoption("--report-page")
    if given:
        page = Path(given)
        if not page.is_file() or not page.with_suffix(".json").is_file():
            pytest.fail(f"--report-page {given}: no such page with its .json ledger beside it; write it with "
                        f"`python -m pytest --anatomy-report={given}` (README's test command does) or leave the "
                        "option out to build one here", pytrace=False)
        return page
    start_full_report(request.config)
    folder = _shared_folder(request.config)
    deadline = time.monotonic() + 900
    while not (folder / "done").is_file():
        assert time.monotonic() < deadline, "the report of every suite did not finish within 15 minutes"
        time.sleep(0.5)
    out = folder / "anatomy-report.html"
    assert out.is_file(), (f"the suites wrote no report (exit {(folder / 'done').read_text()}):\n"
                           f"{(folder / 'output.txt').read_text()}")
    return out


def test_report_of_every_suite_stays_under_5_mb(full_report: Path) -> None:
    size = full_report.stat().st_size
    assert size <= MAX_REPORT_BYTES, f"the report of every suite is {size:,} bytes, over {MAX_REPORT_BYTES:,}"
    page = full_report.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "the page must work offline"
    ledger = json.loads(full_report.with_suffix(".json").read_text(encoding="utf-8"))
    assert len(ledger["reconciliations"]) > 1000  # the whole replay, not an empty run


# ---- the browser ------------------------------------------------------------------------
# (the JavaScript it runs in the page: report_page_scripts.py)
def _embedded_ledger(full_report: Path) -> dict[str, Any]:
    """The ledger the page embeds (its script's data), as the page's script reads it."""
    return read_page(full_report.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def browsed(full_report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What one chromium made of the page (_browse): the probe script's findings and the screenshots."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed; `apt-get install -y chromium` (Debian) to check the report in a browser")
    # Once per run: under xdist a module-scoped fixture runs on each worker that has one of these tests (the same page,
    # ~20-35 s of chromium each time)
    return run_share.once(_page_key("report-browser", full_report), lambda: _browse(full_report, tmp_path_factory))


@pytest.fixture(scope="module")
def browser_view(browsed: dict[str, Any]) -> dict[str, Any]:
    """What the probe script saw in chromium, after the page's own script ran."""
    return browsed["view"]


@needs_chromium
def test_page_script_filters_searches_expands_and_collapses(browser_view: dict[str, Any]) -> None:
    view = browser_view
    assert view["ran"], "the page's script did not run: the filter controls stayed hidden"
    rows = view["rows"]["all"]
    assert rows > 500 and view["rows"]["visible_after_reset"] == rows
    assert view["without_agree"]["agree_rows"] == 0 and 0 < view["without_agree"]["rows"] < rows
    assert 0 < view["search"]["rows"] < rows and view["search"]["matching"]
    assert view["expanded"]["open"] == rows and view["expanded"]["drawn"] == rows
    assert view["collapsed_open"] == 0


@needs_chromium
def test_page_script_searches_test_ids_as_written(browser_view: dict[str, Any], full_report: Path) -> None:
    """The search finds a row by its test id although the page writes each test's module and function once
    (embedded.py _share_test_id) and each row's search text is set by the script."""
    from pytest_anatomy.report.html import expand_embedded

    embedded = _embedded_ledger(full_report)
    recs = expand_embedded(embedded)["reconciliations"]
    wanted = [i for i, rec in enumerate(recs) if "tests_capacity/test_capacity_ledger.py::" in rec["test_id"].lower()]
    assert 0 < len(wanted) < len(recs) and sorted(browser_view["search_test_id"]) == wanted


@needs_chromium
def test_derivations_drawn_in_the_browser_read_as_python_formats_them(browser_view: dict[str, Any], full_report: Path) -> None:
    """The page's script spells numbers as report/formatting.py does (it is a port of it)."""
    from pytest_anatomy.report.html import expand_embedded

    recs = expand_embedded(_embedded_ledger(full_report))["reconciliations"]
    checked = 0
    for drawn in browser_view["derivations"]:
        terms = (recs[drawn["i"]].get("prediction") or {}).get("terms") or []
        assert len(drawn["terms"]) == len(terms)
        for (name, value, exact, _note), term in zip(drawn["terms"], terms):
            assert name == term["name"]
            assert value == format_value(term["value"], term.get("unit", "")), term
            assert exact == exact_value(term["value"]), term
            checked += 1
    assert checked > 200
    # the gap line ends with the ratio the script spells (it is no longer written into every row): as _row_view would
    ratios = [(d["gap"], recs[d["i"]].get("ratio")) for d in browser_view["derivations"]]
    ratios = [(g, r) for g, r in ratios if g is not None]
    assert len(ratios) > 200
    for gap, ratio in ratios:
        want = f"×{ratio:.4f}" if isinstance(ratio, (int, float)) and math.isfinite(ratio) else "n/a"
        assert gap.endswith(" · " + want), (gap, ratio)


def _corners(tick: list[Any]) -> list[tuple[float, float]]:
    """The four corners of a label's box, through its transform (rotated labels stay rotated boxes)."""
    _, x, y, w, h, a, b, c, d, e, f = tick
    return [(a * px + c * py + e, b * px + d * py + f) for px, py in ((x, y), (x + w, y), (x + w, y + h), (x, y + h))]


def _boxes_overlap(p: list[tuple[float, float]], q: list[tuple[float, float]]) -> bool:
    """Separating-axis test for two convex quadrilaterals: overlap unless some edge normal separates them."""
    for poly in (p, q):
        for (x1, y1), (x2, y2) in zip(poly, poly[1:] + poly[:1]):
            nx, ny = y2 - y1, x1 - x2
            pa = [nx * x + ny * y for x, y in p]
            qa = [nx * x + ny * y for x, y in q]
            if max(pa) <= min(qa) or max(qa) <= min(pa):
                return False
    return True


def _overlaps(ticks: list[list[Any]]) -> list[tuple[str, str]]:
    boxes = [(t[0], _corners(t)) for t in ticks if t[3] > 0 and t[4] > 0]
    return [(a, b) for (a, pa), (b, pb) in combinations(boxes, 2) if _boxes_overlap(pa, pb)]


def test_overlap_check_tells_turned_labels_apart() -> None:
    """The geometry the browser test relies on: side-by-side boxes clear, crossing boxes overlap,
    and two labels turned -40 degrees, 46 px apart, clear although their upright boxes would not."""
    import math

    def label(x: float, angle: float = 0.0) -> list[Any]:
        ca, sa = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        return ["t", -70.0, -10.0, 70.0, 12.0, ca, sa, -sa, ca, x, 100.0]

    assert _overlaps([label(0), label(71)]) == [] and _overlaps([label(0), label(60)]) == [("t", "t")]
    assert _overlaps([label(0, -40), label(46, -40)]) == []
    assert _overlaps([label(0, -40), label(10, -40)]) == [("t", "t")]


@needs_chromium
def test_no_plot_has_overlapping_tick_labels(browser_view: dict[str, Any]) -> None:
    plots = browser_view["plots"]
    labels = [p["label"] for p in plots]
    for expected in ("sgemm ladder on h200", "roofline on h200", "decode step vs batch on h200",
                     "TTFT p50 vs arrival rate on h200", "memory ledger on h200", "flash attention TF/s against N on h200"):
        assert any(label.startswith(expected) for label in labels), (expected, labels)
    assert all(p["ticks"] for p in plots if "gap per reconciliation" not in p["label"])
    overlapping = {p["label"]: _overlaps(p["ticks"]) for p in plots}
    assert {label: pairs for label, pairs in overlapping.items() if pairs} == {}


# ---- screenshots, for a person to look at -----------------------------------------------
# name: (the one part shown: a section or a group of domain plots, how far it is scrolled (px), the
# fragment the page opens at)
SECTIONS: dict[str, tuple[str | None, int, str]] = {
    "top": (None, 0, ""), "derivation": ("reconciliations", 0, "#rec-0"),
    "ladders-1": ("plots-kernel-ladders", 0, ""), "ladders-2": ("plots-kernel-ladders", 1150, ""),
    "rooflines": ("plots-rooflines", 0, ""), "decode-prefill": ("plots-decode-and-prefill", 0, ""),
    "load": ("plots-latency-under-load", 0, ""), "memory": ("plots-memory-ledger", 0, ""),
    "flash": ("plots-flash-attention", 0, ""), "predicted-vs-measured": ("plots", 0, "")}


@pytest.fixture(scope="module")
def screenshots(browsed: dict[str, Any]) -> Iterator[dict[str, Path]]:
    shots: dict[str, Path] = browsed["shots"]
    keep = os.environ.get("ANATOMY_REPORT_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for shot in shots.values():
            if shot.is_file():
                shutil.copy(shot, Path(keep) / shot.name)
    yield shots


def _page_key(name: str, page: Path) -> str:
    return run_share.key_of(name, page.resolve(), page.stat().st_mtime_ns, page.stat().st_size)


def _view_css(section: str | None, scroll: int) -> str:
    if not section:
        return ""
    part = "domain" if section.startswith("plots-") else section
    return (f"header.top, main > section:not(#{part}), .domain-group:not(#{section}) "
            f"{{ display: none !important; }} main {{ margin-top: -{scroll}px; }}")


def _browse(full_report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The probe script's findings ("view") and each SECTIONS view of the page as a PNG ("shots", in a folder any
    process of this run can read: run_share.once), from one chromium (headless_chromium.Chromium). Its two tabs load
    at once: the page with the probe appended, at the browser's default viewport (what `chromium --dump-dom` read it
    at), and the page itself at the 1300 x 1250 each view was shot at with `chromium --screenshot`, restyled and
    photographed view by view. One browser start and two page loads instead of eleven of each, and the probe's
    findings read from the element it writes rather than from a dump of the whole 15 MB DOM: 7 s of wall for both
    against 15 s for the probe's dump alone and 18-24 s for the shots (2026-12-06, 2 shared cores). The same findings,
    key for key, and nine of the ten PNGs byte for byte; the tenth (the derivation its fragment opens) is scrolled to
    its row without the blank band a load at that fragment left above it."""
    from headless_chromium import Chromium

    assert CHROMIUM is not None
    folder = tmp_path_factory.mktemp("browser")
    probe = folder / "probe.html"
    probe.write_text(full_report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    shots = {name: folder / f"{name}.png" for name in SECTIONS}
    with Chromium(CHROMIUM, timeout=240) as browser:
        looking = browser.open(probe.resolve().as_uri())
        shooting = browser.open(full_report.resolve().as_uri(), size=(1300, 1250))
        browser.loaded(shooting, full_report.resolve().as_uri())
        assert browser.evaluate(shooting, READY), "the page's script did not open its embedded ledger"
        # a fragment opens its row for good: those views last
        for name, (section, scroll, fragment) in sorted(SECTIONS.items(), key=lambda view: bool(view[1][2])):
            browser.evaluate(shooting, VIEW % (json.dumps(_view_css(section, scroll)), json.dumps(fragment)))
            shots[name].write_bytes(browser.screenshot(shooting))
        browser.loaded(looking, probe.resolve().as_uri())
        found = browser.evaluate(looking, PROBE_RESULT)
    assert found is not None, "the probe script left no result within two minutes"
    return {"view": json.loads(found), "shots": shots}


@needs_chromium
def test_screenshots_are_taken(screenshots: dict[str, Path]) -> None:
    for name, shot in screenshots.items():
        assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert shot.stat().st_size > 20_000, f"{name}: a blank page?"


@needs_chromium
def test_each_derivation_shows_its_texts_from_the_shared_table(browser_view: dict[str, Any], full_report: Path) -> None:
    """A finding's reason, the formula, the notes, the terms' notes and the tolerance's why are indexes into the page's
    text_table; the drawn derivation shows the texts, as the JSON ledger beside the page holds them."""
    from pytest_anatomy.report.html import expand_embedded

    embedded = _embedded_ledger(full_report)
    assert embedded["text_table"]
    recs = expand_embedded(embedded)["reconciliations"]
    findings = 0
    for drawn in browser_view["derivations"]:
        rec, shown = recs[drawn["i"]], drawn["texts"]
        pred, tol = rec.get("prediction") or {}, rec.get("tolerance") or {}
        assert shown["formula"] == (f"{rec['name']} = {pred['formula']}" if pred.get("formula") else None), drawn["i"]
        assert shown["notes"] == list(pred.get("notes") or []), drawn["i"]
        assert shown["term_notes"] == [t.get("note") or "" for t in pred.get("terms") or []], drawn["i"]
        assert shown["why"] == (f"why this tolerance: {tol['why']}" if tol.get("why") else None), drawn["i"]
        finding = rec.get("finding")
        assert shown["finding"] == (f"finding {finding['id']}: {finding['reason']}" if finding else None), drawn["i"]
        assert shown["test_id"] == rec["test_id"], drawn["i"]
        findings += bool(finding)
    assert findings > 10


def test_each_findings_card_shows_its_reason_from_the_shared_table(browser_view: dict[str, Any],
                                                                    full_report: Path) -> None:
    """A finding card's paragraph holds an index into the page's text table (html.py _reasons_by_reference); the
    page's script writes the reason there: every card shows its finding's reason as the ledger has it."""
    from pytest_anatomy.report.html import expand_embedded

    reasons: dict[str, set[str]] = {}
    for rec in expand_embedded(_embedded_ledger(full_report))["reconciliations"]:
        if rec.get("finding"):
            reasons.setdefault(rec["finding"]["id"], set()).add(rec["finding"]["reason"])
    shown = browser_view["finding_reasons"]
    assert shown and all(text for _, text in shown)
    wrong = [(fid, text[:80]) for fid, text in shown if fid in reasons and text not in reasons[fid]]
    assert not wrong, wrong[:5]
    assert sum(fid in reasons for fid, _ in shown) > 100


@needs_chromium
def test_each_derivation_shows_its_provenance_from_the_shared_table(browser_view: dict[str, Any],
                                                                    full_report: Path) -> None:
    """The page writes each distinct provenance once (provenance_table) and a reconciliation's is an index into it;
    the drawn derivation shows the entry the index names, as the JSON ledger beside the page holds it."""
    from pytest_anatomy.report.html import expand_embedded

    embedded = _embedded_ledger(full_report)
    recs = expand_embedded(embedded)["reconciliations"]
    checked = 0
    for drawn in browser_view["derivations"]:
        prov = recs[drawn["i"]].get("provenance") or {}
        shown = dict(drawn["prov"])
        if "recording" in prov:
            assert shown.get("recording") == str(prov["recording"]), (drawn["i"], shown, prov)
            checked += 1
        assert bool(shown) == bool(prov), (drawn["i"], shown, prov)
    assert checked > 50


def test_a_budgeted_tolerance_shows_its_terms_and_their_sum(browser_view: dict[str, Any], full_report: Path) -> None:
    """Issue 10: the report shows an error budget as a sum. Every reconciliation whose tolerance is a budget
    (reconcile.Tolerance.from_budget) draws its named terms and their sum, spelled as Tolerance.describe spells them,
    and no other reconciliation draws one."""
    embedded = _embedded_ledger(full_report)
    recs = embedded["reconciliations"]
    budgeted = {i for i, r in enumerate(recs) if (r.get("tolerance") or {}).get("budget")}
    assert budgeted, "the full report has no budgeted tolerance to check"
    drawn = {b["i"]: b["rows"] for b in browser_view["budgets"]}
    assert set(drawn) == budgeted
    for i, rows in drawn.items():
        tol = recs[i]["tolerance"]
        want = [[k.replace("_", " "), f"\u00b1{v * 100:.3g}%"] for k, v in tol["budget"].items()]
        assert rows == want + [["sum: the tolerance", f"\u00b1{tol['rel'] * 100:.3g}%"]], (i, rows)


def test_each_plotted_mark_has_its_rows_tooltip(browser_view: dict[str, Any], full_report: Path) -> None:
    """A plotted reconciliation's mark (the predicted-vs-measured points, the ladders', the tuning ladders', the
    attention bytes') carries only its table row (data-rec) and its label in the plot (data-what, where it has one); the
    page's script gives it the tooltip html.py wrote before: label (else name and parameters), verdict, predicted,
    measured, gap and what the tolerance allows. Sampled over the whole page, domain plots and scatter plots alike."""
    from pytest_anatomy.report.formatting import format_gap, format_tolerance, format_value

    tips = browser_view["point_tips"]
    assert len(tips) >= 50 and any(what for _, what, _ in tips) and any(not what for _, what, _ in tips)
    ledger = json.loads(full_report.with_suffix(".json").read_text(encoding="utf-8"))
    for row, what, tip in tips:
        rec = ledger["reconciliations"][row]
        unit = str(rec.get("unit", ""))
        assert tip is not None and f" ({rec['verdict']}): predicted {format_value(rec['predicted'], unit)}, " in tip
        assert f"measured {format_value(rec['measured'], unit)}, gap {format_gap(rec)}" in tip, tip
        assert tip.startswith(what or str(rec["name"])), (what, tip)
        tol = format_tolerance(rec.get("tolerance"), unit)
        assert tip.endswith(f", allowed {tol}") or "allowed" not in tip, (tip, tol)


@needs_chromium
def test_a_browser_without_decompression_says_so_on_the_page(full_report: Path, tmp_path: Path) -> None:
    """The page's script opens its embedded ledger with the browser's DecompressionStream (embedded.pack). A browser
    without it gets a notice at the top of the page naming what is missing and where the same ledger lies, and the
    controls that would not work stay hidden: never a silently dead page. A page of 30 rows, so chromium is quick."""
    from headless_chromium import Chromium

    from pytest_anatomy.report.embedded import is_compact
    from pytest_anatomy.report.html import render_html

    ledger = json.loads(full_report.with_suffix(".json").read_text(encoding="utf-8"))
    small = {**ledger, "reconciliations": [r for r in ledger["reconciliations"] if not is_compact(r)][:30]}
    page = render_html(small)
    without = "<script>delete window.DecompressionStream; window.DecompressionStream = undefined;</script>"
    paths = {}
    for name, text in (("with", page), ("without", page.replace("<body>", "<body>" + without, 1))):
        paths[name] = tmp_path / f"{name}.html"
        paths[name].write_text(text, encoding="utf-8")
    views = {}
    assert CHROMIUM is not None
    with Chromium(CHROMIUM, timeout=240) as browser:  # both pages in one browser, loading at once
        tabs = {name: browser.open(path.resolve().as_uri()) for name, path in paths.items()}
        for name, tab in tabs.items():
            browser.loaded(tab, paths[name].resolve().as_uri())
            browser.evaluate(tab, READY)
            views[name] = browser.evaluate(tab, "document.documentElement.outerHTML")  # what --dump-dom prints
    assert 'class="ledger-error"' not in views["with"] and '<div class="controls" id="controls">' in views["with"]
    assert 'class="ledger-error"' in views["without"] and "no DecompressionStream" in views["without"]
    assert "The .json beside this page holds the same ledger" in views["without"]
    assert '<div class="controls" id="controls" hidden="">' in views["without"]
