"""The IO models of the attention counter tests (test_flashattn_counters.py, whose header states
them and their bands): what each profiled launch should move, from theory/attention.py's terms.
Shared with the synthetic report's generator (flashattn_synthetic_ncu.py)."""

from __future__ import annotations

from typing import Any

from pytest_anatomy.kernels.flashattn import registry
from pytest_anatomy.theory import attention as at
from pytest_anatomy.theory.prediction import Prediction, Term

LADDER = "fa2"
# L2 bytes over the tiled count (test_l2_bytes_against_the_tiled_count): the 2026-12-01 band of r3-r6, and the Gluon
# rung's own, PRE-REGISTERED on 2026-12-04 before any counter of it existed (test_flashattn_counters.py's header says
# why: the FA-2 rungs' counts at the target shape, and Hopper's L2 request coalescer, were known by then)
L2_BAND = (0.8, 2.0)
GLUON_L2_BAND = {False: (0.45, 0.9), True: (0.85, 1.2)}  # by causal
# r8's own, PRE-REGISTERED on 2026-12-04 (~19:50) before any counter of r8 existed: r7's counted ratio at the target
# shape (ncu 2026-12-04 16:38, 128 x 128 tiles as r8's, which test_flashattn_counters.py's header says) +-15%, by causal
R7_L2_COUNTED = {False: 0.845, True: 1.086}
R8_L2_BAND = {False: (0.72, 0.97), True: (0.92, 1.25)}
R8 = "r8-pingpong"


def launches() -> list[dict[str, Any]]:
    return registry.profile_launches()


def name(launch: dict[str, Any]) -> str:
    label = registry.profile_label(launch["batch"], launch["heads"], launch["n"], launch["head_dim"], launch["causal"])
    return f"ncu.{LADDER}.{launch['rung']}.{label}"


def shape_of(launch: dict[str, Any]) -> at.AttentionShape:
    return at.AttentionShape.prefill(launch["batch"], launch["heads"], launch["n"], launch["head_dim"],
                                     causal=launch["causal"])


def fits_one_head(launch: dict[str, Any], l2_bytes: int) -> bool:
    return 2 * launch["n"] * launch["head_dim"] * 2 <= l2_bytes


def tiling_of(rec: Any) -> at.Tiling:
    config = rec.data["launch"]["config"]
    return at.Tiling(int(config["BLOCK_M"]), int(config["BLOCK_N"]))


def s_bytes(shape: at.AttentionShape) -> float:
    return float(at.materialized_s_bytes(shape, passes=1).value)


def workspace_bytes(shape: at.AttentionShape) -> float:
    """r2's fp32 O32 [B*H*N, D] and its m and l [B*H*N]."""
    rows = shape.batch * shape.heads * shape.seq_q
    return float(rows * shape.head_dim * 4 + 2 * rows * 4)


def expected_reads(rung: str, shape: at.AttentionShape, absorbed: bool) -> tuple[Prediction, tuple[float, float], str]:
    """DRAM reads where one head's K/V fit in L2, per rung, with the band and its reason;
    `absorbed`: theory.l2_absorbs' verdict (the in-flight heads' K/V within half the L2)."""
    comp = {t.name: t.value for t in at.compulsory_bytes(shape).terms}
    base = comp["Q"] + comp["K+V"]
    terms = [Term("Q", comp["Q"], "B"), Term("K+V", comp["K+V"], "B", "once per KV head")]
    if rung == "r1-naive":
        s = s_bytes(shape)
        return (Prediction(base + 2 * s, "B", "Q + K + V + 2 * S (fp32)", shape.inputs(),
                           (*terms, Term("S twice", 2 * s, "B", "row max pass, then exp/sum/PV pass"))),
                (0.85, 1.05), ("S's second pass can hit L2 only for the rows L2 holds: <= 60 MiB of the 264 MiB "
                               "of rows in flight (23%); everything else is read exactly"))
    if rung == "r2-fa1":
        w = workspace_bytes(shape)
        return (Prediction(base + w, "B", "Q + K + V + workspace (O32, m, l; fp32)", shape.inputs(),
                           (*terms, Term("workspace", w, "B", "first KV step, after the fills"))),
                (0.98, 1.3), ("every byte crosses once (ncu counts exactly); up to 1.3 if a program's 256 KiB O32 "
                              "group sometimes leaves L2 between two KV steps (33 MiB for 132 programs)"))
    return (Prediction(base, "B", "Q + K + V (compulsory reads)", shape.inputs(), tuple(terms)),
            (0.98, 1.15) if absorbed else (0.98, 1.5),
            "every input byte crosses once; the in-flight heads' K/V re-reads hit L2" + (
                "" if absorbed else " (2 heads' K/V, 32 MiB, exceed the half of L2 the time model allows, but one "
                                 "head's 16 MiB fits and a head's programs walk K/V in step)"))


def expected_writes(rung: str, shape: at.AttentionShape) -> tuple[Prediction, int]:
    """(DRAM writes the outputs need, kernels in the launch) per rung."""
    comp = {t.name: t.value for t in at.compulsory_bytes(shape).terms}
    out = comp["O"] + comp["LSE"]
    terms = [Term("O", comp["O"], "B"), Term("LSE", comp["LSE"], "B", "fp32")]
    if rung == "r1-naive":
        s = s_bytes(shape)
        return Prediction(out + s, "B", "S + O + LSE", shape.inputs(), (*terms, Term("S", s, "B", "fp32"))), 2
    if rung == "r2-fa1":
        w = workspace_bytes(shape)
        return Prediction(out + 2 * w, "B", "2 * workspace + O + LSE", shape.inputs(),
                          (*terms, Term("workspace twice", 2 * w, "B", "the fills, then its final dirty lines"))), 4
    return Prediction(out, "B", "O + LSE", shape.inputs(), tuple(terms)), 1


def l2_band(launch: dict[str, Any]) -> tuple[tuple[float, float], str]:
    """(L2 bytes over the tiled count allowed, why) for a profiled launch."""
    if launch["rung"] == R8:
        lo, hi = R8_L2_BAND[launch["causal"]]
        counted = R7_L2_COUNTED[launch["causal"]]
        return (lo, hi), (
            f"pre-registered for r8 before any counter of it: its loads are r7's (one producer warp's TMA copies of a "
            f"128-row Q tile once and of every 128-key K/V tile its loop visits, each into shared memory once per "
            f"program, where both consumer warpgroups read it), so r7's counted ratio at this shape ({counted:.3f} of "
            f"the tiled count, Hopper's L2 request coalescer merging the in-step requests of a head's programs) "
            f"+-15%: [{lo}, {hi}]")
    if registry.rung(launch["rung"]).dialect == "gluon":
        lo, hi = GLUON_L2_BAND[launch["causal"]]
        return (lo, hi), (
            f"pre-registered for the Gluon rung: its TMA loads, issued by one producer warp per program, bypass L1, "
            f"and the programs of a head start together and walk K/V in step, so Hopper's L2 request coalescer "
            f"merges part of their requests as it did for r3-r6 (at this shape 0.58-0.81 of the tiled count full, "
            f"0.92-1.05 causal): [{lo}, {hi}]")
    return L2_BAND, ("lts__t_bytes counts every request the loads make, and more: H200's pure streams counted 1.52x "
                     "their bytes (cross-partition traffic counted twice; 2.0 if every request were); 0.8 for L1 hits "
                     "of a pointer rung's K/V shared by two programs of one head on one SM")
