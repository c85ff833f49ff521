"""llama.cpp at batch 64 on Qwen2.5-7B per shootout type (llama-batched-bench, quant_plan.py --phase batched7b): what
the theory (theory/llamacpp_batched.py) predicts from runs made before it, and which runs those are.

Each type's constants come from its own batch-1 llama-bench at 7B, recorded before the batched run: the quant suite's
speed7b bench of the type (results/<hw>/quant), or the llama suite's 7B F16 bench for F16 (the quant plan benches no
F16): its tg128 fits the decode kernel's attainment, its pp512 the prefill kernel's efficiency, each after the
overhead of the llama suite's tiny model with the same layers (the newest session before the batched run: its
ceilings and its tiny benches, quant_prefill.session_before). Batch 1 calibrates, batch 64 is predicted:

- prefill at 64 prompts = the type's pp512 rate (the same graph runs and FLOPs);
- decode at 64 sequences = per tensor max(the batch-1 weight stream, 64 rows at the pp512 efficiency) + 64 KV reads.
"""

from __future__ import annotations

import functools
import json

from dataclasses import dataclass
from pathlib import Path

import quant_prefill as qp
import quant_speed as qs

from pytest_anatomy import recordings
from pytest_anatomy.specs.gguf_file import GgufHeader
from pytest_anatomy.theory import llamacpp_batched as lb
from pytest_anatomy.theory import llamacpp_latency as ll
from pytest_anatomy.theory.prediction import Prediction

MODEL = qp.MODEL
BATCH, N_PROMPT, N_GEN = 64, ll.BENCH_N_PROMPT, ll.BENCH_N_GEN
# The batched7b phase's order (most informative first, a budget cut drops the tail): F16 needs no quantize.
TYPES = ("F16", "Q4_K_M", "Q8_0", "Q4_0", "Q6_K", "Q5_K_M", "Q3_K_M", "Q2_K")
PREREGISTRATION = Path(__file__).parent / "batched_preregistered.json"


def single_bench(results: Path, hardware: str, file_type: str, when: str) -> recordings.Recording:
    """The type's newest batch-1 7B llama-bench recorded at or before `when`."""
    suite = "llama" if file_type == "F16" else "quant"
    return recordings.load_not_after(results, hardware, suite, f"{MODEL}.{file_type.lower()}.bench", when)


@dataclass(frozen=True)
class Calibration:
    """A type's decode and prefill constants and the runs they came from."""

    decode: ll.LlamaCalibration
    prefill: ll.LlamaCalibration
    runs: dict[str, tuple[float, float]]  # "name@stamp:test" -> (median tok/s, its robust 2 SE)


@functools.cache  # read once: every prediction of the budget moves one run of the same set
def _runs(results: Path, hardware: str, file_type: str, when: str) -> tuple[qp.Session, dict[str, tuple[float, float]]]:
    """The llama session before `when` and every calibration run's (median, 2 SE) by "name@stamp:test"."""
    s = qp.session_before(results, hardware, when)
    anchor = recordings.load_latest(results, hardware, "llama", f"{MODEL}.q8_0.bench", s.stamp)
    recs = {"tiny": recordings.load_beside(results, hardware, "llama",
                                           qp.Session.tiny_name(qp.tiny_weights_for(file_type)), anchor),
            "tiny_f16": recordings.load_beside(results, hardware, "llama", qp.Session.tiny_name("F16"), anchor),
            "f16": single_bench(results, hardware, "F16", when), "own": single_bench(results, hardware, file_type, when)}
    runs = {}
    for role, rec in recs.items():
        for test in ("tg128", "pp512"):
            name = f"{test}.tok_per_s"
            m = rec[f"{name}.median" if f"{name}.median" in rec.measurements else name]
            runs[f"{role}={rec.name}@{rec.recorded_at}:{test}"] = (m.value, qs.rel_se(m.samples, m.value))
    return s, runs


def _value(runs: dict[str, tuple[float, float]], role: str, test: str) -> float:
    return next(v for k, (v, _) in runs.items() if k.startswith(f"{role}=") and k.endswith(f":{test}"))


def calibration(results: Path, hardware: str, file_type: str, when: str,
                moved: tuple[str, float] | None = None) -> Calibration:
    """The type's constants; `moved` = (run key, factor) scales one calibration run's median (the budget)."""
    s, runs = _runs(results, hardware, file_type, when)
    if moved is not None:
        runs = {k: ((v * moved[1], e) if k == moved[0] else (v, e)) for k, (v, e) in runs.items()}
    tiny_w = qp.tiny_weights_for(file_type)

    def over(role: str, weights: str, phase: str) -> float:
        return ll.tiny_overhead_s(qp.tiny_header(weights), _value(runs, role, "tg128" if phase == "decode" else "pp512"),
                                  s.read, s.matmul, phase)

    fits: dict[str, list[tuple[str, GgufHeader, float, float]]] = {
        phase: [(ll.UNQUANTIZED_KERNEL, qp.header("F16"), _value(runs, "f16", test), over("tiny_f16", "F16", phase))]
        for phase, test in (("decode", "tg128"), ("prefill", "pp512"))}
    if file_type != "F16":
        for phase, kernel, test in (("decode", ll.QUANTIZED_DECODE_KERNEL, "tg128"),
                                    ("prefill", ll.QUANTIZED_PREFILL_KERNEL, "pp512")):
            fits[phase].append((kernel, qp.header(file_type), _value(runs, "own", test), over("tiny", tiny_w, phase)))
    att, _ = ll.fit_constants("decode", s.read, s.matmul, fits["decode"])
    _, eff = ll.fit_constants("prefill", s.read, s.matmul, fits["prefill"])
    source = f"{file_type}'s own batch-1 benches and the llama suite's session {s.stamp}"
    return Calibration(
        decode=ll.LlamaCalibration(s.read, s.matmul, over("tiny", tiny_w, "decode"), att, eff, source=source),
        prefill=ll.LlamaCalibration(s.read, s.matmul, over("tiny", tiny_w, "prefill"), att, eff, source=source),
        runs=runs)


def predictions(results: Path, hardware: str, file_type: str, when: str,
                moved: tuple[str, float] | None = None) -> dict[str, Prediction]:
    """What the batched run of `file_type` made at `when` should measure (llama-batched-bench's S_PP and S_TG)."""
    c = calibration(results, hardware, file_type, when, moved)
    h = qp.header(file_type)
    ctx1 = N_PROMPT + (N_GEN - 1) / 2
    one = ll.decode_time(h, c.decode, context=ctx1)
    return {
        "pp512.b1.tok_per_s": lb.batched_prefill_tokens_per_s(h, c.prefill, 1, N_PROMPT),
        f"pp512.b{BATCH}.tok_per_s": lb.batched_prefill_tokens_per_s(h, c.prefill, BATCH, N_PROMPT),
        "tg128.b1.tok_per_s": Prediction(1 / one.value, "tokens/s", "1 / t_token at the mean context "
                                         f"{ctx1:g} (batched-bench decodes after the prompt)", one.inputs,
                                         terms=one.terms),
        f"tg128.b{BATCH}.tok_per_s": lb.batched_decode_tokens_per_s(h, c.decode, BATCH, N_GEN, N_PROMPT),
    }


@functools.cache  # one per type: the replay reconciles three quantities of each run against it
def budget(results: Path, hardware: str, file_type: str, when: str) -> dict[str, list[tuple[str, float]]]:
    """quantity -> (calibration run, its 2 SE carried through the fit to this prediction) for every run used."""
    base = predictions(results, hardware, file_type, when)
    runs = calibration(results, hardware, file_type, when).runs
    out: dict[str, list[tuple[str, float]]] = {q: [] for q in base}
    for key, (_, se) in runs.items():
        moved = predictions(results, hardware, file_type, when, (key, 1 + se))
        for q, p in base.items():
            change = abs(moved[q].value / p.value - 1)
            if change > 1e-6:
                out[q].append((key, change))
    return out


def session_spread(results: Path, hardware: str, test: str) -> float:
    """The card's session-to-session spread of a batch-1 7B bench: the largest max/min - 1 of `test`'s median over the
    recorded sessions of the types benched in more than one (the llama suite's F16, Q8_0, Q4_K_M and the quant suite's
    speed7b runs of the same files). A batched run is predicted from runs of another session, maybe another card."""
    worst = 0.0
    for ft in ("F16", "Q8_0", "Q4_K_M"):
        values = []
        for suite in ("llama", "quant"):
            for path in recordings.candidates(results, hardware, suite, f"{MODEL}.{ft.lower()}.bench"):
                rec = recordings.load_file(path)
                name = f"{test}.tok_per_s"
                for key in (f"{name}.median", name):
                    if key in rec.measurements:
                        values.append(rec[key].value)
                        break
        if len(values) > 1:
            worst = max(worst, max(values) / min(values) - 1)
    return worst


def preregistration_body(results: Path, hardware: str, when: str) -> dict[str, object]:
    """Every type's four predictions at `when` (now, before the run), each with its formula and calibration runs."""
    out: dict[str, object] = {}
    for ft in TYPES:
        preds = predictions(results, hardware, ft, when)
        out[ft] = {q: {"value": round(p.value, 3), "unit": p.unit, "formula": p.formula,
                       "terms": {t.name: t.value for t in p.terms}} for q, p in preds.items()}
        out[ft]["calibration_runs"] = sorted(calibration(results, hardware, ft, when).runs)  # type: ignore[index]
    return out


# ---- finding bands (quant_findings) ---------------------------------------------------------------------------------
# The one batched run so far. Its three findings' bands are read off it (checked-run): no other run measured a batched
# 7B decode or a 64-prompt batch. Pinned, not the newest: a later batched run is judged against this run's ratio (and
# is then banded by another run), so a second run far from it diverges instead of moving the band with it.
BANDED_BY_RUN = "2026-12-04T18:38:18Z"


def batched_run(results: Path, hardware: str, file_type: str, when: str | None = None) -> recordings.Recording:
    """The type's batched recording at or before `when` (the newest without it)."""
    name = f"{MODEL}.{file_type.lower()}.batched"
    if when is None:
        return recordings.load_latest(results, hardware, "quant", name)
    return recordings.load_not_after(results, hardware, "quant", name, when)


def newest_stamp(results: Path, hardware: str, file_type: str) -> str:
    """recorded_at of the type's newest batched run, the run the suite judges (quant_findings.judged_marks)."""
    return batched_run(results, hardware, file_type).recorded_at


def checked_run_band(results: Path, hardware: str, file_type: str, quantity: str, predicted: float,
                     rel: float) -> tuple[float, float]:
    """measured/predicted of `quantity` in BANDED_BY_RUN, +- the check's own tolerance `rel` (its calibration runs'
    noise, the session spread and the run's 2 robust SE): the band of a finding read off the run it judges."""
    ratio = batched_run(results, hardware, file_type, BANDED_BY_RUN)[quantity].value / predicted
    return ratio * (1 - rel), ratio * (1 + rel)


def prefill_band(results: Path, hardware: str, file_type: str, predicted: float, rel: float) -> tuple[float, float]:
    """measured/predicted band of the type's llama-bench pp512 from its batched run (another run of the same file's
    512-token prompts, quant_findings.QUANT_7B_MMQ_PREFILL_PER_TYPE): from its lone prompt (S_PP(1), which pays
    quant-7b-batched-lone-prompt-pays-a-fixed-cost) to 64 at once (S_PP(64), which does not), each over `predicted`,
    widened by the bench check's tolerance `rel` and the batched medians' own 2 robust SE. A per-type MMQ cost is a
    cost of the file, so another run of it lands in the same place; a bench outside says it is not."""
    rec = batched_run(results, hardware, file_type)
    one, many = rec["pp512.b1.tok_per_s"], rec[f"pp512.b{BATCH}.tok_per_s"]
    lo = one.value / predicted * (1 - rel - qs.rel_se(one.samples, one.value))
    hi = many.value / predicted * (1 + rel + qs.rel_se(many.samples, many.value))
    return min(lo, hi), max(lo, hi)


def lone_decode_band(results: Path, hardware: str, file_type: str, predicted: float) -> tuple[float, float]:
    """measured/predicted band of the type's llama-bench tg128 from its batched run's decode at one sequence (S_TG(1):
    another run of the same file's batch-1 decode, quant_findings.QUANT_7B_Q6K_Q3K_SLOWER), each over `predicted`,
    +- the card's session-to-session spread of tg128 and the batched median's 2 robust SE; the top also by the
    batched run's longer context (its KV read, the pre-registration's own term, which llama-bench's tg128 barely
    reads)."""
    m = batched_run(results, hardware, file_type)["tg128.b1.tok_per_s"]
    terms = json.loads(PREREGISTRATION.read_text())["predictions"][file_type]["tg128.b1.tok_per_s"]["terms"]
    kv_share = terms["KV read"] / sum(terms.values())
    noise = session_spread(results, hardware, "tg128") + qs.rel_se(m.samples, m.value)
    ratio = m.value / predicted
    return ratio * (1 - noise), ratio * (1 + noise + kv_share)
