"""Import the seed study's stage-02 data (RTX 4090) into recordings under results/rtx4090/kernels/.

Inputs (shared/seed-results/02-cuda-from-systems-eyes/Results/, see MANIFEST.md):
- Round1/csv/bench_*_median.csv: the SGEMM ladder, median of 3 rounds, 42 columns. One recording
  per row; `data.row` keeps every column as the CSV's text, verbatim; the time, GFLOP/s and
  the rung-0 (cuBLAS, k0) time of the same file and shape become measurements.
- Round1/sass_*.txt: static SASS instruction counts per kernel (the table, verbatim).
- Round1/fingerprint.txt: ptxas registers per kernel and the compile command.
- Reduction/reduce_*.txt: every `=== R.. ===` block of the reduction log.
- Fused/fused_*.txt: every `$ ./fused_ops <op> M N iters` run; runs of the same (op, M, N) are
  one recording whose samples are the rounds' medians.
Every recording cites the upstream repository, the file and its sha256, and the exact text it
was parsed from. Nothing is retyped. Re-running writes nothing that already exists.

`run(seed_results, results_dir)` is called by `pytest-anatomy import-seed` (after stage 01).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from pathlib import Path
from typing import Any

from pytest_anatomy import recordings
from pytest_anatomy.importers.seed import read_text
from pytest_anatomy.stats import median

UPSTREAM = "github.com/daleiyang/llm-inference-anatomy"
STAGE = "02-cuda-from-systems-eyes/Results"
HARDWARE = "rtx4090"
GPU = "NVIDIA GeForce RTX 4090"
SGEMM_BUILD = "nvcc -O3 -arch=sm_89 -lineinfo -Xptxas -v sgemm_all.cu -o sgemm_all -lcublas"
SHAPE_NAMES = {"square": "square", "方阵基准": "square-ref", "decode-b1": "decode-b1", "decode-b32": "decode-b32",
               "prefill": "prefill"}
# The seed's kernel names -> this project's rung ids where the design matches; k3c (PMPP
# coarsening) has no counterpart in our ladder and keeps its own id.
SGEMM_RUNGS = {"k0": "s0-cublas", "k1": "s1-naive", "k2": "s2-coalesced", "k3": "s3-smem-tiling", "k3c": "k3c-coarsened",
               "k4": "s4-1d-regtile", "k5": "s5-2d-regtile", "k6": "s6-vectorized"}
FUSED_RUNGS = {"n1": ("rmsnorm", "n1-two-pass"), "n2": ("rmsnorm", "n2-fused"), "n3": ("rmsnorm", "n3-registers"),
               "n4": ("rmsnorm", "n4-vectorized"), "s1": ("softmax", "x1-three-pass"), "s2": ("softmax", "x2-online"),
               "s3": ("softmax", "x3-registers"), "s4": ("softmax", "x4-vectorized")}
REDUCTION_RUNGS = {"R1": "r1-interleaved", "R2": "r2-sequential", "R3": "r3-first-add", "R4": "r4-segmented-atomic",
                   "R5": "r5-grid-stride", "R6": "r6-warp-shuffle"}


class SeedKernelImportError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _prov(path: Path, base: Path, **extra: Any) -> dict[str, Any]:
    return {"source": "seed", "hardware": HARDWARE, "gpu": GPU,
            "origin": {"repo": UPSTREAM, "path": f"{STAGE}/{path.relative_to(base)}", "sha256": _sha256(path)}, **extra}


def _stamp(text: str) -> str:
    """'20260924_180114' -> '2026-09-24T18:01:14Z'; '20260921' -> '2026-09-21T00:00:00Z'."""
    m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})(?:_(\d{2})(\d{2})(\d{2}))?", text)
    if m is None:
        raise SeedKernelImportError(f"unexpected stamp {text!r}")
    y, mo, d, h, mi, s = m.groups()
    return f"{y}-{mo}-{d}T{h or '00'}:{mi or '00'}:{s or '00'}Z"


def _sgemm(base: Path) -> list[recordings.Recording]:
    out = []
    for path in sorted((base / "Round1/csv").glob("bench_*_median.csv")):
        text = read_text(path)
        rows = list(csv.DictReader(io.StringIO(text)))
        if not rows or len(rows[0]) != 42:
            raise SeedKernelImportError(f"{path}: expected the 42-column median CSV (MANIFEST.md)")
        baseline = {(r["shape"], r["M"], r["N"], r["K"]): float(r["ms"]) for r in rows if r["kernel"] == "k0"}
        for r in rows:
            shape = SHAPE_NAMES.get(r["shape"])
            if shape is None:
                raise SeedKernelImportError(f"{path}: unknown shape label {r['shape']!r}")
            m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
            ms, base_ms = float(r["ms"]), baseline[(r["shape"], r["M"], r["N"], r["K"])]
            name = f"seed-sgemm.{shape}.{m}x{n}x{k}.{r['kernel']}"
            out.append(recordings.Recording(
                suite="kernels", name=name, hardware=HARDWARE, recorded_at=_stamp(r["stamp"]),
                provenance=_prov(path, base, command=SGEMM_BUILD, clock_ghz_assumed=float(r["clock_ghz"]),
                                 driver="580.159.03", settings={"tf32": False, "cublas_math": "CUBLAS_PEDANTIC_MATH"},
                                 note="median of 3 rounds; each round the median of `iters` timed runs"),
                measurements={"time": {"value": ms / 1e3, "unit": "s"},
                              "baseline_time": {"value": base_ms / 1e3, "unit": "s"},
                              "flop_rate": {"value": float(r["gflops"]) * 1e9, "unit": "FLOP/s"}},
                data={"ladder": "sgemm", "rung": SGEMM_RUNGS[r["kernel"]], "seed_kernel": r["kernel"],
                      "shape": {"M": m, "N": n, "K": k, "label": shape}, "dtype": "fp32", "ms_median": ms,
                      "baseline_ms_median": base_ms, "row": dict(r)},
            ))
    return out


def _sass_and_ptxas(base: Path) -> list[recordings.Recording]:
    sass = next(iter(sorted((base / "Round1").glob("sass_*.txt"))), None)
    fp = base / "Round1/fingerprint.txt"
    if sass is None or not fp.exists():
        raise SeedKernelImportError(f"{base}/Round1 lacks sass_*.txt or fingerprint.txt")
    text = read_text(sass)
    header = re.search(r"^kernel\s+(.+)$", text, re.MULTILINE)
    if header is None:
        raise SeedKernelImportError(f"{sass}: no 'kernel ...' table header")
    cols = header.group(1).split()
    counts: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"^(k\d\w*)\s+(.+)$", text, re.MULTILINE):
        cells = m.group(2).split()
        if len(cells) == len(cols):
            counts[m.group(1)] = {c: (0 if v == "-" else int(v)) for c, v in zip(cols, cells)}
    fptext = read_text(fp)
    regs = {f"k{m.group(1)}": int(m.group(2)) for m in re.finditer(r"sgemm_k(\w+)\s+(\d+) registers", fptext)}
    stamp = re.search(r"sass_(\d{8}_\d{6})", sass.name).group(1)  # type: ignore[union-attr]
    return [
        recordings.Recording(
            suite="kernels", name="seed-sgemm.sass-counts", hardware=HARDWARE, recorded_at=_stamp(stamp),
            provenance=_prov(sass, base, command="cuobjdump -sass ./sgemm_all (static counts per kernel)"),
            measurements={f"{k}.{c}": {"value": v, "unit": "instructions"} for k, row in counts.items() for c, v in row.items()},
            data={"counts": counts, "table": text}),
        recordings.Recording(
            suite="kernels", name="seed-sgemm.ptxas", hardware=HARDWARE, recorded_at=_stamp(stamp),
            provenance=_prov(fp, base, command=SGEMM_BUILD),
            measurements={f"{k}.registers": {"value": v, "unit": "registers"} for k, v in regs.items()},
            data={"registers": regs, "fingerprint": fptext}),
    ]


_RED_BLOCK = re.compile(r"(?P<cmd>\./reduce_ch10 [^\n]+)\n+=== (?P<title>[^=\n]+?) · N = (?P<n>\d+) · block = "
                        r"(?P<block>\d+) · grid = (?P<grid>\d+) ===\n(?P<body>.*?)(?=\n\s*\n|\Z)", re.DOTALL)


def _reduction(base: Path) -> list[recordings.Recording]:
    out: list[recordings.Recording] = []
    for path in sorted((base / "Reduction").glob("reduce_*.txt")):
        text = read_text(path)
        stamp = re.search(r"reduce_(\d{8})", path.name).group(1)  # type: ignore[union-attr]
        seen: dict[str, int] = {}
        for m in _RED_BLOCK.finditer(text):
            body, title = m.group("body"), m.group("title")
            t = re.search(r"耗时\s+([\d.]+) ms", body)
            if t is None:
                continue
            rung_key = title.split()[0]
            n, block = int(m.group("n")), int(m.group("block"))
            base_name = f"seed-reduction.{rung_key.lower() if rung_key.startswith('R') else 'empty'}.n{n}.b{block}"
            seen[base_name] = seen.get(base_name, 0) + 1
            name = base_name if seen[base_name] == 1 else f"{base_name}.run{seen[base_name]}"
            meas = {"time": {"value": float(t.group(1)) / 1e3, "unit": "s"}}
            bw = re.search(r"有效带宽\s+([\d.]+) GB/s", body)
            if bw:
                meas["bandwidth"] = {"value": float(bw.group(1)) * 1e9, "unit": "B/s"}
            err = re.search(r"相对误差 ([\d.e+-]+)", body)
            out.append(recordings.Recording(
                suite="kernels", name=name, hardware=HARDWARE, recorded_at=_stamp(stamp),
                provenance=_prov(path, base, command=m.group("cmd").strip(), driver=None,
                                 note="the log's own median of the given iteration count"),
                measurements=meas,
                data={"ladder": "reduction", "rung": REDUCTION_RUNGS.get(rung_key, "empty-kernel"), "seed_kernel": rung_key,
                      "shape": {"n": n}, "block": block, "grid": int(m.group("grid")), "dtype": "fp32",
                      "ms_median": float(t.group(1)), "baseline_ms_median": None,
                      "rel_error": float(err.group(1)) if err else None, "excerpt": m.group(0)},
            ))
    return out


_FUSED_RUN = re.compile(r"--- (?P<label>[^\n]+?) ?---\n\$ \./fused_ops (?P<op>\w+) (?P<M>\d+) (?P<N>\d+) (?P<iters>\d+)\n"
                        r"(?P<body>.*?)(?=\n--- |\n={5,}|\n#{5,}|\n>>>|\Z)", re.DOTALL)


def _fused(base: Path) -> list[recordings.Recording]:
    out: list[recordings.Recording] = []
    for path in sorted((base / "Fused").glob("fused_*.txt")):
        text = read_text(path)
        stamp = re.search(r"fused_(\d{8}_\d{6})", path.name).group(1)  # type: ignore[union-attr]
        driver = re.search(r"NVIDIA GeForce RTX 4090, ([\d.]+),", text)
        groups: dict[tuple[str, int, int], list[re.Match[str]]] = {}
        for m in _FUSED_RUN.finditer(text):
            groups.setdefault((m.group("op"), int(m.group("M")), int(m.group("N"))), []).append(m)
        for (op, mm, nn), runs in groups.items():
            ladder, rung = FUSED_RUNGS[op]
            times = [float(t.group(1)) for r in runs if (t := re.search(r"中位耗时 ([\d.]+) ms", r.group("body")))]
            refused = [r.group(0) for r in runs if "✗" in r.group("body")]
            meas = {}
            if times:
                meas["time"] = {"value": median(times) / 1e3, "unit": "s", "samples": [x / 1e3 for x in times]}
            out.append(recordings.Recording(
                suite="kernels", name=f"seed-fused.{op}.m{mm}.n{nn}", hardware=HARDWARE, recorded_at=_stamp(stamp),
                provenance=_prov(path, base, command=f"./fused_ops {op} {mm} {nn} <iters>",
                                 driver=driver.group(1) if driver else None,
                                 note="value = median over the runs of this shape (3 rounds for the main ladder); "
                                      "each run is the log's median of `iters` timings"),
                measurements=meas,
                data={"ladder": ladder, "rung": rung, "seed_kernel": op, "shape": {"M": mm, "N": nn}, "dtype": "fp32",
                      "ms_median": median(times) if times else None, "baseline_ms_median": None,
                      "status": "refused" if refused and not times else "ok",
                      "labels": [r.group("label") for r in runs], "excerpts": [r.group(0) for r in runs]},
            ))
    return out


def plan(seed_results: Path) -> list[recordings.Recording]:
    base = Path(seed_results) / STAGE
    if not base.is_dir():
        raise SeedKernelImportError(f"{seed_results} has no {STAGE}/; pass the seed-results folder (../shared/seed-results)")
    return _sgemm(base) + _sass_and_ptxas(base) + _reduction(base) + _fused(base)


def run(seed_results: Path, results_dir: Path, *, dry_run: bool = False) -> list[tuple[str, str]]:
    """Write every planned recording that does not exist yet; returns (status, path) pairs."""
    done = []
    for rec in plan(seed_results):
        recordings.validate(rec.to_json(), f"seed kernels: {rec.name}")
        status, target = recordings.save_if_new(results_dir, rec, dry_run=dry_run)
        done.append((status, str(target)))
    return done
