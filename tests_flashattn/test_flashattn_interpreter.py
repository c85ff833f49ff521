"""Every rung and flash-decoding against a float64 reference, in Triton's interpreter on the CPU.

Shapes are small and drawn by hypothesis: any N (ragged edges), GQA groups, both masks, fp16
and fp32 inputs (the interpreter has no bf16 dot; bf16 is checked on the GPU at full shapes by
the runner). Outputs are NaN-poisoned before every run, so a row the kernel never writes fails.
Tolerances come from reference.tolerance (dtype, N, D), each with its reason in the message.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

# hypothesis is a dev dependency; the reconciliation report (README's main command) installs only
# the core and must still run every suite.
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[dev]'")
from flashattn_interp import interpreted_rungs, use_interpreter_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_anatomy.kernels.flashattn import reference, registry
from pytest_anatomy.theory import attention as at

DTYPES = ("fp16", "fp32")


@pytest.fixture(autouse=True, scope="module")
def _interpreter() -> None:
    """torch and triton are imported here, at run time, not at collection: other suites check
    that their own code paths import no torch."""
    use_interpreter_or_skip()


def _torch() -> Any:
    import torch

    return torch


def _dt(name: str) -> Any:
    return {"fp16": _torch().float16, "fp32": _torch().float32}[name]
EXAMPLES = 6  # per rung: the interpreter runs a 16x16 tile in ~1 ms, a case in 0.05-0.3 s


@st.composite
def cases(draw: st.DrawFn) -> dict:
    kv = draw(st.sampled_from([1, 2]))
    return {"batch": draw(st.integers(1, 2)), "kv_heads": kv, "heads": kv * draw(st.sampled_from([1, 2, 4])),
            "n": draw(st.integers(1, 70)), "head_dim": draw(st.sampled_from([16, 32, 64])),
            "causal": draw(st.booleans()), "dtype": draw(st.sampled_from(DTYPES)),
            "seed": draw(st.integers(0, 2**16))}


def run_case(r: registry.Rung, c: dict) -> None:
    from pytest_anatomy.kernels.flashattn import launch

    torch = _torch()
    g = torch.Generator().manual_seed(c["seed"])
    dt = _dt(c["dtype"])
    b, h, kv, n, d = c["batch"], c["heads"], c["kv_heads"], c["n"], c["head_dim"]
    q = torch.randn(b, h, n, d, generator=g).to(dt)
    k = torch.randn(b, kv, n, d, generator=g).to(dt)
    v = torch.randn(b, kv, n, d, generator=g).to(dt)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, n), float("nan"))
    mod = importlib.import_module(f"pytest_anatomy.kernels.flashattn.{r.kernel_module or r.module}")
    scale = reference.default_scale(d)
    launch.forward(r, q, k, v, o, lse, causal=c["causal"], sm_scale=scale, config=mod.INTERPRETER_CONFIG)
    o_ref, lse_ref, smax = reference.attention(q.numpy(), k.numpy(), v.numpy(), c["causal"], scale)
    tol = reference.tolerance(c["dtype"], n, d, float(np.abs(v.double().numpy()).max()), smax)
    o_err = np.abs(o.double().numpy() - o_ref).max()
    lse_err = np.abs(lse.double().numpy() - lse_ref).max()
    assert o_err <= tol.o_abs, f"{r.id} {c}: max |O err| {o_err:.3g} > {tol.o_abs:.3g} ({tol.why})"
    assert lse_err <= tol.lse_abs, f"{r.id} {c}: max |LSE err| {lse_err:.3g} > {tol.lse_abs:.3g} ({tol.why})"


@pytest.mark.parametrize("r", interpreted_rungs())
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases())
def test_rung_matches_float64_reference(r: registry.Rung, c: dict) -> None:
    run_case(r, c)


@pytest.mark.parametrize("r", interpreted_rungs())
def test_rung_edges_and_gqa_at_fixed_shapes(r: registry.Rung) -> None:
    """The cases a random draw may miss: one row, N one past a tile, a group of 4, D=128."""
    for c in ({"batch": 1, "heads": 1, "kv_heads": 1, "n": 1, "head_dim": 16, "causal": True, "dtype": "fp16"},
              {"batch": 1, "heads": 4, "kv_heads": 1, "n": 33, "head_dim": 128, "causal": True, "dtype": "fp16"},
              {"batch": 2, "heads": 2, "kv_heads": 2, "n": 17, "head_dim": 64, "causal": False, "dtype": "fp32"}):
        run_case(r, {**c, "seed": 1})


def decode_inputs(b: int, kv: int, group: int, ctx: int, d: int, dtype: str, seed: int) -> tuple[Any, Any, Any]:
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, kv * group, 1, d, generator=g).to(_dt(dtype))
    k = torch.randn(b, kv, ctx, d, generator=g).to(_dt(dtype))
    return q, k, torch.randn(b, kv, ctx, d, generator=g).to(_dt(dtype))


def run_decode(q: Any, k: Any, v: Any, splits: int, *, fused: bool = False, workspace: Any = None
               ) -> tuple[Any, Any, dict]:
    """O and the LSE poisoned with NaN, then one call (a row the kernel never writes stays NaN and fails)."""
    from pytest_anatomy.kernels.flashattn import decode

    o = _torch().full_like(q, float("nan"))
    lse = _torch().full((q.shape[0], q.shape[1], 1), float("nan"))
    config = decode.decode(q, k, v, o, lse, sm_scale=reference.default_scale(q.shape[3]), splits=splits,
                           block_n=decode.INTERPRETER_BLOCK_N, fused_reduce=fused, workspace=workspace)
    return o, lse, config


def decode_errors(q: Any, k: Any, v: Any, o: Any, lse: Any, dtype: str) -> tuple[float, float, reference.Tolerance]:
    """(max |O err|, max |LSE err|, tolerance) against the float64 reference (NaN where unwritten)."""
    o_ref, lse_ref, smax = reference.attention(q.numpy(), k.numpy(), v.numpy(), False,
                                               reference.default_scale(q.shape[3]))
    tol = reference.tolerance(dtype, k.shape[2], q.shape[3], float(np.abs(v.double().numpy()).max()), smax)
    return np.abs(o.double().numpy() - o_ref).max(), np.abs(lse.double().numpy() - lse_ref).max(), tol


def assert_decode_matches(q: Any, k: Any, v: Any, o: Any, lse: Any, dtype: str, what: str) -> None:
    o_err, lse_err, tol = decode_errors(q, k, v, o, lse, dtype)
    assert o_err <= tol.o_abs, f"{what}: max |O err| {o_err:.3g} > {tol.o_abs:.3g} ({tol.why})"
    assert lse_err <= tol.lse_abs, f"{what}: max |LSE err| {lse_err:.3g} > {tol.lse_abs:.3g} ({tol.why})"


@pytest.mark.parametrize("fused", [pytest.param(False, id="fd"), pytest.param(True, id="fd2")])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b=st.integers(1, 3), kv=st.sampled_from([1, 2]), group=st.sampled_from([1, 4, 8]),
       ctx=st.integers(1, 200), splits=st.integers(1, 7), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**16))
def test_flash_decoding_matches_float64_reference(fused: bool, b: int, kv: int, group: int, ctx: int, splits: int,
                                                   dtype: str, seed: int) -> None:
    """Both variants (registry.DECODE_VARIANTS): fd's two kernels, and fd2's one whose last split per (b, kv head)
    merges the partials, its counter found by an atomic (TRITON_INTERPRET runs tl.atomic_add, acq_rel included,
    with the programs one after another: the last in grid order is the last to arrive)."""
    q, k, v = decode_inputs(b, kv, group, ctx, 32, dtype, seed)
    o, lse, config = run_decode(q, k, v, splits, fused=fused)
    assert_decode_matches(q, k, v, o, lse, dtype, f"{'fd2' if fused else 'fd'} b={b} kv={kv} group={group} L={ctx}")
    # the theory's count of what runs (a live test picks its grid by it) is the kernel's own
    assert config["splits"] == at.launched_splits(ctx, splits, config["BLOCK_N"])


# The cases a draw may miss, for fd2: (B, H_kv, GROUP, L, splits asked, D, dtype, splits run)
FUSED_EDGES = (
    (1, 1, 1, 1, 1, 16, "fp32", 1),  # one token, one split: the only program is its group's last
    (2, 2, 4, 150, 4, 32, "fp16", 4),  # GQA 4, ragged: chunk 48 (3 tiles), the last split 6 tokens
    (1, 1, 16, 200, 13, 16, "fp32", 13),  # 13 splits merged 4 a step (BLOCK_G 16 x BLOCK_S 4 = MERGE_ROWS)
    (3, 2, 8, 65, 7, 64, "fp16", 5),  # 7 asked, 5 run (chunks round to whole tiles): the counter counts the 5
)


@pytest.mark.parametrize("case", FUSED_EDGES, ids=lambda c: f"b{c[0]}kv{c[1]}g{c[2]}l{c[3]}s{c[4]}")
def test_fused_reduction_edges_and_its_counters_reset(case: tuple) -> None:
    """Each edge case twice on one workspace: the same bits both times, every counter back at 0 after each call, and
    a third call on new inputs right again (a stale O would not be)."""
    b, kv, group, ctx, splits, d, dtype, ran = case
    from pytest_anatomy.kernels.flashattn import decode

    q, k, v = decode_inputs(b, kv, group, ctx, d, dtype, 7)
    ws = decode.workspace_for(q, splits, fused_reduce=True)
    first = run_decode(q, k, v, splits, fused=True, workspace=ws)
    assert first[2]["splits"] == ran and first[2]["fused_reduce"]
    assert_decode_matches(q, k, v, first[0], first[1], dtype, f"fd2 {case}")
    assert int(ws["CNT"].abs().sum()) == 0
    second = run_decode(q, k, v, splits, fused=True, workspace=ws)
    assert _torch().equal(first[0], second[0]) and _torch().equal(first[1], second[1])
    assert int(ws["CNT"].abs().sum()) == 0
    q2, k2, v2 = decode_inputs(b, kv, group, ctx, d, dtype, 8)
    o, lse, _ = run_decode(q2, k2, v2, splits, fused=True, workspace=ws)
    assert_decode_matches(q2, k2, v2, o, lse, dtype, f"fd2 {case}, third call on new inputs")


def test_a_counter_not_reset_is_caught_by_the_check() -> None:
    """The check above can fail: with every counter left at 1 (a reset missed) and the partials poisoned, the program
    that reads SPLITS - 1 is not its group's last, merges a split not yet written, and the output fails the
    reference; the counters end at 1 again (the true last program's arrival)."""
    from pytest_anatomy.kernels.flashattn import decode

    q, k, v = decode_inputs(1, 2, 4, 150, 32, "fp32", 3)
    ws = decode.workspace_for(q, 4, fused_reduce=True)
    ws["CNT"].fill_(1)
    ws["PO"].fill_(float("nan"))
    ws["PL"].fill_(float("nan"))
    o, lse, _ = run_decode(q, k, v, 4, fused=True, workspace=ws)
    o_err, lse_err, tol = decode_errors(q, k, v, o, lse, "fp32")
    assert not (o_err <= tol.o_abs and lse_err <= tol.lse_abs)
    assert ws["CNT"][:2].tolist() == [1, 1]


def test_the_fused_reduction_refuses_a_workspace_without_counters() -> None:
    from pytest_anatomy.kernels.flashattn import decode, launch

    q, k, v = decode_inputs(1, 1, 2, 40, 16, "fp32", 0)
    with pytest.raises(launch.BadAttentionInput, match="zeroed counters"):
        run_decode(q, k, v, 2, fused=True, workspace=decode.workspace_for(q, 2))


def test_bad_inputs_are_refused_in_one_line() -> None:
    from pytest_anatomy.kernels.flashattn import decode, launch

    torch = _torch()
    r = registry.rung("r3-fa2")
    q = torch.zeros(1, 3, 8, 16)
    k = torch.zeros(1, 2, 8, 16)
    with pytest.raises(launch.BadAttentionInput, match="H_kv=2 must divide H=3"):
        launch.forward(r, q, k, k, torch.empty_like(q), torch.empty(1, 3, 8), causal=False, sm_scale=1.0)
    q = torch.zeros(1, 2, 8, 48)
    with pytest.raises(launch.BadAttentionInput, match="head dim 48 not supported"):
        launch.forward(r, q, q, q, torch.empty_like(q), torch.empty(1, 2, 8), causal=False, sm_scale=1.0)
    with pytest.raises(launch.BadAttentionInput, match="one query token"):
        decode.decode(torch.zeros(1, 2, 2, 16), torch.zeros(1, 2, 8, 16), torch.zeros(1, 2, 8, 16),
                      torch.zeros(1, 2, 2, 16), torch.zeros(1, 2, 2), sm_scale=1.0, splits=1)


def _gpu_configs() -> list[tuple[registry.Rung, dict]]:
    """(rung, config) for every autotune config the GPU sweep may pick, as plain dicts."""
    import ast
    from pathlib import Path

    out = []
    for r in (r for r in registry.LADDER if r.dialect == "triton"):  # Gluon: NOT_INTERPRETED, compiled in test_sm90
        src = (Path(registry.HERE) / f"{r.kernel_module or r.module}.py").read_text(encoding="utf-8")
        # read the configs without importing the module (triton must not load before the fixture)
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Config":
                cfg = ast.literal_eval(node.args[0])
                for kw in node.keywords:
                    if kw.arg in ("num_warps", "num_stages"):
                        cfg[kw.arg] = ast.literal_eval(kw.value)
                out.append((r, cfg))
    return out


@pytest.mark.parametrize("r, cfg", _gpu_configs(), ids=lambda x: x.id if isinstance(x, registry.Rung) else
                         "-".join(f"{k}{v}" for k, v in x.items()))
def test_every_gpu_config_tiles_correctly(r: registry.Rung, cfg: dict) -> None:
    """The exact tilings the GPU autotuner chooses from (128x128, 64x64 ...), at N = 2 tiles + 2
    rows so both the interior and the ragged edge run, GQA group 2, both masks."""
    from pytest_anatomy.kernels.flashattn import launch

    torch = _torch()
    for causal in (False, True):
        n = 2 * cfg["BLOCK_M"] + 2
        g = torch.Generator().manual_seed(3)
        q = torch.randn(1, 2, n, 16, generator=g).half()
        k = torch.randn(1, 1, n, 16, generator=g).half()
        v = torch.randn(1, 1, n, 16, generator=g).half()
        o = torch.full_like(q, float("nan"))
        lse = torch.full((1, 2, n), float("nan"))
        launch.forward(r, q, k, v, o, lse, causal=causal, sm_scale=0.25, config=cfg)
        o_ref, lse_ref, smax = reference.attention(q.numpy(), k.numpy(), v.numpy(), causal, 0.25)
        tol = reference.tolerance("fp16", n, 16, float(np.abs(v.double().numpy()).max()), smax)
        assert np.abs(o.double().numpy() - o_ref).max() <= tol.o_abs, (r.id, cfg, causal, tol.why)
        assert np.abs(lse.double().numpy() - lse_ref).max() <= tol.lse_abs, (r.id, cfg, causal, tol.why)
