"""`pytest-anatomy predict capacity`: the planning CLI, its JSON shape and its errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_anatomy.cli import main
from pytest_anatomy.specs.hardware import HARDWARE

# A card for questions whose answer does not depend on which card it is (the refusals below): any catalog entry.
ANY_CARD = sorted(HARDWARE)[0]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_seed_question_gives_the_seed_pool(capsys) -> None:
    out = _json(capsys, "predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "rtx4090",
                "--available-kv-gib", "6.41", "--max-model-len", "8192", "--json")
    assert out["kv_bytes_per_token"]["value"] == 57344
    # vLLM logged 120,064 tokens for "6.41 GiB"; the log's rounding allows 119,9xx..120,1xx.
    assert out["kv_tokens"]["value"] == pytest.approx(120_064, rel=8e-4)
    assert out["max_concurrency"]["value"] == pytest.approx(14.66, abs=0.02)
    for q in ("kv_bytes_per_token", "num_gpu_blocks", "kv_tokens", "max_concurrency", "weight_bytes"):
        assert set(out[q]) >= {"value", "unit", "formula", "terms"}
    assert out["num_gpu_blocks"]["formula"] == "available_kv_bytes // page_bytes // layers_per_group"


def test_without_available_memory_an_unmodelled_architecture_is_explicitly_not_modeled(capsys) -> None:
    out = _json(capsys, "predict", "capacity", "--model", "mixtral-8x7b", "--hardware", "h200", "--json")
    assert out["available_kv_bytes"]["value"] is None
    assert "available-kv-gib" in out["available_kv_bytes"]["not_modeled"]
    assert out["model_memory_bytes"]["value"] is None and out["kv_tokens"]["value"] is None
    assert out["requested_memory_bytes"]["value"] == 135_098_892_288  # ceil(150,109,880,320 x 0.9)


LEDGER = ("requested_memory_bytes", "model_memory_bytes", "peak_activation_bytes", "non_torch_increase_bytes",
          "cudagraph_estimate_bytes", "available_kv_bytes", "num_gpu_blocks", "kv_tokens", "max_concurrency")


def test_issue_question_prints_the_whole_ledger_without_available_memory(capsys) -> None:
    out = _json(capsys, "predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200",
                "--gpu-memory-utilization", "0.9", "--max-model-len", "8192", "--max-num-seqs", "128", "--json")
    for q in LEDGER:
        assert isinstance(out[q]["value"], (int, float)), q
        assert set(out[q]) >= {"value", "unit", "formula", "terms", "notes"}
    terms = sum(out[q]["value"] for q in LEDGER[1:5])
    assert out["available_kv_bytes"]["value"] == out["requested_memory_bytes"]["value"] - terms
    assert out["num_gpu_blocks"]["value"] == out["available_kv_bytes"]["value"] // (16 * 4 * 256 * 2) // 28
    assert out["kv_tokens"]["value"] == out["num_gpu_blocks"]["value"] * 16
    assert out["max_num_seqs"]["value"] == 128 and out["max_num_batched_tokens"]["value"] == 16384
    assert out["cudagraph_estimate_bytes"]["value"] == 0  # V2 runner, the default


def test_settings_flags_reach_the_ledger(capsys) -> None:
    base = ["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", "--json"]
    default = _json(capsys, *base)
    small = _json(capsys, *base, "--max-num-batched-tokens", "4096", "--enforce-eager")
    v1 = _json(capsys, *base, "--model-runner", "v1")
    assert small["peak_activation_bytes"]["value"] < default["peak_activation_bytes"]["value"]
    assert small["num_gpu_blocks"]["value"] > default["num_gpu_blocks"]["value"]
    assert v1["cudagraph_estimate_bytes"]["value"] > 0 and default["cudagraph_estimate_bytes"]["value"] == 0
    bs32 = _json(capsys, *base, "--block-size", "32")
    assert bs32["num_gpu_blocks"]["value"] == default["num_gpu_blocks"]["value"] // 2


def test_available_kv_override_keeps_the_predicted_terms(capsys) -> None:
    out = _json(capsys, "predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200",
                "--available-kv-gib", "100", "--json")
    assert out["available_kv_bytes"]["value"] == 100 * 2**30
    assert out["available_kv_bytes"]["formula"].startswith("given")
    assert out["model_memory_bytes"]["value"] > 15e9
    assert out["num_gpu_blocks"]["value"] == 100 * 2**30 // 32768 // 28


def test_config_path_fp8_and_tp(tmp_path, capsys) -> None:
    from pytest_anatomy.specs import catalog

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(dict(catalog.load_config("llama-3.1-70b"))))
    out = _json(capsys, "predict", "capacity", "--model", str(cfg), "--hardware", "h200", "--kv-cache-dtype", "fp8",
                "--tp", "2", "--available-kv-gib", "40", "--json")
    assert out["kv_bytes_per_token"]["value"] == 80 * 4 * 128 * 2 * 1


def test_human_readable_output(capsys) -> None:
    assert main(["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "rtx4090"]) == 0
    text = capsys.readouterr().out
    assert "kv_bytes_per_token" in text and "56 KiB" in text
    # a < 70 GiB card gets vLLM's smaller defaults; its CUDA-visible total is unknown, which is said
    assert "8,192 tokens" in text and "256 requests" in text and "peak_activation_bytes" in text
    assert main(["predict", "capacity", "--model", "deepseek-v2-lite", "--hardware", "h200"]) == 0
    assert "not modeled" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--model", "qwen2.5-8b", "--hardware", "h200"], "qwen2.5-7b"),
    (["--model", "qwen2.5-7b", "--hardware", "h300"], "h200"),
    (["--model", "qwen2.5-7b", "--hardware", "h200", "--kv-cache-dtype", "fp7"], "fp8"),
])
def test_bad_input_is_a_clear_error(argv, message, capsys) -> None:
    assert main(["predict", "capacity", *argv]) == 2
    err = capsys.readouterr().err
    assert "error" in err and message in err


def test_malformed_config_names_the_file(tmp_path, capsys) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 10,')
    assert main(["predict", "capacity", "--model", str(bad), "--hardware", "h200"]) == 2
    assert "config.json" in capsys.readouterr().err


def test_impossible_batch_settings_are_a_clear_error(capsys) -> None:
    argv = ["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", "--max-num-seqs", "512",
            "--max-num-batched-tokens", "256"]
    assert main(argv) == 2
    assert "max_num_seqs" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--gpu-memory-utilization", "1.5"], ["--max-model-len", "0"],
                                  ["--max-num-seqs", "0"], ["--max-num-batched-tokens", "-4"],
                                  ["--block-size", "7"], ["--block-size", "8"], ["--block-size", "0"]])
def test_argument_validation(argv, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", "h200", *argv])
    assert "must be" in capsys.readouterr().err


def test_console_script_and_module_entry_points() -> None:
    out = subprocess.run([sys.executable, "-m", "pytest_anatomy", "predict", "capacity", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--available-kv-gib" in out


def test_the_report_command_runs_every_suite_readme_lists(tmp_path, monkeypatch) -> None:
    """README's main command is "the full reconciliation": `pytest-anatomy report` runs every tests_* suite of the
    checkout README's suite table lists, tests_plugin (the plugin's own tests, reconciling no measurement) apart.
    tests_llama was once left out of SUITE_DIRS, so the main command's report had no llama.cpp section."""
    from pathlib import Path

    from pytest_anatomy import cli

    root = Path(__file__).resolve().parents[1]
    folders = {p.name for p in root.glob("tests_*") if p.is_dir()} - {"tests_plugin"}
    listed = {row.split("`")[1] for row in (root / "README.md").read_text(encoding="utf-8").splitlines()
              if row.startswith("| `tests_")}
    assert set(cli.SUITE_DIRS) == folders == listed - {"tests_plugin"}
    for name in cli.SUITE_DIRS:  # the command takes them from the folder it runs in
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path)
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda cmd: ran.append(cmd) or 2)
    assert main(["report", "-o", str(tmp_path / "r.html")]) == 2
    assert [a for a in ran[0] if a.startswith("tests_")] == list(cli.SUITE_DIRS)


@pytest.mark.parametrize("argv", [["import-device"], ["import-ncu", "x.ncu-rep"]], ids=["import-device", "import-ncu"])
def test_a_missing_input_file_is_named_in_one_line(capsys, tmp_path, argv) -> None:
    """A file the system cannot open is named with the system's reason, not errno's tuple or a traceback."""
    missing = tmp_path / "nope.json"
    assert main([*argv, str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"pytest-anatomy: error: {missing}: No such file or directory"


def test_import_device_help_says_in_sample_covers_every_held_out_check(capsys) -> None:
    """--in-sample applies to every check preregistration.checked_held_out makes, not the capacity one alone."""
    with pytest.raises(SystemExit):
        main(["import-device", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(word in out for word in ("capacity run", "kernel timing", "latency run", "deployment batch"))


def test_fetch_quant_data_refuses_a_file_or_an_empty_dir_in_one_line(capsys, tmp_path, monkeypatch) -> None:
    """--dir naming a file was mkdir's FileExistsError traceback; an empty --dir was the current folder, so the
    wheels were downloaded into the checkout. Both are refused before pip runs."""
    from pytest_anatomy import quant_data

    monkeypatch.setattr(quant_data, "_pip", lambda cmd: pytest.fail(f"pip ran: {cmd}"))
    a_file = tmp_path / "cache"
    a_file.write_text("")
    assert main(["fetch-quant-data", "--dir", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err == (f"pytest-anatomy: error: {a_file} is a file, not a folder: pass --dir a folder for the cache "
                   "(or set $ANATOMY_QUANT_DATA to one)\n")
    with pytest.raises(SystemExit) as exit_:
        main(["fetch-quant-data", "--dir", ""])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --dir: must not be empty" in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("manifest, message", [
    ('{"provenance": {}}', 'no launches (a non-empty list of objects, under "launches")'),
    ('{"launches": "x"}', 'no launches (a non-empty list of objects, under "launches")'),
    ('{"launches": [{"marker_grid": 1, "rung": "r", "shape": "s"}]}', "launch 0 lacks ladder"),
    ('{"launches": [{"marker_grid": "1", "ladder": "l", "rung": "r", "shape": "s"}]}',
     "launch 0 has marker_grid '1', not an integer >= 1"),
    ('{"launches": [', "not valid JSON (Expecting value at line 1)"),
    (b"\xfd7zXZ\x00", "not a JSON manifest (not UTF-8 text)"),
], ids=["no-launches", "launches-not-a-list", "entry-without-ladder", "grid-a-string", "cut-short", "swapped"])
def test_import_ncu_names_a_wrong_manifest_in_one_line(capsys, tmp_path, manifest, message) -> None:
    """A manifest without "launches" printed 'error: launches' (a bare KeyError), an entry without a ladder
    'error: ladder', launches that are not objects a TypeError traceback, the report and manifest swapped
    'error: utf-8'. Each names the file, the problem and the fix; nothing is written."""
    path = tmp_path / "profile-manifest.json"
    path.write_bytes(manifest if isinstance(manifest, bytes) else manifest.encode())
    report = tmp_path / "ncu.csv"
    report.write_text('"ID","Kernel Name","Grid Size","Block Size"\n')
    results = tmp_path / "results"
    code = main(["import-ncu", str(report), str(path), "--recorded-at", "2026-11-30T02:17:00Z",
                 "--results", str(results)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err == (f"pytest-anatomy: error: {path}: {message}; pass the profile-manifest.json the profile script "
                   f"wrote beside the report{' (report first, then manifest)' if message.startswith('not a JSON') else ''}"
                   "\n")
    assert not results.exists()


def test_import_ncu_names_a_report_without_its_columns(capsys, tmp_path) -> None:
    """A report exported without the details page's columns printed 'error: Kernel Name' (a bare KeyError)."""
    report, manifest = tmp_path / "ncu.csv", tmp_path / "profile-manifest.json"
    report.write_text('"ID","Metric Name"\n"0","Duration"\n')
    manifest.write_text('{"launches": [{"marker_grid": 1, "ladder": "l", "rung": "r", "shape": "s"}]}')
    assert main(["import-ncu", str(report), str(manifest), "--recorded-at", "2026-11-30T02:17:00Z",
                 "--results", str(tmp_path / "results"), "--hardware", ANY_CARD]) == 2
    assert capsys.readouterr().err == ("pytest-anatomy: error: the ncu report has no Kernel Name, Grid Size, Block Size "
                                       "column: was it written with --csv --page details?\n")


@pytest.mark.parametrize("name, message", [
    ("r.txt", "the suffix must say which file it is: .html (the report, ledger beside it as .json) or .json "
              "(the ledger, report beside it as .html)"),
    ("a-file/r.html", "{tmp}/a-file/r.html cannot be written: {tmp}/a-file is a file, not a folder"),
], ids=["no-report-suffix", "under-a-file"])
def test_report_refuses_a_bad_output_before_running_pytest(capsys, tmp_path, monkeypatch, name, message) -> None:
    """-o was checked by the plugin inside the pytest run: two lines, exit 4 and a README remark that the run was
    not whole. It is one line, exit 2, before any test runs."""
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(subprocess, "call", lambda cmd: pytest.fail(f"pytest ran: {cmd}"))
    assert main(["report", "-o", str(tmp_path / name)]) == 2
    assert capsys.readouterr().err == (f"pytest-anatomy: error: -o {tmp_path / name}: "
                                       f"{message.format(tmp=tmp_path)}\n")


def test_report_refuses_an_empty_output(capsys, monkeypatch) -> None:
    """-o "" ran every suite and wrote no report: the plugin reads an empty path as no report at all."""
    monkeypatch.setattr(subprocess, "call", lambda cmd: pytest.fail(f"pytest ran: {cmd}"))
    with pytest.raises(SystemExit) as exit_:
        main(["report", "-o", ""])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err == ("pytest-anatomy report: error: argument -o/--output: must not be empty "
                                             "(see pytest-anatomy report --help)\n")


def test_available_kv_memory_above_the_whole_budget_is_refused(capsys) -> None:
    """The engine's available KV memory is a part of its budget: --available-kv-gib 1e30 answered 10^33 blocks with
    exit 0. Above the budget (here 0.9 x the card) is one line naming the budget and the flags to check."""
    argv = ["predict", "capacity", "--model", "qwen2.5-7b", "--hardware", ANY_CARD, "--json"]
    budget = _json(capsys, *argv)["requested_memory_bytes"]["value"]
    assert budget == pytest.approx(0.9 * (HARDWARE[ANY_CARD].nvml_memory_bytes or HARDWARE[ANY_CARD].memory_bytes))
    assert main([*argv, "--available-kv-gib", str(budget / 2**30 * 1.01)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pytest-anatomy: error: qwen2.5-7b: the given available KV memory (")
    assert (f"is above the whole budget {budget / 2**30:.1f} GiB on {ANY_CARD} (--gpu-memory-utilization 0.9), of "
            "which it is a part") in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main([*argv, "--available-kv-gib", str(budget / 2**30 * 0.99)]) == 0  # just inside: answered


@pytest.mark.parametrize("csv_text, problem", [
    ("", "{src} is empty"),
    ("id,system,precision\nrow-1,h200_sxm\n", "{src}: line 2 has 2 cells, the header 3 (cut short?)"),
    ("id,system\nrow-1,h200_sxm\n", "{folder}: a file is not as published (KeyError: "),
], ids=["empty", "row-cut-short", "column-missing"])
def test_import_third_party_names_a_damaged_source_file_in_one_line(capsys, tmp_path, csv_text, problem) -> None:
    """An empty CSV was a RuntimeError traceback (StopIteration inside a generator), a row cut short zip's
    ValueError traceback, a missing column a KeyError traceback; each is one line naming the file, nothing
    written."""
    third_party = tmp_path / "third-party"
    for sub in ("aiconfigurator", "argonne-llm-inference-bench", "inference-sim-blis"):
        (third_party / sub).mkdir(parents=True)
    folder = third_party / "aiconfigurator"
    (folder / "SOURCE.txt").write_text(f"source: github.com/x/y @ {'0' * 40}  path: a.csv  licence: MIT\n")
    (folder / "LICENSE").write_text("MIT\n")
    src = folder / "silicon_sample.csv"
    src.write_text(csv_text)
    results = tmp_path / "results"
    assert main(["import-third-party", str(third_party), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pytest-anatomy: error: {problem.format(src=src, folder=folder)}"), err
    assert err.endswith("restore the source's files as published (SOURCE.txt names the commit); nothing imported\n")
    assert err.count("\n") == 1 and "Traceback" not in err and not results.exists()


@pytest.mark.parametrize("script, problem", [
    ("x = (\n", "SyntaxError: '(' was never closed (plan.py, line 1)"),
    ("x = 1\n", "AttributeError: module 'capacity_plan' has no attribute 'PLAN'"),
], ids=["syntax-error", "no-PLAN"])
def test_preregister_names_a_plan_that_does_not_load(capsys, tmp_path, script, problem) -> None:
    """--plan runs the given file: its SyntaxError, or a module without PLAN, was a traceback."""
    plan = tmp_path / "plan.py"
    plan.write_text(script)
    assert main(["preregister", "capacity", "x.plan", "--plan", str(plan), "--results", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == (f"pytest-anatomy: error: {plan}: not a capacity plan ({problem}); pass the "
                                       "capacity plan (--plan scripts/device/capacity_plan.py)\n")


def test_preregister_refuses_a_plan_it_would_not_read(capsys, tmp_path) -> None:
    """--plan is the capacity plan; on kernels or latency it was dropped silently."""
    # --results outside any checkout: were --plan not refused first, nothing could be written into results/
    assert main(["preregister", "latency", "qwen2.5-32b", "--plan", str(tmp_path / "p.py"),
                 "--results", str(tmp_path / "results")]) == 2
    assert capsys.readouterr().err == ("pytest-anatomy: error: --plan is the capacity plan, not read by preregister "
                                       "latency; drop it\n")


@pytest.mark.parametrize("argv", [["import-seed", "seed-results"], ["import-device", "batch.json"],
                                  ["import-ncu", "ncu.csv", "manifest.json"], ["import-third-party", "third-party"],
                                  ["preregister", "latency", "qwen2.5-32b"]],
                         ids=["import-seed", "import-device", "import-ncu", "import-third-party", "preregister"])
def test_an_empty_results_folder_is_refused(capsys, tmp_path, monkeypatch, argv) -> None:
    """--results "" is Path(""), the current folder: the importers' recordings (import-seed's rtx4090/latency/...)
    would have landed in the checkout's root."""
    monkeypatch.chdir(tmp_path)  # were it not refused, anything written lands here, not in the checkout
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--results", "", "--dry-run"] if argv[0] != "preregister" else [*argv, "--results", ""])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err == (f"pytest-anatomy {argv[0]}: error: argument --results: must not be empty "
                                             f"(see pytest-anatomy {argv[0]} --help)\n")


def test_a_reader_that_closes_the_pipe_gets_no_traceback() -> None:
    """`pytest-anatomy ... | head -1` ended in "Exception ignored ... BrokenPipeError" (or a traceback from print):
    the command ends quietly with SIGPIPE's status, as a shell expects of a writer whose reader went away."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest_anatomy", "predict", "capacity", "--model", "qwen2.5-7b",
                             "--hardware", ANY_CARD, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the answer is written
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""
