"""held_out.py: a check is held out of a fitted model or a repeat of one of its fit points, and a
test's declaration of which is checked, not trusted."""

from __future__ import annotations

import pytest

from pytest_anatomy.held_out import FitPoint, FitSet, HeldOutDeclarationError
from pytest_anatomy.kernels import sgemm
from pytest_anatomy.kernels.seed_ladder import SEED_INSTRUCTION_FIT, SEED_SGEMM

FITS = FitSet("calibration c", (FitPoint(("C", 1), "t_overhead fitted on run-1:median_itl", frozenset({"median_itl"})),))


def test_a_point_is_held_out_unless_a_fit_point_pins_that_quantity() -> None:
    assert not FITS.is_held_out(("C", 1), "median_itl")
    assert FITS.is_held_out(("C", 1), "p99_itl") and FITS.is_held_out(("C", 2), "median_itl")
    assert FITS.note(("C", 2), "median_itl").startswith("held out: no fit point of calibration c")
    assert FITS.note(("C", 1), "median_itl").startswith("repeat of the fit point (reproducibility): t_overhead")


def test_a_wrong_declaration_fails_either_way() -> None:
    with pytest.raises(HeldOutDeclarationError, match="cannot test the model; declare it as a repeat"):
        FITS.check(("C", 1), "median_itl", declared_held_out=True)
    with pytest.raises(HeldOutDeclarationError, match="matches no fit point"):
        FITS.check(("C", 2), "median_itl", declared_held_out=False)
    assert FITS.check(("C", 2), "median_itl", declared_held_out=True).startswith("held out")


def test_points_without_pins_pin_every_quantity() -> None:
    rungs = FitSet.of("the instruction prices", ("s2", "s3"))
    assert not rungs.is_held_out("s2") and not rungs.is_held_out("s2", "time") and rungs.is_held_out("s5")


def test_the_kernel_ladders_declare_held_out_rungs_the_fit_does_not_use() -> None:
    """The H200 ladder's held-out rungs and the seed's (every rung but the fitted three) are
    checked against the instruction prices' fit points."""
    ours = FitSet.of("the H200 instruction prices", sgemm.INSTRUCTION_FIT)
    for rung in sgemm.INSTRUCTION_HELD_OUT:
        ours.check(rung, declared_held_out=True)
    seed = FitSet.of("the seed's instruction prices", SEED_INSTRUCTION_FIT)
    assert [k for k in SEED_SGEMM if seed.is_held_out(k)] == ["k1", "k3c", "k5", "k6"]
