"""PREDICTIONS: pure functions of specs -> Prediction. Never imports measure."""

from pytest_anatomy.theory.prediction import Prediction, Term

__all__ = ["Prediction", "Term"]
