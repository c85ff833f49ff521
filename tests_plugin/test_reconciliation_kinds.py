"""A reconciliation's kind (what it is evidence of) and a tolerance given as a budget of named terms."""
import json

import pytest

from pytest_anatomy.reconcile import RECONCILIATION_KINDS, Tolerance, ToleranceError, compare


def test_kind_defaults_to_prediction_and_reaches_the_ledger(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_a(reconcile):
            reconcile("x", 100.0, 100.0)
            reconcile("y", 4.0, 4.0, kind="identity")
    """)
    pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=r.html").assert_outcomes(passed=1)
    recs = json.loads((pytester.path / "r.json").read_text())["reconciliations"]
    assert [(r["name"], r["kind"]) for r in recs] == [("x", "prediction"), ("y", "identity")]


def test_unknown_kind_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="kind 'guess' is not one of prediction, identity"):
        compare("x", 1.0, 1.0, Tolerance(), kind="guess")
    assert set(RECONCILIATION_KINDS) == {"prediction", "identity", "fit", "replay", "setting"}


def test_budget_is_the_sum_of_its_terms_and_decides_the_verdict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_inside(reconcile):
            r = reconcile("t", 100.0, 103.0, why="noise + ceilings",
                          budget={"repeat_scatter": 0.01, "ceiling_spread": 0.025})
            assert r.tolerance.rel == 0.035

        def test_outside(reconcile):
            reconcile("t", 100.0, 104.0, why="noise + ceilings",
                      budget={"repeat_scatter": 0.01, "ceiling_spread": 0.025})
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*tolerance: ±3.5% (repeat scatter 1% + ceiling spread 2.5%)*"])


def test_budget_terms_must_be_non_negative_and_sum_to_rel() -> None:
    with pytest.raises(ToleranceError, match="finite and >= 0"):
        Tolerance(rel=0.01, why="w", budget=(("a", -0.01), ("b", 0.02))).check()
    with pytest.raises(ToleranceError, match="sum to rel"):
        Tolerance(rel=0.05, why="w", budget=(("a", 0.01),)).check()
    assert Tolerance.from_budget("w", a=0.01, b=0.02).check().to_dict()["budget"] == {"a": 0.01, "b": 0.02}


def test_readme_names_every_field_of_a_ledger_entry() -> None:
    """README's list of a JSON ledger entry's fields is the one Reconciliation.to_dict writes (it said `gap` where the
    ledger has gap_abs and gap_rel, and left out name, ratio, model, prediction and finding, until 2026-12-05)."""
    import ast
    import inspect
    import re
    from pathlib import Path

    from pytest_anatomy.reconcile import Reconciliation

    tree = ast.parse(inspect.getsource(Reconciliation.to_dict).strip())
    returned = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Return))
    assert isinstance(returned, ast.Dict)
    written = {k.value for k in returned.keys if isinstance(k, ast.Constant)}
    written |= {k.value for n in ast.walk(returned) if isinstance(n, ast.Dict) for k in n.keys
                if isinstance(k, ast.Constant) and k.value == "extra"}
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    listed = re.search(r"The JSON beside it has one entry per reconciliation \((.*?)\) for dashboards", readme)
    assert listed, "README no longer lists the ledger entry's fields where this test looks"
    assert set(re.findall(r"`(\w+)`", listed.group(1))) == written
