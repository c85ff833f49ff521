"""The errors specs/ raises for input it cannot use, in one module that imports nothing.

Each names what is wrong and the fix in one line (the CLI and the plugin print it as it is).
Kept apart so that catalog.py and model.py, which both raise ModelConfigError, need not import
each other to do so; the modules that raise them re-export them under their old names."""

from __future__ import annotations


class ModelConfigError(ValueError):
    """A config.json this package cannot use; names the field, the problem and the fix."""

    def __init__(self, field_name: str, problem: str, fix: str, source: str = "config") -> None:
        self.field = field_name
        self.source = source
        super().__init__(f"{source}: `{field_name}` {problem}. Fix: {fix}")


class UnknownHardwareError(KeyError):
    """A hardware name that is neither a catalog key nor a known NVML device name."""

    def __str__(self) -> str:  # KeyError would repr() the message and hide newlines
        return str(self.args[0])


class MissingHardwareFactError(LookupError):
    """A prediction needs a number this HardwareSpec does not have (None / no dtype entry)."""


class UnknownFormatError(KeyError):
    """A format/dtype name that is not an exact key of the relevant table."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class FormatShapeError(ValueError):
    """A shape the format's packing cannot represent (e.g. in % 128 != 0 for group-128 AWQ)."""
