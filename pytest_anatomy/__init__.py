"""pytest-anatomy: LLM inference performance theory as pytest assertions.

The public objects: specs (ModelSpec, HardwareSpec and their loaders), the Prediction and
Measurement value objects, and Tolerance. None of these imports torch, vllm or triton."""

from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.reconcile import Tolerance
from pytest_anatomy.specs.hardware import HardwareSpec, get_hardware
from pytest_anatomy.specs.model import ModelSpec, load_model
from pytest_anatomy.theory.prediction import Prediction, Term

__version__ = "0.1.0"
__all__ = ["HardwareSpec", "Measurement", "ModelSpec", "Prediction", "Term", "Tolerance", "__version__",
           "get_hardware", "load_model"]
