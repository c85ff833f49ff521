"""The ladders' rungs and shapes, and which (target, case) each test of test_kernels_ladders.py takes: a replay
target a case only where its recording exists, the live target every case its architecture runs, with the finding
marks of the target's card (kernel_findings.py and the other findings modules).

Split out of test_kernels_ladders.py on 2026-12-07 to keep modules under 500 lines."""

from __future__ import annotations

import pytest

import kernel_ffn_findings as ffn
import kernel_findings as hf
import kernel_findings_shared as kfs
import kernel_first_run_findings as first_run
import kernel_noise_findings as kn

from pytest_anatomy import gpu_arch
from pytest_anatomy import targets as tg
from pytest_anatomy.kernels import fused, reduction, sgemm
from pytest_anatomy.kernels.ladders import LADDERS
from pytest_anatomy.kernels.registry import PREREGISTERED_ON, DeviceFacts, Variant, shape_label
from pytest_anatomy.specs.hardware import get_hardware
from pytest_anatomy.theory.kernels import gemm_byte_ledger

SHAPES = {"sgemm": sgemm.TIMING_SHAPE, "reduction": reduction.TIMING_SHAPE, "rmsnorm": fused.RMSNORM_TIMING_SHAPE,
          "softmax": fused.SOFTMAX_TIMING_SHAPE}


def rung_name(v: Variant, shape: dict[str, int]) -> str:
    return f"{v.ladder}.{v.id}.{shape_label(shape)}"


# --- (target, case) parameters -------------------------------------------------------------------
# A replay target takes a case only where its recording exists; the live target takes every case
# (it measures). Finding marks come from kernel_findings.py's table for the target's card.
ALL_RUNGS = [v for lad in LADDERS for v in LADDERS[lad]] + [sgemm.BF16_BASELINE]
PREREGISTERED = [(v, shape) for lad in LADDERS for v in LADDERS[lad]
                 for shape in (SHAPES[lad], fused.VOCAB_SHAPE, *sgemm.EXTRA_SHAPES)
                 if v.preregistered_ms(shape) is not None]
ROOFLINE_RUNGS = [v for v in LADDERS["sgemm"][1:] if not v.theory.tensor_core]
STREAMING = [v for lad in ("reduction", "rmsnorm", "softmax") for v in LADDERS[lad][1:]]
STREAMING_TARGETS = [("reduction", "r7-vectorized", 0.95), ("rmsnorm", "n4-vectorized", 0.92),
                     ("softmax", "x4-vectorized", 0.92), ("softmax", "x5-warp-row", 0.92),
                     ("softmax", "x7-pipelined", 0.92), ("softmax", "x8-tma-ring", 0.92),
                     ("softmax", "x9-cluster4-smem", 0.92), ("softmax", "x10-grid-tiles", 0.92)]
# Issue 17's vocabulary-row target: the one-DRAM-pass rungs at >= 85% of the read ceiling on their read + write bytes.
# Each is its own case, taken only where the target measured it (cases): a replayed session recorded before x7
# existed keeps x6's case and gains none (x8, x9 and x10 likewise).
VOCAB_TARGETS = [("x6-cluster-row", 0.85), ("x7-pipelined", 0.85), ("x8-tma-ring", 0.85), ("x9-cluster4-smem", 0.85),
                 ("x10-grid-tiles", 0.85)]
VOCAB_REFUSERS = [v for v in fused.SOFTMAX if v.max_cols is not None and v.max_cols < fused.VOCAB_SHAPE["N"]]


def _rung_id(v: Variant) -> str:
    """A rung in a test id always carries its ladder: bare rung ids collide across ladders (r1 is a
    reduction rung and an attention rung) and with the seed's round numbers (r1, r2)."""
    return f"{v.ladder}.{'s0-cublas-bf16' if v is sgemm.BF16_BASELINE else v.id}"


def _with(results, t, *names: str) -> bool:
    return all(tg.has_recording(results, t, "kernels", n) for n in names)


# The fp32 rungs the instruction and request ledgers read (fitted or held out): a rung added later is
# predicted from its header, and its absence from a replayed session must not hide these ledgers.
LEDGER_RUNGS = ("s1-naive", *sgemm.INSTRUCTION_FIT, *sgemm.INSTRUCTION_HELD_OUT)


def _ledger_sgemm_fp32(shape) -> list[str]:
    return [rung_name(v, shape) for v in LADDERS["sgemm"] if v.id in LEDGER_RUNGS]


def recorded_sgemm_fp32(results, t: tg.Target, shape) -> tuple[str, ...]:
    """The fp32 rungs the target measured: every one its architecture runs when live, those with a recording when
    replayed."""
    return tuple(v.id for v in LADDERS["sgemm"][1:] if not v.theory.tensor_core
                 and (_runs_live(t, v, shape) if t.live else _with(results, t, rung_name(v, shape))))


def _not_here(t: tg.Target, v: Variant, shape: dict[str, int]) -> str | None:
    """Why the live card cannot run rung `v` at `shape` (a kernel file's `// requires:` line), else None."""
    facts = DeviceFacts(sm_count=getattr(t.spec, "sm_count", None) or 1)
    return gpu_arch.skip_reason(f"{v.ladder} rung {v.id} at {shape_label(shape)}", v.requirements(shape, facts), t)


def _runs_live(t: tg.Target, v: Variant, shape: dict[str, int]) -> bool:
    return _not_here(t, v, shape) is None


def _rung_of(value) -> Variant | None:
    if isinstance(value, Variant):
        return value
    return next((v for lad in LADDERS.values() for v in lad if v.id == value), None) if isinstance(value, str) else None


def arch_marks(name: str, t: tg.Target, values: tuple) -> tuple:
    """A live card's skip of a per-rung case whose kernels its architecture cannot run (wgmma on an A100, clusters on
    a 4090): decided at collection, so `--anatomy-plan` leaves it out and no compile is spent on it."""
    if not t.live:
        return ()
    shapes = [x for x in values if isinstance(x, dict)]
    for v in filter(None, map(_rung_of, values)):
        shape = shapes[0] if shapes else (fused.VOCAB_SHAPE if name == "test_vocab_softmax_read_bandwidth_target"
                                          else SHAPES[v.ladder])
        why = _not_here(t, v, shape)
        if why:
            return (pytest.mark.skip(reason=why),)
    return ()


def cases(name: str, t: tg.Target, results) -> list[tuple[tuple, str, tuple]]:
    """(values, id, marks) of test `name` on target `t`."""
    s = SHAPES["sgemm"]
    if name in ("test_preregistered_finding_ratios_are_the_first_runs",  # replay the first run beside the newest
                "test_streaming_floor_finding_ratios_are_the_first_runs",
                "test_byte_ledger_finding_ratio_is_the_first_runs",
                "test_ledger_finding_ratios_are_the_first_runs"):
        return [((), "", ())] if t.name == PREREGISTERED_ON and not t.live and _with(results, t, "kernels-ceilings") else []
    if name in ("test_session_read_ceiling_is_timed", "test_session_copy_ceiling_is_timed"):
        return [((), "", ())] if _with(results, t, "kernels-ceilings") else []
    if name == "test_rung_is_correct_and_timed_twice":
        return [((v,), _rung_id(v), ()) for v in ALL_RUNGS if _with(results, t, rung_name(v, SHAPES[v.ladder]))]
    if name == "test_preregistered_time":
        if t.name != PREREGISTERED_ON:  # the headers pre-register one card's times
            return []
        return [((v, shape), f"{v.id}-{shape_label(shape)}",
                 hf.marks_for("preregistered", f"{v.id}-{shape_label(shape)}")
                 or kn.marks(v.ladder, v.id, shape_label(shape)))
                for v, shape in PREREGISTERED if _with(results, t, rung_name(v, shape))]
    ledgers = {"test_sgemm_issue_ledger_preregistered": (sgemm.ISSUE_PREREGISTERED, "issue_preregistered"),
               "test_sgemm_mma_issue_ledger_preregistered": (sgemm.MMA_ISSUE_PREREGISTERED, "mma_issue_preregistered")}
    if name in ledgers:
        if t.name != PREREGISTERED_ON:  # the ledger's numbers are for the card its counters came from
            return []
        table, marks = ledgers[name]
        out = []
        for rid, lab in table:
            v = next(x for x in LADDERS["sgemm"] if x.id == rid)
            shape = next(sh for sh in (s, *sgemm.EXTRA_SHAPES) if shape_label(sh) == lab)
            if _with(results, t, rung_name(v, shape)):
                out.append(((v, shape), f"{rid}-{lab}", hf.marks_for(marks, f"{rid}-{lab}")))
        return out
    if name == "test_sgemm_issued_byte_roofline":
        return [((v,), v.id, _exceeds(t, v)) for v in ROOFLINE_RUNGS
                if _with(results, t, rung_name(v, s), "kernels-ceilings")]
    if name == "test_sgemm_instruction_ledger_held_out":
        if not _with(results, t, *_ledger_sgemm_fp32(s)):
            return []
        return [((r,), r, hf.marks_for("instruction_held_out", r)) for r in sgemm.INSTRUCTION_HELD_OUT]
    if name == "test_sgemm_request_ledger_naive":
        return [((), "", hf.marks_for("single", name))] if _with(results, t, *_ledger_sgemm_fp32(s)) else []
    if name == "test_best_fp32_rung_vs_cublas":  # the best of what the target measured, at least the ledger rungs
        if not _with(results, t, *_ledger_sgemm_fp32(s)):
            return []
        return [((recorded_sgemm_fp32(results, t, s),), "", hf.marks_for("single", name))]
    if name == "test_best_fp32_rung_vs_cublas_at_ffn_shapes":  # the same rule at each FFN shape the target measured
        return [((sh, recorded_sgemm_fp32(results, t, sh)), shape_label(sh), ffn.marks(shape_label(sh)))
                for sh in sgemm.EXTRA_SHAPES if _with(results, t, *_ledger_sgemm_fp32(sh))]
    if name == "test_tensor_core_rung_vs_cublas_bf16":  # the best tensor-core rung the target measured
        tc = tuple(v.id for v in LADDERS["sgemm"] if v.theory is not None and v.theory.tensor_core
                   and (_runs_live(t, v, s) if t.live else _with(results, t, rung_name(v, s))))
        return [((tc,), "", hf.marks_for("single", name))] if tc else []
    if name == "test_streaming_floor":
        return [((v,), v.id, hf.marks_for("streaming_floor", v.id)) for v in STREAMING
                if _with(results, t, rung_name(v, SHAPES[v.ladder]), "kernels-ceilings")]
    if name == "test_best_streaming_rung_target":
        return [((lad, rung, goal), f"{lad}-{rung}-{goal}", hf.marks_for("streaming_target", rung))
                for lad, rung, goal in STREAMING_TARGETS
                if _with(results, t, f"{lad}.{rung}.{shape_label(SHAPES[lad])}", "kernels-ceilings")]
    if name == "test_vocab_softmax_read_bandwidth_target":
        return [((rung, goal), f"{rung}-{goal}", hf.marks_for("vocab_target", rung)) for rung, goal in VOCAB_TARGETS
                if _with(results, t, f"softmax.{rung}.{shape_label(fused.VOCAB_SHAPE)}", "kernels-ceilings")]
    if name == "test_register_rungs_refuse_the_vocab_row":
        return [((v,), v.id, ()) for v in VOCAB_REFUSERS if _with(results, t, rung_name(v, fused.VOCAB_SHAPE))]
    raise AssertionError(f"no cases declared for {name}")


PREREG_READ_BW = 4.47e12  # B/s: the read bandwidth the headers cite (results/h200/ceilings, torch.sum)


def _prereg_roofline_ratio(v: Variant, spec) -> float:
    """measured/predicted FLOP rate the pre-registered time implies: issued-byte floor / pre-registered time."""
    s = SHAPES["sgemm"]
    floor = gemm_byte_ledger(v.theory, s["M"], s["N"], s["K"], peak_flops=spec.peak("fp32"),
                             bandwidth=PREREG_READ_BW)
    return floor.value / (v.preregistered_ms(s) * 1e-3)


def _exceeds(t: tg.Target, v: Variant) -> tuple:
    """The byte-ledger finding where the pre-registration already put the rung past its roofline."""
    observed = first_run.BYTE_LEDGER.get(v.id)
    if t.name not in kfs.CHECKED_ON or not observed or t.spec is None:
        return ()
    # the pre-registration's own roofline ratio is the H200's (it was written for that card), on every card
    r = _prereg_roofline_ratio(v, get_hardware(PREREGISTERED_ON))
    if r <= 1:
        return ()
    return first_run.byte_ledger_exceeded(r, v.preregistered_ms(SHAPES["sgemm"]), observed)
