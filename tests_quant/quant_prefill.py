"""pp512 of each shootout type at 7B (speed7b) from the llama suite's prefill theory (test_quant_prefill_7b.py).

The calibration is a llama-suite session's, as tests_llama/test_llama_speed.py's test_prefill_tokens_per_s builds it
(theory/llamacpp_latency.py: ll.PREFILL_FITS, ll.fit_constants, ll.tiny_overhead_s): that session's read and matmul
ceilings, the F16 efficiency fitted on its qwen2.5-7b F16 pp512, the MMQ efficiency on its qwen2.5-7b Q8_0 pp512, the
prompt overhead from its tiny-28l model (same layers and vocabulary) of the file's weights where the llama suite
benched that type (F16, Q8_0, Q4_K_M), else of Q8_0 (the MMQ path, as quant_speed.tiny_weights_for does at 135M). The
session is the newest one recorded on the card before the quant run: a different session than the one judged.

Tolerance: the llama suite's budget terms (llama_speed.Budget: each fit run, each overhead run, this run, two standard
errors of a median each), with two changes that make it a test: each scatter is the robust one (quant_speed.rel_se:
llama-bench's first pp512 repetition is a cold one at 40-75% of the others, which the median ignores and a plain
standard deviation turns into +-120% budgets), and each calibration run's scatter is carried through the fit to the
prediction (the prediction recomputed with that run's median moved by its scatter), not added at full weight: a tiny
model's 12% moves a 7B prompt's overhead, a ninth of it. The llama suite's own prefill check took both changes on
2026-12-04 (llama_speed.robust_rel_se, SessionCalibration.carried).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from quant_speed import rel_se

from pytest_anatomy import recordings
from pytest_anatomy.specs.gguf_file import GgufHeader, header_from_config
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import gguf_mix
from pytest_anatomy.theory import llamacpp_latency as ll
from pytest_anatomy.theory.prediction import Prediction

MODEL = ll.FIT_MODEL  # qwen2.5-7b: the llama suite's fit model is the speed7b phase's model
N_PROMPT = ll.BENCH_N_PROMPT
QUANTITY = f"pp{N_PROMPT}.tok_per_s"
LAYERS = load_model(MODEL).num_layers
TINY = ll.overhead_model(MODEL, LAYERS)
TINY_WEIGHTS = ("F16", "Q8_0", "Q4_K_M")  # the weights the llama visit benches its tiny models in


@functools.lru_cache(maxsize=None)
def header(file_type: str) -> GgufHeader:
    return gguf_mix.quantized_header(header_from_config(load_model(MODEL), "F16"), file_type)


@functools.lru_cache(maxsize=None)
def tiny_header(weights: str) -> GgufHeader:
    return ll.tiny_overhead_header(MODEL, LAYERS, weights)


def tiny_weights_for(file_type: str) -> str:
    return file_type if file_type in TINY_WEIGHTS else "Q8_0"


@dataclass(frozen=True)
class Session:
    """A llama-suite session's prefill calibration runs: {run name: (pp512 median, its robust 2 SE)} and ceilings."""

    stamp: str
    read: float
    matmul: float
    runs: dict[str, tuple[float, float]]

    def fit_names(self) -> list[str]:
        return [f"{MODEL}.{w.lower()}.bench" for _, w in ll.PREFILL_FITS]

    @staticmethod
    def tiny_name(weights: str) -> str:
        return f"{TINY}.{weights.lower()}.bench"

    def predict(self, file_type: str, moved: tuple[str, float] | None = None) -> Prediction:
        """The theory's pp512 of `file_type`; `moved` = (run, factor) scales one calibration run's median."""
        tok = {n: v * (moved[1] if moved and moved[0] == n else 1.0) for n, (v, _) in self.runs.items()}

        def overhead(weights: str) -> float:
            return ll.tiny_overhead_s(tiny_header(weights), tok[self.tiny_name(weights)], self.read, self.matmul,
                                      "prefill")

        fits = [(k, header(w), tok[f"{MODEL}.{w.lower()}.bench"], overhead(w)) for k, w in ll.PREFILL_FITS]
        _, eff = ll.fit_constants("prefill", self.read, self.matmul, fits)
        tw = tiny_weights_for(file_type)
        calib = ll.LlamaCalibration(self.read, self.matmul, overhead(tw), efficiency=eff,
                                    source=f"the llama suite's session {self.stamp}: its ceilings, "
                                           f"{', '.join(self.fit_names())} (fits) and {self.tiny_name(tw)} (overhead)")
        return ll.prefill_tokens_per_s(header(file_type), calib, N_PROMPT)

    def used_by(self, file_type: str) -> list[str]:
        return list(dict.fromkeys([*self.fit_names(), *(self.tiny_name(w) for _, w in ll.PREFILL_FITS),
                                   self.tiny_name(tiny_weights_for(file_type))]))

    def budget(self, file_type: str) -> list[tuple[str, float]]:
        """(calibration run, its 2 SE carried to this prediction) for every run the prediction of `file_type` uses."""
        base = self.predict(file_type).value
        return [(n, abs(self.predict(file_type, (n, 1 + self.runs[n][1])).value / base - 1))
                for n in self.used_by(file_type)]


def _median(rec: recordings.Recording) -> tuple[float, float]:
    m = rec[f"{QUANTITY}.median"]
    return m.value, rel_se(m.samples, m.value)


@functools.lru_cache(maxsize=None)
def session(results: Path, hardware: str, stamp: str) -> Session:
    """The llama-suite session of `stamp` (the recorded_at of its qwen2.5-7b Q8_0 bench); LookupError when it lacks a
    calibration run or its pp512."""
    anchor = recordings.load_latest(results, hardware, "llama", f"{MODEL}.q8_0.bench", stamp)
    ceil = recordings.load_beside(results, hardware, "ceilings", "ceilings", anchor)
    names = [f"{MODEL}.{w.lower()}.bench" for _, w in ll.PREFILL_FITS] + [Session.tiny_name(w) for w in TINY_WEIGHTS]
    runs = {}
    for n in names:
        try:
            rec = recordings.load_beside(results, hardware, "llama", n, anchor)
        except recordings.MissingRecording as exc:
            raise LookupError(str(exc)) from exc
        if rec.provenance.get("status") not in (None, "ok") or f"{QUANTITY}.median" not in rec.measurements:
            raise LookupError(f"{n}@{rec.recorded_at} has no {QUANTITY}")
        runs[n] = _median(rec)
    return Session(anchor.recorded_at, ceil["read_bandwidth.value"].value, ceil["matmul_bf16.value"].value, runs)


def sessions(results: Path, hardware: str) -> list[Session]:
    """Every llama-suite session of the card with all its prefill calibration runs, oldest first."""
    out = []
    for path in recordings.candidates(results, hardware, "llama", f"{MODEL}.q8_0.bench"):
        try:
            out.append(session(results, hardware, recordings.load_file(path).recorded_at))
        except LookupError:
            continue  # a session whose plan skipped a pp512 run gives no calibration
    return out


def session_before(results: Path, hardware: str, when: str) -> Session:
    """The newest complete llama-suite session recorded at or before `when`: what was known when the run was made."""
    limit = recordings.load_not_after(results, hardware, "llama", f"{MODEL}.q8_0.bench", when).recorded_at
    done = [s for s in sessions(results, hardware) if s.stamp <= limit]
    if not done:
        raise LookupError(f"no llama-suite session of {hardware} with every prefill calibration run before {when}")
    return done[-1]


def llama_suite_ratio(results: Path, hardware: str, s: Session, file_type: str) -> tuple[float, float] | None:
    """(measured / predicted, its robust 2 SE) of the llama suite's own 7B `file_type` pp512 in session `s`."""
    anchor = recordings.load_latest(results, hardware, "llama", f"{MODEL}.q8_0.bench", s.stamp)
    try:
        rec = recordings.load_beside(results, hardware, "llama", f"{MODEL}.{file_type.lower()}.bench", anchor)
    except recordings.MissingRecording:
        return None
    if f"{QUANTITY}.median" not in rec.measurements:
        return None
    value, se = _median(rec)
    return value / s.predict(file_type).value, se


def other_runs_band(results: Path, hardware: str, file_type: str, this_se: float) -> tuple[float, float] | None:
    """The envelope of the llama suite's own `file_type` pp512 over its session's prediction, in every session that
    benched it (never the quant run judged), each +- (its scatter + its session's budget + the judged run's)."""
    lo, hi = [], []
    for s in sessions(results, hardware):
        got = llama_suite_ratio(results, hardware, s, file_type)
        if got is None:
            continue
        ratio, se = got
        u = se + sum(v for _, v in s.budget(file_type)) + this_se
        lo.append(ratio * (1 - u))
        hi.append(ratio * (1 + u))
    return (min(lo), max(hi)) if lo else None
