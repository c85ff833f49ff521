"""The mechanisms behind the first visit's quality findings (quant_mechanisms.py): the cached CPU computation is the
code's (the q8_1 floor recomputed here), every number a finding's reason quotes is recomputed from the recordings and
that computation, and the mechanism model is checked on every GPU type, the agreeing ones included (held out: its
7 role constants and the floor come from the CPU slice only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import quant_mechanisms as qm
from quant_findings import (Q5_K_M_ON_Q5_1, Q6_K_FLOOR_AND_FFN_DOWN, Q8_1_ACTIVATION_FLOOR, ROLE_SENSITIVITY,
                            UNCALIBRATED_REFERENCE)

from pytest_anatomy import recordings
from pytest_anatomy.theory.prediction import Prediction

ROOT = Path(__file__).resolve().parent.parent
STAMP = "20261202T092902Z"
PREREG = json.loads((Path(__file__).parent / "preregistered.json").read_text())["quality"]


MEASURED_ON = "h200"  # the card the first quant visit ran on: a finding states where it was measured, once
QUANT = ROOT / "results" / MEASURED_ON / "quant"


def _kld(file_type: str) -> recordings.Recording:
    """The visit's kld recording of `file_type` (recordings.load_file: parsed once, validated)."""
    return recordings.load_file(QUANT / f"smollm2-135m.{file_type.lower()}.kld@{STAMP}.json")


def _have_visit() -> bool:
    return (QUANT.parent / "batches" / STAMP / "quant.json").is_file()


visit = pytest.mark.skipif(not _have_visit(), reason="the first quant visit's batch is not in this checkout")


def test_the_cached_floor_is_this_codes(reference, slice_folder):
    """One forward (~2.5 s, shared by the run's processes): the q8_1 floor from numpy_llama + q8_1 as they are now."""
    from quality_slice import once

    now = once(slice_folder, "q8_1-floor", lambda: qm.floor(reference))
    cached = qm.load()["floor"]
    assert now["kld"] == pytest.approx(cached["kld"], rel=1e-3), (now, cached)  # BLAS summation order only


@visit
def test_the_findings_quote_the_recordings_and_the_cpu_computation():
    cpu, s = qm.load(), qm.device_s_by_role(_kld("Q8_0"))
    c = qm.role_c(cpu)
    mech = {ft: qm.mechanism_kld(cpu, s[ft])[0] for ft in s}
    m = {ft: {k: v["value"] for k, v in _kld(ft).measurements.items()} for ft in ("Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M", "Q4_0", "Q2_K", "Q5_K_M")}
    pred = {ft: PREREG["c"] * sum(s[ft].values()) for ft in m}
    g = qm.gaps(cpu)
    quoted = [
        (Q8_1_ACTIVATION_FLOOR, [f"KLD {m['Q8_0']['kld']:.6f} measured against {pred['Q8_0']:.6f} predicted "
                                f"({m['Q8_0']['kld'] / pred['Q8_0']:.2f}x)", f"KLD {cpu['floor']['kld']:.6f} with no",
                                f"predicts {mech['Q8_0']:.5f}, measured {m['Q8_0']['kld'] / mech['Q8_0']:.2f}x",
                                f"together {cpu['Q8_0+q8_1']['kld'] / (cpu['Q8_0']['kld'] + cpu['floor']['kld']):.2f}x",
                                f"all at once {g['roles']:.1%}", f"both at once {g['floor']:.1%}"]),
        (Q6_K_FLOOR_AND_FFN_DOWN, [f"KLD {m['Q6_K']['kld']:.5f} measured against {pred['Q6_K']:.6f} predicted "
                                  f"({m['Q6_K']['kld'] / pred['Q6_K']:.2f}x)", f"carries {s['Q6_K']['ffn_down']:.5f}",
                                  f"S = {sum(s['Q6_K'].values()):.4f}", f"{c['ffn_down'][0]:.3f} nat per unit S",
                                  f"({c['ffn_down'][0] / PREREG['c']:.1f}x", f"c = {PREREG['c']:.3f}",
                                  f"predict {mech['Q6_K']:.5f}; measured {m['Q6_K']['kld'] / mech['Q6_K']:.2f}x"]),
        (ROLE_SENSITIVITY, [f"Q4_K_M KLD {m['Q4_K_M']['kld']:.4f} against {pred['Q4_K_M']:.3f} predicted "
                           f"({m['Q4_K_M']['kld'] / pred['Q4_K_M']:.2f}x)", f"Q3_K_M {m['Q3_K_M']['kld']:.3f} against "
                           f"{pred['Q3_K_M']:.4f} ({m['Q3_K_M']['kld'] / pred['Q3_K_M']:.3f}x)",
                           f"from {c['attn_k'][0]:.3f} (attn_k) to {c['ffn_down'][0]:.3f} (ffn_down)",
                           f"S {s['Q4_K_M']['ffn_down']:.4f} and {s['Q3_K_M']['ffn_down']:.4f} against Q4_0's "
                           f"{s['Q4_0']['ffn_down']:.3f}", f"predict {mech['Q4_K_M']:.4f} and {mech['Q3_K_M']:.4f}",
                           f"measured {m['Q4_K_M']['kld'] / mech['Q4_K_M']:.2f}x and "
                           f"{m['Q3_K_M']['kld'] / mech['Q3_K_M']:.2f}x", f"it, {m['Q2_K']['kld'] / mech['Q2_K']:.2f}x"]),
        (UNCALIBRATED_REFERENCE, [f"Q4_0 {m['Q4_0']['delta_ln_ppl']:.3f} against KLD {m['Q4_0']['kld']:.3f}",
                                 f"Q2_K {m['Q2_K']['delta_ln_ppl']:.3f} against {m['Q2_K']['kld']:.3f}",
                                 f"Q5_K_M {m['Q5_K_M']['delta_ln_ppl']:.4f} against {m['Q5_K_M']['kld']:.4f}",
                                 f"nll {cpu['reference']['nll']:.3f} exceeds its entropy {cpu['reference']['entropy']:.3f}",
                                 f"= {qm.calibration_ratio(cpu, 'Q4_0')[0]:.3f} for Q4_0",
                                 f"{qm.calibration_ratio(cpu, 'Q5_K_M-no-ffn-down')[0]:.2f} for Q5_K_M",
                                 f"predict {m['Q4_0']['kld'] * qm.calibration_ratio(cpu, 'Q4_0')[0]:.3f}, "
                                 f"{m['Q2_K']['kld'] * qm.calibration_ratio(cpu, 'Q4_0')[0]:.3f} and "
                                 f"{m['Q5_K_M']['kld'] * qm.calibration_ratio(cpu, 'Q5_K_M-no-ffn-down')[0]:.4f}"])]
    for mark, texts in quoted:
        for text in texts:
            assert text in mark.kwargs["reason"], (mark.args[0], text)


@visit
@pytest.mark.parametrize("file_type", [
    "Q8_0", "Q6_K", pytest.param("Q5_K_M", marks=Q5_K_M_ON_Q5_1), "Q4_K_M", "Q3_K_M", "Q2_K", "Q4_0", "Q5_0"])
def test_every_gpu_kld_against_the_mechanisms(file_type, reconcile):
    """Held out for all eight: the constants are the CPU slice's. Q2_K passes inside its band but low (0.69x): its
    ffn_down is Q3_K with S 0.715, and Q4_0's ffn_down error scaled to that S measures 3.40x (not less) the KLD of
    S 0.227 on the CPU slice: saturation does not explain it; unknown."""
    cpu, s = qm.load(), qm.device_s_by_role(_kld("Q8_0"))
    value, u = qm.mechanism_kld(cpu, s[file_type])
    reconcile(f"kld_mechanism[{file_type}]", Prediction(value, "nat", "sum of c_role x S_role + the q8_1 floor"),
              _kld(file_type)["kld"], rel=u, model="smollm2-135m", hardware=MEASURED_ON,
              why="3 standard errors of the CPU constants + the CPU slice's measured non-additivities")


def test_the_q5_k_m_finding_quotes_the_cpu_slice():
    cpu = qm.load()
    row = cpu["Q5_K_M-no-ffn-down"]
    c = qm.role_c(cpu)
    pred = sum(c[r][0] * v for r, v in row["S_by_role"].items() if r in c)
    assert f"{row['kld'] / pred:.2f}x their per-role" in Q5_K_M_ON_Q5_1.kwargs["reason"], row["kld"] / pred
    assert f"({3 * row['kld_se'] / row['kld']:.0%})" in Q5_K_M_ON_Q5_1.kwargs["reason"]
