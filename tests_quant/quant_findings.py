"""The quantization suite's findings: measured, explained divergences (docs/QUANT.md)."""

from __future__ import annotations

import pytest

# The CPU slice (381 scored tokens): Q5_1 requantized from the Q4_1-derived reference measured KLD
# 0.130 nat against 0.098 predicted (+32.4%, band +-29.2%: the fit points' 11.9% scatter + 3 standard
# errors). Q5_0, the other held-out type, agrees (-12.6%). Paired on the same tokens, KLD(Q5_1) / KLD(Q5_0)
# is 1.68 where their noise S is in the ratio 1.11.
Q5_1_ON_THE_Q4_1_GRID = pytest.mark.finding(
    "quant-q5_1-on-the-q4_1-grid", quantity="kld[Q5_1]", expected=(1.2, 1.6),
    reason="cause not established. Q5_1 measured 1.32x the KLD its exact tensor noise predicts on the CPU slice, "
           "Q5_0 0.87x; on the same tokens Q5_1's KLD is 1.68x Q5_0's for 1.11x the noise. Hypothesis: the "
           "reference lies on Q4_1's asymmetric 15-step grid and Q5_1's asymmetric 31-step grid shares its block "
           "minimum, so the error is a fixed function of each weight's 4-bit code, not the independent noise the "
           "one-constant model assumes. The band is the observed ratio +-3 standard errors of the slice. The GPU "
           "visit measures the same requantization on ~90k tokens (llama-perplexity --kl-divergence, "
           "pre-registered in tests_quant/preregistered.json).")
