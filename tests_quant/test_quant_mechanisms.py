"""The mechanisms behind the quality findings (quant_mechanisms.py): the cached CPU computation is the code's (the q8_1
floor recomputed here, within the spread of its chaotic draws), every number a finding's reason quotes is recomputed
from the recordings and that computation, and the mechanism model is checked on every GPU type, the agreeing ones
included (held out: its 7 role constants and the floor come from the CPU slice only). After the second visit: MMQ's
asymmetric arithmetic checked against llama.cpp's on random blocks, then against the GPU's Q4_1 probe and Q5_1; the
Q5_1 grid effect explained by output-space noise (held out)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import quant_mechanisms as qm
from quant_findings import (MEASURED_ON, ASYMMETRIC_MMQ_FLOOR, Q5_1_ON_THE_Q4_1_GRID, Q5_K_M_ON_Q5_1, Q6_K_FLOOR_AND_FFN_DOWN,
                            Q8_1_ACTIVATION_FLOOR, ROLE_SENSITIVITY, UNCALIBRATED_REFERENCE)

from pytest_anatomy import recordings
from pytest_anatomy.theory.prediction import Prediction

ROOT = Path(__file__).resolve().parent.parent
STAMP, STAMP2 = "20261202T092902Z", "20261202T143307Z"  # the first and second quant visits' batches
PREREG = json.loads((Path(__file__).parent / "preregistered.json").read_text())["quality"]


QUANT = ROOT / "results" / MEASURED_ON / "quant"


def _kld(file_type: str, stamp: str = STAMP) -> recordings.Recording:
    """The visit's kld recording of `file_type` (recordings.load_file: parsed once, validated)."""
    return recordings.load_file(QUANT / f"smollm2-135m.{file_type.lower()}.kld@{stamp}.json")


def _have_visit(stamp: str = STAMP) -> bool:
    return (QUANT.parent / "batches" / stamp / "quant.json").is_file()


visit = pytest.mark.skipif(not _have_visit(), reason="the first quant visit's batch is not in this checkout")
visit2 = pytest.mark.skipif(not _have_visit(STAMP2), reason="the second quant visit's batch is not in this checkout")


def test_the_cached_floor_is_this_codes(reference, slice_folder):
    """One forward (~2.5 s, shared by the run's processes): the q8_1 floor from numpy_llama + q8_1 as they are now.
    Not to BLAS precision: the rounding makes the forward chaotic (a code flipped by the last bit of a float32 sum
    changes the next layer's inputs, which flip others), so each CPU's summation order draws another floor. Five
    draws with the attention norms moved by 1 ulp (a change whose own KLD is ~4e-9) scatter about one standard error
    of the per-token mean; two draws agree within 3 of their combined standard errors."""
    import math

    from quality_slice import once

    now = once(slice_folder, "q8_1-floor", lambda: qm.floor(reference))
    cached, draws = qm.load()["floor"], qm.load()["floor realizations"]
    assert min(draws["kld"]) < max(draws["kld"]), "one ulp changed nothing: the forward is not chaotic after all"
    spread = float(np.std(draws["kld"], ddof=1))
    assert 0.3 < spread / float(np.mean(draws["kld_se"])) < 3, (spread, draws)
    assert abs(now["kld"] - cached["kld"]) < 3 * math.hypot(now["kld_se"], cached["kld_se"]), (now, cached)


def test_the_asymmetric_kernel_is_llama_cpps_arithmetic():
    """measure/q8_1.AsymmetricMmq against the kernel's own sum on random Q4_1-style blocks: W = d q + m with codes
    0..15, the activations rounded to q8_1 (x_q = d_x q_x), and per block d d_x (q . q_x) + m (sum of x before
    rounding), as mmq.cuh's vec_dot_q8_1_q8_1_mma adds dm.x ds.x C + dm.y ds.y."""
    from pytest_anatomy.measure.q8_1 import AsymmetricMmq, block_minimum, q8_1_round

    rng = np.random.default_rng(0)
    rows, n, tokens = 8, 128, 5
    codes = rng.integers(0, 16, (rows, n // 32, 32))
    codes[..., 0] = 0  # every block holds its minimum, as a requantized block does
    d = rng.uniform(0.01, 0.02, (rows, n // 32, 1)).astype(np.float16).astype(np.float32)
    m = -rng.uniform(0.1, 0.2, (rows, n // 32, 1)).astype(np.float16).astype(np.float32)
    w = (d * codes + m).reshape(rows, n).astype(np.float32)
    x = rng.normal(size=(tokens, n)).astype(np.float32)
    xq = q8_1_round(x).reshape(tokens, 1, n // 32, 32)
    kernel = ((d[None, ..., 0] * (codes[None] * xq).sum(-1)) + m[None, ..., 0] * x.reshape(tokens, 1, n // 32, 32).sum(
        -1)).sum(-1)
    assert np.allclose(block_minimum(w), m[..., 0])
    ours = AsymmetricMmq({"w": block_minimum(w)}).matmul(x, "w", w)
    assert np.allclose(ours, kernel, rtol=1e-5, atol=1e-5)
    symmetric = q8_1_round(x) @ w.T
    assert not np.allclose(symmetric, kernel, rtol=1e-3, atol=1e-3), "the minimum term should matter"


@visit
@visit2
def test_the_findings_quote_the_recordings_and_the_cpu_computation():
    cpu, s = qm.load(), qm.device_s_by_role(_kld("Q8_0"))
    c = qm.role_c(cpu)
    mech = {ft: qm.mechanism_kld(cpu, s[ft])[0] for ft in s}
    m = {ft: {k: v["value"] for k, v in _kld(ft).measurements.items()} for ft in ("Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M", "Q4_0", "Q2_K", "Q5_K_M")}
    pred = {ft: PREREG["c"] * sum(s[ft].values()) for ft in m}
    m51 = {k: v["value"] for k, v in _kld("Q5_1", STAMP2).measurements.items()}
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
                                 f"Q5_1 {m51['delta_ln_ppl']:.4f} against {m51['kld']:.4f}",
                                 f"{qm.calibration_ratio(cpu, 'Q5_1')[0]:.2f} for Q5_1",
                                 f"predict {m['Q4_0']['kld'] * qm.calibration_ratio(cpu, 'Q4_0')[0]:.3f}, "
                                 f"{m['Q2_K']['kld'] * qm.calibration_ratio(cpu, 'Q4_0')[0]:.3f}, "
                                 f"{m['Q5_K_M']['kld'] * qm.calibration_ratio(cpu, 'Q5_K_M-no-ffn-down')[0]:.4f} and "
                                 f"{m51['kld'] * qm.calibration_ratio(cpu, 'Q5_1')[0]:.4f}"])]
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


# ---- the second visit: MMQ's asymmetric arithmetic, and the Q5_1 grid effect --------------------------------------------
def _transfer() -> float:
    """How far the CPU slice's KLD (with the kernel's rounding) lands from the GPU's over the whole text, for the two
    fit types of the first visit: max |GPU / CPU - 1| (381 tokens against ~90k; Q4_0 0.84x, Q8_0 1.05x)."""
    cpu = qm.load()
    return max(abs(_kld(ft)["kld"].value / cpu[f"{ft}+q8_1"]["kld"] - 1) for ft in ("Q8_0", "Q4_0"))


@visit
@visit2
@pytest.mark.parametrize("file_type", ["Q5_1", "Q4_1"])
def test_the_slice_with_the_kernels_arithmetic_predicts_the_gpu(file_type, reconcile):
    """Written after the second visit, with no constant fitted to it: the CPU slice's KLD with MMQ's asymmetric
    arithmetic (quant_mechanisms.asymmetric) against the GPU's over the text. Q4_1 is the trap: its weights are the
    reference's own grid (S 7.8e-6), so it probes the kernel alone; it is named kld_slice_with_mmq, never kld[Q4_1],
    and is no quality result. With the symmetric rounding alone the Q4_1 probe would miss 4.5-fold."""
    cpu = qm.load()
    row, gpu = cpu[f"{file_type}+asym"], _kld(file_type, STAMP2)
    rel = 3 * row["kld_se"] / row["kld"] + _transfer() + 3 * gpu["kld_stderr"].value / gpu["kld"].value
    reconcile(f"kld_slice_with_mmq[{file_type}]", Prediction(row["kld"], "nat", "the CPU slice's KLD through MMQ's "
              "asymmetric arithmetic (measure/q8_1.AsymmetricMmq)", {"S": row["S"]}), gpu["kld"], rel=rel,
              model="smollm2-135m", hardware=MEASURED_ON,
              why="3 standard errors of the slice's mean + the slice-to-text transfer of the first visit's Q8_0 and Q4_0 "
                  "(max |GPU/CPU - 1|) + 3 of llama-perplexity's")
    if file_type == "Q4_1":
        assert gpu["kld"].value > 3 * cpu["Q4_1+q8_1"]["kld"] * (1 + rel), "the symmetric floor would explain it"


def _output_noise_fit(format_result) -> tuple[float, float]:
    """(c_out, the fit points' scatter): KLD = c_out x S_out, fitted on Q8_0 and Q4_0 as the pre-registered c was."""
    from quality_slice import FIT

    on = qm.load()["output noise"]
    cs = [format_result(ft).kld_mean / on[ft]["S_out"] for ft in FIT]
    return float(np.exp(np.mean(np.log(cs)))), max(cs) / min(cs) - 1


@pytest.mark.parametrize("file_type", ["Q5_0", "Q5_1"])
def test_output_space_noise_predicts_the_held_out_types(file_type, format_result, reconcile):
    """The Q5_1 grid effect's cause: noise correlated with the weights is not white. Summed where it acts,
    ||E x||^2 / ||W x||^2 over the slice's own activations x (quant_mechanisms.output_noise), one constant fitted on
    Q8_0 and Q4_0 predicts both held-out types; in weight space Q5_1 is the finding (test_quality_slice)."""
    on = qm.load()["output noise"][file_type]
    r = format_result(file_type)
    assert on["S"] == pytest.approx(r.budget.total, rel=1e-6)  # the cached row is this file type's noise
    c_out, scatter = _output_noise_fit(format_result)
    reconcile(f"kld_output_noise[{file_type}]", Prediction(c_out * on["S_out"], "nat", "KLD = c_out x S_out, c_out "
              "fitted on the CPU slice's Q8_0 and Q4_0", {"S_out": on["S_out"], "S": on["S"], "c_out": c_out}),
              r.kld_mean, rel=scatter + 3 * r.kld_se / r.kld_mean, model="smollm2-135m",
              why="the fit points' own c_out differ by that much + 3 standard errors of the slice's per-token KL")


def _grid_correlation(reference, file_type: str) -> float:
    """Layer 0: correlation of each tensor's requantization error with the weight's offset from its block's
    mid-range, over its 7 tensors."""
    from pytest_anatomy.theory import quant_noise

    num = den_e = den_w = 0.0
    for t in (t for t in reference.header_f16.tensors if t.name.startswith("blk.0.") and t.ggml_type == "F16"):
        w = reference.weights[t.name].astype(np.float64)
        e = quant_noise.requantize(reference.weights[t.name], file_type) - w
        b = w.reshape(w.shape[0], -1, 32)
        mid = (w - ((b.min(-1, keepdims=True) + b.max(-1, keepdims=True)) / 2).repeat(32, -1).reshape(w.shape))
        num, den_e, den_w = num + float((e * mid).sum()), den_e + float((e * e).sum()), den_w + float((mid * mid).sum())
    return num / np.sqrt(den_e * den_w)


def test_the_q5_1_finding_quotes_its_cause(reference, format_result):
    """quant-q5_1-on-the-q4_1-grid's cause, each number recomputed (the first four: test_quality_slice)."""
    cpu, reason = qm.load(), Q5_1_ON_THE_Q4_1_GRID.kwargs["reason"]
    on = cpu["output noise"]
    amp = {ft: on[ft]["S_out"] / on[ft]["S"] for ft in on}
    c_out, _ = _output_noise_fit(format_result)
    texts = [f"0.1353 against {PREREG['types']['Q5_1']['kld']:.4f} predicted "
             f"({_kld('Q5_1', STAMP2)['kld'].value / PREREG['types']['Q5_1']['kld']:.2f}x)",
             f"layer 0: {_grid_correlation(reference, 'Q5_1'):.2f} with",
             f"Q5_0's {abs(_grid_correlation(reference, 'Q5_0')):.2f})",
             f"noise is {amp['Q5_1']:.2f}x its weight-space S",
             f"are {min(amp[ft] for ft in ('Q8_0', 'Q4_0', 'Q5_0')):.2f}-{max(amp[ft] for ft in ('Q8_0', 'Q4_0', 'Q5_0')):.2f}x",
             *(f"{ft} at {format_result(ft).kld_mean / (c_out * on[ft]['S_out']):.2f}x" for ft in ("Q5_1", "Q5_0"))]
    for text in texts:
        assert text in reason, text


@visit2
def test_the_asymmetric_floor_finding_quotes_the_recordings_and_the_cpu():
    import math

    cpu, reason = qm.load(), ASYMMETRIC_MMQ_FLOOR.kwargs["reason"]
    pre = PREREG["cpu_slice"]

    def slice_dlp(ft: str) -> float:
        ppl = recordings.load_file(QUANT / f"smollm2-135m.{ft}.slice@{STAMP2}.json")["perplexity"].value
        return math.log(ppl / recordings.load_file(QUANT / f"smollm2-135m.f16.slice@{STAMP2}.json")["perplexity"].value)

    d, gpu41 = cpu["Q5_1+asym"]["minus_plain"], _kld("Q4_1", STAMP2)["kld"].value
    noise = recordings.load_file(QUANT / f"smollm2-135m.q5_1.noise@{STAMP2}.json")["noise_S"].value
    texts = [f"scores delta ln ppl {slice_dlp('q5_1'):.4f} where", f"scores {pre['delta_ln_ppl']['Q5_1']:.4f}: "
             f"+{slice_dlp('q5_1') - pre['delta_ln_ppl']['Q5_1']:.4f} nat", f"noise S {noise:.6f} on both",
             f"scores {pre['delta_ln_ppl']['Q5_1'] + d['delta_ln_ppl']:.4f}: +{d['delta_ln_ppl']:.4f} +- "
             f"{d['delta_ln_ppl_se']:.4f}", f"the rest, {slice_dlp('q5_1') - pre['delta_ln_ppl']['Q5_1'] - d['delta_ln_ppl']:.4f} nat",
             f"noise S {cpu['Q4_1+asym']['S']:.1e})", f"predicts KLD {cpu['Q4_1+asym']['kld']:.5f}",
             f"measured {gpu41:.5f} over", f"({gpu41 / cpu['Q4_1+asym']['kld']:.2f}x)",
             f"gives {cpu['Q4_1+q8_1']['kld']:.5f} (the GPU {gpu41 / cpu['Q4_1+q8_1']['kld']:.2f}x it)"]
    for text in texts:
        assert text in reason, text
    assert noise == pytest.approx(PREREG["types"]["Q5_1"]["S"], rel=1e-9)  # the device's S is gguf-py's, exactly


def test_the_script_refuses_any_argument_but_missing_before_computing() -> None:
    """`python tests_quant/quant_mechanisms.py --help` once recomputed every row and rewrote the committed file."""
    import subprocess
    import sys

    before = qm.PATH.read_bytes()
    done = subprocess.run([sys.executable, qm.__file__, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "usage:" in done.stderr and "--missing" in done.stderr
    assert qm.PATH.read_bytes() == before
    assert qm.refuse_other_arguments(["--missing"]) is None and qm.refuse_other_arguments([]) is None
