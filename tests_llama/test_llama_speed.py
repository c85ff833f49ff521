"""llama.cpp's decode (llama-bench tg128) and prefill (pp512) per weight type, predicted.

The calibration is measured apart from what it predicts (theory/llamacpp_latency.py):
- the read and matmul ceilings of the same session (the plan's own ceilings run);
- the per-token overhead: llama-bench on the tiny-hidden model with the same layers, vocabulary and
  weight type (its time is overhead, less its small lm_head roofline); its pp512 is the prefill overhead;
- the F16 kernel constant fitted on qwen2.5-7b F16, the quantized-kernel constant on qwen2.5-7b Q8_0.
Checked: qwen2.5-7b Q4_K_M (Q4_K and Q6_K rows: does one mul_mat_vec_q constant serve every block
type?) and every qwen2.5-0.5b file (a different proportion: 28% of its bytes are the lm_head, its
decode is mostly overhead, and 896-wide rows fall back to Q5_0/Q8_0). The fit points are not
reconciled: they agree by construction.

Tolerance: the budget is a sum of measured scatter, each term two standard errors of a median
(2 x stdev / sqrt(n)): the checked run's repetitions, each fit run's, each overhead run's.
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


def _checked(run: LlamaRun) -> bool:
    return run.model in TINY_FOR and not (run.model == FIT_MODEL and run.weights in ("F16", "Q8_0"))


def _rel_se(m) -> float:
    s = [x for x in (m.samples or []) if x > 0]
    return 0.0 if len(s) < 2 else 2 * statistics.stdev(s) / math.sqrt(len(s)) / statistics.median(s)


@dataclass
class Budget:
    terms: list[tuple[str, float]]

    def add(self, name: str, m) -> None:
        self.terms.append((name, _rel_se(m)))

    @property
    def rel(self) -> float:
        return sum(v for _, v in self.terms)

    def why(self) -> str:
        return "measured scatter, 2 standard errors each: " + " + ".join(f"{n} {v:.2%}" for n, v in self.terms)


class SessionCalibration:
    """Everything a prediction for `run` needs, from the recordings of the session `run` was measured in."""

    def __init__(self, run: LlamaRun, measured, header_for, phase: str) -> None:
        self.run, self.measured, self.header_for, self.phase = run, measured, header_for, phase
        self.bench = measured(run.name)
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

    def calibration(self) -> ll.LlamaCalibration:
        att, eff = dict(ll.PRIOR_ATTAINMENT), dict(ll.PRIOR_EFFICIENCY)
        fits = DECODE_FIT if self.phase == "decode" else PREFILL_FIT
        for kernel, weights in fits.items():  # F16 first: the Q8_0 file's F32 norms take the F16 constant
            fit_run, rec = self._bench(FIT_MODEL, weights)
            c = ll.LlamaCalibration(self.read, self.matmul, self.overhead(FIT_MODEL, weights), att, eff)
            measured = self._tok_s(rec, f"fit {fit_run.name}")
            if self.phase == "decode":
                att[kernel] = ll.fit_attainment(self.header_for(fit_run), measured, c, kernel, n_gen=N_GEN)
            else:
                eff[kernel] = ll.fit_efficiency(self.header_for(fit_run), measured, c, kernel, N_PROMPT)
        return ll.LlamaCalibration(
            self.read, self.matmul, self.overhead(self.run.model, self.run.weights), att, eff,
            source=f"ceilings and {', '.join(n for n, _ in self.budget.terms)} of the same session")


@pytest.mark.gpu
@pytest.mark.llama_runs("bench", select=_checked)
def test_decode_tokens_per_s(target, run, measured, header_for, reconcile):
    s = SessionCalibration(run, measured, header_for, "decode")
    calib = s.calibration()
    m = s.bench[f"tg{N_GEN}.tok_per_s.median"]
    s.budget.add(f"this run {run.name}", m)
    pred = ll.decode_tokens_per_s(header_for(run), calib, n_gen=N_GEN)
    reconcile(f"llamacpp_tg{N_GEN}_tok_per_s", pred, m, rel=s.budget.rel, why=s.budget.why(), model=run.model)


@pytest.mark.gpu
@pytest.mark.llama_runs("bench", select=_checked)
def test_prefill_tokens_per_s(target, run, measured, header_for, reconcile):
    s = SessionCalibration(run, measured, header_for, "prefill")
    calib = s.calibration()
    m = s.bench[f"pp{N_PROMPT}.tok_per_s.median"]
    s.budget.add(f"this run {run.name}", m)
    pred = ll.prefill_tokens_per_s(header_for(run), calib, N_PROMPT)
    reconcile(f"llamacpp_pp{N_PROMPT}_tok_per_s", pred, m, rel=s.budget.rel, why=s.budget.why(), model=run.model)
