"""Import what a device measurement plan wrote to $OUT into recordings.

Input: batch files of schema `pytest-anatomy/device-batch/v1` (scripts/device/capacity_plan.py,
scripts/device/latency_plan.py, kernels_plan.py, llama_plan.py) and the ceilings file. Output:

- the batch files themselves, byte for byte, under `results/<hw>/batches/<stamp>/` (xz-compressed
  when larger than 1 MiB, so the working tree that travels to the GPU stays small; `xz -d`
  restores the exact bytes), never overwritten;
- one recording per run: `results/<hw>/capacity/vllm-ledger.<run id>@<stamp>.json`,
  `results/<hw>/latency/<run id>@<stamp>.json`, `results/<hw>/llama/<run id>@<stamp>.json`,
  `results/<hw>/ceilings/ceilings@<stamp>.json`.
  Measurements are copied from the run's numbers (SI units as measured); `data` keeps the whole
  run result, so nothing the device measured is lost.

A capacity run the plan marks held out, measured since pre-registration exists, and the first timing of a
kernel rung and shape whose header pre-registers a time, measured since kernels' pre-registration exists, are
imported only when a pre-registration of it was committed before its stamp (preregistration.py); the
recording's provenance names that file and commit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import lzma
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, NoReturn

from pytest_anatomy import preregistration, recordings
from pytest_anatomy.importers import device_quant
from pytest_anatomy.importers.xz import XZ_MAGIC
from pytest_anatomy.specs.hardware import match_catalog
from pytest_anatomy.units import MiB

BATCH_SCHEMA = "pytest-anatomy/device-batch/v1"
_COMPRESS_ABOVE = MiB


class DeviceImportError(RuntimeError):
    pass


def _stamp(date_utc: str) -> str:
    """'2026-11-30T00:30:31+00:00' -> '2026-11-30T00:30:31Z'."""
    dt = datetime.fromisoformat(date_utc).astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _hardware(provenance: dict[str, Any], fallback: dict[str, Any] | None = None) -> tuple[str, str]:
    name = (provenance.get("nvidia_smi", {}).get("summary", {}).get("name")
            or (fallback or {}).get("name") or provenance.get("gpu"))
    if not name or not isinstance(name, str):
        raise DeviceImportError("batch provenance names no GPU (nvidia_smi.summary.name); cannot file it")
    key = match_catalog(name)
    if key is None:
        raise DeviceImportError(f"GPU {name!r} is not in the hardware catalog; add it to specs/hardware.py first")
    return key, name


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# keep_raw's xz: one LZMA2 stream, as `xz -9` wrote before 2026-12-02, but its fast preset's hash-chain match
# finder at the normal mode and an 8 MiB dictionary. On the 8.8 MB latency-raw.jsonl of the 2026-12-02 02:26
# session: ~6x faster than preset 9 (which took 14.5 s there, synchronously, in the live session) for 2.05 MB
# instead of 1.93 (preset 1 is about as fast, 2.83 MB; preset 0 ~4x faster again, 2.84 MB). Any xz reader opens it.
KEEP_RAW_XZ_FILTERS = ({"id": lzma.FILTER_LZMA2, "preset": 1, "mode": lzma.MODE_NORMAL, "mf": lzma.MF_HC4,
                        "dict_size": 8 * MiB, "nice_len": 32, "depth": 4},)


def keep_raw(path: Path, results: Path, hardware: str, stamp: str) -> tuple[str, Path]:
    """Copy a device output file verbatim into results/<hw>/batches/<stamp>/ (xz if large)."""
    raw = path.read_bytes()
    folder = results / hardware / "batches" / recordings.stamp_of(stamp)
    folder.mkdir(parents=True, exist_ok=True)
    # Compress only what is large and not xz already: deciding by the target's suffix xz'd an uploaded
    # ncu.csv.xz a second time (every ncu.csv.xz and flashattn-ncu.csv.xz kept under results/h200/batches before 2026-12-02 is xz twice).
    compress = len(raw) > _COMPRESS_ABOVE and not raw.startswith(XZ_MAGIC)
    target = folder / (path.name + (".xz" if compress else ""))
    if target.exists():
        return "exists", target
    payload = lzma.compress(raw, format=lzma.FORMAT_XZ, filters=KEEP_RAW_XZ_FILTERS) if compress else raw
    tmp = target.with_name(".tmp-" + target.name)
    tmp.write_bytes(payload)
    tmp.rename(target)
    return "wrote", target


def _clock_briefs(timings: list[dict[str, Any]]) -> dict[str, Any]:
    """{time, time_repeat: the block's clock brief} for the blocks that carry NVML clock readings."""
    from pytest_anatomy.measure.kernel_runner import clock_brief

    briefs = {key: clock_brief(timings[idx]) for key, idx in (("time", 0), ("time_repeat", 1)) if len(timings) > idx}
    return {k: v for k, v in briefs.items() if v is not None}


def _version(versions: dict[str, Any], name: str) -> Any:
    v = versions.get(name)
    return v.get("version") if isinstance(v, dict) else v


def _common_provenance(batch: dict[str, Any], origin: Path, raw_sha: str, hw_name: str) -> dict[str, Any]:
    prov = batch.get("provenance", {})
    versions = prov.get("versions", {})
    smi = prov.get("nvidia_smi", {}).get("summary", {})
    return {
        "source": "live",
        "gpu": hw_name,
        "driver": smi.get("driver") or (prov.get("gpu") or {}).get("driver")
        or (prov.get("nvidia_smi_start") or {}).get("driver_version"),
        "cuda": smi.get("cuda"),
        "power_limit": smi.get("power_limit"),
        "mig_mode": smi.get("mig_mode"),
        "engine": "vllm",
        "engine_version": _version(versions, "vllm") or prov.get("vllm"),
        "torch": _version(versions, "torch") or prov.get("torch"),
        "command": prov.get("command"),
        "date": prov.get("date_utc"),
        "origin": {"file": origin.name, "sha256": raw_sha},
    }


# --- capacity ------------------------------------------------------------------------------
def _capacity_measurements(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    eng = result.get("engine") or {}
    res = result.get("resolved") or {}
    snap = eng.get("init_snapshot") or {}
    log = result.get("log") or {}
    out: dict[str, dict[str, Any]] = {}

    def put(name: str, value: Any, unit: str) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = {"value": value, "unit": unit}

    put("total_memory_bytes", snap.get("total_memory"), "B")
    put("init_free_memory_bytes", snap.get("free_memory"), "B")
    put("init_cuda_context_bytes", snap.get("non_torch_memory"), "B")
    put("requested_memory_bytes", eng.get("requested_memory"), "B")
    put("model_memory_bytes", eng.get("model_memory_usage"), "B")
    put("peak_activation_bytes", eng.get("peak_activation_memory"), "B")
    put("non_torch_increase_bytes", eng.get("non_torch_memory"), "B")
    put("cudagraph_estimate_bytes", eng.get("cudagraph_memory_estimate"), "B")
    put("available_kv_bytes", eng.get("available_kv_cache_memory_bytes"), "B")
    put("num_gpu_blocks", res.get("num_gpu_blocks"), "blocks")
    put("block_size", res.get("block_size"), "tokens")
    put("kv_tokens", res.get("kv_cache_size_tokens"), "tokens")
    put("max_concurrency", res.get("kv_cache_max_concurrency"), "x")
    put("max_model_len", res.get("max_model_len"), "tokens")
    put("max_num_batched_tokens", res.get("max_num_batched_tokens"), "tokens")
    put("max_num_seqs", res.get("max_num_seqs"), "requests")
    kvc = eng.get("kv_cache_config") or {}
    put("kv_allocated_bytes", kvc.get("total_tensor_bytes"), "B")
    # Log values are rounded to 0.01 GiB by vLLM; kept for the log-vs-exact comparison.
    for key in ("model_loading_gib", "available_kv_cache_gib", "cudagraph_capture_gib", "max_concurrency_x"):
        put(f"log_{key}", log.get(key), "GiB" if key.endswith("_gib") else "x")
    return out


def _capacity_records(batch: dict[str, Any], common: dict[str, Any], hw: str, stamp: str) -> Iterator[recordings.Recording]:
    for run in batch["runs"]:
        result = run.get("result") or {}
        prov = {**common, "settings": run.get("settings") or result.get("settings"), "model": run.get("model"),
                "held_out": bool(run.get("held_out")), "status": result.get("status"),
                "error_class": result.get("error_class")}
        yield recordings.Recording(
            suite="capacity", name=f"vllm-ledger.{run['id'].lower()}", hardware=hw, recorded_at=stamp,
            provenance=prov, measurements=_capacity_measurements(result) if result.get("status") == "ok" else {},
            data={"run": run},
        )


# --- latency --------------------------------------------------------------------------------
_SKIP_KEYS = {"per_request", "timeline", "failures", "samples"}  # lists: raw payload, not quantities


def _unit_for(path: tuple[str, ...]) -> str:
    joined = ".".join(path)
    if path and path[-1] in ("n", "requests", "completed", "failed", "not_sent", "runs", "repeats", "slots"):
        return "count"
    if "tok_per_s" in joined or "tokens_per_s" in joined:
        return "tokens/s"
    if "per_s" in joined:
        return "1/s"
    if any(p.endswith("_s") for p in path):
        return "s"
    if any(p.endswith("_bytes") for p in path):
        return "B"
    if "tokens" in joined:
        return "tokens"
    return ""


def _flatten(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, float, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in _SKIP_KEYS:
                yield from _flatten(v, (*path, str(k)))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield ".".join(path), value, _unit_for(path)


def _measurements(numbers: dict[str, Any], samples: Any) -> dict[str, dict[str, Any]]:
    """Every number of `numbers` by its dotted path, with `samples` = {quantity: [values]} attached:
    the values a summary quantity came from (a decode step's steady ITLs, a prefill's repeats, a
    benchmark's repetitions); the summary is "<quantity>" or its median."""
    measurements = {name: {"value": v, "unit": unit} for name, v, unit in _flatten(numbers)}
    for quantity, values in (samples or {}).items():
        target = quantity if quantity in measurements else f"{quantity}.median"
        if target in measurements and isinstance(values, list):
            measurements[target]["samples"] = [float(v) for v in values
                                               if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return measurements


def _latency_records(batch: dict[str, Any], common: dict[str, Any], hw: str, stamp: str) -> Iterator[recordings.Recording]:
    model = (batch.get("provenance", {}).get("model") or {}).get("id")
    for run in batch["runs"]:
        result = run.get("result") or {}
        measurements = _measurements(result, result.get("samples"))
        suite, name = ("ceilings", "ceilings") if run["id"] == "ceilings" else ("latency", run["id"].lower())
        yield recordings.Recording(
            suite=suite, name=name, hardware=hw, recorded_at=stamp,
            provenance={**common, "model": model, "settings": run.get("settings"), "kind": run.get("kind"),
                        "checks": run.get("checks")},
            measurements=measurements, data={"run": run},
        )


def latency_live_results(batch: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(suite, name) -> the result a `measured(live=...)` callable returns, for every run of a
    latency batch measured in this session: the same mapping as an import, without the files."""
    prov = batch.get("provenance") or {}
    versions = prov.get("versions") or {}
    common = {"engine": "vllm", "engine_version": _version(versions, "vllm"), "torch": _version(versions, "torch"),
              "command": prov.get("command"), "date": prov.get("date_utc"),
              "driver": (prov.get("nvidia_smi_start") or {}).get("driver_version")}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in _latency_records(batch, common, "live", "2000-01-01T00:00:00Z"):
        out[(rec.suite, rec.name)] = {"measurements": dict(rec.measurements), "provenance": dict(rec.provenance),
                                      "data": dict(rec.data)}
    return out


# --- llama.cpp (scripts/device/llama_plan.py) -----------------------------------------------------
def _llama_records(batch: dict[str, Any], common: dict[str, Any], hw: str, stamp: str) -> Iterator[recordings.Recording]:
    """One recording per run: results/<hw>/llama/<run id>@stamp (measurements from the run's `metrics`,
    repetitions attached from its `samples`; the GGUF header, the load log, the sweep and the tool's
    own output stay in data.run), and the session's ceilings as results/<hw>/ceilings/ceilings@stamp."""
    llama = ((batch.get("provenance") or {}).get("versions") or {}).get("llama.cpp") or {}
    prov = {**common, "engine": "llama.cpp", "engine_version": llama.get("version"),
            "build_commit": llama.get("build_commit"), "source_commit": llama.get("source_commit"),
            "ggml": llama.get("ggml"), "torch": None}
    for run in batch["runs"]:
        result = run.get("result") or {}
        if run["id"] == "ceilings":
            yield recordings.Recording(suite="ceilings", name="ceilings", hardware=hw, recorded_at=stamp,
                                       provenance={**prov, "settings": run.get("settings"), "kind": "ceilings"},
                                       measurements=_measurements(result, result.get("samples")), data={"run": run})
            continue
        metrics: dict[str, Any] = result["metrics"] if isinstance(result.get("metrics"), dict) else {}
        yield recordings.Recording(
            suite="llama", name=run["id"].lower(), hardware=hw, recorded_at=stamp,
            provenance={**prov, "settings": run.get("settings"), "kind": run.get("kind"), "status": result.get("status")},
            measurements=_measurements(metrics, result.get("samples")), data={"run": run})


def _quant_vllm_records(batch: dict[str, Any], common: dict[str, Any], hw: str,
                        stamp: str) -> Iterator[recordings.Recording]:
    """The quant plan's vLLM engine starts as results/<hw>/quant/vllm-ledger.<model>.<case>@stamp: not the capacity
    suite's recordings (other weights), read as they are (importers/device_quant.py reads the llama.cpp runs)."""
    for rec in _capacity_records(batch, common, hw, stamp):
        yield dataclasses.replace(rec, suite="quant")


# --- kernels (scripts/device/kernels_plan.py: the kernel ladders) ---------------------------------
def _kernel_records(batch: dict[str, Any], common: dict[str, Any], hw: str, stamp: str) -> Iterator[recordings.Recording]:
    """One recording per timed rung and shape (results/<hw>/kernels/<ladder>.<rung>.<shape>@stamp),
    plus the run's ceilings; correctness and compile parts travel inside data.run / the raw batch."""
    vers = (batch.get("provenance") or {}).get("versions") or {}
    prov = {**common, "engine": "cuda.core + NVRTC", "engine_version": _version(vers, "cuda-core"),
            "torch": _version(vers, "torch")}
    for run in batch["runs"]:
        result = run.get("result") or {}
        if result.get("kind") == "ceilings":
            meas = {k: {"value": result[k]["value"], "unit": "B/s", "samples": result[k].get("samples", [])}
                    for k in ("read_bandwidth", "copy_bandwidth") if isinstance(result.get(k), dict)}
            yield recordings.Recording(suite="kernels", name="kernels-ceilings", hardware=hw, recorded_at=stamp,
                                       provenance={**prov, "settings": run.get("settings")}, measurements=meas,
                                       data={"run": run})
        elif result.get("kind") == "kernel-timing":
            meas = {}
            timings = result.get("timings") or []
            for key, idx in (("time", 0), ("time_repeat", 1)):
                if len(timings) > idx:
                    meas[key] = {"value": timings[idx]["ms_median"] / 1e3, "unit": "s",
                                 "samples": [x / 1e3 for x in timings[idx].get("samples_ms", [])]}
            if result.get("baseline_ms_median") is not None:
                meas["baseline_time"] = {"value": result["baseline_ms_median"] / 1e3, "unit": "s"}
            data = {k: result.get(k) for k in ("ladder", "rung", "shape", "dtype", "ms_median", "ms_median_repeat",
                                               "baseline_rung", "baseline_ms_median", "status", "reason")}
            clocks = _clock_briefs(timings)
            if clocks:  # plans run since 2026-12-02 read the SM clock around each block, as live recordings do
                data["clocks"] = clocks
            yield recordings.Recording(suite="kernels", name=run["id"].lower(), hardware=hw, recorded_at=stamp,
                                       provenance={**prov, "settings": run.get("settings"), "gpu_name": result.get("gpu")},
                                       measurements=meas, data={**data, "run": run})
        elif result.get("kind") == "autotune" and result.get("choice"):
            # the fp32 autotuner's choice at one shape: the chosen candidate's time (mean of its two timing
            # blocks), cuBLAS fp32's, and every candidate's time and pre-registered prediction
            chosen = (result.get("candidates_ms") or {}).get(result["choice"])
            meas = {"time": {"value": chosen / 1e3, "unit": "s"}} if chosen is not None else {}
            if result.get("baseline_ms") is not None:
                meas["baseline_time"] = {"value": result["baseline_ms"] / 1e3, "unit": "s"}
            data = {k: result.get(k) for k in ("ladder", "shape", "choice", "candidates_ms", "predicted_ms",
                                               "baseline_rung", "baseline_ms", "rejected")}
            yield recordings.Recording(suite="kernels", name=run["id"].lower(), hardware=hw, recorded_at=stamp,
                                       provenance={**prov, "settings": run.get("settings"), "gpu_name": result.get("gpu")},
                                       measurements=meas, data={**data, "run": run})


_LADDER_UNITS = {"ttft_p50_s": "s", "ttft_p99_s": "s", "itl_p50_s": "s", "itl_p99_s": "s",
                 "output_throughput": "tokens/s", "goodput": "requests/s"}


def _deployment_records(batch: dict[str, Any], common: dict[str, Any], hw: str,
                        stamp: str) -> Iterator[recordings.Recording]:
    """scripts/device/deployment_plan.py: one recording per (model, workload, rung) run and per engine
    start, under results/<hw>/deployment/; the ladder metrics and the engine's counter deltas as
    measurements (counters per position as counters.<name>.<position>), the whole run in data."""
    prov = batch.get("provenance") or {}
    for run in batch["runs"]:
        result = run.get("result")
        if not isinstance(result, dict):
            continue  # skipped or failed: the kept batch file says why
        measurements = {f"metrics.{k}": {"value": v, "unit": _LADDER_UNITS.get(k, "")}
                        for k, v in (result.get("metrics") or {}).items() if isinstance(v, (int, float))}
        measurements.update({f"counters.{name}": {"value": value, "unit": "count"}
                             for name, value, _ in _flatten(result.get("counters") or {})})
        aggregate = result.get("aggregate") or {}
        for key in ("output_tokens", "completed"):  # with the counters: decode steps, hence the draft share
            if isinstance(aggregate.get(key), (int, float)):
                measurements[f"aggregate.{key}"] = {"value": aggregate[key], "unit": "count"}
        if isinstance(result.get("startup_s"), (int, float)):
            measurements["startup_s"] = {"value": result["startup_s"], "unit": "s"}
        yield recordings.Recording(
            suite="deployment", name=run["id"].lower(), hardware=hw, recorded_at=stamp,
            provenance={**common, "model": run.get("model"), "workload": run.get("workload"), "step": run.get("step"),
                        "engine_kwargs": run.get("engine_kwargs"), **{k: prov.get(k) for k in preregistration.PLAN_FILES}},
            measurements=measurements, data={"run": run})


# A batch's provenance.kind -> its reader (a batch without one: an engine start or a latency plan, by its runs)
_READERS = {
    "kernels": _kernel_records,  # scripts/device/kernels_plan.py
    "llama": _llama_records,  # scripts/device/llama_plan.py
    "deployment": _deployment_records,  # scripts/device/deployment_plan.py
    "quant": device_quant.quant_records,  # scripts/device/quant_plan.py
    "quant-vllm": _quant_vllm_records,  # its vLLM phase
    "quant-vllm-quality": device_quant.vllm_quality_records,  # scripts/device/vllm_quality.py
}


def check_batch(path: Path, doc: dict[str, Any]) -> None:
    """The shape every importer below relies on; DeviceImportError naming the file, the field and
    the fix (an incomplete file: a device call cut short, or one file of a batch edited by hand)."""

    def fail(field: str, problem: str) -> NoReturn:
        raise DeviceImportError(f"{path}: {field} {problem}; pass the complete files one device call wrote to $OUT "
                                "(re-run the measurement plan if it was cut short)")

    prov = doc.get("provenance")
    if not isinstance(prov, dict):
        fail("provenance", "is missing or not an object")
    date = prov.get("date_utc")
    if not isinstance(date, str):
        fail("provenance.date_utc", f"is {date!r}, not an ISO 8601 time")
    try:
        _stamp(date)
    except (ValueError, OverflowError):
        fail("provenance.date_utc", f"is {date!r}, not an ISO 8601 time such as 2026-11-30T00:30:31+00:00")
    for key in ("nvidia_smi", "versions", "model", "gpu"):
        if prov.get(key) is not None and not isinstance(prov[key], (dict, str) if key == "gpu" else dict):
            fail(f"provenance.{key}", f"is a {type(prov[key]).__name__}, not an object")
    smi = prov.get("nvidia_smi") or {}
    if smi.get("summary") is not None and not isinstance(smi["summary"], dict):
        fail("provenance.nvidia_smi.summary", "is not an object")
    runs = doc.get("runs")
    if not isinstance(runs, list):
        fail("runs", "is missing or not a list")
    kernels = prov.get("kind") == "kernels"
    for i, run in enumerate(runs):
        if not isinstance(run, dict):
            fail(f"runs[{i}]", f"is a {type(run).__name__}, not an object")
        if not isinstance(run.get("id"), str) or not run["id"]:
            fail(f"runs[{i}].id", f"is {run.get('id')!r}, not a run name")
        result = run.get("result")
        if result is not None and not isinstance(result, dict):
            fail(f"runs[{i}] ({run['id']}).result", f"is a {type(result).__name__}, not an object")
        for key in ("engine", "resolved", "log", "facts"):
            if isinstance(result, dict) and result.get(key) is not None and not isinstance(result[key], dict):
                fail(f"runs[{i}] ({run['id']}).result.{key}", f"is a {type(result[key]).__name__}, not an object")
        timings = (result or {}).get("timings")
        if kernels and timings is not None and (not isinstance(timings, list) or not all(
                isinstance(t, dict) and isinstance(t.get("ms_median"), (int, float))
                and not isinstance(t.get("ms_median"), bool) for t in timings)):
            fail(f"runs[{i}] ({run['id']}).result.timings", "must be a list of objects with a numeric ms_median")


def _name_ok(name: str) -> str:
    if not re.match(r"^[a-z0-9][a-z0-9._+-]*$", name):
        raise DeviceImportError(f"run id {name!r} cannot be a recording name (lower-case, digits, . _ + - only)")
    return name


def _check_preregistered(rec: recordings.Recording, results: Path, *, in_sample: bool) -> recordings.Recording:
    """A held-out capacity run or kernel timing (or a deployment batch's plan files) checked against its committed
    pre-registration (preregistration.checked_held_out); with `in_sample`, one without is filed as not held out."""
    return preregistration.checked_held_out(rec, results, in_sample=in_sample, error=DeviceImportError)


def import_files(paths: list[Path], results: Path, *, dry_run: bool = False,
                 in_sample: bool = False) -> list[tuple[str, str]]:
    """Import device batch files (and keep every given file verbatim). Returns (status, path).

    A held-out capacity run or kernel timing needs a pre-registration committed before it ran
    (preregistration.py); `in_sample` files such runs as not held out instead of refusing the batch."""
    done: list[tuple[str, str]] = []
    batches = []
    for path in paths:
        raw = path.read_bytes()
        doc: Any = None
        if path.suffix == ".json":
            try:
                doc = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise DeviceImportError(f"{path}: not UTF-8 text (byte {exc.start}); batch files are UTF-8 JSON; "
                                        "nothing imported") from None
            except json.JSONDecodeError as exc:
                raise DeviceImportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); nothing imported; "
                                        "a file cut short means the device call did not finish: re-run it") from None
            except RecursionError:
                raise DeviceImportError(f"{path}: JSON nested too deeply to be a device batch") from None
            if isinstance(doc, dict) and doc.get("schema") == BATCH_SCHEMA:
                check_batch(path, doc)
        batches.append((path, raw, doc))
    stamp_of_batch = None
    hw_of_batch = None
    for path, raw, doc in batches:
        if isinstance(doc, dict) and doc.get("schema") == BATCH_SCHEMA:
            stamp_of_batch = stamp_of_batch or _stamp(doc["provenance"]["date_utc"])
            ceilings = next((r for r in doc["runs"] if r["id"] == "ceilings"), None)
            facts = ((ceilings or {}).get("result") or {}).get("facts")
            hw_of_batch = hw_of_batch or _hardware(doc["provenance"], facts)
    if stamp_of_batch is None or hw_of_batch is None:
        raise DeviceImportError("none of the files is a device batch (schema pytest-anatomy/device-batch/v1)")
    hw, hw_name = hw_of_batch
    planned: list[recordings.Recording] = []
    for path, raw, doc in batches:  # build and validate everything before writing anything
        if isinstance(doc, dict) and doc.get("schema") == BATCH_SCHEMA:
            stamp = _stamp(doc["provenance"]["date_utc"])
            common = _common_provenance(doc, path, _sha256(raw), hw_name)
            is_capacity = any("engine" in (r.get("result") or {}) for r in doc["runs"])
            records = _capacity_records if is_capacity else _latency_records
            records = _READERS.get(str((doc.get("provenance") or {}).get("kind")), records)
            try:
                for rec in records(doc, common, hw, stamp):
                    _name_ok(rec.name)
                    recordings.validate(rec.to_json(), f"{path.name}: run {rec.name!r}")
                    planned.append(rec)
            except (KeyError, TypeError, AttributeError, IndexError) as exc:
                # check_batch covers the shapes these readers use; this names anything it missed
                raise DeviceImportError(f"{path}: a run lacks the field {exc} (or has the wrong type); "
                                        "pass the complete files of one device call") from None
    planned = [_check_preregistered(rec, results, in_sample=in_sample) for rec in planned]
    for path, raw, doc in batches:
        is_batch = isinstance(doc, dict) and doc.get("schema") == BATCH_SCHEMA
        stamp = _stamp(doc["provenance"]["date_utc"]) if is_batch else stamp_of_batch
        if not dry_run:
            status, kept = keep_raw(path, results, hw, stamp)
            done.append((status, str(kept)))
    return done + recordings.save_all_if_new(results, planned, dry_run=dry_run)
