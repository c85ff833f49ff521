"""The speed suite's session calibration (test_llama_speed.py, test_llama_preregistered.py's finding band).

The calibration is measured apart from what it predicts (theory/llamacpp_latency.py): the session's read and
matmul ceilings, the tiny-hidden model's time as overhead, the F16 kernel constant fitted on qwen2.5-7b F16 and
the quantized-kernel constant on qwen2.5-7b Q8_0 of the same session.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from llama_runs import LlamaRun

from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory import llamacpp_latency as ll

# The fit plan is the theory's (theory/llamacpp_latency.py), which `predict latency --engine llama.cpp` also follows
DECODE_FIT, PREFILL_FIT = dict(ll.DECODE_FITS), dict(ll.PREFILL_FITS)  # kernel -> the 7B weights it is fitted on
FIT_MODEL = ll.FIT_MODEL
TINY_FOR = {b: ll.overhead_model(b, load_model(b).num_layers) for b in ll.OVERHEAD_MODEL_BASES}
N_GEN, N_PROMPT = ll.BENCH_N_GEN, ll.BENCH_N_PROMPT
MEDIAN_SE, MAD_SIGMA = 1.2533, 1.4826  # a median's standard error in sigma / sqrt(n); a normal's sigma per MAD


def rel_se(m) -> float:
    """2 standard errors of a bench's median over the median, from the plain standard deviation (decode: tg128's
    repetitions have no cold one, its first at 93-100% of the others)."""
    s = [x for x in (m.samples or []) if x > 0]
    return 0.0 if len(s) < 2 else 2 * statistics.stdev(s) / math.sqrt(len(s)) / statistics.median(s)


def robust_rel_se(m) -> float:
    """2 standard errors of a bench's median over the median, from a robust scatter (1.4826 x the median absolute
    deviation; the median's standard error is 1.2533 sigma / sqrt(n)), as tests_quant/quant_speed.rel_se: llama-bench's
    first pp512 repetition is a cold one at 20-80% of the others, which the median ignores and a plain standard
    deviation turns into +-120-137% prefill budgets."""
    s = [x for x in (m.samples or []) if x > 0]
    if len(s) < 2:
        return 0.0
    mad = statistics.median(abs(x - m.value) for x in s)
    return 2 * MEDIAN_SE * MAD_SIGMA * mad / math.sqrt(len(s)) / m.value


@dataclass
class Budget:
    terms: list[tuple[str, float]]
    robust: bool = False  # prefill: each run's scatter by robust_rel_se, else rel_se

    def scatter(self, m) -> float:
        return robust_rel_se(m) if self.robust else rel_se(m)

    def add(self, name: str, m) -> None:
        self.terms.append((name, self.scatter(m)))

    @property
    def rel(self) -> float:
        return sum(v for _, v in self.terms)

    def why(self) -> str:
        if not self.robust:
            return "measured scatter, 2 standard errors each: " + " + ".join(f"{n} {v:.2%}" for n, v in self.terms)
        return ("measured robust scatter (median absolute deviation), 2 standard errors of each median, each "
                "calibration run's carried through the fit to this prediction: "
                + " + ".join(f"{n} {v:.2%}" for n, v in self.terms))


class SessionCalibration:
    """Everything a prediction for `run` needs, from the recordings of the session `bench` (default: the newest
    recording of `run`) was measured in; `attainment`, when given, replaces the decode fit (another session's
    constants carried into this one's ceilings and overhead)."""

    def __init__(self, run: LlamaRun, measured, header_for, phase: str, bench=None) -> None:
        self.run, self.measured, self.header_for, self.phase = run, measured, header_for, phase
        self.bench = bench if bench is not None else measured(run.name)
        ceil = measured("ceilings", suite="ceilings", beside=self.bench)
        self.read = ceil["read_bandwidth.value"].value
        self.matmul = ceil["matmul_bf16.value"].value
        self.budget = Budget([], robust=phase == "prefill")
        self.moved: tuple[str, float] | None = None  # (budget label, factor): one calibration run's median moved
        self.test = f"tg{N_GEN}" if phase == "decode" else f"pp{N_PROMPT}"

    def _bench(self, model: str, weights: str):
        run = LlamaRun(self.run.target, f"{model}.{weights.lower()}.bench", model, weights, "bench")
        try:
            return run, self.measured(run.name, beside=self.bench)
        except pytest.skip.Exception as exc:  # say which calibration run is missing, not only that it is
            pytest.skip(f"{self.run.name}'s {self.phase} is predicted from {run.name} of the same session: {exc}")

    def _tok_s(self, rec, label: str):
        m = rec[f"{self.test}.tok_per_s.median"]
        self.budget.add(label, m)
        return m.value * (self.moved[1] if self.moved and self.moved[0] == label else 1.0)

    def overhead(self, model: str, weights: str) -> float:
        """The tiny model's time per token (decode) or per prompt (prefill), less its own small roofline."""
        tiny_run, rec = self._bench(TINY_FOR[model], weights)
        return ll.tiny_overhead_s(self.header_for(tiny_run), self._tok_s(rec, f"overhead {tiny_run.name}"), self.read,
                                  self.matmul, self.phase)

    def calibration(self, attainment=None) -> ll.LlamaCalibration:
        self.budget = Budget([], robust=self.budget.robust)  # the terms of this calibration's runs only
        fits = []  # (kernel, its fit run's header, that run's tok/s, the overhead at its weights), F16 first
        for kernel, weights in (ll.DECODE_FITS if self.phase == "decode" else ll.PREFILL_FITS) if attainment is None \
                else ():
            fit_run, rec = self._bench(FIT_MODEL, weights)
            overhead = self.overhead(FIT_MODEL, weights)
            fits.append((kernel, self.header_for(fit_run), self._tok_s(rec, f"fit {fit_run.name}"), overhead))
        att, eff = ll.fit_constants(self.phase, self.read, self.matmul, fits)
        if attainment is not None:
            att = dict(attainment)
        return ll.LlamaCalibration(
            self.read, self.matmul, self.overhead(self.run.model, self.run.weights), att, eff,
            source=f"ceilings and {', '.join(n for n, _ in self.budget.terms)} of the same session")

    def carried(self, predict: Callable[[ll.LlamaCalibration], float]) -> ll.LlamaCalibration:
        """The calibration, its budget each calibration run's scatter carried through the fit to `predict`'s value
        (the prediction recomputed with that run's median moved by its 2 SE, as tests_quant/quant_prefill.py does),
        not added at full weight: a tiny model's 12% moves a 7B prompt's overhead, a ninth of its time."""
        calib = self.calibration()
        base, runs = predict(calib), dict(self.budget.terms)  # a run used twice (fit and overhead) moves both uses
        carried = []
        for name, se in runs.items():
            self.moved = (name, 1 + se)
            carried.append((name, abs(predict(self.calibration()) / base - 1)))
        self.moved = None
        self.budget = Budget(carried, robust=self.budget.robust)
        return calib
