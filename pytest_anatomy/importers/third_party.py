"""Import other people's published measurements (`shared/third-party/`) as recordings.

Three sources, each a folder with its raw file, its licence and a `SOURCE.txt`:

- `aiconfigurator/silicon_sample.csv` (ai-dynamo/aiconfigurator): end-to-end serving rows, mean TTFT
  and mean TPOT at a fixed concurrency;
- `argonne-llm-inference-bench/All_results.csv` (argonne-lcf/LLM-Inference-Bench): offline
  fixed-batch latency and throughput of vLLM and llama.cpp;
- `inference-sim-blis/trained_physics_iter29.json` (inference-sim/inference-sim): vLLM's
  `total_kv_blocks` read from each run's log (its `expected` blocks are a simulator's output and
  are never imported as measurements).

What is written (never overwritten; re-running writes nothing new):

- the raw file byte for byte, once per source, with its LICENSE and SOURCE.txt, under
  `results/<home hw>/third-party/<source>/raw/` (xz-compressed when larger than 64 KiB: `xz -d`
  restores the exact bytes, whose sha256 every recording carries);
- one recording per group of usable experiments that differ only in the swept settings,
  `results/<hw>/third-party/<source>/<name>@<stamp>.json`: measurements `<experiment>.<metric>`
  parsed from the raw row (SI units), `provenance.settings` as the source states them,
  `provenance.unknown` naming what the source does not record, `data.experiments` each row's
  varying settings, line number and cells verbatim (inference-sim: one recording per run).

"Usable" = a row we can predict under docs/VALIDATION.md: a catalog GPU, an engine we model
(vLLM, llama.cpp), a model with a catalog config (or a declared same-shape alias) and a dense
dtype the catalog has a peak for. Every other row is counted by reason and not written: the
raw file keeps it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import lzma
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from pytest_anatomy import recordings
from pytest_anatomy.specs import catalog

SUITE = "third-party"
_COMPRESS_ABOVE = 64 * 1024
# The date of a row is not in the Argonne and inference-sim files (nor in most AIConfigurator
# rows): those recordings are stamped with the day this importer was first run on the folder, so
# that a re-import finds them; provenance.date says "not recorded".
IMPORT_DAY = "2026-12-01T00:00:00Z"

# Hugging Face ids the sources use whose catalog entry is another id of the same shapes: every
# field the theory reads (hidden, intermediate, layers, heads, KV heads, head_dim, vocab, tying) is
# equal; tests_validation checks the stated shapes against the catalog config.
ALIASES: dict[str, tuple[str, str, dict[str, int]]] = {
    "meta-llama/Meta-Llama-3-8B": (
        "llama-3.1-8b", "Llama 3 and 3.1 8B share the architecture; only rope scaling and context differ "
                        "(model cards, https://huggingface.co/meta-llama/Meta-Llama-3-8B)",
        {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "vocab_size": 128256}),
    "meta-llama/Meta-Llama-3-70B": (
        "llama-3.1-70b", "Llama 3 and 3.1 70B share the architecture (model cards)",
        {"hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
         "num_key_value_heads": 8, "vocab_size": 128256}),
    "Qwen/Qwen2-7B": (
        "qwen2.5-7b", "Qwen2 and Qwen2.5 7B share the architecture (Qwen2.5 technical report, table 1)",
        {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
         "num_key_value_heads": 4, "vocab_size": 152064}),
    "nvidia/Llama-3.1-8B-Instruct-FP8": (
        "llama-3.1-8b", "NVIDIA's fp8 (ModelOpt) quantisation of Llama-3.1-8B-Instruct: same shapes, fp8 linear "
                        "weights (https://huggingface.co/nvidia/Llama-3.1-8B-Instruct-FP8)",
        {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "vocab_size": 128256}),
}


_RESTORE = "restore the source's files as published (SOURCE.txt names the commit); nothing imported"


class ThirdPartyImportError(RuntimeError):
    pass


def catalog_model(hf_id: str) -> str | None:
    """Catalog name for a source's model id: exact catalog match, else a declared alias."""
    return catalog.lookup(hf_id) or (ALIASES[hf_id][0] if hf_id in ALIASES else None)


@dataclass(frozen=True)
class Origin:
    """SOURCE.txt, parsed (never retyped): repository, commit, path, licence."""

    folder: str
    text: str
    repo: str
    commit: str
    path: str
    licence: str

    @classmethod
    def read(cls, folder: Path) -> Origin:
        f = folder / "SOURCE.txt"
        if not f.is_file():
            raise ThirdPartyImportError(f"{folder} has no SOURCE.txt; pass the shared/third-party folder "
                                        "(../shared/third-party)")
        text = f.read_text(encoding="utf-8")
        m = re.search(r"source:\s*(\S+)\s*@\s*([0-9a-f]{40})\s+(?:path|files):\s*(.+?)\s+licence:\s*(\S+)", text, re.S)
        if m is None:
            raise ThirdPartyImportError(f"{f}: expected 'source: REPO @ COMMIT  path: ...  licence: ...'")
        return cls(folder.name, text, m.group(1), m.group(2), m.group(3).strip(), m.group(4))


@dataclass
class Plan:
    """What an import would write: raw files kept verbatim, recordings, and the rows left out."""

    raw: list[tuple[Path, Path]] = field(default_factory=list)  # (source file, target)
    recordings: list[recordings.Recording] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _raw_target(results: Path, home: str, source: str, path: Path) -> Path:
    big = path.stat().st_size > _COMPRESS_ABOVE
    return results / home / SUITE / source / "raw" / (path.name + (".xz" if big else ""))


def keep_raw(src: Path, target: Path, *, dry_run: bool = False) -> str:
    """Copy src byte for byte (xz when target ends in .xz); never overwrite."""
    if target.exists():
        return "exists"
    if dry_run:
        return "would write"
    raw = src.read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME) if target.suffix == ".xz" else raw
    tmp = target.with_name(".tmp-" + target.name)
    tmp.write_bytes(payload)
    tmp.rename(target)
    return "wrote"


def _provenance(origin: Origin, raw_name: str, raw_sha: str, raw_at: Path, **kw: Any) -> dict[str, Any]:
    return {"source": "third-party", "third_party": origin.folder,
            "origin": {"repo": origin.repo, "commit": origin.commit, "path": origin.path, "file": raw_name,
                       "sha256": raw_sha, "licence": origin.licence,
                       "kept_at": "/".join(raw_at.parts[-5:])},  # <hw>/third-party/<source>/raw/<file>
            **kw}


def _name(text: str) -> str:
    name = re.sub(r"[^a-z0-9._+-]+", "-", text.lower()).strip("-.")
    if not re.match(r"^[a-z0-9][a-z0-9._+-]*$", name):
        raise ThirdPartyImportError(f"cannot make a recording name of {text!r}")
    return name


# --- grouping ------------------------------------------------------------------------------
# One recording per group of experiments that share every setting but the swept ones (lengths,
# concurrency or batch): measurements are named "<experiment>.<metric>", data.experiments keeps
# each experiment's varying settings and its raw CSV cells verbatim. (One file per row would
# carry the same provenance ~1,200 times: 4 MB in a tree that must travel to a GPU machine.)
@dataclass
class _Group:
    hardware: str
    source: str
    name: str
    provenance: dict[str, Any]
    header: list[str]
    stamps: set[str] = field(default_factory=set)
    measurements: dict[str, dict[str, Any]] = field(default_factory=dict)
    experiments: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, key: str, varying: dict[str, Any], cells: list[str], line: int,
            metrics: dict[str, tuple[float, str]], stamp: str) -> str:
        """Add one experiment; a repeat of the same key with other numbers becomes key.r2, .r3, ...;
        an exact repeat of an earlier row is not added (returns 'duplicate')."""
        same = [k for k, e in self.experiments.items() if k == key or k.startswith(key + ".r")]
        if any(self.experiments[k]["row"] == cells for k in same):
            return "duplicate"
        key = key if not same else f"{key}.r{len(same) + 1}"
        self.experiments[key] = {**varying, "csv_line": line, "row": cells}
        for metric, (value, unit) in metrics.items():
            self.measurements[f"{key}.{metric}"] = {"value": value, "unit": unit}
        self.stamps.add(stamp)
        return key

    def recording(self) -> recordings.Recording:
        return recordings.Recording(
            suite=f"{SUITE}/{self.source}", name=self.name, hardware=self.hardware, recorded_at=max(self.stamps),
            provenance=self.provenance, measurements=self.measurements,
            data={"header": self.header, "experiments": self.experiments})


def _rows(raw: bytes, src: Path) -> Iterator[tuple[int, list[str], dict[str, str], list[str]]]:
    """(line number, header, row as dict, row's cells verbatim) for each data line of a CSV file. An empty file
    (StopIteration inside a generator: a RuntimeError traceback) and a row cut short (zip's ValueError) are named."""
    reader = csv.reader(io.StringIO(raw.decode("utf-8")))
    header = next(reader, None)
    if header is None:
        raise ThirdPartyImportError(f"{src} is empty; {_RESTORE}")
    for cells in reader:
        if not any(cells):
            continue
        if len(cells) != len(header):
            raise ThirdPartyImportError(f"{src}: line {reader.line_num} has {len(cells)} cells, the header "
                                        f"{len(header)} (cut short?); {_RESTORE}")
        yield reader.line_num, header, dict(zip(header, cells, strict=True)), cells


# --- AIConfigurator -------------------------------------------------------------------------
AIC_SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200"}
_AIC_DENSE = {"": "bf16", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}
AIC_UNKNOWN = ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "num_requests",
               "request length distribution (ISL/OSL stated as fixed)", "kv_cache_dtype", "cuda graphs",
               "prefix caching")


def _aic_source_facts(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (p.split("=", 1) for p in text.split(";") if "=" in p)}


def plan_aiconfigurator(folder: Path, results: Path, home: str = "h100-sxm") -> Plan:
    origin = Origin.read(folder)
    src = folder / "silicon_sample.csv"
    raw = src.read_bytes()
    sha = _sha256(raw)
    raw_at = _raw_target(results, home, "aiconfigurator", src)
    out = Plan(raw=[(src, raw_at), (folder / "LICENSE", raw_at.parent / "LICENSE"),
                    (folder / "SOURCE.txt", raw_at.parent / "SOURCE.txt")])
    groups: dict[tuple[str, str], _Group] = {}
    for line, header, row, cells in _rows(raw, src):
        reason = _aic_unusable(row)
        if reason:
            out.skipped[reason] += 1
            continue
        facts = _aic_source_facts(row["silicon_data_source"])
        concurrency = int(facts.get("silicon_concurrency") or row["batch_size"])
        dtype = _AIC_DENSE[row["precision"]]
        version = row["backend_version"] or None
        model = catalog_model(row["model_path"])
        hw = AIC_SYSTEMS[row["system"]]
        tp = int(row["tp_size"])
        name = _name(f"{model}.{dtype}.tp{tp}.vllm-{version or 'unknown'}")
        group = groups.get((hw, name))
        if group is None:
            settings = {"model": row["model_path"], "catalog_model": model, "system": row["system"],
                        "engine": "vllm", "engine_version": version, "precision": dtype,
                        "gemm_quant_mode": row["gemm_quant_mode"] or None, "tp": tp,
                        "pp": int(row["pp_size"] or 1), "mode": row["mode"]}
            group = groups[(hw, name)] = _Group(hw, "aiconfigurator", name, _provenance(
                origin, src.name, sha, raw_at, engine="vllm", engine_version=version, gpu=row["system"],
                settings=settings, varying=["isl", "osl", "concurrency"],
                unknown=list(AIC_UNKNOWN) + ([] if version else ["engine_version"]),
                note="per experiment: mean TTFT and mean TPOT of an end-to-end run at a fixed concurrency "
                     "(silicon_ttft_ms, silicon_tpot_ms); data.experiments keeps each row's cells"), header)
        measured_at = facts.get("measured")
        isl, osl = int(row["isl"]), int(row["osl"])
        status = group.add(
            f"isl{isl}.osl{osl}.c{concurrency}",
            {"isl": isl, "osl": osl, "concurrency": concurrency, "id": row["id"], "date": measured_at or "not recorded"},
            cells, line,
            {"ttft_mean": (float(row["silicon_ttft_ms"]) / 1e3, "s"), "tpot_mean": (float(row["silicon_tpot_ms"]) / 1e3, "s")},
            _day_stamp(measured_at) if measured_at else IMPORT_DAY)
        if status == "duplicate":
            out.skipped["exact duplicate of an earlier row"] += 1
    out.recordings = [g.recording() for g in groups.values()]
    return out


def _day_stamp(text: str) -> str:
    """'2026-01-23' or '2025-10-29T00:00:00.000Z' -> a recorded_at ('2026-01-23T00:00:00Z')."""
    m = re.match(r"(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2}:\d{2}))?", text)
    if m is None:
        raise ThirdPartyImportError(f"unexpected date {text!r} in silicon_data_source")
    return f"{m.group(1)}T{m.group(2) or '00:00:00'}Z"


def _aic_unusable(row: dict[str, str]) -> str | None:
    if row["backend"] != "vllm":
        return f"engine {row['backend']} (we model vLLM and llama.cpp)"
    if row["mode"] != "agg":
        return "disaggregated serving"
    if row["system"] not in AIC_SYSTEMS:
        return f"GPU {row['system']} not in the catalog"
    if catalog_model(row["model_path"]) is None:
        return f"{row['model_path']}: no catalog config"
    if row["precision"] not in _AIC_DENSE:
        return f"precision {row['precision']} (no catalog peak)"
    if not row["silicon_ttft_ms"] or not row["silicon_tpot_ms"]:
        return "no TTFT/TPOT"
    return None


# --- Argonne LLM-Inference-Bench ------------------------------------------------------------
ARGONNE_GPUS = {"Nvidia A100 GPU": ("a100-40gb", ["a100-40gb", "a100-80gb"]),
                "Nvidia H100 GPU": ("h100-sxm", ["h100-sxm", "h100-pcie"])}
ARGONNE_ENGINES = {"vLLM": "vllm", "llama.cpp": "llama.cpp"}
ARGONNE_UNKNOWN = {
    "vllm": ["engine_version", "card variant (memory size / form factor)", "max_num_batched_tokens",
             "gpu_memory_utilization", "cuda graphs"],
    "llama.cpp": ["engine_version", "card variant (memory size / form factor)", "weight format (GGUF type)",
                  "meaning of 'Batch Size' (read as n_batch)", "n_ubatch", "split mode on several GPUs"],
}


def plan_argonne(folder: Path, results: Path, home: str = "h100-sxm") -> Plan:
    origin = Origin.read(folder)
    src = folder / "All_results.csv"
    raw = src.read_bytes()
    sha = _sha256(raw)
    raw_at = _raw_target(results, home, "argonne", src)
    script = folder / "vLLM_A100_benchmark_throughput.sh"
    out = Plan(raw=[(src, raw_at), (script, raw_at.parent / script.name),
                    (folder / "LICENSE", raw_at.parent / "LICENSE"), (folder / "SOURCE.txt", raw_at.parent / "SOURCE.txt")])
    groups: dict[tuple[str, str], _Group] = {}
    for line, header, row, cells in _rows(raw, src):
        reason = _argonne_unusable(row)
        if reason:
            out.skipped[reason] += 1
            continue
        engine = ARGONNE_ENGINES[row["Framework"]]
        hw, candidates = ARGONNE_GPUS[row["Hardware"]]
        model = row["Model"]
        n_gpus, length, batch = int(row["Num of Hardware"]), int(row["Input Output Length"]), int(row["Batch Size"])
        name = _name(f"{engine}.{catalog_model(model)}.n{n_gpus}")
        if catalog_model(model) != catalog.lookup(model):  # an alias: keep the source's own model in the name
            name = _name(f"{engine}.{model.split('/')[-1]}.n{n_gpus}")
        group = groups.get((hw, name))
        if group is None:
            settings = {"model": model, "catalog_model": catalog_model(model), "gpu": row["Hardware"],
                        "gpus": n_gpus, "engine": engine, "dtype": "float16" if engine == "vllm" else None,
                        "offline": True}
            group = groups[(hw, name)] = _Group(hw, "argonne", name, _provenance(
                origin, src.name, sha, raw_at, engine=engine, engine_version=None, gpu=row["Hardware"],
                hardware_candidates=candidates, settings=settings, varying=["input_len = output_len", "batch"],
                unknown=ARGONNE_UNKNOWN[engine], date="not recorded",
                note=("dtype float16 per the published vLLM_A100_benchmark_throughput.sh (benchmark_throughput.py "
                      "--input-len L --output-len L --batch-size B), assumed for every vLLM row"
                      if engine == "vllm" else "llama.cpp command not published")), header)
        status = group.add(f"l{length}.b{batch}", {"input_len": length, "output_len": length, "batch": batch},
                           cells, line, {"latency": (float(row["Latency"]), "s"),
                                         "throughput": (float(row["Throughput"]), "tokens/s")}, IMPORT_DAY)
        if status == "duplicate":
            out.skipped["exact duplicate of an earlier row"] += 1
    out.recordings = [g.recording() for g in groups.values()]
    return out


def _argonne_unusable(row: dict[str, str]) -> str | None:
    if row["Hardware"] not in ARGONNE_GPUS:
        return f"GPU {row['Hardware']} not in the validation set"
    if row["Framework"] not in ARGONNE_ENGINES:
        return f"engine {row['Framework']} (we model vLLM and llama.cpp)"
    if catalog_model(row["Model"]) is None:
        return f"{row['Model']}: no catalog config"
    if "MoE" in row["Model"] or "Mixtral" in row["Model"]:
        return "mixture of experts (the step model is dense)"
    return None


# --- inference-sim --------------------------------------------------------------------------
SIM_VERSION = "0.15.1"
SIM_STUDY = ("shared/third-party/README.md: vLLM 0.15.1; gpu_memory_utilization not recorded (the study used 0.9, "
             "sometimes 0.95); max_model_len 4096 per the study's design; some runs used CPU KV offload")


def plan_inference_sim(folder: Path, results: Path, home: str = "h100-sxm") -> Plan:
    origin = Origin.read(folder)
    src = folder / "trained_physics_iter29.json"
    raw = src.read_bytes()
    sha = _sha256(raw)
    raw_at = _raw_target(results, home, "inference-sim", src)
    out = Plan(raw=[(src, raw_at), (folder / "LICENSE", raw_at.parent / "LICENSE"),
                    (folder / "SOURCE.txt", raw_at.parent / "SOURCE.txt")])
    doc = json.loads(raw)
    for exp in doc["experiments"]:
        if exp.get("hardware") != "H100":
            out.skipped[f"hardware {exp.get('hardware')}"] += 1
            continue
        if catalog_model(exp["model"]) is None:
            out.skipped[f"{exp['model']}: no catalog config"] += 1
            continue
        settings = {"model": exp["model"], "catalog_model": catalog_model(exp["model"]), "engine": "vllm",
                    "engine_version": SIM_VERSION, "tp": exp["tp"], "max_num_seqs": exp["max_num_seqs"],
                    "max_num_batched_tokens": exp["max_num_batched_tokens"], "max_model_len": 4096,
                    "cpu_kv_blocks": exp["cpu_kv_blocks"]}
        out.recordings.append(recordings.Recording(
            suite=f"{SUITE}/inference-sim", name=_name(f"kv-blocks.{exp['id']}"), hardware="h100-sxm",
            recorded_at=IMPORT_DAY,
            provenance=_provenance(origin, src.name, sha, raw_at, engine="vllm", engine_version=SIM_VERSION,
                                   gpu="H100", settings=settings,
                                   unknown=["gpu_memory_utilization", "block_size (default 16 assumed)",
                                            "cuda graphs", "H100 variant (SXM assumed: hardware_config.json's 3.35 TB/s)"],
                                   date="not recorded", study=SIM_STUDY,
                                   note="total_kv_blocks and cpu_kv_blocks as read from each run's vllm.log by the "
                                        "study; the file's 'expected' block is a simulator's output, not imported"),
            measurements={"num_gpu_blocks": {"value": int(exp["total_kv_blocks"]), "unit": "blocks"},
                          "cpu_kv_blocks": {"value": int(exp["cpu_kv_blocks"]), "unit": "blocks"}},
            data={"experiment": {k: v for k, v in exp.items() if k != "expected"}}))
    return out


PLANNERS: dict[str, tuple[str, Callable[[Path, Path], Plan]]] = {
    "aiconfigurator": ("aiconfigurator", plan_aiconfigurator),
    "argonne": ("argonne-llm-inference-bench", plan_argonne),
    "inference-sim": ("inference-sim-blis", plan_inference_sim),
}


def plan(third_party: Path, results: Path) -> dict[str, Plan]:
    """Every source's plan; the folder must be shared/third-party (with its three sub-folders)."""
    if not third_party.is_dir():
        raise ThirdPartyImportError(f"{third_party} is not a folder; pass shared/third-party (../shared/third-party)")
    missing = [folder for folder, _ in PLANNERS.values() if not (third_party / folder).is_dir()]
    if missing:
        raise ThirdPartyImportError(f"{third_party} lacks {', '.join(missing)}; pass shared/third-party "
                                    "(../shared/third-party)")
    plans = {}
    for source, (folder, planner) in PLANNERS.items():
        try:
            plans[source] = planner(third_party / folder, results)
        except ThirdPartyImportError:
            raise
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
            # a source file edited or damaged out of the shape its reader expects: one line, not the traceback
            raise ThirdPartyImportError(f"{third_party / folder}: a file is not as published ({type(exc).__name__}: "
                                        f"{exc}); {_RESTORE}") from None
    return plans


def run(third_party: Path, results: Path, *, dry_run: bool = False) -> tuple[list[tuple[str, str]], dict[str, Counter[str]]]:
    """Keep the raw files and write every usable experiment's recording that does not exist yet."""
    plans = plan(third_party, results)
    for p in plans.values():  # all or nothing: a bad recording stops the import before any write
        for rec in p.recordings:
            recordings.validate(rec.to_json(), f"recording {rec.name!r} (nothing written)")
    done: list[tuple[str, str]] = []
    for p in plans.values():
        done += [(keep_raw(src, target, dry_run=dry_run), str(target)) for src, target in p.raw]
        done += recordings.save_all_if_new(results, p.recordings, dry_run=dry_run)
    return done, {source: p.skipped for source, p in plans.items()}


def iter_recordings(results: Path, source: str) -> Iterator[recordings.Recording]:
    """Every recording of one source, across hardware folders (newest file per name)."""
    for hw_dir in sorted(p for p in Path(results).iterdir() if p.is_dir()):
        for name in recordings.list_recordings(results, hw_dir.name, f"{SUITE}/{source}"):
            yield recordings.load_latest(results, hw_dir.name, f"{SUITE}/{source}", name)
