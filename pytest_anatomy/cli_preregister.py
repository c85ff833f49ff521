"""`pytest-anatomy preregister capacity ID... [--hardware h200]`: write the theory's predictions for
planned engine starts (ids of scripts/device/capacity_plan.py's PLAN) to a file to commit before
the run (preregistration.py). One line on any problem, exit 2."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_anatomy.suggest import did_you_mean
from pytest_anatomy import preregistration as pre

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PLAN = REPO / "scripts" / "device" / "capacity_plan.py"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "preregister", help="write the predictions for planned runs, to commit before running them",
        description="Writes results/<hw>/preregistered/capacity-<stamp>.json: every vLLM ledger quantity the theory "
                    "predicts for each planned engine start, with the git commit of the theory (refused while the "
                    "theory has uncommitted changes). Commit the file before the run: importing a held-out run then "
                    "checks the file was committed first, and the capacity suite reconciles the run against these "
                    "values as well as the current theory.")
    p.add_argument("suite", choices=("capacity",), help="what is planned (capacity: vLLM engine starts)")
    p.add_argument("ids", nargs="+", metavar="ID",
                   help="plan ids of the capacity plan, e.g. qwen2.5-72b.u0.90.len8192.eager.tp4")
    p.add_argument("--hardware", default="h200", help="catalog name of the card the runs are planned on (h200)")
    p.add_argument("--plan", type=Path, default=DEFAULT_PLAN,
                   help="the capacity plan (scripts/device/capacity_plan.py)")
    p.add_argument("--results", type=Path, default=Path("results"), help="results folder (results)")


def _error(message: str) -> int:
    print(f"pytest-anatomy: error: {message}", file=sys.stderr)
    return 2


def _load_plan(path: Path) -> dict[str, Any]:
    """{plan id: PlanEntry} of the capacity plan script (loaded, not run)."""
    spec = importlib.util.spec_from_file_location("capacity_plan", path)
    if spec is None or spec.loader is None:
        raise pre.PreregistrationError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("capacity_plan", module)  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return {entry.id: entry for entry in module.PLAN}


def run(args: argparse.Namespace) -> int:
    from pytest_anatomy.specs.hardware import HARDWARE
    from pytest_anatomy.theory.capacity import NotModeled

    if args.hardware not in HARDWARE:
        return _error(f"--hardware {args.hardware!r} is not in the catalog ({', '.join(sorted(HARDWARE))})")
    if not args.plan.is_file():
        return _error(f"{args.plan}: no capacity plan there (--plan scripts/device/capacity_plan.py)")
    try:
        plan = _load_plan(args.plan)
        planned = []
        for run_id in args.ids:
            if run_id not in plan:
                hint = did_you_mean(run_id, plan)
                return _error(f"{run_id!r} is not an id of {args.plan.name}" + (f"; {hint}" if hint else ""))
            entry = plan[run_id]
            planned.append(pre.PlannedRun(run_id, entry.model, entry.settings.to_dict()))
        existing = next(p for p in (args.results.resolve(), *args.results.resolve().parents) if p.exists())
        root = pre.repo_root(existing)
        if root is None:
            return _error(f"{args.results} is not inside a git checkout: a pre-registration names the theory's commit")
        commit = pre.theory_commit(root)
        created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        command = "pytest-anatomy preregister " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["preregister"] else
                                                           ["capacity", *args.ids])
        doc = pre.build(planned, args.hardware, commit, created, command)
        path = pre.write(args.results, doc)
    except (pre.PreregistrationError, NotModeled, OSError) as exc:
        return _error(str(exc))
    print(f"wrote {path}: {len(planned)} planned run(s) on {args.hardware}, theory at {commit[:12]}; "
          "commit this file before the runs start")
    return 0
