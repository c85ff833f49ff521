"""pytest-anatomy: LLM inference performance theory as pytest assertions."""

from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.theory.prediction import Prediction, Term

__version__ = "0.1.0"
__all__ = ["Measurement", "Prediction", "Term", "__version__"]
