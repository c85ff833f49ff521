"""`pytest-anatomy compare OLD.json NEW.json`: what changed between two ledgers, its exit codes
(0 nothing regressed, 1 a regression, 2 bad input), on small synthetic ledgers and on two
committed H200 live-run ledgers."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy import cli
from pytest_anatomy.session import LEDGER_SCHEMA

ROOT = Path(__file__).resolve().parents[1]
LIVE_RUNS = ROOT / "results" / "h200" / "live-runs"


def _entry(test_id: str, name: str, predicted: float, measured: float, verdict: str, *, rel: float = 0.1,
           ratio: list[float] | None = None, finding: str | None = None) -> dict[str, Any]:
    return {"suite": "latency", "test_id": test_id, "name": name, "predicted": predicted, "measured": measured,
            "unit": "s", "gap_abs": measured - predicted, "ratio": measured / predicted if predicted else None,
            "tolerance": {"rel": 0.0 if ratio else rel, "abs": 0.0, "ratio": ratio, "why": "run-to-run noise"},
            "verdict": verdict, "hardware": "h200",
            "finding": None if finding is None else {"id": finding, "reason": "explained"}}


def _ledger(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"schema": LEDGER_SCHEMA, "reconciliations": list(entries)}


BASE = _ledger(
    _entry("t.py::steady", "step", 1.0, 1.02, "agree"),
    _entry("t.py::regress", "step", 1.0, 1.05, "agree"),
    _entry("t.py::known", "prefill", 1.0, 1.30, "finding", finding="slow-prefill"),
    _entry("t.py::fixed", "prefill", 1.0, 1.30, "finding", finding="slow-prefill"),
    _entry("t.py::gone", "step", 1.0, 1.0, "agree"),
)


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, old: Any, new: Any, *extra: str
         ) -> tuple[int, str, str]:
    paths = []
    for label, doc in (("old", old), ("new", new)):
        path = tmp_path / f"{label}.json"
        path.write_bytes(doc) if isinstance(doc, bytes) else path.write_text(json.dumps(doc))
        paths.append(str(path))
    code = cli.main(["compare", *paths, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_identical_ledgers_report_nothing_and_exit_0(capsys, tmp_path: Path) -> None:
    code, out, err = _run(capsys, tmp_path, BASE, BASE)
    assert code == 0 and err == ""
    assert "0 added, 0 removed, 0 verdict change(s), 0 drifted" in out and "5 unchanged; no regressions" in out


def test_each_kind_of_change_is_reported(capsys, tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    recs = new["reconciliations"]
    recs[1].update(measured=1.25, verdict="diverge")  # agree -> diverge: a regression
    recs[3].update(measured=1.05, verdict="resolved")  # the finding's gap closed
    del recs[4]
    recs.append(_entry("t.py::fresh", "step", 1.0, 1.4, "finding", finding="new-gap"))
    code, out, _ = _run(capsys, tmp_path, BASE, new, "--json")
    doc = json.loads(out)
    assert code == 1
    assert [(r["test_id"], r["name"]) for r in doc["added"]] == [("t.py::fresh", "step")]
    assert [(r["test_id"], r["verdict"]) for r in doc["removed"]] == [("t.py::gone", "agree")]
    assert {(c["test_id"], c["old"], c["new"]) for c in doc["verdict_changes"]} == {
        ("t.py::regress", "agree", "diverge"), ("t.py::fixed", "finding", "resolved")}
    # 1.05 -> 1.25 and 1.30 -> 1.05 both move more than the 10% band; steady did not move
    assert {d["test_id"] for d in doc["drifted"]} == {"t.py::regress", "t.py::fixed"}
    assert [(f["test_id"], f["finding"]) for f in doc["findings_resolved"]] == [("t.py::fixed", "slow-prefill")]
    assert [(f["test_id"], f["finding"], f["old_verdict"]) for f in doc["findings_new"]] == [
        ("t.py::fresh", "new-gap", None)]
    assert doc["regressions"] == ["t.py::regress [step]: agree -> diverge"]


def test_human_output_has_a_summary_line_and_grouped_tables(capsys, tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["reconciliations"][1].update(measured=1.25, verdict="diverge")
    code, out, _ = _run(capsys, tmp_path, BASE, new)
    assert code == 1
    first, *rest = out.splitlines()
    assert "1 verdict change(s)" in first and "1 regression(s)" in first
    assert "regressions (1)" in rest and "verdict changes (1)" in rest and "drifted beyond tolerance (1)" in rest
    assert "added (" not in out  # empty groups are left out


@pytest.mark.parametrize("measured, regressed", [(1.38, False), (1.45, True)])
def test_a_finding_regresses_when_it_drifts_beyond_its_band(capsys, tmp_path: Path, measured: float,
                                                            regressed: bool) -> None:
    """1.30 -> 1.38 moves 0.08, inside the 10% band; 1.30 -> 1.45 moves 0.15, beyond it, while the
    verdict stays 'finding' (no expected range on the mark to turn it diverge)."""
    new = copy.deepcopy(BASE)
    new["reconciliations"][2].update(measured=measured)
    code, out, _ = _run(capsys, tmp_path, BASE, new, "--json")
    doc = json.loads(out)
    assert code == (1 if regressed else 0)
    assert bool(doc["drifted"]) is regressed and doc["verdict_changes"] == []
    if regressed:
        assert doc["regressions"][0].startswith("t.py::known [prefill]: finding slow-prefill moved 1.3 -> 1.45")


def test_an_agreeing_drift_is_reported_but_is_no_regression(capsys, tmp_path: Path) -> None:
    """-9% to +9% stays inside a 10% band both times: the gap moved 0.18 (reported), nothing regressed."""
    old = _ledger(_entry("t.py::a", "step", 1.0, 0.91, "agree"))
    new = _ledger(_entry("t.py::a", "step", 1.0, 1.09, "agree"))
    code, out, _ = _run(capsys, tmp_path, old, new, "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["drifted"]) == 1 and doc["drifted"][0]["moved"] == pytest.approx(0.18)


def test_a_ratio_band_is_its_width_and_an_exact_band_any_move(capsys, tmp_path: Path) -> None:
    old = _ledger(_entry("t.py::r", "x", 1.0, 1.1, "agree", ratio=[1.0, 1.25]),
                  _entry("t.py::e", "bytes", 100.0, 100.0, "agree", rel=0.0))
    new = _ledger(_entry("t.py::r", "x", 1.0, 1.2, "agree", ratio=[1.0, 1.25]),  # moved 0.1 < 0.25
                  _entry("t.py::e", "bytes", 100.0, 101.0, "diverge", rel=0.0))
    code, out, _ = _run(capsys, tmp_path, old, new, "--json")
    doc = json.loads(out)
    assert code == 1 and [d["test_id"] for d in doc["drifted"]] == ["t.py::e"]


def test_a_name_reconciled_twice_in_one_test_is_kept_apart(capsys, tmp_path: Path) -> None:
    twice = _ledger(_entry("t.py::a", "step", 1.0, 1.0, "agree"), _entry("t.py::a", "step", 2.0, 2.0, "agree"))
    once = _ledger(_entry("t.py::a", "step", 1.0, 1.0, "agree"))
    code, out, _ = _run(capsys, tmp_path, twice, once, "--json")
    assert code == 0 and [r["name"] for r in json.loads(out)["removed"]] == ["step#2"]


@pytest.mark.parametrize("which", ["old", "new"])
@pytest.mark.parametrize("content, problem", [
    (None, "no such file"), (b"{not json", "not JSON"), (b"\xff\xfe", "not JSON"),
    (json.dumps({"schema": "other/v1"}).encode(), "not a pytest-anatomy ledger"),
    (json.dumps([1, 2]).encode(), "not a pytest-anatomy ledger"),
    (json.dumps({"schema": LEDGER_SCHEMA, "reconciliations": [{"name": "x"}]}).encode(),
     "not a pytest-anatomy ledger"),
    (b"", "a folder, not a file"),
], ids=["missing", "not-json", "not-utf8", "other-schema", "a-list", "entry-without-fields", "a-folder"])
def test_bad_input_exits_2_with_one_line_naming_the_file(capsys, tmp_path: Path, which: str,
                                                         content: bytes | None, problem: str) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(BASE))
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_bytes(content) if content else bad.mkdir()  # b"": a folder, once also "no such file"
    argv = ["compare", str(bad), str(good)] if which == "old" else ["compare", str(good), str(bad)]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(bad) in err and problem in err


def test_help_states_the_exit_codes(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "0 nothing regressed" in out and "agree, finding or resolved -> diverge" in out and "2 bad input" in out


def _recs(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["test_id"], r["name"]): r for r in json.loads(path.read_text())["reconciliations"]}


def test_two_committed_h200_live_runs(capsys) -> None:
    """The full live run against the later fast run: the answer is derived here from the two files
    independently of the command (the fast run re-measured a subset; each key is unique in both)."""
    old_path, new_path = LIVE_RUNS / "20261201T044855Z.full.json", LIVE_RUNS / "20261201T051748Z.nvml-fast.json"
    old, new = _recs(old_path), _recs(new_path)
    code = cli.main(["compare", str(old_path), str(new_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    common = old.keys() & new.keys()
    assert {(r["test_id"], r["name"]) for r in doc["removed"]} == old.keys() - new.keys()
    assert {(r["test_id"], r["name"]) for r in doc["added"]} == new.keys() - old.keys()
    changed = {k for k in common if old[k]["verdict"] != new[k]["verdict"]}
    assert {(c["test_id"], c["name"]) for c in doc["verdict_changes"]} == changed
    to_diverge = {k for k in changed if new[k]["verdict"] == "diverge"}
    assert to_diverge, "these two runs hold agree -> diverge changes (the exact capacity ledger terms)"
    assert code == 1 and len(doc["regressions"]) >= len(to_diverge)
    assert doc["unchanged"] + len(changed | {(d["test_id"], d["name"]) for d in doc["drifted"]}) == len(common)
