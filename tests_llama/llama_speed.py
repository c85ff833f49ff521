"""The speed suite's session calibration (test_llama_speed.py, test_llama_preregistered.py's finding band).

The calibration is measured apart from what it predicts (theory/llamacpp_latency.py): the session's read and
matmul ceilings, the tiny-hidden model's time as overhead, the F16 kernel constant fitted on qwen2.5-7b F16 and
the quantized-kernel constant on qwen2.5-7b Q8_0 of the same session.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import pytest
from llama_runs import LlamaRun

from pytest_anatomy.theory import llamacpp_latency as ll

DECODE_FIT = {ll.UNQUANTIZED_KERNEL: "F16", ll.QUANTIZED_DECODE_KERNEL: "Q8_0"}  # kernel -> 7B weights
PREFILL_FIT = {ll.UNQUANTIZED_KERNEL: "F16", ll.QUANTIZED_PREFILL_KERNEL: "Q8_0"}
FIT_MODEL = "qwen2.5-7b"
TINY_FOR = {"qwen2.5-0.5b": "tiny-24l", "qwen2.5-7b": "tiny-28l"}
N_GEN, N_PROMPT = 128, 512


def rel_se(m) -> float:
    s = [x for x in (m.samples or []) if x > 0]
    return 0.0 if len(s) < 2 else 2 * statistics.stdev(s) / math.sqrt(len(s)) / statistics.median(s)


@dataclass
class Budget:
    terms: list[tuple[str, float]]

    def add(self, name: str, m) -> None:
        self.terms.append((name, rel_se(m)))

    @property
    def rel(self) -> float:
        return sum(v for _, v in self.terms)

    def why(self) -> str:
        return "measured scatter, 2 standard errors each: " + " + ".join(f"{n} {v:.2%}" for n, v in self.terms)


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
        self.budget = Budget([])
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
        return m.value

    def overhead(self, model: str, weights: str) -> float:
        """The tiny model's time per token (decode) or per prompt (prefill), less its own small roofline."""
        tiny_run, rec = self._bench(TINY_FOR[model], weights)
        header = self.header_for(tiny_run)
        zero = ll.LlamaCalibration(self.read, self.matmul, 0.0, source="priors")
        if self.phase == "decode":
            t = 1 / self._tok_s(rec, f"overhead {tiny_run.name}")
            return t - ll.decode_time(header, zero, context=(N_GEN - 1) / 2).value
        t = N_PROMPT / self._tok_s(rec, f"overhead {tiny_run.name}")
        return t - ll.prefill_time(header, zero, N_PROMPT).value

    def calibration(self, attainment=None) -> ll.LlamaCalibration:
        att, eff = dict(ll.PRIOR_ATTAINMENT), dict(ll.PRIOR_EFFICIENCY)
        fits = DECODE_FIT if self.phase == "decode" else PREFILL_FIT
        for kernel, weights in fits.items() if attainment is None else ():
            # F16 first: the Q8_0 file's F32 norms take the F16 constant
            fit_run, rec = self._bench(FIT_MODEL, weights)
            c = ll.LlamaCalibration(self.read, self.matmul, self.overhead(FIT_MODEL, weights), att, eff)
            measured = self._tok_s(rec, f"fit {fit_run.name}")
            if self.phase == "decode":
                att[kernel] = ll.fit_attainment(self.header_for(fit_run), measured, c, kernel, n_gen=N_GEN)
            else:
                eff[kernel] = ll.fit_efficiency(self.header_for(fit_run), measured, c, kernel, N_PROMPT)
        if attainment is not None:
            att = dict(attainment)
        return ll.LlamaCalibration(
            self.read, self.matmul, self.overhead(self.run.model, self.run.weights), att, eff,
            source=f"ceilings and {', '.join(n for n, _ in self.budget.terms)} of the same session")
