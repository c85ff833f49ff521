"""`pytest-anatomy import-seed | import-device | import-ncu | import-third-party`: the importers' command lines.

Each turns files measured elsewhere (the seed study, a device call's $OUT, an Nsight Compute report, other people's
published numbers) into recordings under results/, keeping the raw files verbatim; a refusal is one line (exit 2)
and writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_anatomy.cli_common import error as _error
from pytest_anatomy.cli_common import non_empty_path


def add_parsers(sub: Any) -> None:
    """Register import-seed, import-device, import-ncu and import-third-party."""
    # --results is non_empty_path: an empty one is the current folder, so recordings landed in the checkout's root
    imp = sub.add_parser("import-seed", help="import the seed study's data into results/rtx4090/")
    imp.add_argument("seed_results", type=Path, help="path to shared/seed-results")
    imp.add_argument("--study", type=Path, default=None, help="path to STUDY.md (default: ../seed/STUDY.md beside it)")
    imp.add_argument("--results", type=non_empty_path, default=Path("results"), help="results folder (results)")
    imp.add_argument("--dry-run", action="store_true", help="list what would be written")

    dev = sub.add_parser("import-device", help="import files a device measurement plan wrote to $OUT",
                         description="Keeps every given file verbatim under results/<gpu>/batches/<stamp>/ and "
                                     "turns each run of a device batch into a recording. Pass all files of one "
                                     "call together (e.g. latency.json ceilings.json latency-raw.jsonl *.log).")
    dev.add_argument("files", type=Path, nargs="+", help="batch JSON files and side files from one device call")
    dev.add_argument("--results", type=non_empty_path, default=Path("results"), help="results folder (results)")
    dev.add_argument("--dry-run", action="store_true", help="list what would be written")
    dev.add_argument("--in-sample", action="store_true",
                     help="file a held-out run (a capacity run, a kernel timing or a model's first latency run) "
                          "that has no pre-registration committed before it ran, or a deployment batch whose plan "
                          "files were not committed first, as not held out (default: refuse the import)")
    ncu = sub.add_parser("import-ncu", help="import an Nsight Compute report of the kernel or attention rungs",
                         description="Turns scripts/device/kernels_profile.sh's or flashattn_profile.sh's ncu report "
                                     "(CSV, optionally .xz) and its manifest into one recording per launch "
                                     "(ncu.<ladder>.<rung>.<shape>, under results/<gpu>/<suite>/: kernels, or "
                                     "flashattn for the attention rungs), keeping both files verbatim under "
                                     "results/<gpu>/batches/<stamp>/.")
    ncu.add_argument("report", type=Path, help="ncu.csv or ncu.csv.xz")
    ncu.add_argument("manifest", type=Path, help="profile-manifest.json")
    ncu.add_argument("--hardware", default=None,
                     help="the profiled GPU: a catalog name (case-insensitive) or a card already under --results; "
                          "default: the card the manifest's nvidia-smi line names (refused where the two differ)")
    ncu.add_argument("--recorded-at", default=None,
                     help="UTC time of the run (2026-11-30T02:17:00Z); default: the manifest's own")
    ncu.add_argument("--provenance", action="append", default=[], metavar="KEY=VALUE",
                     help="add a provenance fact the files lack (repeatable), e.g. ncu=2025.3.1.0")
    ncu.add_argument("--results", type=non_empty_path, default=Path("results"), help="results folder (results)")
    ncu.add_argument("--dry-run", action="store_true", help="list what would be written")
    tp = sub.add_parser("import-third-party", help="import other people's published measurements (shared/third-party)",
                        description="Keeps each source's raw file byte for byte (with its licence and SOURCE.txt) and "
                                    "writes one recording per usable experiment under "
                                    "results/<gpu>/third-party/<source>/; rows we cannot predict are counted by "
                                    "reason. The protocol: docs/VALIDATION.md.")
    tp.add_argument("third_party", type=Path, help="path to shared/third-party (../shared/third-party)")
    tp.add_argument("--results", type=non_empty_path, default=Path("results"), help="results folder (results)")
    tp.add_argument("--dry-run", action="store_true", help="list what would be written")


def _cmd_import_seed(args: argparse.Namespace) -> int:
    from pytest_anatomy.importers import seed_kernels
    from pytest_anatomy.importers.seed import SeedImportError, run
    from pytest_anatomy.recordings import RecordingError

    study = args.study or args.seed_results.parent / "seed" / "STUDY.md"
    try:
        done = run(args.seed_results, study, args.results, dry_run=args.dry_run)
        # stage 02: the kernel ladders' CSVs and logs
        done += seed_kernels.run(args.seed_results, args.results, dry_run=args.dry_run)
    except (SeedImportError, seed_kernels.SeedKernelImportError, RecordingError, OSError) as exc:
        return _error(exc)
    for status, path in done:
        print(f"{status:12s} {path}")
    wrote = sum(1 for s, _ in done if s == "wrote")
    print(f"{wrote} written, {len(done) - wrote} unchanged")
    return 0


def _cmd_import_device(args: argparse.Namespace) -> int:
    from pytest_anatomy.importers.device import DeviceImportError, import_files
    from pytest_anatomy.recordings import RecordingError

    try:
        done = import_files(list(args.files), args.results, dry_run=args.dry_run, in_sample=args.in_sample)
    except (DeviceImportError, RecordingError, OSError) as exc:
        return _error(exc)
    return _print_done(done)


def _cmd_import_third_party(args: argparse.Namespace) -> int:
    from pytest_anatomy.importers import third_party

    try:
        done, skipped = third_party.run(args.third_party, args.results, dry_run=args.dry_run)
    except (third_party.ThirdPartyImportError, OSError) as exc:
        return _error(exc)
    for source, reasons in skipped.items():
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            print(f"not imported ({source}): {n} row(s): {reason}")
    return _print_done(done)


def _print_done(done: list[tuple[str, str]]) -> int:
    """One line per file an importer wrote or found, then the totals."""
    for status, path in done:
        print(f"{status:12s} {path}")
    print(f"{sum(1 for s, _ in done if s == 'wrote')} written, {sum(1 for s, _ in done if s == 'exists')} unchanged")
    return 0


def _cmd_import_ncu(args: argparse.Namespace) -> int:
    from pytest_anatomy.importers.ncu import NcuImportError, import_ncu, read_manifest
    from pytest_anatomy.recordings import RecordingError

    try:
        provenance = read_manifest(args.manifest)[1]
        when = args.recorded_at or provenance.get("date_utc")
        if not when:
            print("pytest-anatomy: error: the manifest has no date (an older kernels_profile.py): pass --recorded-at "
                  "with the run's UTC time, e.g. 2026-11-30T02:17:00Z", file=sys.stderr)
            return 2
        bad = [p for p in args.provenance if "=" not in p]
        if bad:
            print(f"pytest-anatomy: error: --provenance needs KEY=VALUE, got {bad}", file=sys.stderr)
            return 2
        extra = dict(p.split("=", 1) for p in args.provenance)
        hardware = profiled_card(args.hardware, provenance, args.results)
        done = import_ncu(args.report, args.manifest, args.results, hardware=hardware,
                          recorded_at=when.replace("+00:00", "Z"), provenance=extra, dry_run=args.dry_run)
    except (NcuImportError, RecordingError, OSError, ValueError, KeyError) as exc:
        return _error(exc)
    return _print_done(done)


def profiled_card(given: str | None, provenance: dict, results: Path) -> str:
    """The card an ncu report was taken on: the manifest's nvidia-smi line names it (kernels_profile.sh writes
    "NVIDIA H100 80GB HBM3, <driver>, ..."); --hardware may say the same or name a card the manifest does not,
    never contradict it (an H100 profile was once filed under h200, the flag's old default)."""
    smi = str(provenance.get("nvidia_smi") or "").split(",")[0].strip()
    measured = recorded_card(smi, results) if smi else None
    if given is None:
        if measured is None:
            raise ValueError("the manifest names no GPU (no nvidia_smi line): pass --hardware with the profiled card")
        return measured
    card = recorded_card(given, results)
    if measured is not None and card != measured:
        raise ValueError(f"--hardware {given} ({card}) but the manifest's nvidia-smi line names {smi!r} ({measured}): "
                         "drop --hardware or name the card the profile ran on")
    return card


def recorded_card(name: str, results: Path) -> str:
    """The folder a card's recordings go to: a catalog name in its catalog spelling (H200 and "NVIDIA H200" are
    h200), or a card that already has recordings under `results` (one a live session named from the driver); else
    ValueError in one line: a typo would open a new card's folder (h200x/) that no test reads."""
    from pytest_anatomy.specs.hardware import HARDWARE, UnknownHardwareError, get_hardware
    from pytest_anatomy.suggest import did_you_mean

    try:
        return get_hardware(name).name
    except UnknownHardwareError:
        if (results / name).is_dir():
            return name
        hint = did_you_mean(name, HARDWARE, fold=True)
        raise ValueError(f"--hardware {name}: not in the catalog ({', '.join(HARDWARE)}) and {results / name} does not "
                         "exist: name a catalog card or the folder of a card recorded live"
                         + (f" ({hint})" if hint else "")) from None


def run(args: argparse.Namespace) -> int:
    """Answer one of the import commands (cli.IMPORT_COMMANDS)."""
    commands = {"import-seed": _cmd_import_seed, "import-device": _cmd_import_device, "import-ncu": _cmd_import_ncu,
                "import-third-party": _cmd_import_third_party}
    return commands[args.command](args)
