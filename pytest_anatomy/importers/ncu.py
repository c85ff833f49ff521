"""Nsight Compute counters per kernel rung -> recordings `ncu.<ladder>.<rung>.<shape>`.

Input: the `--csv --page details --print-units base` report of
scripts/device/kernels_profile.sh (or flashattn_profile.sh) and the manifest its script wrote.
A manifest entry's `suite` names the results folder (default `kernels`; the attention rungs'
`flashattn`); its other fields (settings, the autotuned config, whether every output element
was written) are kept in the recording's `data.launch`. Each rung's
launches follow a one-thread `anatomy_marker` kernel whose grid x is the manifest's
`marker_grid`, so the rows map to rungs without counting torch's own launches; the kernels that
generate the next rung's random inputs (torch's distribution and copy kernels) are dropped.

Per rung (over its kernels): additive counters summed (time, DRAM and L2 bytes), rates
averaged weighted by each kernel's duration (throughput %, occupancy, issue-slot use, cycles per
issued instruction, hit rates). `data.kernels` keeps every kernel's row and ncu's own
warp-state sentences (the stall reason that dominates), verbatim.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

from pytest_anatomy import recordings
from pytest_anatomy.importers.device import keep_raw
from pytest_anatomy.importers.xz import read_kept

MARKER = "anatomy_marker"
# torch kernels that build a rung's random inputs; launched before that rung's marker
INPUT_KERNELS = re.compile(r"distribution_|direct_copy_kernel|bfloat16_copy_kernel|MulFunctor|CUDAFunctorOnSelf_add")
SUMMED = {  # measurement -> (ncu metric, unit, scale)
    "gpu_time_s": ("Duration", "s", 1e-9),
    "dram_read_bytes": ("dram__bytes_read.sum", "B", 1.0),
    "dram_write_bytes": ("dram__bytes_write.sum", "B", 1.0),
    "l2_bytes": ("lts__t_bytes.sum", "B", 1.0),
}
WEIGHTED = {  # measurement -> ncu metric (percent or cycles), averaged weighted by kernel duration
    "dram_throughput_pct": "DRAM Throughput",
    "sm_throughput_pct": "Compute (SM) Throughput",
    "issue_slots_busy_pct": "Issue Slots Busy",
    "achieved_occupancy_pct": "Achieved Occupancy",
    "theoretical_occupancy_pct": "Theoretical Occupancy",
    "cycles_per_issued_instruction": "Warp Cycles Per Issued Instruction",
    "l1_hit_pct": "L1/TEX Hit Rate",
    "l2_hit_pct": "L2 Hit Rate",
}


_MANIFEST_KEYS = {"marker_grid", "ladder", "rung", "shape", "dtype", "suite", "kernels"}


class NcuImportError(ValueError):
    pass


_REQUIRED = ("marker_grid", "ladder", "rung", "shape")


def read_manifest(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The manifest's launches and its provenance ({} for an older bare list), checked here so that a wrong file
    (the report and manifest swapped, a hand-edited entry) is named in one line, not as a bare KeyError ('launches')
    or a traceback from an entry that is not an object."""
    fix = "pass the profile-manifest.json the profile script wrote beside the report"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise NcuImportError(f"{path}: not a JSON manifest (not UTF-8 text); {fix} (report first, then manifest)") \
            from None
    except json.JSONDecodeError as exc:
        raise NcuImportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); {fix}") from None
    launches = doc.get("launches") if isinstance(doc, dict) else doc
    if not isinstance(launches, list) or not launches or not all(isinstance(m, dict) for m in launches):
        raise NcuImportError(f"{path}: no launches (a non-empty list of objects, under \"launches\"); {fix}")
    for i, m in enumerate(launches):
        missing = [k for k in _REQUIRED if k not in m]
        if missing:
            raise NcuImportError(f"{path}: launch {i} lacks {', '.join(missing)}; {fix}")
        if isinstance(m["marker_grid"], bool) or not isinstance(m["marker_grid"], int) or m["marker_grid"] < 1:
            raise NcuImportError(f"{path}: launch {i} has marker_grid {m['marker_grid']!r}, not an integer >= 1; {fix}")
    provenance = doc.get("provenance") if isinstance(doc, dict) else None
    return launches, provenance if isinstance(provenance, dict) else {}


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def read_report_text(path: Path) -> str:
    """An ncu CSV export as text, through every xz layer: the copies kept under results/<gpu>/batches before
    2026-12-02 were xz'd a second time by keep_raw."""
    return read_kept(path).decode("utf-8", errors="replace")



def parse_report(text: str) -> list[dict[str, Any]]:
    """Kernels in launch order: name, grid, block, metrics {name: float|str}, stall sentences."""
    start = text.find('"ID"')
    if start < 0:
        raise NcuImportError("no CSV header (\"ID\",...) in the ncu report: was it written with --csv --page details?")
    kernels: dict[str, dict[str, Any]] = {}
    reader = csv.DictReader(io.StringIO(text[start:]))
    missing = [c for c in ("ID", "Kernel Name", "Grid Size", "Block Size") if c not in (reader.fieldnames or ())]
    if missing:  # a KeyError below would print as the bare column name
        raise NcuImportError(f"the ncu report has no {', '.join(missing)} column: was it written with --csv --page "
                             "details?")
    for row in reader:
        k = kernels.setdefault(row["ID"], {"name": row["Kernel Name"], "grid": row["Grid Size"],
                                           "block": row["Block Size"], "metrics": {}, "stalls": []})
        name, value = row.get("Metric Name") or "", row.get("Metric Value") or ""
        if name:
            num = _number(value)
            k["metrics"][name] = num if num is not None else value
        rule = row.get("Rule Description") or ""
        if row.get("Section Name") == "WarpStateStats" and rule.startswith("On average, each warp"):
            k["stalls"].append(rule)
    return list(kernels.values())


def group_by_rung(kernels: list[dict[str, Any]], manifest: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    by_grid = {int(m["marker_grid"]): m for m in manifest}
    groups: dict[int, list[dict[str, Any]]] = {}
    current: int | None = None
    for k in kernels:
        if k["name"] == MARKER:
            current = int(k["grid"].strip("()").split(",")[0])
            if current not in by_grid:
                raise NcuImportError(f"marker grid {current} is not in the manifest (1..{len(by_grid)})")
            groups[current] = []
        elif current is not None and not INPUT_KERNELS.search(k["name"]):
            groups[current].append(k)
    missing = sorted(set(by_grid) - set(groups))
    if missing:
        raise NcuImportError(f"no kernels profiled for manifest entries {missing}: the ncu run stopped early")
    return groups


def rung_measurements(kernels: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if not kernels:
        raise NcuImportError("a rung with no kernels after its marker")
    out: dict[str, dict[str, Any]] = {}
    for key, (metric, unit, scale) in SUMMED.items():
        vals = [k["metrics"].get(metric) for k in kernels]
        if all(isinstance(v, float) for v in vals):
            out[key] = {"value": sum(vals) * scale, "unit": unit}  # type: ignore[arg-type]
    durations = [k["metrics"].get("Duration") for k in kernels]
    if not all(isinstance(d, float) and d > 0 for d in durations):
        raise NcuImportError(f"kernels {[k['name'] for k in kernels]} lack a positive Duration (GPU Speed Of Light "
                             "section): rates cannot be weighted; was --section SpeedOfLight collected?")
    weights = [float(d) for d in durations]  # type: ignore[arg-type]
    total = sum(weights)
    for key, metric in WEIGHTED.items():
        vals = [k["metrics"].get(metric) for k in kernels]
        if all(isinstance(v, float) for v in vals):
            unit = "cycles" if key.startswith("cycles") else "%"
            out[key] = {"value": sum(w * v for w, v in zip(weights, vals)) / total, "unit": unit}  # type: ignore[operator]
    main = max(kernels, key=lambda k: k["metrics"]["Duration"])
    regs = main["metrics"].get("Registers Per Thread")
    if isinstance(regs, float):
        out["registers_per_thread"] = {"value": regs, "unit": "registers"}
    return out


def import_ncu(report: Path, manifest_path: Path, results: Path, *, hardware: str, recorded_at: str,
               provenance: dict[str, Any] | None = None, dry_run: bool = False) -> list[tuple[str, str]]:
    """Write one recording per rung (and keep both input files verbatim); all or nothing."""
    text = read_report_text(report)
    manifest, extra = read_manifest(manifest_path)
    groups = group_by_rung(parse_report(text), manifest)
    sha = hashlib.sha256(report.read_bytes()).hexdigest()
    planned = []
    for m in manifest:
        ks = groups[int(m["marker_grid"])]
        prov = {"source": "live", "gpu": hardware, "tool": "Nsight Compute (ncu --clock-control none "
                "--cache-control all)", **extra, **(provenance or {}),
                "origin": {"file": report.name, "sha256": sha, "manifest": manifest_path.name}}
        extra_fields = {k: v for k, v in m.items() if k not in _MANIFEST_KEYS}
        data = {"ladder": m["ladder"], "rung": m["rung"], "shape": m["shape"], "dtype": m.get("dtype"),
                **({"launch": extra_fields} if extra_fields else {}),
                "kernels": [{"name": k["name"][:200], "grid": k["grid"], "block": k["block"],
                             "metrics": k["metrics"], "stalls": k["stalls"]} for k in ks]}
        name = f"ncu.{m['ladder']}.{m['rung']}.{m['shape']}"
        rec = recordings.Recording(suite=m.get("suite", "kernels"), name=name,
                                   hardware=hardware, recorded_at=recorded_at, provenance=prov,
                                   measurements=rung_measurements(ks), data=data)
        recordings.validate(rec.to_json(), f"{report.name}: {rec.name}")
        planned.append(rec)
    done: list[tuple[str, str]] = []
    if not dry_run:
        for path in (report, manifest_path):
            status, kept = keep_raw(path, results, hardware, recorded_at)
            done.append((status, str(kept)))
    return done + recordings.save_all_if_new(results, planned, dry_run=dry_run)
