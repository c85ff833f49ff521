"""The device plan's CPU-checkable parts: the plan itself, the KLD parser, the carry's round trip, the
device's noise measurement against the theory's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pytest_anatomy.measure.llama_cpp import ENGINE_BUILD, LlamaRunError
from pytest_anatomy.measure.llama_kld import parse_kld
from pytest_anatomy.specs.gguf_file import GgufTensor
from pytest_anatomy.theory import quant_noise
from pytest_anatomy.quant_prereg import CARD

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("quant_plan", ROOT / "scripts" / "device" / "quant_plan.py")
assert spec and spec.loader
plan = importlib.util.module_from_spec(spec)
sys.modules.setdefault("quant_plan", plan)  # dataclasses look their module up by name
spec.loader.exec_module(plan)

# The statistics block as llama-perplexity --kl-divergence prints it (numbers invented for the parser).
KLD_LOG = """====== Perplexity statistics ======
Mean PPL(Q)                   :  25.401234 ±   0.301234
Mean PPL(base)                :  24.123456 ±   0.290000
Cor(ln(PPL(Q)), ln(PPL(base))):  99.12%
Mean ln(PPL(Q)/PPL(base))     :   0.051612 ±   0.001234

====== KL divergence statistics ======
Mean    KLD:   0.043210 ±   0.000456
"""


def test_the_plan_covers_every_file_type_inside_its_budget():
    steps = plan.plan()
    for ft in plan.FILE_TYPES:
        assert {f"{ft}.quantize", f"{ft}.noise", f"{ft}.kld", f"{ft}.bench"} <= {s.id for s in steps}
    assert {f"{ft}.slice" for ft in ("F16", "Q8_0", "Q4_0", "Q5_0", "Q5_1")} <= {s.id for s in steps}
    assert sum(s.est_s for s in steps) < 480 and "Q4_1" in plan.FILE_TYPES  # the trap is measured, to show it
    assert "past the budget" not in plan.dry_run(480)


def test_the_7b_speed_phase_benches_every_shootout_type():
    steps = plan.plan_7b()
    assert {s.model for s in steps} == {"qwen2.5-7b"}
    assert [s.file_type for s in steps if s.kind == "bench"] == list(plan.GGUF_SHOOTOUT)


def test_kld_statistics_are_parsed_with_their_errors():
    stats = parse_kld(KLD_LOG)
    assert stats["kld"] == {"value": 0.04321, "stderr": 0.000456}
    assert stats["delta_ln_ppl"]["value"] == 0.051612 and stats["ppl_base"]["value"] == 24.123456
    with pytest.raises(LlamaRunError, match="no 'Mean KLD' line"):
        parse_kld("Final estimate: PPL = 24.1 +/- 0.3")


def test_device_noise_equals_the_theorys(tmp_path):
    """The device computes S from two GGUF files; the theory from arrays: the same number."""
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    w = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float16).astype(np.float32)  # the f16 file's
    q8 = gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0)  # llama-quantize reads the f16 values
    for name, arr, raw in (("f16.gguf", w.astype(np.float16), None), ("q8.gguf", q8, gguf.GGMLQuantizationType.Q8_0)):
        wr = gguf.GGUFWriter(str(tmp_path / name), "llama")
        wr.add_tensor("blk.0.ffn_up.weight", arr, raw_dtype=raw)
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
    device = plan.noise(tmp_path / "f16.gguf", tmp_path / "q8.gguf")
    ref = {"blk.0.ffn_up.weight": w}
    theory = quant_noise.quantize_model(ref, [GgufTensor("blk.0.ffn_up.weight", "Q8_0", (256, 64))], "Q8_0")[1]
    # the same quantizer on the same values; only the float64 sums' order differs
    assert device["S"] == pytest.approx(theory.total, rel=1e-9)
    assert device["types"] == {"blk.0.ffn_up.weight": "Q8_0"}


def test_the_slice_text_tokenizes_back_to_the_cpu_slice(reference, quant_data, tmp_path):
    """llama.cpp gets text, not tokens: the text written must re-tokenize to the CPU slice's 768 tokens."""
    out = plan.write_slice(reference.tokenizer, quant_data.wiki_bz2(), tmp_path)
    assert out["slice_tokens"] == reference.tokens.ravel().tolist()
    again = reference.tokenizer.encode((tmp_path / "slice.txt").read_text(encoding="utf-8"))
    assert again[:reference.tokens.size] == out["slice_tokens"]


def test_carry_parts_fit_a_call_and_stage_back(quant_data, tmp_path, monkeypatch):
    monkeypatch.setattr(plan, "TEXT_CHARS", 2000)  # the staging of the text, not its length, is under test
    monkeypatch.setattr(plan, "gguf_tokenizer", lambda path: None)  # parsing the vocabulary again: 7 s
    monkeypatch.setattr(plan, "write_slice", lambda tok, bz2, folder: {})  # tested above
    c1, c2 = plan.make_carry(tmp_path / "carry")
    for d in (c1, c2):
        assert sum(f.stat().st_size for f in d.iterdir()) < 60 * 2**20
    stage = tmp_path / "stage"
    stage.mkdir()
    for f in [*c1.iterdir(), *c2.iterdir()]:
        if f.name != "SHA256SUMS":
            (stage / f.name).write_bytes(f.read_bytes())
    out = plan.stage(stage)
    assert out["sha256"] == plan.quant_data.MODEL.sha256 and out["text_chars"] == 2000
    (stage / "model.gguf.part-1").write_bytes(b"broken")
    with pytest.raises(SystemExit, match="not the pinned SmolLM2 Q4_1"):
        plan.stage(stage)


def test_vllm_phase_starts_each_preregistered_case_with_its_checkpoint_config(tmp_path):
    from pytest_anatomy.quant_prereg import VLLM_CASES

    calls = []

    def fake_measure(config, settings, **kw):
        calls.append((config.get("quantization_config"), settings.kv_cache_dtype, settings.max_num_seqs))
        return {"fake": True}

    doc = plan.vllm_phase(tmp_path, budget_s=10 * plan.VLLM_TIMEOUT_S, measure=fake_measure)
    assert [r["id"] for r in doc["runs"]] == [f"qwen2.5-7b.{label}" for label, _m, _kv in VLLM_CASES]
    methods = [(q or {}).get("quant_method") for q, _kv, _seqs in calls]
    assert methods == [m for _label, m, _kv in VLLM_CASES]
    assert [kv for _q, kv, _s in calls] == [kv for _l, _m, kv in VLLM_CASES] and {s for *_x, s in calls} == {256}
    assert (tmp_path / "quant-vllm.json").is_file()
    calls.clear()
    later = plan.vllm_phase(tmp_path, budget_s=10 * plan.VLLM_TIMEOUT_S, measure=fake_measure, only="awq,*kv-fp8")
    assert [r["id"] for r in later["runs"]] == ["qwen2.5-7b.awq", "qwen2.5-7b.bf16-kv-fp8", "qwen2.5-7b.fp8-kv-fp8"]
    with pytest.raises(SystemExit, match="matches no vLLM case"):
        plan.vllm_phase(tmp_path, budget_s=1e4, measure=fake_measure, only="int3")


def test_the_gptq_config_names_every_linear_module_of_the_block():
    """vLLM quantizes a GPTQ module only if modules_in_block_to_quantize names it (docs/FACTS.md V9): with dummy
    weights the list must be in config.json. vLLM's rule, replayed on the modules the theory lays out (quant_bytes):
    a fused module is quantized when each of its shards' names contains a listed entry, and all shards agree."""
    from pytest_anatomy.specs.model import load_model
    from pytest_anatomy.theory.quant_bytes import fused_linear_shapes

    cfg = plan.QUANT_CONFIGS["gptq"]
    assert {"bits", "group_size", "desc_act", "sym"} <= set(cfg)  # AutoGPTQConfig.from_config's required keys
    listed = [m for group in cfg["modules_in_block_to_quantize"] for m in group]
    shards = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}
    modules = fused_linear_shapes(load_model("qwen2.5-7b"))
    assert len(modules) == 4 * 28
    for module in modules:
        head, fused = module.rsplit(".", 1)
        quantized = {any(entry in f"{head}.{shard}" for entry in listed) for shard in shards.get(fused, (fused,))}
        assert quantized == {True}, module
    config = next(c for label, c, _settings in plan.vllm_cases() if label == "gptq")
    assert config["quantization_config"]["modules_in_block_to_quantize"] == cfg["modules_in_block_to_quantize"]


def _fake_results(step, folder):
    """What each tool would return, in the shapes the plan's real helpers build (numbers invented)."""
    if step.kind in ("reference", "quantize"):
        return {"command": ["llama-quantize"], "tensor_bytes": 1000, "bits_per_weight": 4.5, "file_bytes": 1100}
    if step.kind == "noise":
        return {"S": 0.4, "per_tensor": {"blk.0.ffn_up.weight": 0.4}, "types": {"blk.0.ffn_up.weight": "Q4_0"}}
    if step.kind in ("base", "slice"):
        return {"ppl": 26.0, "ppl_stderr": 0.3, "chunks": [25.0, 27.0], "command": ["llama-perplexity"]}
    if step.kind == "kld":
        return {**parse_kld(KLD_LOG), "command": ["llama-perplexity"]}
    return {"tests": [{"test": "tg128", "tok_per_s": {"median": 700.0}, "samples": {"tok_per_s": [699.0, 701.0]}}]}


def test_a_measured_batch_imports_into_the_quant_suite(tmp_path, monkeypatch):
    from pytest_anatomy import recordings
    from pytest_anatomy.importers.device import import_files

    monkeypatch.setattr(plan, "run_step", _fake_results)
    monkeypatch.setattr(plan, "gpu_summary", lambda: {"summary": {"name": "NVIDIA H200", "driver": "580"}})
    out = tmp_path / "out"
    out.mkdir()
    doc = plan.measure(tmp_path, out, budget_s=1e6)
    assert all("result" in r for r in doc["runs"]) and len(doc["runs"]) == len(plan.plan())
    import_files([out / "quant.json"], tmp_path / "results")
    rec = recordings.load_latest(tmp_path / "results", CARD, "quant", "smollm2-135m.q4_k_m.kld")
    assert rec["kld"].value == 0.04321 and rec["kld_stderr"].value == 0.000456 and rec["perplexity"].value == 25.401234
    assert recordings.load_latest(tmp_path / "results", CARD, "quant", "smollm2-135m.q2_k.quantize")[
        "tensor_bytes"].value == 1000
    bench = recordings.load_latest(tmp_path / "results", CARD, "quant", "smollm2-135m.q8_0.bench")
    assert bench["tg128.tok_per_s"].value == 700.0
    # the engine, its version and the build's commit in every recording's provenance (issue 15, item 5)
    assert bench.provenance["engine"] == "llama.cpp" and bench.provenance["ggml"] == ENGINE_BUILD["ggml"]
    assert bench.provenance["engine_version"] == ENGINE_BUILD["version"]
    assert bench.provenance["source_commit"] == ENGINE_BUILD["source_commit"]


def test_the_recorded_quant_batches_import_with_their_engine_version(tmp_path):
    """The committed batches (written before the plan recorded the source commit) carry the version they recorded;
    the importer used to drop it (their recordings under results/ say engine_version None)."""
    from pytest_anatomy import recordings
    from pytest_anatomy.importers.device import import_files

    batches = sorted((ROOT / "results" / CARD / "batches").glob("*/quant.json"))
    assert batches
    for batch in batches:
        src = tmp_path / batch.parent.name / "quant.json"
        src.parent.mkdir()
        src.write_bytes(batch.read_bytes())
        import_files([src], tmp_path / "results")
    for name in recordings.list_recordings(tmp_path / "results", CARD, "quant", "smollm2-135m."):
        rec = recordings.load_latest(tmp_path / "results", CARD, "quant", name)
        assert rec.provenance["engine_version"] == ENGINE_BUILD["version"], name


def test_only_selects_steps_in_the_plans_order_and_refuses_a_pattern_that_matches_nothing():
    chosen = plan.select(plan.plan(), "*.bench,F16.perplexity")
    assert [s.id for s in chosen][0] == "F16.perplexity" and {s.kind for s in chosen} == {"base", "bench"}
    assert len(chosen) == 1 + len(plan.FILE_TYPES) + 1  # the base, then F16's and every type's bench
    with pytest.raises(SystemExit, match="matches no step"):
        plan.select(plan.plan(), "Q9_9.*")
