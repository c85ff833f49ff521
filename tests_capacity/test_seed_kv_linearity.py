"""KV usage grows by exactly one token per prompt token per running request (seed claim 3),
and a second, independent check of 56 KiB/token: the decode step's slope in context length.

Round 2's length sweep: closed loop at C=16, input L = 256..4096, output 256 tokens."""

from __future__ import annotations

import pytest
import capacity_findings as findings

from pytest_anatomy.measure import Measurement
from pytest_anatomy.measure.analysis import linear_fit
from pytest_anatomy.theory import capacity as cap
from pytest_anatomy.theory.prediction import Prediction, Term

# The seed study's data exists only as recordings: replayed on the cards that hold them.
pytestmark = pytest.mark.targets(recorded="seed-")

LENGTHS = (256, 512, 1024, 2048, 4096)
CONCURRENCY = 16
OUTPUT_LEN = 256


@pytest.mark.gpu
def test_kv_tokens_slope_in_input_length(target, measured, reconcile):
    rec = measured("seed-r2-kv-linearity")
    c = int(rec["concurrency"].value)
    pred = Prediction(float(c), "tokens/token", "concurrency (each running request holds its prompt in KV)",
                      {"concurrency": c})
    reconcile("kv_tokens_per_input_token", pred, rec["slope_tokens_per_token"], rel=0.005,
              why="peak KV sampled at 1 Hz over 5 lengths: a sample lags the true peak by < 1 decode step "
                  "per request (16 tokens, <= 0.2% of the smallest peak); block rounding shifts the "
                  "intercept, not the slope")


@pytest.mark.gpu
@findings.SEED_KV_PEAK
def test_kv_tokens_intercept(target, measured, reconcile):
    rec = measured("seed-r2-kv-linearity")
    c = int(rec["concurrency"].value)
    pred = Prediction(float(c * OUTPUT_LEN), "tokens", "concurrency x output_len (every request at full length)",
                      {"concurrency": c, "output_len": OUTPUT_LEN})
    reconcile("kv_tokens_intercept", pred, rec["intercept_tokens"], rel=0.005,
              why="same sampling argument as the slope: <= 16 tokens per request")


@pytest.mark.gpu
@pytest.mark.parametrize("rnd", [1, 2], ids=["round1", "round2"])
def test_decode_step_slope_in_context(target, rnd, qwen, card, measured, reconcile):
    """Each extra context token adds C x 57,344 B of KV reads per decode step.

    Measured: least-squares slope of median ITL over input length L (C=16). Predicted:
    C x kv_bytes_per_token / datasheet bandwidth."""
    recs = [measured(f"seed-r{rnd}-03-len-{L}", suite="latency") for L in LENGTHS]
    itl = [r["median_itl"].value for r in recs]
    fit = linear_fit(LENGTHS, itl)
    first = recs[0]["median_itl"]
    slope = Measurement(fit.slope, "s/token", samples=tuple(itl), source=first.source,
                        provenance={**first.provenance, "fit": f"OLS over L={list(LENGTHS)}, R^2={fit.r_squared:.4f}",
                                    "recording": f"results/{target.name}/latency/seed-r{rnd}-03-len-*.json"})
    per_token = cap.kv_bytes_per_token(qwen)
    bw = card.memory_bandwidth
    pred = Prediction(CONCURRENCY * per_token.value / bw, "s/token",
                      "concurrency x kv_bytes_per_token / datasheet bandwidth",
                      {"concurrency": CONCURRENCY, "kv_bytes_per_token": per_token.value, "bandwidth": bw},
                      terms=(Term("bytes per context token per step", CONCURRENCY * per_token.value, "B"),
                             Term("datasheet bandwidth", bw, "B/s")))
    reconcile("decode_step_s_per_context_token", pred, slope, ratio=(1.0, 1.25),
              why="a slope cannot beat the datasheet bandwidth (ratio >= 1); achieved DRAM bandwidth on the "
                  "4090 is >= 80% of datasheet (the seed's decode attainment is 81-89%), so ratio <= 1.25",
              model=qwen.name)
