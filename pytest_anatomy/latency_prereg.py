"""Latency pre-registration: a planned model's decode steps and lone prefills, predicted from the calibration a
recorded Qwen2.5-7B session fitted, written before the model is ever run (issue 10 items 1 and 5).

The step overhead is Qwen2.5-7B's b=1 residual (cli_calibration: the typical recorded session), so an error in a term
that does not depend on the batch cancels on Qwen itself and shows only on a model whose share of that term differs.
`pytest-anatomy preregister latency MODEL...` writes `results/<hw>/preregistered/latency-<stamp>.json` with, for each
planned run (the latency plan's run ids: MODEL.decode.bB, MODEL.prefill.lN):

- the prediction `predict latency` gives from the recorded calibration (memory-bound decode: bytes / BW + t_overhead;
  prefill: FLOPs / (eta x peak) + t_overhead per chunk, eta Qwen's own at the step's token count);
- `sensitivity`: how far each named term error (TERM_ERRORS) moves that prediction, relative, once the calibration
  has absorbed the same error on Qwen's b=1 step: e x (T_model(b) - T_qwen(1)) / BW / prediction. A decode step is
  memory-bound, so this is the theory's own algebra (tests_latency/test_latency_preregistered.py checks it against
  the mutated theory); prefill is compute-bound and carries none.

A model's first decode or prefill recording on a card with latency pre-registrations, stamped since
preregistration.LATENCY_REQUIRED_FROM, is held out: the importer refuses it unless such a file, committed before the
run, covers it (preregistration.latency_held_out and checked_held_out; `import-device --in-sample` files it as not
held out instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pytest_anatomy.cli_calibration import CALIBRATION_MODEL
from pytest_anatomy.measure.latency_live import DECODE_SHAPE, ENGINE_SETTINGS
from pytest_anatomy.specs.model import ModelSpec

SUITE = "latency"
MAX_NUM_BATCHED_TOKENS = int(ENGINE_SETTINGS["max_num_batched_tokens"])  # the plan's chunk budget
DECODE_QUANTITY, PREFILL_QUANTITY = "step_time_s", "engine_prefill_s.median"
# scripts/device/latency_plan.py's DECODE_BATCHES and PREFILL_LENS (tests_plugin/test_latency_prereg.py checks)
DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)
PREFILL_LENS = (128, 512, 2048, 8192, 16384, 32000)


def mean_context(shape: tuple[int, int] = DECODE_SHAPE) -> float:
    """A decode part's mean KV context over its steady steps (tests_latency.latency_setups.mean_context)."""
    return shape[0] + shape[1] / 2


def _lm_head_bytes(m: ModelSpec) -> float:
    return 2.0 * m.vocab_size * m.hidden_size  # bf16; read every step whether tied to the embedding or not


def _ffn_bytes(m: ModelSpec) -> float:
    return 2.0 * 3 * m.hidden_size * m.intermediate_size * m.num_layers  # gate, up, down (dense models)


def _weights(m: ModelSpec) -> float:
    from pytest_anatomy.theory.latency import matmul_weight_bytes

    return matmul_weight_bytes(m)


def _kv(m: ModelSpec, batch: int) -> float:
    from pytest_anatomy.theory.latency import kv_read_bytes

    return batch * kv_read_bytes(m, mean_context())


@dataclass(frozen=True)
class TermError:
    """One deliberate error in a byte term of the decode step: the term's bytes at (model, batch) times `factor`."""

    name: str
    factor: float  # the relative error: 0.05 for x1.05, -1 for the term dropped
    term: Callable[[ModelSpec, int], float]
    mutant: str  # tests_plugin/theory_mutants.py's id of the same error, where the catalogue has it


TERM_ERRORS = (
    TermError("matmul weights x1.05", 0.05, lambda m, b: _weights(m), "latency-matmul-weights-x1.05"),
    TermError("FFN weights x1.05", 0.05, lambda m, b: _ffn_bytes(m), ""),
    TermError("lm_head dropped", -1.0, lambda m, b: _lm_head_bytes(m), ""),
    TermError("lm_head x1.05", 0.05, lambda m, b: _lm_head_bytes(m), ""),
    TermError("KV read x1.05", 0.05, _kv, ""),
)


def sensitivity(model: ModelSpec, qwen: ModelSpec, batch: int, prediction_s: float, bandwidth: float
                ) -> dict[str, float]:
    """{error name: relative move of the model's predicted decode step} with the calibration refitted on Qwen's b=1
    step under the same error (it absorbs e x T_qwen(1) / BW into t_overhead)."""
    return {e.name: e.factor * (e.term(model, batch) - e.term(qwen, 1)) / bandwidth / prediction_s
            for e in TERM_ERRORS}


def planned(ids: list[str]) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """{model: (decode batches, prefill lengths)} of the CLI's ids: MODEL (every part the latency plan runs for a
    second model), MODEL.decode.bB or MODEL.prefill.lN; PreregistrationError (one line) for any other id."""
    from pytest_anatomy.preregistration import PreregistrationError

    out: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for run_id in ids:
        parts = run_id.rsplit(".", 2)
        if len(parts) == 3 and parts[1] in ("decode", "prefill"):
            model, kind, value = parts
            number = value[1:]
            if value[:1] != ("b" if kind == "decode" else "l") or not number.isdigit() or int(number) < 1:
                raise PreregistrationError(f"{run_id!r}: give MODEL, MODEL.decode.bB or MODEL.prefill.lN (B, N >= 1)")
            batches, lens = out.get(model, ((), ()))
            out[model] = ((*batches, int(number)), lens) if kind == "decode" else (batches, (*lens, int(number)))
        else:
            out[run_id] = (DECODE_BATCHES, PREFILL_LENS)
    return out


def predict_runs(plan: dict[str, tuple[tuple[int, ...], tuple[int, ...]]], hardware: str, results: Path
                 ) -> tuple[dict[str, dict[str, Any]], str]:
    """({recording name: {model, kind, settings, predictions, sensitivity}}, the calibration's note), from the
    typical recorded calibration session of `hardware`; PreregistrationError (one line) where there is none, a model
    is not in the catalog, or is the calibration model itself (its runs are fit points, not held out)."""
    from pytest_anatomy.cli_calibration import recorded_calibration
    from pytest_anatomy.preregistration import PreregistrationError
    from pytest_anatomy.specs.errors import ModelConfigError
    from pytest_anatomy.specs.hardware import get_hardware
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory import latency as lat

    found = recorded_calibration(results, get_hardware(hardware))
    if isinstance(found, str):
        raise PreregistrationError(f"{hardware}: {found}; a latency pre-registration needs a recorded "
                                   f"{CALIBRATION_MODEL} session to calibrate from")
    qwen, out = load_model(CALIBRATION_MODEL), {}
    for name, (batches, prefill_lens) in plan.items():
        if name == CALIBRATION_MODEL:
            raise PreregistrationError(f"{name} is the calibration model: its runs are the fit, not held out; "
                                       "pre-register a model whose lm_head, KV and FFN shares differ")
        try:
            model = load_model(name)
        except (ModelConfigError, OSError, KeyError, ValueError) as exc:
            raise PreregistrationError(f"{name}: {exc}") from None
        for b in batches:
            pred = lat.decode_step_time(model, found.ceilings, found.calib, b, mean_context())
            out[f"{name}.decode.b{b}"] = {
                "model": name, "kind": "decode", "settings": {"batch": b, "input_len": DECODE_SHAPE[0],
                                                              "output_len": DECODE_SHAPE[1]},
                "predictions": {DECODE_QUANTITY: _entry(pred)},
                "sensitivity": sensitivity(model, qwen, b, pred.value, found.ceilings.bandwidth)}
        for n in prefill_lens:
            pred = lat.prefill_time(model, found.ceilings, found.calib, n, MAX_NUM_BATCHED_TOKENS)
            out[f"{name}.prefill.l{n}"] = {"model": name, "kind": "prefill", "settings": {"input_len": n},
                                           "predictions": {PREFILL_QUANTITY: _entry(pred)}}
    return out, found.note()


def _entry(pred: Any) -> dict[str, Any]:
    return {"value": pred.value, "unit": pred.unit, "formula": pred.formula,
            "terms": {t.name: t.value for t in pred.terms if isinstance(t.value, (int, float))}}


def build(runs: dict[str, Any], hardware: str, commit: str, created: str, command: str, calibration: str
          ) -> dict[str, Any]:
    from pytest_anatomy.preregistration import SCHEMA

    return {"schema": SCHEMA, "suite": SUITE, "hardware": hardware, "created": created, "theory_commit": commit,
            "command": command, "calibration": calibration, "term_errors": [e.name for e in TERM_ERRORS],
            "runs": runs}
