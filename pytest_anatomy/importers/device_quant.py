"""The quantization shootout's device batches (scripts/device/quant_plan.py) as recordings under
results/<hw>/quant/: split from importers/device.py, which dispatches to quant_records by the batch's kind
(the plan's vLLM batch, kind quant-vllm, is read there, with the capacity suite's engine-start reader)."""

from __future__ import annotations

from typing import Any, Iterator

from pytest_anatomy import recordings

# Each run kind's numbers under the names the quant suite reads, with their units.
_QUANT_FIELDS = {
    "kld": (("kld", "kld", "nat"), ("delta_ln_ppl", "delta_ln_ppl", "nat"), ("ppl_quant", "perplexity", "x"),
            ("ppl_base", "perplexity_base", "x")),
    "quantize": (("tensor_bytes", "tensor_bytes", "B"), ("bits_per_weight", "bits_per_weight", "bit"),
                 ("file_bytes", "file_bytes", "B")),
    "noise": (("S", "noise_S", "x"),),
}


def _quant_measurements(kind: str, result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if kind in ("base", "slice"):
        return {"perplexity": {"value": result["ppl"], "unit": "x"},
                "perplexity_stderr": {"value": result["ppl_stderr"], "unit": "x"}}
    if kind == "batched":  # llama-batched-bench: S_PP and S_TG per batch size, its repetitions as samples
        for row in result["rows"]:
            for test, n, key in (("pp", row["pp"], "speed_pp"), ("tg", row["tg"], "speed_tg")):
                out[f"{test}{n}.b{row['pl']}.tok_per_s"] = {"value": row["median"][key], "unit": "tokens/s",
                                                            "samples": row["samples"][key]}
        return out
    if kind == "bench":
        return {f"{t['test']}.tok_per_s": {"value": t["tok_per_s"]["median"], "unit": "tokens/s",
                                           "samples": t["samples"]["tok_per_s"]} for t in result["tests"]}
    for key, name, unit in _QUANT_FIELDS["quantize" if kind == "reference" else kind]:
        value = result.get(key)
        if isinstance(value, dict):  # llama-perplexity's statistics: value and standard error
            out[name] = {"value": value["value"], "unit": unit}
            out[f"{name}_stderr"] = {"value": value["stderr"], "unit": unit}
        elif isinstance(value, (int, float)):
            out[name] = {"value": value, "unit": unit}
    return out


def quant_records(batch: dict[str, Any], common: dict[str, Any], hw: str, stamp: str) -> Iterator[recordings.Recording]:
    """results/<hw>/quant/<model>.<file type>.<kind>@stamp, one per measured run; the vLLM batch's engine
    starts as results/<hw>/quant/vllm-ledger.<model>.<case>@stamp (not the capacity suite's: other weights)."""
    prov = batch.get("provenance") or {}
    llama = (prov.get("versions") or {}).get("llama.cpp") or {}
    build = {"engine_version": llama.get("version"), "source_commit": llama.get("source_commit"),
             "build_commit": _build_commit(batch) or llama.get("binary_commit"), "ggml": llama.get("ggml")}
    for run in batch["runs"]:
        if "result" not in run:  # skipped or failed: the raw batch keeps why
            continue
        yield recordings.Recording(
            suite="quant", name=run["id"].lower(), hardware=hw, recorded_at=stamp,
            provenance={**common, "engine": "llama.cpp", **build, "kind": run.get("kind"), "file_type": run.get("file_type"),
                        "model": (prov.get("model") or {}).get("id"), "n_ctx": prov.get("n_ctx")},
            measurements=_quant_measurements(str(run.get("kind")), run["result"]), data={"run": run})


def _build_commit(batch: dict[str, Any]) -> str | None:
    """The binaries' own commit, as the first llama-bench run of the batch reported it (-o json's build_commit)."""
    for run in batch["runs"]:
        for test in (run.get("result") or {}).get("tests") or ():
            commit = (test.get("build") or {}).get("commit") if isinstance(test, dict) else None
            if commit:
                return str(commit)
    return None


_VLLM_QUALITY_FIELDS = (("kld", "kld", "nat"), ("delta_ln_ppl", "delta_ln_ppl", "nat"),
                        ("delta_ln_ppl_vllm_logprobs", "delta_ln_ppl_vllm_logprobs", "nat"), ("ppl", "perplexity", "x"))


def vllm_quality_records(batch: dict[str, Any], common: dict[str, Any], hw: str,
                         stamp: str) -> Iterator[recordings.Recording]:
    """scripts/device/vllm_quality.py's cases as results/<hw>/quant/<model>.vllm-<case>.kld@stamp: KLD and delta ln
    ppl against vLLM's own f16 run of the reference (that run's perplexity in its own record), with standard errors."""
    prov = batch.get("provenance") or {}
    version = (prov.get("versions") or {}).get("vllm")
    for run in batch["runs"]:
        result = run.get("result")
        if result is None:  # a failed engine: the raw batch keeps its log and error
            continue
        measurements: dict[str, dict[str, Any]] = {}
        for key, name, unit in _VLLM_QUALITY_FIELDS:
            measurements[name] = {"value": result[key]["value"], "unit": unit}
            measurements[f"{name}_stderr"] = {"value": result[key]["stderr"], "unit": unit}
        measurements["perplexity_vllm_logprobs"] = {"value": result["ppl_vllm_logprobs"], "unit": "x"}
        yield recordings.Recording(
            suite="quant", name=f"{run['id'].lower()}.kld", hardware=hw, recorded_at=stamp,
            provenance={**common, "engine": "vllm", "engine_version": version, "kind": "vllm-kld",
                        "case": run.get("case"), "engine_args": run.get("engine"),
                        "model": (prov.get("model") or {}).get("id"), "n_ctx": prov.get("n_ctx")},
            measurements=measurements, data={"run": run})
