"""The live latency plan's decode parts on a card whose KV pool cannot hold them: a decode part whose sequences
cannot all keep their KV at once is queued or preempted by vLLM, measures no steady step, and is therefore not
run (latency_fit.decode_pool_skip states the rule); its tests skip saying why. Cards come from the catalog and
the recorded batches, never by name."""

from __future__ import annotations

import dataclasses
import functools
import glob
import importlib.machinery
import importlib.util
import json
import lzma
import sys
import types
from pathlib import Path
from typing import Any

import device_scripts
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_anatomy.latency_fit import decode_pool_skip, fit_to_card, unstartable
from pytest_anatomy.measure import latency_live
from pytest_anatomy.measure.latency_live import DECODE_SHAPE, ENGINE_SETTINGS
from pytest_anatomy.specs import catalog
from pytest_anatomy.specs.hardware import HARDWARE
from pytest_anatomy.specs.model import load_model
from pytest_anatomy.targets import Target
from pytest_anatomy.theory.vllm_memory import predict_ledger

REPO = Path(__file__).resolve().parents[1]
plan_script = device_scripts.load("latency_plan")


@pytest.fixture(scope="module")
def lat() -> Any:
    """tests_latency/latency_live_plan.py: the FAST and FULL plans."""
    sys.path.insert(0, str(REPO / "tests_latency"))
    try:
        import latency_live_plan

        yield latency_live_plan
    finally:
        sys.path.remove(str(REPO / "tests_latency"))


def _blocks(tokens: int, block: int) -> int:
    return -(-tokens // block)


@given(batch=st.integers(1, 512), prompt=st.integers(1, 40_000), output=st.integers(1, 4_096),
       block=st.sampled_from([8, 16, 32]), pool_blocks=st.integers(1, 300_000))
def test_a_decode_part_runs_iff_its_sequences_fit_the_pool_less_the_null_block(
        batch: int, prompt: int, output: int, block: int, pool_blocks: int) -> None:
    pool = pool_blocks * block  # vLLM reports whole blocks
    why = decode_pool_skip(batch, pool, block_size=block, shape=(prompt, output), where="the pool")
    assert (why is None) == (batch * _blocks(prompt + output, block) <= pool_blocks - 1)
    if why is not None:
        per = _blocks(prompt + output, block) * block
        assert why.startswith(f"decode b={batch} needs {batch * per:,} KV tokens ({batch} x {per:,}); "
                              f"the pool holds {pool:,} (")
        assert why.endswith(": not run on this card") and "\n" not in why
        # one sequence fewer per block of room never runs a part the rule refused
        assert decode_pool_skip(batch + 1, pool, block_size=block, shape=(prompt, output)) is not None


@given(pool_blocks=st.integers(_blocks(ENGINE_SETTINGS["max_model_len"], 16) + 1, 300_000))
def test_an_engine_that_starts_always_runs_the_single_sequence(pool_blocks: int) -> None:
    """vLLM refuses to start an engine whose pool cannot hold one max_model_len request, and that is far above one
    decode sequence: no card's fitted plan is left without decode parts (an empty --decode-batches would read as
    all of them)."""
    assert decode_pool_skip(1, pool_blocks * 16) is None


def _pool(model: str, spec: Any, pin_bytes: int | None) -> tuple[int, int]:
    """(reported tokens, block size) of the predicted pool of the plan's engine for `model` on `spec`."""
    limit = catalog.load_config(model).get("max_position_embeddings") or ENGINE_SETTINGS["max_model_len"]
    settings = {**ENGINE_SETTINGS, "max_model_len": min(limit, ENGINE_SETTINGS["max_model_len"])}
    ledger = predict_ledger(load_model(model), spec, settings)
    if pin_bytes is not None and ledger["available_kv_bytes"].value >= pin_bytes:
        ledger = predict_ledger(load_model(model), spec, {**settings, "kv_cache_memory_bytes": pin_bytes})
    return int(ledger["kv_tokens"].value), int(ledger["block_size"].value)


def _expected_dropped(plan: Any, spec: Any) -> set[str]:
    """The rule restated from its inputs: batch x whole blocks of prompt + output above the pool's blocks less one."""
    out = set()
    for model, pin in ((plan.model, plan.kv_cache_gib), (plan.second_model, None)):
        if model is None:
            continue
        tokens, block = _pool(model, spec, None if pin is None else int(pin * 2**30))
        out |= {f"{model}.decode.b{b}" for b in plan.decode_batches
                if b * _blocks(sum(DECODE_SHAPE), block) > tokens // block - 1}
    return out


def _small_cards(lat: Any) -> list[str]:
    """Catalog cards where some engine of the full plan predicts a pool below its largest decode part's tokens."""
    largest = max(lat.FULL.decode_batches) * sum(DECODE_SHAPE)
    return [name for name, spec in HARDWARE.items()
            if min(_pool(m, spec, None)[0] for m in (lat.FULL.model, lat.FULL.second_model)) < largest]


def test_a_small_cards_plan_drops_exactly_the_parts_its_pools_cannot_hold(lat: Any) -> None:
    small = _small_cards(lat)
    assert small, "the catalog has no card too small for the largest decode part: this test checks nothing"
    for name in small:
        spec = HARDWARE[name]
        for plan in (lat.FAST, lat.FULL):
            fitted, dropped = fit_to_card(plan, spec, name)
            assert set(dropped) == _expected_dropped(plan, spec), name
            ran = {f"{plan.model}.decode.b{b}" for b in fitted.decode_batches}
            if plan.second_model:
                second = fitted.decode_batches if fitted.second_decode_batches is None else fitted.second_decode_batches
                ran |= {f"{plan.second_model}.decode.b{b}" for b in second}
            everything = {f"{m}.decode.b{b}" for m in (plan.model, plan.second_model) if m for b in plan.decode_batches}
            assert ran == everything - set(dropped), name  # nothing else left out, nothing dropped runs
            assert fitted.prefill_lens == plan.prefill_lens and fitted.closed == plan.closed
            if dropped:
                assert fitted.estimate_s() < plan.estimate_s()  # --anatomy-plan counts only what runs
            per = sum(DECODE_SHAPE)  # a whole number of 16-token blocks
            for run, why in dropped.items():
                b = int(run.rsplit(".b", 1)[1])
                assert why.startswith(f"{run.rsplit('.decode', 1)[0]} decode b={b} needs {b * per:,} KV tokens "
                                      f"({b} x {per:,}); the predicted pool on {name} holds ")


@functools.cache  # two tests read them: decompressed and parsed once (~1.5 s a time)
def _recorded_latency_batches() -> tuple[tuple[str, dict], ...]:
    out = []
    for f in sorted(glob.glob(str(REPO / "results" / "*" / "batches" / "*" / "latency*.json*"))):
        if "-raw" in f:
            continue
        raw = Path(f).read_bytes()
        out.append((Path(f).parents[2].name, json.loads(lzma.decompress(raw) if f.endswith(".xz") else raw)))
    return tuple(out)


def test_every_recorded_decode_part_fits_its_engines_own_pool() -> None:
    """The device program's check (pool_skip on the engine's resolved pool) would have run every decode part of every
    recorded plan: the H200 (and H100) plans are unchanged by it."""
    checked = 0
    for _, doc in _recorded_latency_batches():
        engine = next((r for r in doc["runs"] if r["id"].endswith(".engine")), {})
        resolved = (engine.get("result") or {}).get("resolved") or {}
        for run in doc["runs"]:
            if run.get("kind") == "decode" and "result" in run:
                part = plan_script.Part(run["id"], "decode", run["settings"], 0.0)
                assert plan_script.pool_skip(part, resolved.get("kv_cache_tokens"), resolved.get("block_size"),
                                             "the engine's pool") is None, run["id"]
                checked += 1
    assert checked > 100


def test_the_cards_the_plans_were_recorded_on_keep_the_whole_plan(lat: Any) -> None:
    cards = sorted({card for card, _ in _recorded_latency_batches()})
    assert cards
    for card in cards:
        for plan in (lat.FAST, lat.FULL):
            fitted, dropped = fit_to_card(plan, HARDWARE[card], card)
            assert (fitted, dropped) == (plan, {}), card
            assert fitted.argv(Path("o"), Path("c")) == plan.argv(Path("o"), Path("c"))


def test_the_device_program_runs_what_the_fitted_plan_says(lat: Any) -> None:
    """The fitted plan's argv gives the device program the same decode batches for each engine, and the program's
    defaults are the engine settings the pools were predicted for."""
    defaults = plan_script.parse_args([])
    assert {k: getattr(defaults, k) for k in ENGINE_SETTINGS} == ENGINE_SETTINGS
    assert plan_script.DECODE_SHAPE == DECODE_SHAPE
    name = _small_cards(lat)[0]
    fitted, _ = fit_to_card(lat.FULL, HARDWARE[name], name)
    args = plan_script.parse_args(fitted.argv(Path("o"), Path("c")))
    config, _ = plan_script.second_model_config(lat.FULL.second_model)
    margs = plan_script.second_model_args(args, config)
    cost = plan_script.CostModel.from_config(config)
    decode = [p for p in plan_script.build_plan(margs, cost, lat.FULL.second_model, frozenset({"decode"}))
              if p.kind == "decode"]
    second = fitted.decode_batches if fitted.second_decode_batches is None else fitted.second_decode_batches
    assert tuple(p.settings["batch"] for p in decode) == second
    assert tuple(args.decode_batches) == fitted.decode_batches


def test_the_dry_run_marks_a_part_the_pool_cannot_hold(capsys: pytest.CaptureFixture[str]) -> None:
    per = sum(DECODE_SHAPE)
    pool = (64 * per // 16 + 1) * 16  # holds 64 sequences and the null block, not 128
    assert plan_script.main(["--dry-run", "--assumed-pool-tokens", str(pool), "--overhead-models", "none"]) == 0
    lines = capsys.readouterr().out.splitlines()
    skipped = sorted(line.split()[0] for line in lines if "[SKIP: pool]" in line)
    assert skipped == ["llama-3.1-8b.decode.b128", "qwen2.5-7b.decode.b128"]
    assert any(f"[SKIP: pool] decode b=128 needs {128 * per:,} KV tokens (128 x {per:,})" in line for line in lines)


# --- the latency suite's lab: the tests of a dropped part skip with its reason ---------------------------------

@pytest.fixture
def conftest_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """tests_latency/conftest.py loaded under its own name (every suite has a conftest)."""
    monkeypatch.syspath_prepend(str(REPO / "tests_latency"))
    spec = importlib.util.spec_from_file_location("latency_conftest_under_test", REPO / "tests_latency" / "conftest.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _live_session(monkeypatch: pytest.MonkeyPatch, module: Any, card: str, spec: Any = None) -> None:
    target = Target(card, True, spec or HARDWARE[card], "catalog")
    state = types.SimpleNamespace(live_target=lambda: target, settings=types.SimpleNamespace(record=False))
    monkeypatch.setattr(module, "get_session", lambda config: state)


def test_a_dropped_decode_part_skips_with_the_pool_it_needs(conftest_module: Any, lat: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    name = _small_cards(lat)[0]
    _live_session(monkeypatch, conftest_module, name)
    ran: list[Any] = []

    def fake_run_plan(plan: Any, config: Path, out_dir: Path, log: Any = print) -> list[dict]:
        ran.append(plan)
        return [{"provenance": {}, "runs": [
            {"id": f"{plan.model}.decode.b{b}", "kind": "decode", "settings": {"batch": b},
             "skipped": f"pool: decode b={b} needs more than the engine's pool"} for b in plan.decode_batches[-1:]]}]

    monkeypatch.setattr(latency_live, "run_plan", fake_run_plan)
    vllm = types.ModuleType("vllm")
    vllm.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    request = types.SimpleNamespace(config=None, session=types.SimpleNamespace(items=[]))
    lab = conftest_module.LatencyLab(request, tmp_path)
    assert not lab.has("latency", f"{lat.FAST.model}.decode.b128")
    (plan,) = ran
    expected = _expected_dropped(lat.FAST, HARDWARE[name])
    assert expected and {f"{plan.model}.decode.b{b}" for b in plan.decode_batches}.isdisjoint(expected)
    for run in expected:
        with pytest.raises(pytest.skip.Exception) as skip:
            lab.live(run)()
        (line,) = str(skip.value).splitlines()
        b = int(run.rsplit(".b", 1)[1])
        assert line.startswith(f"latency/{run}: {lat.FAST.model} decode b={b} needs {b * sum(DECODE_SHAPE):,} KV "
                               f"tokens") and f"the predicted pool on {name} holds " in line
    # a part the engine's own pool refused (the device program's check) skips with the program's reason
    last = f"{plan.model}.decode.b{plan.decode_batches[-1]}"
    with pytest.raises(pytest.skip.Exception, match="pool: decode b=.* needs more than the engine's pool"):
        lab.live(last)()


def test_the_plan_line_counts_and_describes_only_what_runs(conftest_module: Any, lat: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    name = _small_cards(lat)[0]
    _live_session(monkeypatch, conftest_module, name)
    slow = types.SimpleNamespace(nodeid="tests_latency/test_x.py::test_y[live]", get_closest_marker=lambda m: True)
    (entry,) = conftest_module.pytest_anatomy_live_plan(None, [slow])
    fitted, dropped = fit_to_card(lat.FULL, HARDWARE[name], name)
    assert entry["estimate_s"] == fitted.estimate_s() < lat.FULL.estimate_s()
    assert entry["what"].endswith(f"not run, their KV above the card's predicted pool: {', '.join(dropped)}")


# --- a card whose memory cannot start an engine at all ---------------------------------------------------------------

def _shrunk(gb: float) -> tuple[str, Any]:
    """The catalog's smallest card with its memory cut to `gb` GB: a card below the plan's models, named by no test."""
    name, spec = min(HARDWARE.items(), key=lambda kv: kv[1].memory_bytes or float("inf"))
    size = int(gb * 1e9)
    return name, dataclasses.replace(spec, memory_bytes=size, nvml_memory_bytes=size, cuda_visible_memory_bytes=size)


def test_every_catalog_card_starts_both_engines(lat: Any) -> None:
    for card, spec in HARDWARE.items():
        assert unstartable(lat.FULL, spec, card) == (lat.FULL, {}), card


def test_the_second_engine_is_left_out_where_only_it_cannot_start(lat: Any) -> None:
    """Llama-3.1-8B's weights and KV per token exceed Qwen2.5-7B's, so some memory starts the first engine only;
    the plan then keeps the first model's parts and names the second's reason."""
    sizes = [16 + 0.25 * i for i in range(80)]
    plans = [(gb, *unstartable(lat.FULL, _shrunk(gb)[1], "card")) for gb in sizes]
    first = next(gb for gb, _, refused in plans if lat.FULL.model not in refused)
    gb, plan, refused = next(p for p in plans if p[0] >= first and lat.FULL.second_model in p[2])
    assert plan.model == lat.FULL.model and plan.second_model is None and set(refused) == {lat.FULL.second_model}
    assert refused[lat.FULL.second_model].startswith(f"{lat.FULL.second_model} cannot start on card: its predicted KV")
    assert next(p for p in plans if not p[2])[0] > gb  # and a larger card starts both


def test_a_card_under_the_models_weights_runs_no_latency_plan(conftest_module: Any, lat: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16 GB card under Qwen2.5-7B's weights: the plan never runs (the engine would refuse to start), every test
    skips with the arithmetic, and --anatomy-plan prices it at 0 s with the same reason."""
    name, spec = _shrunk(16)
    _live_session(monkeypatch, conftest_module, name, spec)
    ran: list[Any] = []
    monkeypatch.setattr(latency_live, "run_plan", lambda *a, **k: ran.append(a) or [])
    vllm = types.ModuleType("vllm")
    vllm.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    lab = conftest_module.LatencyLab(types.SimpleNamespace(config=None, session=types.SimpleNamespace(items=[])),
                                     tmp_path)
    model = lat.FAST.model
    with pytest.raises(pytest.skip.Exception) as skip:
        lab.live(f"{model}.decode.b1")()
    assert ran == [] and not lab.has("latency", f"{model}.prefill.l128")
    (line,) = str(skip.value).splitlines()
    assert line.startswith(f"latency/{model}.decode.b1: {model} cannot start on {name}: its predicted KV pool holds 0 ")
    fast = types.SimpleNamespace(nodeid="tests_latency/test_x.py::test_y[live]", get_closest_marker=lambda m: None)
    (entry,) = conftest_module.pytest_anatomy_live_plan(None, [fast])
    assert entry["estimate_s"] == 0.0 and entry["what"].startswith(f"latency plan: {model} cannot start on {name}")
