"""pytester tests of the plugin: verdicts, findings, failure text, options, markers."""

from __future__ import annotations

import json

import pytest

from pytest_anatomy.report.embedded import read_page

AGREE = """
def test_agree(reconcile):
    reconcile("kv_bytes", 57344.0, 57340.0, rel=1e-3, why="log rounding")
"""


def test_agreeing_reconciliation_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGREE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 reconciliation: 1 agree, 0 findings, 0 resolved, 0 diverge*"])


def test_divergence_fails_with_both_numbers_formula_and_gap(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from pytest_anatomy import Prediction, Term
        def test_diverge(reconcile):
            p = Prediction(100.0, "B", "a x b", {"a": 10, "b": 10}, terms=(Term("a", 10, "B"),))
            reconcile("weights", p, 150.0, rel=0.01, why="test")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*reconciliation diverged*",
        "*weights: measured 150 B vs predicted 100 B (gap +50%*",
        "*tolerance: ±1% — test*",
        "*formula:   a x b*",
    ])


def test_exact_default_and_tolerance_needs_a_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from pytest_anatomy.reconcile import ToleranceError
        def test_exact(reconcile):
            reconcile("n", 7, 7)
        def test_no_reason(reconcile):
            with pytest.raises(ToleranceError, match="needs why="):
                reconcile("n", 7, 7, rel=0.1)
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


FINDING = """
import pytest
@pytest.mark.finding("seed-x", reason="the pool is smaller because the driver reserves more",
                     expected=(0.6, 0.8), band_from="checked-run")
def test_marked(reconcile):
    reconcile("pool", 100.0, {measured}, rel=0.01, why="rounding")
"""


def test_marked_divergence_is_a_finding_not_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FINDING.format(measured=70.0))
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    assert result.ret == 0
    assert result.parseoutcomes() == {"finding": 1}
    result.stdout.fnmatch_lines(["*1 finding*", "*FINDING seed-x: pool off by -30*%*the driver reserves more*"])


def test_resolved_finding_fails_like_a_strict_xpass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FINDING.format(measured=100.2))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*[[]XPASS(strict)[]] finding 'seed-x' is resolved: pool now agrees*remove the finding mark*",
        "*pool: measured 100.2 vs predicted 100 (gap +0.2%*",
        "*1 reconciliation: 0 agree, 0 findings, 1 resolved, 0 diverge*",
    ])
    # The old opt-in flag is still accepted and changes nothing: strict is the default now.
    pytester.runpytest("-p", "no:cacheprovider", "--anatomy-strict-findings").assert_outcomes(failed=1)


def test_allow_resolved_relaxes_every_finding_to_an_xpass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FINDING.format(measured=100.2))
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-allow-resolved", "-rX")
    assert result.ret == 0
    assert result.parseoutcomes() == {"resolved": 1}
    result.stdout.fnmatch_lines(["RESOLVED *::test_marked - finding seed-x: pool now agrees at +0.20%*"])


def test_strict_false_relaxes_one_finding(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("closing", reason="the driver fix is rolling out", strict=False, expected=(0.6, 0.8), band_from="checked-run")
        def test_relaxed(reconcile):
            reconcile("pool", 100.0, 100.2, rel=0.01, why="rounding")
        @pytest.mark.finding("closed", reason="fixed long ago", expected=(0.6, 0.8), band_from="checked-run")
        def test_strict(reconcile):
            reconcile("pool", 100.0, 100.2, rel=0.01, why="rounding")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"failed": 1, "resolved": 1}
    result.stdout.fnmatch_lines(["FAILED *::test_strict*"])


def test_finding_outside_its_expected_band_diverges(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f1", reason="r", expected=(0.6, 0.8), band_from="other-runs")
        def test_drift(reconcile):
            reconcile("pool", 100.0, 30.0, rel=0.01, why="rounding")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*expected measured/predicted in (0.6, 0.8), got 0.3*"])


def test_finding_band_set_at_test_time_replaces_the_marks(pytester: pytest.Pytester) -> None:
    """reconcile(finding_band=...) judges the finding against a band the test computes (from other runs), and is
    refused where no finding covers the reconciliation."""
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f1", reason="r", expected=(0.6, 0.8), band_from="other-runs")
        def test_inside_the_runtime_band(reconcile):
            reconcile("x", 100.0, 150.0, rel=0.01, why="w", finding_band=(1.4, 1.6))
        @pytest.mark.finding("f1", reason="r", expected=(1.4, 1.6), band_from="other-runs")
        def test_outside_the_runtime_band(reconcile):
            reconcile("x", 100.0, 150.0, rel=0.01, why="w", finding_band=(0.6, 0.8))
        def test_no_mark(reconcile):
            reconcile("x", 100.0, 150.0, rel=0.01, why="w", finding_band=(1.4, 1.6))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rxf")
    assert result.parseoutcomes() == {"failed": 2, "finding": 1}
    result.stdout.fnmatch_lines(["*finding 'f1' expected measured/predicted in (0.6, 0.8), got 1.5*",
                                 "*finding_band=(1.4, 1.6) but no finding mark covers it*"])


def test_a_test_time_band_needs_its_marks_source(pytester: pytest.Pytester) -> None:
    """A band the test computes (finding_band) is judged only under a mark that says where bands come from: a mark
    without band_from= is refused before the test body runs."""
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f1", reason="r")
        def test_unsourced(reconcile):
            reconcile("x", 100.0, 150.0, rel=0.01, why="w", finding_band=(1.4, 1.6))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*finding('f1') has no band_from=: every finding needs a band*"])


def test_a_finding_judged_without_a_band_fails(pytester: pytest.Pytester) -> None:
    """Issue 10: a finding whose test passes no band (no expected=, no finding_band=) would accept any gap; its finding
    verdict is refused with the fix, and nothing is recorded as a finding. A resolved one needs no band."""
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f1", reason="r", band_from="other-runs")
        def test_band_forgotten(reconcile):
            reconcile("x", 100.0, 150.0, rel=0.01, why="w")
        @pytest.mark.finding("f1", reason="r", band_from="other-runs", strict=False)
        def test_closed(reconcile):
            reconcile("x", 100.0, 100.5, rel=0.01, why="w")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rf")
    assert result.parseoutcomes() == {"failed": 1, "resolved": 1}
    result.stdout.fnmatch_lines(["*x: finding 'f1' judged without a band: every finding needs a band (expected=*"])


def test_finding_band_of_another_cards_finding_is_dropped(pytester: pytest.Pytester) -> None:
    """A band computed for a finding recorded on another card does not apply on this one: the quantity is held
    to its own tolerance (first seen on the first H100 session, where two H200 bands raised ValueError)."""
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f1", reason="r", hardware="card-a", band_from="other-runs")
        def test_other_card_agrees(reconcile):
            reconcile("x", 100.0, 100.5, rel=0.01, why="w", hardware="card-b", finding_band=(1.4, 1.6))
        @pytest.mark.finding("f1", reason="r", hardware="card-a", band_from="other-runs")
        def test_other_card_diverges(reconcile):
            reconcile("x", 100.0, 150.0, rel=0.01, why="w", hardware="card-b", finding_band=(1.4, 1.6))
        @pytest.mark.finding("f1", reason="r", hardware="card-a", band_from="other-runs")
        def test_own_card(reconcile):
            reconcile("x", 100.0, 150.0, rel=0.01, why="w", hardware="card-a", finding_band=(1.4, 1.6))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rxf")
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "finding": 1}
    result.stdout.fnmatch_lines(["FAILED *::test_other_card_diverges*"])


def test_a_band_carried_to_another_card_is_widened_by_its_noise_budget(pytester: pytest.Pytester) -> None:
    """A mark naming two cards keeps its band on the first (where it was written) and, on the second, widens it by
    the check's measured-noise budget (Tolerance.budget); a target tolerance (no budget) widens nothing."""
    pytester.makepyfile("""
        import pytest
        CARDS = ("card-a", "card-b")
        @pytest.mark.finding("f1", reason="r", expected=(1.40, 1.45), hardware=CARDS, band_from="explanation")
        def test_written_on_card_a(reconcile):
            reconcile("x", 100.0, 146.0, budget={"repeat_scatter": 0.02}, why="noise", hardware="card-a")
        @pytest.mark.finding("f1", reason="r", expected=(1.40, 1.45), hardware=CARDS, band_from="explanation")
        def test_carried_to_card_b(reconcile):
            reconcile("x", 100.0, 146.0, budget={"repeat_scatter": 0.02}, why="noise", hardware="card-b")
        @pytest.mark.finding("f1", reason="r", expected=(1.40, 1.45), hardware=CARDS, band_from="explanation")
        def test_carried_with_a_target_tolerance(reconcile):
            reconcile("x", 100.0, 146.0, rel=0.02, why="a goal", hardware="card-b")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rxf")
    assert result.parseoutcomes() == {"failed": 2, "finding": 1}
    result.stdout.fnmatch_lines(["FAILED *::test_written_on_card_a*", "FAILED *::test_carried_with_a_target_tolerance*"],
                                consecutive=False)


def test_finding_quantity_scopes_the_mark(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.finding("f1", reason="r", quantity="other", expected=(0.6, 0.8), band_from="checked-run")
        def test_scoped(reconcile):
            reconcile("pool", 100.0, 70.0, rel=0.01, why="rounding")
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(failed=1)


@pytest.mark.parametrize("mark, message", [
    ('finding("x")', "needs reason="),
    ('finding(reason="r")', "exactly one positional id"),
    ('finding("x", reason="r", band=1)', "unknown keyword"),
    ('finding("x", reason="r", expected=(2, 1))', "0 <= lo <= hi"),
    ('finding("x", reason="r", strict="no")', "must be True or False"),
    ('finding("x", reason="r", expected=(1, 2))', "no band_from="),
    ('finding("x", reason="r")', "has no band_from=: every finding needs a band"),
    ('finding("x", reason="r", band_from="tuned")', "band_from='tuned' must be one of"),
])
def test_bad_finding_marks_are_usage_errors(pytester: pytest.Pytester, mark: str, message: str) -> None:
    pytester.makepyfile(f"""
        import pytest
        @pytest.mark.{mark}
        def test_x(reconcile):
            reconcile("a", 1, 1)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines([f"*{message}*"])


def test_unknown_hardware_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGREE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-hardware=h300")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*h300*h200*"])


def test_gpu_test_without_recording_support_skips_on_cpu(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.gpu
        def test_needs_gpu():
            raise AssertionError("must not run without a GPU")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", "--anatomy-source=recorded")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs a live GPU*"])


def test_replay_only_gpu_test_runs_on_recordings(pytester: pytest.Pytester) -> None:
    """A gpu test marked replay-only (`targets`, live=False) reads its target's recordings itself, without the
    `measured` fixture: it runs on replay instead of skipping as needing a live GPU."""
    folder = pytester.path / "results" / "any-card" / "default"  # a folder name only: the card plays no part
    folder.mkdir(parents=True)
    (folder / "x.a@20261202T000000Z.json").write_text("{}")
    pytester.makepyfile("""
        import pytest
        @pytest.mark.gpu
        @pytest.mark.targets(recorded="x.", live=False)
        def test_table(target):
            assert target.name == "any-card"
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", "--anatomy-source=recorded")
    result.assert_outcomes(passed=1)


def test_suite_marker_is_added_from_the_folder(pytester: pytest.Pytester) -> None:
    pytester.mkdir("tests_capacity")
    pytester.path.joinpath("tests_capacity", "test_a.py").write_text("def test_a():\n    pass\n")
    pytester.path.joinpath("test_b.py").write_text("def test_b():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "capacity")
    result.assert_outcomes(passed=1, deselected=1)


def test_reconciled_hook_is_called(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        SEEN = []
        def pytest_anatomy_reconciled(config, reconciliation):
            SEEN.append((reconciliation.name, reconciliation.verdict.value))
        def pytest_sessionfinish(session):
            print("SEEN", SEEN)
    """)
    pytester.makepyfile(AGREE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines(["*SEEN*'kv_bytes', 'agree'*"])


def test_report_written_with_json_ledger(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGREE + FINDING.format(measured=70.0).replace("import pytest", "import pytest as _p")
                        .replace("@pytest", "@_p"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--anatomy-report=out/report.html")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*Generated anatomy report: file://*report.html*"])
    ledger = json.loads(pytester.path.joinpath("out", "report.json").read_text())
    assert ledger["schema"] == "pytest-anatomy/report/v1"
    verdicts = sorted(e["verdict"] for e in ledger["reconciliations"])
    assert verdicts == ["agree", "finding"]
    entry = next(e for e in ledger["reconciliations"] if e["verdict"] == "finding")
    assert entry["finding"]["id"] == "seed-x" and entry["gap_rel"] == pytest.approx(-0.3)
    html = pytester.path.joinpath("out", "report.html").read_text()
    reasons = "\n".join(read_page(html)["text_table"])  # a finding's reason: the page's script writes it from there
    assert "seed-x" in html and "the driver reserves more" in reasons


def test_xdist_builds_one_ledger_on_the_controller(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile("""
        import pytest
        @pytest.mark.parametrize("i", range(6))
        def test_many(reconcile, i):
            reconcile(f"q{i}", 10.0, 10.0)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--anatomy-report=r.html")
    result.assert_outcomes(passed=6)
    ledger = json.loads(pytester.path.joinpath("r.json").read_text())
    assert sorted(e["name"] for e in ledger["reconciliations"]) == [f"q{i}" for i in range(6)]
    result.stdout.fnmatch_lines(["*6 reconciliations: 6 agree*"])


def test_pytest_html_gets_verdict_columns(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    pytester.makepyfile(AGREE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--html=h.html", "--self-contained-html")
    assert result.ret == 0
    html = pytester.path.joinpath("h.html").read_text()
    assert "Verdict" in html


def test_model_spec_and_hardware_fixtures_follow_the_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_fixtures(model_spec, hardware):
            print("MODEL", model_spec.name, model_spec.num_kv_heads, "HW", hardware.name)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s", "--anatomy-model=meta-llama/Llama-3.1-8B-Instruct",
                                "--anatomy-hardware=H200")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*MODEL llama-3.1-8b 8 HW h200*"])


def test_model_spec_from_a_config_path_and_hardware_skip_without_gpu(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512, '
        '"num_hidden_layers": 2, "num_attention_heads": 8, "intermediate_size": 1024, "vocab_size": 1000, '
        '"torch_dtype": "bfloat16"}')
    pytester.makepyfile("""
        def test_model(model_spec):
            assert model_spec.num_kv_heads == 8 and model_spec.attention == "mha"
        def test_hw(hardware):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", "--anatomy-model=config.json",
                                "--anatomy-source=recorded")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*no hardware selected and no GPU detected: pass --anatomy-hardware=NAME*"])


def test_this_repo_runs_under_xdist() -> None:
    """`pytest -n 2` on the capacity suite: pytest-benchmark's xdist warning must not abort the run."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("xdist")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
                          "tests_capacity/test_seed_vllm_pool.py"], cwd=root, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "INTERNALERROR" not in out.stdout


def test_report_environment_names_the_hardware_spec_and_its_origin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGREE)
    pytester.runpytest("-p", "no:cacheprovider", "--anatomy-hardware=h200", "--anatomy-report=r.html")
    env = json.loads(pytester.path.joinpath("r.json").read_text())["environment"]
    assert env["hardware_spec"] == {"name": "h200", "from": "catalog", "selected_by": "--anatomy-hardware"}
    pytester.runpytest("-p", "no:cacheprovider", "--anatomy-source=recorded", "--anatomy-report=s.html")
    assert json.loads(pytester.path.joinpath("s.json").read_text())["environment"]["hardware_spec"] is None


def test_a_live_sessions_environment_names_its_host(pytestconfig: pytest.Config) -> None:
    """With a detected GPU the ledger's environment carries the host (host_facts: CPU model and counts), which moves
    host-bound step times; without one it carries none (a replay ran on no GPU host)."""
    from pathlib import Path

    from pytest_anatomy.options import AnatomySettings
    from pytest_anatomy.session import AnatomySession

    settings = AnatomySettings(source="recorded", hardware="auto", model="qwen2.5-7b", record=False,
                               allow_resolved=False, report=None, summary=None, results_dir=Path("results"),
                               replay_hardware="all")
    replay = AnatomySession(settings)
    assert "host" not in replay.environment(pytestconfig)
    live = AnatomySession(settings, _gpu=object())  # a detected GPU (any object: environment only names it)
    host = live.environment(pytestconfig)["host"]
    assert set(host) == {"cpu_model", "logical_cpus", "usable_cpus", "kernel", "gpu_uuid"}
