"""`pytest-anatomy preregister capacity ID... [--hardware h200]`: write the theory's predictions for
planned engine starts (ids of scripts/device/capacity_plan.py's PLAN) to a file to commit before
the run (preregistration.py); `preregister kernels LADDER.RUNG[.SHAPE]...`: the rung headers'
pre-registered times of planned kernel timings (scripts/device/kernels_plan.py's run ids). One line
on any problem, exit 2."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_anatomy.cli_common import non_empty_path
from pytest_anatomy.suggest import did_you_mean
from pytest_anatomy import preregistration as pre

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PLAN = REPO / "scripts" / "device" / "capacity_plan.py"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "preregister", help="write the predictions for planned runs, to commit before running them",
        description="Writes results/<hw>/preregistered/<suite>-<stamp>.json with the git commit of the theory "
                    "(refused while it has uncommitted changes). capacity: every vLLM ledger quantity the theory "
                    "predicts for each planned engine start; the capacity suite reconciles the run against these "
                    "values as well as the current theory. kernels: each planned timing's time pre-registered in its "
                    "rung's header (H200 only; the kernels' code must be committed too). latency: a model's decode "
                    "steps and lone prefills at the latency plan's settings, predicted from the recorded Qwen2.5-7B "
                    "calibration, with how far each named term error would move them. Commit the file before the "
                    "run: importing a held-out run (a capacity run the plan marks held out; a rung's first timing at "
                    "a shape its header pre-registers; a model's first latency run on a card with latency "
                    "pre-registrations) then checks the file was committed first.")
    p.add_argument("suite", choices=pre.SUITES,
                   help="what is planned (capacity: vLLM engine starts; kernels: kernel rung timings; latency: a "
                        "second model's decode steps and lone prefills)")
    p.add_argument("ids", nargs="+", metavar="ID",
                   help="capacity: plan ids of the capacity plan, e.g. qwen2.5-72b.u0.90.len8192.eager.tp4; kernels: "
                        "LADDER.RUNG (every shape its header pre-registers) or LADDER.RUNG.SHAPE, the kernels plan's "
                        "run id, e.g. sgemm.s18-fp32-small-m-splitk.32x18944x3584; latency: MODEL (batches "
                        "1-128 and prompts 128-32,000, as the latency plan runs a second model), MODEL.decode.bB or "
                        "MODEL.prefill.lN, e.g. qwen2.5-32b")
    p.add_argument("--hardware", default="h200", help="catalog name of the card the runs are planned on (h200)")
    p.add_argument("--plan", type=Path, default=DEFAULT_PLAN,
                   help="capacity: the capacity plan (scripts/device/capacity_plan.py)")
    p.add_argument("--results", type=non_empty_path, default=Path("results"), help="results folder (results)")


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
    fix = "pass the capacity plan (--plan scripts/device/capacity_plan.py)"
    try:  # any file can be given: its SyntaxError or a missing PLAN was a traceback
        spec.loader.exec_module(module)
        return {entry.id: entry for entry in module.PLAN}
    except Exception as exc:  # noqa: BLE001 - whatever a foreign script raises, named in one line
        if sys.modules.get("capacity_plan") is module:  # a later load in this process must not find the broken one
            del sys.modules["capacity_plan"]
        raise pre.PreregistrationError(f"{path}: not a capacity plan ({type(exc).__name__}: {exc}); {fix}") from None


def _where(args: argparse.Namespace) -> tuple[Path, str]:
    """The checkout the results folder is in, and its commit (PreregistrationError where there is none, or the code
    the suite's predictions come from has uncommitted changes)."""
    existing = next(p for p in (args.results.resolve(), *args.results.resolve().parents) if p.exists())
    root = pre.repo_root(existing)
    if root is None:
        raise pre.PreregistrationError(f"{args.results} is not inside a git checkout: a pre-registration names the "
                                       "theory's commit; run it in the pytest-anatomy checkout or pass --results "
                                       "<checkout>/results")
    return root, pre.theory_commit(root, pre.PINNED_PATHS[args.suite])


def _command(args: argparse.Namespace) -> str:
    return "pytest-anatomy preregister " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["preregister"] else
                                                    [args.suite, *args.ids])


def _kernels(args: argparse.Namespace) -> int:
    """The rung headers' pre-registered times of the planned timings, with the commit of the theory and kernels."""
    from pytest_anatomy.kernels.registry import PREREGISTERED_ON

    if args.hardware != PREREGISTERED_ON:
        return _error(f"--hardware {args.hardware}: the rung headers pre-register {PREREGISTERED_ON} times only")
    try:
        timings = pre.kernel_timings(args.ids)
        _, commit = _where(args)
        created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        path = pre.write(args.results, pre.build_kernels(timings, args.hardware, commit, created, _command(args)))
    except (pre.PreregistrationError, OSError) as exc:
        return _error(str(exc))
    print(f"wrote {path}: {len(timings)} planned timing(s) on {args.hardware}, theory and kernels at {commit[:12]}; "
          "commit this file before the runs start")
    return 0


def _latency(args: argparse.Namespace) -> int:
    """The planned models' decode and prefill predictions from the recorded calibration, with the theory's commit."""
    from pytest_anatomy import latency_prereg as lp

    try:
        plan = lp.planned(args.ids)
        _, commit = _where(args)
        runs, calibration = lp.predict_runs(plan, args.hardware, args.results)
        created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        path = pre.write(args.results, lp.build(runs, args.hardware, commit, created, _command(args), calibration))
    except (pre.PreregistrationError, OSError) as exc:
        return _error(str(exc))
    print(f"wrote {path}: {len(runs)} planned run(s) of {', '.join(plan)} on {args.hardware}, theory at "
          f"{commit[:12]}; commit this file before the runs start")
    return 0


def run(args: argparse.Namespace) -> int:
    from pytest_anatomy.specs.hardware import HARDWARE, UnknownHardwareError, get_hardware
    from pytest_anatomy.theory.capacity import NotModeled

    try:  # the catalog's spelling, as predict takes it (H200, "NVIDIA H200"): the file is named by it
        args.hardware = get_hardware(args.hardware).name
    except UnknownHardwareError:
        return _error(f"--hardware {args.hardware!r} is not in the catalog ({', '.join(sorted(HARDWARE))})")
    if args.suite != "capacity" and args.plan != DEFAULT_PLAN:  # read by capacity only: it was ignored silently
        return _error(f"--plan is the capacity plan, not read by preregister {args.suite}; drop it")
    if args.suite == "kernels":
        return _kernels(args)
    if args.suite == "latency":
        return _latency(args)
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
        _, commit = _where(args)
        created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc = pre.build(planned, args.hardware, commit, created, _command(args))
        path = pre.write(args.results, doc)
    except (pre.PreregistrationError, NotModeled, OSError) as exc:
        return _error(str(exc))
    print(f"wrote {path}: {len(planned)} planned run(s) on {args.hardware}, theory at {commit[:12]}; "
          "commit this file before the runs start")
    return 0
