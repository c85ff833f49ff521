"""`pytest-anatomy predict latency` (pytest_anatomy/cli_latency.py) through its own argparse
wiring: JSON shape, the seed's numbers, ceilings and calibration flags, --rate, errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pytest_anatomy import cli_latency, recordings
from pytest_anatomy.specs.hardware import HARDWARE

# A card for questions whose answer does not depend on which card it is (the refusals below): any catalog entry.
ANY_CARD = sorted(HARDWARE)[0]
QUANTITIES = ("itl_ms", "prefill_ms", "ttft_ms", "throughput_tok_s")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-anatomy predict")
    cli_latency.add_parser(parser.add_subparsers(dest="what", required=True))
    return parser


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    args = _parser().parse_args(["latency", *argv, "--json"])
    assert cli_latency.run(args) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_every_quantity_with_its_derivation(capsys) -> None:
    out = _run(capsys, "--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "8")
    assert set(out) == set(QUANTITIES)
    for q in QUANTITIES:
        assert set(out[q]) >= {"value", "unit", "formula", "terms", "inputs", "notes"}
        assert out[q]["value"] > 0 and out[q]["terms"], q
    assert [out[q]["unit"] for q in QUANTITIES] == ["ms", "ms", "ms", "tokens/s"]
    names = {t["name"] for t in out["itl_ms"]["terms"]}
    assert {"matmul weights", "KV read, decode", "t_overhead", "bandwidth", "peak"} <= names


def test_seed_decode_floor_at_c1(capsys) -> None:
    """STUDY.md claim 4: (14.14 GB + 1,152 x 56 KiB) / 1008 GB/s = 14.09 ms at C=1."""
    out = _run(capsys, "--model", "qwen2.5-7b", "--hardware", "rtx4090", "--batch", "1",
               "--input-len", "1024", "--output-len", "256", "--uncalibrated")  # the claim is the datasheet floor
    assert out["itl_ms"]["value"] == pytest.approx(14.09, abs=0.005)
    bw = next(t for t in out["itl_ms"]["terms"] if t["name"] == "bandwidth")
    assert bw["value"] == 1008e9 and "datasheet" in bw["note"]
    assert any("uncalibrated" in n for n in out["itl_ms"]["notes"])


def test_measured_ceilings_and_calibration_flags(capsys) -> None:
    base = ("--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "1")
    datasheet = _run(capsys, *base, "--uncalibrated")
    measured = _run(capsys, *base, "--bandwidth-gbs", "4469", "--peak-tflops", "799.6",
                    "--step-overhead-ms", "1.5", "--compute-efficiency", "0.8")
    # 14.2 GB at 4.8 vs 4.469 TB/s, plus the overhead: all four flags replace the recorded calibration
    assert measured["itl_ms"]["value"] == pytest.approx(datasheet["itl_ms"]["value"] * 4800 / 4469 + 1.5, rel=1e-3)
    bw = next(t for t in measured["itl_ms"]["terms"] if t["name"] == "bandwidth")
    assert "given on the command line" in bw["note"] and "datasheet 4800 GB/s" in bw["note"]
    # a compute-bound prefill slows by 1/eta
    assert measured["prefill_ms"]["value"] > datasheet["prefill_ms"]["value"] * 989.5 / 799.6 / 0.8 * 0.99


def test_batch_grows_itl_and_throughput(capsys) -> None:
    base = ("--model", "qwen2.5-7b", "--hardware", "rtx4090", "--max-num-batched-tokens", "2048")
    one, many = _run(capsys, *base, "--batch", "1"), _run(capsys, *base, "--batch", "32")
    assert many["itl_ms"]["value"] > one["itl_ms"]["value"]
    assert 10 < many["throughput_tok_s"]["value"] / one["throughput_tok_s"]["value"] < 32


def test_rate_simulates_and_reports_the_knee(capsys) -> None:
    base = ("--model", "qwen2.5-0.5b", "--hardware", "h200", "--input-len", "512", "--output-len", "64",
            "--max-num-seqs", "16", "--max-num-batched-tokens", "2048", "--requests", "150")
    low = _run(capsys, *base, "--rate", "5")
    knee = low["saturation_request_rate"]["value"]
    high = _run(capsys, *base, "--rate", str(round(2 * knee, 3)))
    assert "simulation" in low["ttft_ms"]["formula"]
    assert high["ttft_ms"]["value"] > 5 * low["ttft_ms"]["value"]  # past the knee the queue grows
    assert high["throughput_tok_s"]["value"] <= 1.05 * low["saturation_request_rate"]["terms"][0]["value"]


def test_text_output_and_errors(capsys) -> None:
    args = _parser().parse_args(["latency", "--model", "qwen2.5-7b", "--hardware", "rtx4090"])
    assert cli_latency.run(args) == 0
    text = capsys.readouterr().out
    assert all(q in text for q in QUANTITIES)
    bad = _parser().parse_args(["latency", "--model", "no-such-model", "--hardware", "rtx4090"])
    assert cli_latency.run(bad) == 2
    assert "no-such-model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _parser().parse_args(["latency", "--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "0"])


RESULTS = Path(__file__).resolve().parents[1] / "results"


def _calibration_decode_b1(card: str) -> recordings.Recording:
    from pytest_anatomy.cli_calibration import typical_session_b1
    from pytest_anatomy.specs.hardware import get_hardware

    return typical_session_b1(RESULTS, get_hardware(card))


def test_the_calibration_session_is_a_typical_card() -> None:
    """The default calibration's session is typical of its card by b=1 residual (step less bare roofline at that
    session's read ceiling), counted here apart from cli_calibration's own ranking: each visit may draw another card
    of the type, and the newest card's residual need not be the typical one (the tenth H200 card's sat below the nine
    before it). A card cli_calibration.PINNED_SESSION pins keeps that session while it ranks in the middle third of
    the card's complete sessions (one more recording moves no default answer); past it, the failure names the median
    to pin. An unpinned card's is the median, up to one. Every recorded card with a calibration session (a Qwen2.5-7B
    b=1 decode run), found when the test runs: a live session's collection reads no recordings."""
    cards = sorted({p.parent.parent.name for p in RESULTS.glob("*/latency/qwen2.5-7b.decode.b1@*.json")})
    assert cards
    for card in cards:
        _check_typical_card(card)


def test_every_pinned_calibration_session_is_the_one_used() -> None:
    """A pin names one of its card's complete recorded sessions the default may use (not one NOT_A_CALIBRATION
    leaves out, not a misspelt stamp): else typical_session_b1 would quietly fall back to the day's median."""
    from pytest_anatomy import cli_calibration

    for card, pinned in cli_calibration.PINNED_SESSION.items():
        used = _calibration_decode_b1(card).recorded_at
        assert recordings.same_instant(pinned, used), (card, pinned, used)


def _check_typical_card(card: str) -> None:
    from pytest_anatomy import cli_calibration
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import latency as lat

    hw, qwen = get_hardware(card), load_model("qwen2.5-7b")

    def residual(b1: recordings.Recording) -> float:
        ceil = recordings.load_beside(RESULTS, card, "ceilings", "ceilings", b1)
        s = b1.data["run"]["settings"]
        bare = lat.decode_step_time(qwen, lat.Ceilings.measured(hw, bandwidth=ceil["read_bandwidth.value"].value,
                                                                 peak=ceil["matmul_bf16.value"].value, source="test"),
                                    lat.UNCALIBRATED, 1, s["input_len"] + s["output_len"] / 2)
        return b1["step_time_s"].value - bare.value

    complete = []
    for path in recordings.candidates(RESULTS, card, "latency", "qwen2.5-7b.decode.b1"):
        b1 = recordings.load_file(path)
        try:
            for name in ("qwen2.5-7b.engine", "qwen2.5-7b.prefill.l8192"):
                recordings.load_beside(RESULTS, card, "latency", name, b1)
            complete.append(residual(b1))
        except recordings.MissingRecording:
            continue
    chosen = residual(_calibration_decode_b1(card))
    below, above, n = sum(r < chosen for r in complete), sum(r > chosen for r in complete), len(complete)
    if card not in cli_calibration.PINNED_SESSION:
        assert complete and abs(below - above) <= 1, (card, below, above, n)
        return
    median = cli_calibration.middle_session(RESULTS, hw).recorded_at
    assert n // 3 <= below <= n - 1 - n // 3, (
        f"{card}: the pinned calibration session ranks {below + 1} of {n} by b=1 residual, outside the middle third: "
        f"pin the median session, {median}, in cli_calibration.PINNED_SESSION and review the default answers it moves")


def test_calibrated_by_default_answers_the_recorded_b1_step(capsys) -> None:
    """The H200 b=1 step is the overhead's fit point, so the calibrated answer must reproduce the
    calibration session's recorded step; the CLI's context (1024 + 256/2) differs from the run's by a few MB of KV
    read against 14.2 GB of weights: 1% covers it. The datasheet roofline stays far below it."""
    base = ("--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "1", "--results", str(RESULTS))
    recorded_ms = _calibration_decode_b1("h200")["step_time_s"].value * 1e3
    calibrated, roofline = _run(capsys, *base), _run(capsys, *base, "--uncalibrated")
    assert calibrated["itl_ms"]["value"] == pytest.approx(recorded_ms, rel=0.01)
    assert roofline["itl_ms"]["value"] < 0.8 * recorded_ms
    assert any("--uncalibrated" in n for n in roofline["itl_ms"]["notes"])


def test_notes_name_the_recordings_of_the_calibration(capsys) -> None:
    b1 = _calibration_decode_b1("h200")
    out = _run(capsys, "--model", "qwen2.5-7b", "--hardware", "h200", "--results", str(RESULTS))
    for q in QUANTITIES:
        note = next(n for n in out[q]["notes"] if n.startswith("calibrated from the typical recorded session"))
        assert f"qwen2.5-7b.decode.b1@{recordings.stamp_of(b1.recorded_at)}.json" in note
        assert "/ceilings/ceilings@" in note and "qwen2.5-7b.prefill.l8192@" in note
    bw = next(t for t in out["itl_ms"]["terms"] if t["name"] == "bandwidth")
    assert "measured" in bw["note"] and "ceilings@" in bw["note"]


def test_one_flag_overrides_one_constant_of_the_calibration(capsys) -> None:
    """--step-overhead-ms 0 keeps the recorded ceilings and eta and drops only the overhead."""
    base = ("--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "1", "--results", str(RESULTS))
    calibrated, no_overhead = _run(capsys, *base), _run(capsys, *base, "--step-overhead-ms", "0")
    overhead = next(t for t in calibrated["itl_ms"]["terms"] if t["name"] == "t_overhead")["value"]
    assert overhead > 0
    assert no_overhead["itl_ms"]["value"] == pytest.approx(calibrated["itl_ms"]["value"] - overhead * 1e3, rel=1e-9)
    assert any("given on the command line: --step-overhead-ms 0" in n for n in no_overhead["itl_ms"]["notes"])


def test_a_card_without_recordings_gets_the_h200_calibration_transferred(capsys) -> None:
    base = ("--model", "qwen2.5-7b", "--hardware", "b200", "--batch", "1", "--results", str(RESULTS))
    default, roofline = _run(capsys, *base), _run(capsys, *base, "--uncalibrated")
    assert default["itl_ms"]["value"] > roofline["itl_ms"]["value"]  # the H200's overhead and attainment
    assert default["itl_ms"]["notes"][0].startswith("no recorded session for b200: transferred from the H200")


def test_without_any_recorded_session_the_datasheet_roofline_answers_and_says_so(capsys, tmp_path: Path) -> None:
    base = ("--model", "qwen2.5-7b", "--hardware", "h200", "--batch", "1", "--results", str(tmp_path))
    default, roofline = _run(capsys, *base), _run(capsys, *base, "--uncalibrated")
    assert default["itl_ms"]["value"] == roofline["itl_ms"]["value"]
    assert any(n.startswith("no recorded calibration session for h200") for n in default["itl_ms"]["notes"])


@pytest.mark.parametrize("hardware", sorted(HARDWARE))
def test_every_catalog_card_says_where_its_constants_come_from(capsys, hardware: str) -> None:
    """Calibrated from its recordings, the H200's transferred, or the datasheet roofline, by name: never
    silently any of them."""
    out = _run(capsys, "--model", "qwen2.5-0.5b", "--hardware", hardware, "--results", str(RESULTS))
    for q in QUANTITIES:
        assert out[q]["notes"][0].startswith(("calibrated from the typical recorded session",
                                              f"no recorded session for {hardware}: transferred from the H200",
                                              f"no recorded calibration session for {hardware}")), q


def test_one_tiny_layer_count_is_said_not_fitted(capsys, tmp_path: Path) -> None:
    """A newest session that ran the tiny overhead model at 28 layers only (2026-12-02 02:33, here alone in a results
    folder): no layer slope, and the notes say so."""
    card, stamp = "h200", "20261202T023351.000000Z"  # the recorded session this case exists in
    for suite in ("latency", "ceilings"):
        (tmp_path / card / suite).mkdir(parents=True)
        for f in (RESULTS / card / suite).glob(f"*@{stamp}.json"):
            (tmp_path / card / suite / f.name).symlink_to(f)
    out = _run(capsys, "--model", "qwen2.5-7b", "--hardware", card, "--batch", "1", "--results", str(tmp_path))
    assert any("at 28 layers only" in n and "two layer counts" in n for n in out["itl_ms"]["notes"])


def test_help_says_what_answers_for_a_card_without_recordings(capsys) -> None:
    """The help states the behaviour the test above checks: the H200's calibration transferred, the
    median recorded session's constants (it once said the datasheet roofline and the newest session)."""
    with pytest.raises(SystemExit):
        _parser().parse_args(["latency", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "carried over by the transfer rule" in out and "A card without recordings answers with the" not in out
    assert "newest recorded" not in out and "uncertainty}" in out


def test_a_kv_pool_larger_than_the_card_is_refused(capsys) -> None:
    """--kv-tokens 10^14 (the engine's pool, so the engine 'started') was answered with exit 0: a pool whose bytes
    exceed the card's memory is one line naming the bytes and the card."""
    args = _parser().parse_args(["latency", "--model", "qwen2.5-7b", "--hardware", ANY_CARD,
                                 "--kv-tokens", str(10**14)])
    assert cli_latency.run(args) == 2
    err = capsys.readouterr().err
    card = HARDWARE[ANY_CARD].nvml_memory_bytes or HARDWARE[ANY_CARD].memory_bytes
    assert err == ("pytest-anatomy: error: --kv-tokens 100,000,000,000,000 x 57,344 B per token = 5,340,576,171.9 GiB "
                   f"of KV, more than the {ANY_CARD}'s {card / 2**30:,.1f} GiB; pass the engine's 'GPU KV cache size' "
                   "in tokens\n")
    fits = int(0.5 * card / 57_344)  # half the card's memory as a pool: answered
    ok = _parser().parse_args(["latency", "--model", "qwen2.5-7b", "--hardware", ANY_CARD, "--kv-tokens", str(fits)])
    assert cli_latency.run(ok) == 0


@pytest.mark.parametrize("argv, flags", [(["--requests", "10"], "--requests"),
                                         (["--requests", "10", "--seed", "3"], "--requests, --seed")])
def test_simulation_options_without_rate_are_refused_not_ignored(capsys, argv, flags) -> None:
    """--requests and --seed size and seed the --rate simulation; without --rate they were dropped silently."""
    args = _parser().parse_args(["latency", "--model", "qwen2.5-7b", "--hardware", ANY_CARD, *argv])
    assert cli_latency.run(args) == 2
    assert capsys.readouterr().err == (f"pytest-anatomy: error: {flags}: read only by the --rate simulation; add "
                                       "--rate R (Poisson arrivals per second) or drop them\n")


@pytest.mark.parametrize("question", [["predict", "latency"], ["plan", "--workload", "chat"]], ids=["latency", "plan"])
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_results_path_that_is_not_a_folder_is_refused(capsys, tmp_path: Path, question, kind) -> None:
    """A mistyped --results was read as "no recordings": the answer silently became the datasheet roofline's (2.96 ms
    instead of the calibrated 4.75 ms for qwen2.5-7b b=1 on the H200), exit 0."""
    from pytest_anatomy.cli import main

    path = tmp_path / "resutls"
    if kind == "file":
        path.write_text("")
    with pytest.raises(SystemExit) as exit_:
        main([*question, "--model", "qwen2.5-7b", "--hardware", ANY_CARD, "--results", str(path)])
    err = capsys.readouterr().err
    problem = f"{path} is a file, not a folder of recordings" if kind == "file" else f"{path}: no such folder"
    assert exit_.value.code == 2 and "Traceback" not in err
    assert err == (f"pytest-anatomy {question[0]}{' latency' if question[0] == 'predict' else ''}: error: argument "
                   f"--results: {problem}; pass the checkout's results folder (or one shaped like it) "
                   f"(see pytest-anatomy {' '.join(question[:2]) if question[0] == 'predict' else 'plan'} --help)\n")
