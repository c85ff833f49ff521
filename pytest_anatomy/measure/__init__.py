"""MEASUREMENTS. Submodules that need torch/vllm import them lazily inside functions, so
that importing this package on a CPU-only machine is free. Never imports theory."""

from pytest_anatomy.measure.measurement import Measurement

__all__ = ["Measurement"]
