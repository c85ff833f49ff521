"""Replays several theory mutations after one start-up and one collection: a pytest plugin (`-p mutant_batch`).

`theory_mutants` (one mutation per interpreter, applied before collection) paid ~1.3 s of interpreter and pytest
start-up plus collection per mutation, a quarter of a small replay. Here one interpreter collects the union of a
group's selections once; then, per mutation, it forks: the child applies the mutation exactly as `theory_mutants`
does (the function redefined in its module, every module-level binding of the original pointed at the mutant), keeps
the items the mutation's own selection would have collected, in that command line's order, runs them and writes its
JSON ledger. Each child starts from the same unmutated, freshly collected state, so no mutation sees another's.

Why applying after collection is the same as before it: only if collection never calls a mutated function (a value
computed from the unmutated theory at import or parametrization would survive into the child). Collection runs with
a tripwire on each function the group mutates; a mutation whose function was called during collection is not forked
but listed as `collection_called`, and the caller replays it the old way, alone in a fresh interpreter. So is one no
tripwire can watch (Mutation.forkable: a catalog number, read as an attribute, or a class member such as a property).

Environment (set by tests_plugin/test_mutations.py): ANATOMY_MUTATIONS, the mutation names, comma-separated;
ANATOMY_MUTATIONS_OUT, the folder that receives NAME.json (each child's ledger) and outcome.json (each child's exit
status, and the mutations left to a lone replay).
"""

from __future__ import annotations

import functools
import gc
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from mutation_mechanics import Mutation, apply, rebind
from theory_mutants import BY_NAME, stop_at_first_diverge

NAMES_ENV = "ANATOMY_MUTATIONS"
OUT_ENV = "ANATOMY_MUTATIONS_OUT"
MARK = "mutant_batch: replaying under "  # a line before each child's output, to split the replay's output by mutation

_STATE: dict[str, Any] = {}


def selected(selection: tuple[str, ...], nodeid: str) -> int | None:
    """The index of the first command-line argument of `selection` that collects `nodeid` (a file, or a node id
    with or without its parameters), None when none does: pytest collects args in order, each in file order."""
    for i, arg in enumerate(selection):
        if nodeid == arg or nodeid.startswith((arg + "::", arg + "[")):
            return i
    return None


def _key(m: Mutation) -> tuple[str, str]:
    return m.module, m.function


def _tripwire(key: tuple[str, str], original: Callable[..., Any], fired: set[tuple[str, str]]) -> Callable[..., Any]:
    module = importlib.import_module(key[0])

    @functools.wraps(original)
    def wire(*args: Any, **kwargs: Any) -> Any:
        if _STATE.get("collecting"):
            fired.add(key)
        # After collection, a reference to the wire kept in a container (not a module's namespace, which
        # rebind reaches) still calls what the module holds now: the mutant, in a child.
        current = getattr(module, key[1])
        return (original if current is wire else current)(*args, **kwargs)

    return wire


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    names = [n for n in os.environ.get(NAMES_ENV, "").split(",") if n]
    if not names:
        return
    unknown = sorted(set(names) - set(BY_NAME))
    if unknown:
        raise RuntimeError(f"{NAMES_ENV}: {unknown} not in the catalogue")
    mutations = [BY_NAME[n] for n in names]
    fired: set[tuple[str, str]] = set()
    originals: dict[tuple[str, str], Any] = {}
    wires: dict[tuple[str, str], Any] = {}
    for key in dict.fromkeys(_key(m) for m in mutations if m.forkable):
        module = importlib.import_module(key[0])
        originals[key] = getattr(module, key[1])
        wires[key] = _tripwire(key, originals[key], fired)
        setattr(module, key[1], wires[key])
        _rebind_object(originals[key], wires[key])  # bindings taken before collection ring the wire too
    _STATE.update(mutations=mutations, fired=fired, originals=originals, wires=wires, collecting=True,
                  out=Path(os.environ[OUT_ENV]))


def _rebind_object(old: object, new: object) -> None:
    for mod in list(sys.modules.values()):
        namespace = getattr(mod, "__dict__", None)
        if isinstance(namespace, dict):
            for name, value in list(namespace.items()):
                if value is old:
                    namespace[name] = new


def pytest_collection_finish(session: pytest.Session) -> None:
    if "mutations" not in _STATE:
        return
    _STATE["collecting"] = False
    for key, original in _STATE["originals"].items():
        setattr(importlib.import_module(key[0]), key[1], original)
        _rebind_object(_STATE["wires"][key], original)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> object:
    if "mutations" not in _STATE or "child" in _STATE:
        return None
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        return None  # pytest's own loop stops the run on the collection errors
    outcome: dict[str, Any] = {"exit": {}, "collection_called": []}
    # What collection left (modules, items, parsed recordings) lives as long as each child: frozen, the cyclic GC of a
    # child never walks it (a walk writes to every object, so the child also copies every page of it from the parent)
    gc.collect()
    gc.freeze()
    for m in _STATE["mutations"]:
        if not m.forkable or _key(m) in _STATE["fired"]:  # read where no tripwire looks, or called: replayed alone
            outcome["collection_called"].append(m.name)
            continue
        print(f"\n{MARK}{m.name}", flush=True)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _become_child(session, m)
            return None  # pytest's own loop runs this mutation's items, in this child only
        outcome["exit"][m.name] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    (_STATE["out"] / "outcome.json").write_text(json.dumps(outcome))
    return True  # the parent ran no test itself


def _become_child(session: pytest.Session, m: Mutation) -> None:
    _STATE["child"] = m
    apply(m)
    rebind(m, _STATE["originals"][_key(m)])
    picked = [(i, n, item) for n, item in enumerate(session.items)
              if (i := selected(m.selection, item.nodeid)) is not None]
    session.items[:] = [item for _, _, item in sorted(picked, key=lambda p: (p[0], p[1]))]
    session.testscollected = len(session.items)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    m = _STATE.get("child")
    if not isinstance(m, Mutation):
        return
    from pytest_anatomy.report.html import ledger_to_json
    from pytest_anatomy.session import get_session

    (_STATE["out"] / f"{m.name}.json").write_text(ledger_to_json(get_session(session.config).ledger(session.config)))


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    m = _STATE.get("child")
    if isinstance(m, Mutation):
        stop_at_first_diverge(item, m)
