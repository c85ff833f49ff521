"""Which card the latency suite's findings were measured on.

A finding explains a gap in one card's measurements (the numbers in its reason are that card's);
its mark carries `hardware=MEASURED_ON`, so on any other target the same reconciliation is judged
on its own. Another card's findings get their own constant here.
"""

from __future__ import annotations

MEASURED_ON = "h200"
