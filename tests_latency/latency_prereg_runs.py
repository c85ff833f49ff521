"""The pre-registered latency runs and their recordings, for test_latency_preregistered.py: which committed
pre-registrations there are and what they plan (latency_preregistrations, decode_runs), the first recording of each
planned run made after its pre-registration was committed (recorded_since; skip_reason for a part the device program
skipped), the cases and same-session pairs the test module parametrizes with (preregistered_cases,
preregistered_pairs), the prediction an entry committed (preregistered_prediction), and the current theory's step and
prefill with the calibration of the session that measured a run (measuring_session, current_decode,
current_prefill). Split out of test_latency_preregistered.py (over 500 lines) with latency_prereg_bands.py, which
bands its findings from these; test_latency_small_model_bands.py reads the same cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import latency_prereg_findings as pf

from pytest_anatomy import latency_prereg as lp
from pytest_anatomy import preregistration as pre
from pytest_anatomy import recordings
from pytest_anatomy.cli_calibration import CALIBRATION_MODEL, session_calibration
from pytest_anatomy.specs.hardware import HARDWARE, get_hardware
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import calibration as cal
from pytest_anatomy.theory import latency as lat
from pytest_anatomy.theory.prediction import Prediction, Term

RESULTS = Path(__file__).resolve().parents[1] / "results"


def latency_preregistrations(results: Path = RESULTS) -> list[tuple[str, pre.Preregistration]]:
    """(card, pre-registration) of every committed latency pre-registration that plans runs, card by card."""
    return [(hw, p) for hw in sorted(HARDWARE) if (results / hw / pre.FOLDER).is_dir()
            for p in pre.load_all(results, hw) if p.doc.get("suite") == lp.SUITE and p.doc.get("runs")]


def decode_runs(p: pre.Preregistration) -> dict[str, dict[int, dict[str, Any]]]:
    """{model: {batch: run}} of a pre-registration's decode entries."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for run in p.doc["runs"].values():
        if run["kind"] == "decode":
            out.setdefault(run["model"], {})[int(run["settings"]["batch"])] = run
    return out


def recorded_since(results: Path, hw: str, name: str, after: Any, *,
                   skipped: bool = False) -> recordings.Recording | None:
    """The first recording of `name` on `hw` made after the pre-registration was committed (None: not yet run). A
    part the device program skipped (its engine's pool could not hold the batch) is a recording with no
    measurement: it is returned only with `skipped`
    (test_a_skipped_preregistered_run_is_one_its_engines_pool_could_not_hold)."""
    if after is None:
        return None
    found = [recordings.load_file(path) for path in recordings.candidates(results, hw, "latency", name)]
    later = [r for r in found if pre.parse_utc(r.recorded_at) > after and (skip_reason(r) is not None) == skipped]
    return min(later, key=lambda r: r.recorded_at) if later else None


def skip_reason(rec: recordings.Recording) -> str | None:
    """Why the device program skipped the recorded part `rec` (None: it ran and was measured)."""
    skipped = (rec.data.get("run") or {}).get("skipped")
    return None if skipped is None else str(skipped)


def preregistered_cases(results: Path, kind: str = "decode") -> list[Any]:
    """(results, hw, pre-registration, its entry, the recording) of every pre-registered `kind` run recorded since."""
    cases = []
    for hw, p in latency_preregistrations(results):
        for name, run in sorted(p.doc["runs"].items()):
            rec = recorded_since(results, hw, name, p.committed_at) if run["kind"] == kind else None
            if rec is not None:
                marks = pf.decode_marks(hw, run["model"], int(run["settings"]["batch"])) if kind == "decode" \
                    else pf.prefill_marks(hw, run["model"], int(run["settings"]["input_len"]))
                cases.append(pytest.param(results, hw, p, run, rec, id=f"{hw}-{p.path.stem}-{name}", marks=marks))
    return cases or [pytest.param(None, None, None, None, None, marks=pytest.mark.skip(
        reason=f"no pre-registered {kind} run recorded yet (planned: docs/RECORDING.md, issue 10 item 1)"))]


def preregistered_pairs(results: Path) -> list[Any]:
    """(results, hw, entry a, entry c, recording a, recording c) of every two models pre-registered together whose
    decode runs at one batch were recorded in one session since."""
    cases = []
    for hw, p in latency_preregistrations(results):
        runs = decode_runs(p)
        models = sorted(runs)
        for i, a in enumerate(models):
            for c in models[i + 1:]:
                for b in sorted(set(runs[a]) & set(runs[c])):
                    ra, rc = (recorded_since(results, hw, f"{m}.decode.b{b}", p.committed_at) for m in (a, c))
                    if ra is not None and rc is not None and same_session(ra, rc):
                        cases.append(pytest.param(results, hw, runs[a][b], runs[c][b], ra, rc,
                                                  id=f"{hw}-{a}-vs-{c}-b{b}", marks=pf.pair_marks(hw, (a, c))))
    return cases or [pytest.param(None, None, None, None, None, None, marks=pytest.mark.skip(
        reason="no pre-registered pair of models recorded in one session yet (planned: docs/RECORDING.md)"))]


def same_session(a: recordings.Recording, c: recordings.Recording) -> bool:
    """One device batch (one stamp) or one live plan run (one session key), as recordings.load_beside reads it."""
    key = recordings.session_key(a)
    return a.recorded_at == c.recorded_at or (key is not None and key == recordings.session_key(c))


def planned_batches(results: Path, hw: str, model: str) -> list[int]:
    """The decode batches `hw`'s pre-registrations plan for `model`."""
    return sorted({b for card, p in latency_preregistrations(results) if card == hw
                   for b in decode_runs(p).get(model, {})})


def preregistered_prediction(prereg: pre.Preregistration, run: dict[str, Any], quantity: str) -> Prediction:
    """The prediction of `quantity` the pre-registration `prereg` committed for `run`."""
    entry = run["predictions"][quantity]
    return Prediction(float(entry["value"]), str(entry["unit"]),
                      f"pre-registered in {prereg.path.name} (theory {str(prereg.doc['theory_commit'])[:12]}): "
                      f"{entry['formula']}",
                      {"file": prereg.path.name, "committed_at": f"{prereg.committed_at:%Y-%m-%dT%H:%M:%SZ}"},
                      terms=tuple(Term(k, v, "") for k, v in entry["terms"].items()),
                      notes=("written and committed before the run, from the median recorded calibration session",))


def measuring_session(results: Path, hw: str, rec: recordings.Recording) -> tuple[Any, recordings.Recording]:
    """The calibration of the session that measured `rec` (cli_calibration.session_calibration) and its Qwen2.5-7B
    b=1 recording; the test fails in one line where that session cannot calibrate."""
    qwen_b1 = recordings.load_beside(results, hw, "latency", f"{CALIBRATION_MODEL}.decode.b1", rec)
    found = session_calibration(results, get_hardware(hw), qwen_b1)
    if isinstance(found, str):
        pytest.fail(f"{rec.name}: {found}")
    return found, qwen_b1


def current_decode(results: Path, hw: str, run: dict, rec: recordings.Recording, found: Any = None) -> Prediction:
    """The current theory's step for `run`, with the calibration of the session that measured `rec`."""
    found = found or measuring_session(results, hw, rec)[0]
    s = rec.data["run"]["settings"]
    return lat.decode_step_time(load_model(run["model"]), found.ceilings, found.calib, int(run["settings"]["batch"]),
                                s["input_len"] + s["output_len"] / 2)


def current_prefill(results: Path, hw: str, run: dict, rec: recordings.Recording,
                    found: Any = None) -> tuple[Prediction, Any, recordings.Recording]:
    """The current theory's lone prefill for `run`, with the calibration of the session that measured `rec` and eta
    from that session's GEMM timings at the model's own linear shapes; with the calibration and that session's
    ceilings recording."""
    found = found or measuring_session(results, hw, rec)[0]
    model = load_model(run["model"])
    ceil = recordings.load_beside(results, hw, "ceilings", "ceilings", rec)
    calib = cal.with_gemm_efficiency(found.calib, model, cal.gemm_seconds(ceil.measurements), found.ceilings.peak)
    n = int(run["settings"]["input_len"])
    return lat.prefill_time(model, found.ceilings, calib, n, lp.MAX_NUM_BATCHED_TOKENS), calib, ceil
