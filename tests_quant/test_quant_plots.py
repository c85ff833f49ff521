"""The report's quantization figures render from reconciliations shaped as the suite writes them."""

from __future__ import annotations

from pytest_anatomy.report.plots import domain_plots
from pytest_anatomy.report.plots_quant import quality_vs_bpw, speed_vs_bytes, vllm_step_vs_bytes
from pytest_anatomy.quant_prereg import CARD


def _rec(name: str, x_key: str, x: float, predicted: float, measured: float, model: str = "smollm2-135m") -> dict:
    return {"suite": "quant", "name": name, "hardware": CARD, "model": model, "predicted": predicted,
            "measured": measured, "verdict": "agree", "unit": "nat", "gap": measured / predicted - 1,
            "prediction": {"inputs": {x_key: x}}}  # the ledger keeps inputs under prediction


def test_both_figures_draw_one_point_per_file_type():
    recs = [_rec("kld[Q8_0]", "bits_per_weight", 8.5, 0.0014, 0.0013), _rec("kld[Q4_0]", "bits_per_weight", 4.6, 0.35, 0.37),
            _rec("tg128_tok_per_s[Q8_0]", "weight_bytes_per_token", 8.1e9, 304.0, 290.0, "qwen2.5-7b"),
            _rec("tg128_tok_per_s[Q4_0]", "weight_bytes_per_token", 4.4e9, 418.0, 400.0, "qwen2.5-7b")]
    quality, speed = quality_vs_bpw(recs), speed_vs_bytes(recs)
    assert len(quality) == 1 and len(speed) == 1
    assert "quality vs bits per weight" in str(quality[0]) and "decode speed vs weight bytes" in str(speed[0])
    assert any(g["title"] == "Quantization" and len(g["plots"]) == 2 for g in domain_plots(recs))


def test_no_figure_without_two_points():
    assert quality_vs_bpw([_rec("kld[Q8_0]", "bits_per_weight", 8.5, 0.0014, 0.0013)]) == []
    assert speed_vs_bytes([]) == []


def test_vllm_decode_steps_chart_per_batch():
    def rec(method: str, b: int, x: float, predicted: float, measured: float) -> dict:
        r = _rec("decode_step_per_weight_format", "weight_bytes_per_token", x, predicted, measured, "qwen2.5-7b")
        r["prediction"]["inputs"].update(batch=b, method=method)
        return r

    recs = [rec("fp8", 1, 7.6e9, 3.26e-3, 3.38e-3), rec("awq", 1, 4.5e9, 2.54e-3, 3.77e-3),
            rec("fp8", 8, 7.6e9, 3.36e-3, 3.51e-3)]
    charts = vllm_step_vs_bytes(recs)
    assert len(charts) == 1 and "b=1" in str(charts[0])  # b=8 has one point: no chart
    assert any(g["title"] == "Quantization" and len(g["plots"]) == 1 for g in domain_plots(recs))
