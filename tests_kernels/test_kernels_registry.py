"""Every rung is a real .cu file whose header states what it changes, its prediction and its outcome,
and whose registry entry launches kernels that exist in that file (CPU only, no compiler)."""

from __future__ import annotations

import re

import pytest

from pytest_anatomy.kernels import sgemm
from pytest_anatomy.kernels.emulator import kernels_in
from pytest_anatomy.kernels.ladders import LADDERS, TIMING_SHAPES
from pytest_anatomy.kernels.registry import (
    CUDA_DIR,
    DeviceFacts,
    KernelCall,
    Launch,
    RungRefused,
    header_of,
)

RUNGS = [pytest.param(v, id=f"{lad}.{v.id}") for lad, vs in LADDERS.items() for v in vs if not v.is_baseline]


@pytest.mark.parametrize("v", RUNGS)
def test_rung_header_states_change_prediction_outcome(v):
    h = header_of(v.path)
    assert len(h["what_changes"]) > 40, f"{v.source}: 'What changes' is too thin to explain the rung"
    assert "@PRED@" not in h["predicted_effect"] and "H200" in h["predicted_effect"], \
        f"{v.source}: the prediction for the H200 must be written down before measuring"
    assert h["measured_outcome"], f"{v.source}: no measured outcome (write 'not yet measured on H200.')"


# "H200, 4096^3: 3.0 ms", "H200, 2^28 floats: 0.90 ms", "128 x 152,064: 0.24 ms", "2048 x 18944 x 3584: 5.9 ms":
# a shape, a colon, a time.
_TIMED = re.compile(r"(2\^28 floats|(\d+)\^3|([\d,]+) x ([\d,]+)(?: x ([\d,]+))?): ([0-9.]+) ms")


def header_times(text: str) -> dict[str, float]:
    """{shape label: ms} for every "<shape>: <time> ms" in a header's Predicted effect."""
    out = {}
    for m in _TIMED.finditer(text):
        if m.group(1) == "2^28 floats":
            lab = f"n{2**28}"
        elif m.group(2):
            lab = "x".join([m.group(2)] * 3)
        else:
            lab = "x".join(g.replace(",", "") for g in m.group(3, 4, 5) if g)
        out[lab] = float(m.group(6))
    return out


@pytest.mark.parametrize("v", RUNGS)
def test_preregistered_time_matches_header(v):
    """The H200 tests reconcile against Variant.h200_ms; the header is where it was written down
    first. Both must say the same, and every rung must pre-register its timing shape."""
    assert header_times(header_of(v.path)["predicted_effect"]) == dict(v.h200_ms), \
        f"{v.source}: header says {header_times(header_of(v.path)['predicted_effect'])}, registry {dict(v.h200_ms)}"
    assert v.preregistered_ms(TIMING_SHAPES[v.ladder]) is not None, f"{v.id}: no pre-registered time at its timing shape"


@pytest.mark.parametrize("v", RUNGS)
def test_launches_name_kernels_in_their_files(v):
    shape = dict(TIMING_SHAPES[v.ladder])
    for call in v.calls(shape, DeviceFacts(sm_count=132)):
        assert call.kernel in kernels_in(call.source), f"{call.source} has no extern \"C\" kernel {call.kernel}"
        assert (CUDA_DIR / call.source).exists()
        assert call.launch.threads_per_block <= 1024


def test_every_cu_file_belongs_to_a_rung():
    used = {s for vs in LADDERS.values() for v in vs if not v.is_baseline
            for s in v.sources(dict(TIMING_SHAPES[v.ladder]), DeviceFacts(132))}
    files = {str(p.relative_to(CUDA_DIR)) for p in CUDA_DIR.rglob("*.cu")}
    assert files == used, f"orphan or missing .cu files: {sorted(files ^ used)}"


def test_register_rungs_refuse_the_vocab_row_with_the_reason():
    v = next(x for x in LADDERS["softmax"] if x.id == "x3-registers")
    with pytest.raises(RungRefused, match=r"at most 8,192 columns.*N=152,064.*594 registers"):
        v.calls({"M": 128, "N": 152_064}, DeviceFacts(132))


def test_kernel_call_rejects_untyped_arguments():
    with pytest.raises(ValueError, match="kind:name"):
        KernelCall("x.cu", "k", Launch((1, 1, 1), (1, 1, 1)), ("A",))


def test_tensor_core_rung_has_its_own_baseline():
    assert sgemm.LADDER[-1].dtype == "bf16" and sgemm.BF16_BASELINE.baseline == "torch.matmul.bf16"


@pytest.mark.parametrize("v", RUNGS)
def test_measured_outcome_matches_the_newest_recording(v):
    """A header's "Measured outcome" quotes H200 times. Each quoted time must be the time of a recorded
    run of that rung and shape (to its printed precision, 0.5%): the text quotes a measurement, never a
    guess. The newest recording must stay within 10% of the quote (the session-to-session drift the
    kernel findings allow), so the text cannot go stale when a newer run supersedes the one it quotes.
    Rungs not yet measured say so."""
    from pytest_anatomy import recordings
    from pytest_anatomy.kernels.registry import CUDA_DIR, PREREGISTERED_ON

    outcome = header_of(v.path)["measured_outcome"]
    results = CUDA_DIR.parents[2] / "results"
    # "<shape>: <ms> ms, <ratio>x the prediction (...); rung 0 <ms> ms; <shape>: ...": the rung's own times
    quoted = header_times(";".join(part for part in outcome.split(";") if "rung 0" not in part))
    names = recordings.list_recordings(results, PREREGISTERED_ON, "kernels", f"{v.ladder}.{v.id}.")
    if not names:
        assert "not yet measured" in outcome, f"{v.source}: quotes a measurement but no recording exists"
        return
    assert quoted, f"{v.source}: H200 recordings exist ({names}) but the header quotes no time"
    for lab, ms in quoted.items():
        name = f"{v.ladder}.{v.id}.{lab}"
        runs = [recordings.load_file(p).measurements["time"]["value"] * 1e3
                for p in recordings.candidates(results, PREREGISTERED_ON, "kernels", name)]
        assert any(ms == pytest.approx(t, rel=0.005) for t in runs), \
            f"{v.source}: header says {ms} ms at {lab}, but no recording has that time ({[round(t, 4) for t in runs]})"
        assert runs[-1] == pytest.approx(ms, rel=0.10), \
            f"{v.source}: header says {ms} ms at {lab}, the newest recording {runs[-1]:.4g} ms: update the header"
