"""Units: everything is stored in SI base units (bytes, seconds, FLOP, tokens) and scaled
only for display. Binary prefixes are spelled out (GiB) because vLLM and llama.cpp log
in GiB/MiB while datasheets use GB; mixing them silently is a 7% error."""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3
KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4

# Display scalings: unit name -> (divisor, display unit). Only used by format_quantity().
_DISPLAY: dict[str, list[tuple[float, str]]] = {
    "B": [(GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"), (1, "B")],
    "s": [(1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")],
    "B/s": [(TB, "TB/s"), (GB, "GB/s"), (MB, "MB/s"), (1, "B/s")],
    "FLOP": [(1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1, "FLOP")],
    "FLOP/s": [(1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1, "FLOP/s")],
}


def format_quantity(value: float, unit: str, digits: int = 4) -> str:
    """Human-readable value: 57344 B -> '56 KiB', 0.01583 s -> '15.83 ms'.

    Integers in count-like units (tokens, blocks) keep thousands separators so that
    exact agreement (120,064 vs 120,064) is visible."""
    if unit in _DISPLAY:
        for divisor, shown in _DISPLAY[unit]:
            if abs(value) >= divisor or divisor == _DISPLAY[unit][-1][0]:
                return f"{value / divisor:.{digits}g} {shown}"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{int(value):,} {unit}".rstrip()
    return f"{value:.{digits}g} {unit}".rstrip()
