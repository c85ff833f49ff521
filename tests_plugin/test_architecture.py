"""The package's shape, checked from its source: layers, import cycles, module and function size,
one place per job. Parsed with `ast`, so nothing here imports what it checks."""

from __future__ import annotations

import ast
import subprocess
import sys
import pytest
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_anatomy"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _sources() -> dict[str, tuple[Path, ast.Module]]:
    return {_module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str, tree: ast.Module, *, top_level_only: bool) -> set[str]:
    """Package modules `module` imports (an `from a import b` counts as a.b when that is a module)."""
    known = _sources()
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out: set[str] = set()
    is_package = known[module][0].name == "__init__.py"
    for node in nodes:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        out |= {name for name in names if name in known and name != module}
    return out


def _graph(*, top_level_only: bool) -> dict[str, set[str]]:
    return {m: _imports(m, tree, top_level_only=top_level_only) for m, (_, tree) in _sources().items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    """Counting imports inside functions too: a lazy import that closes a cycle is still a cycle
    in the design (it only hides from the interpreter)."""
    assert _cycles(_graph(top_level_only=False)) == []


def _importers(graph: dict[str, set[str]], layer: str, forbidden: str) -> list[str]:
    return sorted(f"{m} imports {t}" for m, targets in graph.items() if m.startswith(layer)
                  for t in targets if t.startswith(forbidden))


def test_layers_import_one_way() -> None:
    """theory and measure never import each other (a prediction never reads a measurement, a
    measurement never assumes a theory); kernels/ (facts about the kernels) never imports theory/;
    neither theory/ nor specs/ asks the GPU anything."""
    graph = _graph(top_level_only=False)
    broken = (_importers(graph, "pytest_anatomy.theory", "pytest_anatomy.measure")
              + _importers(graph, "pytest_anatomy.measure", "pytest_anatomy.theory")
              + _importers(graph, "pytest_anatomy.kernels", "pytest_anatomy.theory")
              + _importers(graph, "pytest_anatomy.theory", "pytest_anatomy.gpu_query"))
    assert broken == []


def test_the_checker_sees_imports() -> None:
    """The graph is not vacuous: known edges are found, lazy ones only when asked for."""
    eager, lazy = _graph(top_level_only=True), _graph(top_level_only=False)
    assert "pytest_anatomy.kernels.access" in eager["pytest_anatomy.theory.kernels"]
    assert "pytest_anatomy.specs.catalog" in eager["pytest_anatomy.specs.model_config"]
    assert "pytest_anatomy.specs.hardware" in lazy["pytest_anatomy.options"] - eager["pytest_anatomy.options"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _imported_anywhere(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


ONE_PLACE = {  # a job -> the one module that does it, and how another module doing it shows
    "NVML queries": ("pytest_anatomy.gpu_query", lambda imported: any("pynvml" in n for n in imported)),
    "did-you-mean suggestions": ("pytest_anatomy.suggest", lambda imported: "difflib" in imported),
}


def test_each_job_has_one_module() -> None:
    doers = {job: sorted(m for m, (_, tree) in _sources().items() if shows(_imported_anywhere(tree)))
             for job, (_, shows) in ONE_PLACE.items()}
    assert doers == {job: [owner] for job, (owner, _) in ONE_PLACE.items()}


def test_nvidia_smi_is_run_from_one_module() -> None:
    running = sorted(m for m, (_, tree) in _sources().items() for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and node.value == "nvidia-smi")
    assert set(running) == {"pytest_anatomy.gpu_query"}


UNIT_NAMES = {"KiB", "MiB", "GiB", "KB", "MB", "GB", "TB", "KIB", "MIB", "GIB"}  # and the all-caps spellings


def test_unit_constants_are_defined_once() -> None:
    """units.py defines them; everyone else imports them (a module's own `GiB = 2**30` is how a
    GB/GiB mix-up starts)."""
    defined = sorted(f"{m}: {target.id}" for m, (_, tree) in _sources().items() if m != "pytest_anatomy.units"
                     for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                     for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(target, ast.Name) and target.id in UNIT_NAMES)
    assert defined == []


MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
# Modules and functions allowed over the limits, each with why. Keep it short: split instead.
OVER_THE_LIMIT: dict[str, str] = {}


def test_modules_and_functions_stay_small() -> None:
    """A module over 500 lines does more than one job; a function over 80 lines hides its steps."""
    over = []
    for module, (path, tree) in _sources().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES and module not in OVER_THE_LIMIT:
            over.append(f"{module}: {lines} lines")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES and f"{module}:{node.name}" not in OVER_THE_LIMIT:
                    over.append(f"{module}:{node.name}: {length} lines")
    assert over == [], over
    assert len(_sources()) > 100  # the walk found the package


# The test suites (every tests_*/) and scripts/ keep to the same module size; functions there are not checked.
# Modules allowed over it, by path, each with why. Keep it short: split instead.
OVERSIZED_SUITE_MODULES: dict[str, str] = {
    # Not yet split. (Not a device script kept whole so that one file travels: it imports pytest_anatomy from the
    # checkout a device call carries whole, putting the repository root on sys.path.)
    "scripts/device/latency_plan.py": "not yet split",
}


def _suite_and_script_modules() -> list[Path]:
    suites = [p for suite in sorted(ROOT.glob("tests_*")) if suite.is_dir() for p in sorted(suite.rglob("*.py"))]
    return suites + sorted((ROOT / "scripts").rglob("*.py"))


def test_suite_and_script_modules_stay_small() -> None:
    """Every module of tests_*/ and scripts/ is under 500 lines (a long findings table is split by topic, as
    tests_kernels/kernel_findings.py was), except the exemptions above, each of which still exists."""
    over, modules = [], _suite_and_script_modules()
    for path in modules:
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES and rel not in OVERSIZED_SUITE_MODULES:
            over.append(f"{rel}: {lines} lines")
    assert over == [], over
    assert [m for m in OVERSIZED_SUITE_MODULES if not (ROOT / m).is_file()] == []
    assert len(modules) > 200  # the walk found the suites and scripts


MAX_TEST_ID = 120


def test_test_ids_stay_short(request: pytest.FixtureRequest) -> None:
    """Every collected test's id (its name with parameters, as -v, JUnit and the report show it)
    is under 120 characters: a long one is a parameter's repr, unreadable anywhere; give `ids=`.
    The whole test command's own collection is read where this session collected every suite (an
    xdist worker collects them all too); a narrower run collects them in a subprocess (~20 s)."""
    ids = [item.nodeid for item in request.session.items]
    if len(ids) <= 1000:
        collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                                   cwd=ROOT, capture_output=True, text=True, timeout=600)
        ids = [line for line in collected.stdout.splitlines() if "::" in line]
        assert len(ids) > 1000, collected.stdout[-2000:] + collected.stderr[-2000:]  # every suite was collected
    long_ids = [i for i in ids if len(i.rsplit("::", 1)[-1]) >= MAX_TEST_ID]
    assert long_ids == []


def _finding_call_nodes(tree: ast.Module) -> list[ast.Call]:
    """The `pytest.mark.finding(...)` / `mark.finding(...)` calls in a module."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "finding" and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "mark"]


def _finding_calls(tree: ast.Module) -> list[int]:
    """Line numbers of `pytest.mark.finding(...)` / `mark.finding(...)` calls in a module."""
    return [node.lineno for node in _finding_call_nodes(tree)]


def test_findings_live_in_their_suites_findings_module() -> None:
    """A finding is data: its definition (id, band, reason) sits in the suite's *_findings.py, never inline
    in a test module, so one review reads every explanation and tests can check the numbers it quotes."""
    inline = []
    for suite in sorted(ROOT.glob("tests_*")):
        if suite.name == "tests_plugin":  # pytester tests write finding marks into the files they run
            continue
        for path in sorted(suite.glob("test_*.py")):
            inline += [f"{path.relative_to(ROOT)}:{line}" for line in _finding_calls(ast.parse(path.read_text()))]
    assert not inline, f"finding marks defined in test modules (move them to the suite's findings module): {inline}"
    # the checker sees a definition when there is one
    assert _finding_calls(ast.parse("import pytest\nM = pytest.mark.finding('x', reason='r')\n")) == [2]


def _bandless_finding_calls(tree: ast.Module) -> list[int]:
    """Line numbers of finding mark calls that state no band_from= (a call forwarding **kwargs is judged where those
    were written)."""
    # one walk per module: checking each call against a fresh walk made this test quadratic (15 s of the suite)
    return [node.lineno for node in _finding_call_nodes(tree)
            if not any(k.arg in ("band_from", None) for k in node.keywords)]


def test_every_finding_states_its_band_source() -> None:
    """Issue 10 item 3: a finding without a band accepts any gap, so every finding mark of every suite says where its
    band comes from (band_from=; the band itself is expected= or the test's finding_band=, which the plugin checks
    when it judges). The plugin refuses such a mark when its test runs; this reads every declaration, run or not."""
    bandless = []
    for suite in sorted(ROOT.glob("tests_*")):
        if suite.name == "tests_plugin":  # pytester tests write (bad) finding marks into the files they run
            continue
        for path in sorted(suite.rglob("*.py")):
            bandless += [f"{path.relative_to(ROOT)}:{line}" for line in _bandless_finding_calls(ast.parse(path.read_text()))]
    assert not bandless, ("finding marks without band_from= (give the band and its source; checked-run, its reason "
                          f"naming the second run that would replace it, where nothing else exists): {bandless}")
    # the checker sees a bandless declaration when there is one, and not a sourced or forwarded one
    assert _bandless_finding_calls(ast.parse("import pytest\nM = pytest.mark.finding('x', reason='r')\n")) == [2]
    assert _bandless_finding_calls(ast.parse("import pytest\nM = pytest.mark.finding('x', reason='r', "
                                             "band_from='other-runs')\nN = pytest.mark.finding(*a, **k)\n")) == []


RECORDING_READERS = {"candidates", "list_recordings", "load_file"}
# Live tests that read other sessions' recordings on purpose, each with why that is safe live.
READS_HISTORY_LIVE: dict[str, str] = {
    "test_tiny_models_overhead_as_an_additive_term": (
        "its band is every other session's b=1 residual; a live results folder has none, so the band is None and the "
        "finding mark's own stands (and the live plans run no tiny twin since 2026-12-02: it skips live)"),
}


def _reads_every_recording_live(tree: ast.Module) -> list[str]:
    """Test functions marked gpu that read recordings themselves (recordings.candidates / list_recordings / load_file,
    not through `measured`) without a `targets` marker (on the function or the module's pytestmark), or with one that
    lets the live target in: such a test runs only live, against a results folder that holds only that session's runs,
    and is skipped in replay, so CPU CI never checks it."""
    module_targets = [ast.unparse(n.value) for n in tree.body if isinstance(n, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
                      and "targets" in ast.unparse(n.value)]
    bad = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")):
        decorators = [ast.unparse(d) for d in fn.decorator_list]
        # the closest marker wins (item.get_closest_marker): the function's own, else the module's pytestmark
        targets = [d for d in decorators if "mark.targets" in d] or module_targets
        reads = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in RECORDING_READERS
                    and "recordings" in ast.unparse(n.func.value) for n in ast.walk(fn))
        if reads and any("mark.gpu" in d for d in decorators) and (
                not targets or any("live=True" in d for d in targets)):
            bad.append(fn.name)
    return bad


def test_tests_that_read_the_recorded_history_never_run_live() -> None:
    """A table check recomputed from every recorded session must be replay-only (targets(live=False)): the fourteenth
    H200 visit's full session (2026-12-03 12:13) failed twice on one that was not, and CPU CI had skipped it."""
    bad = [f"{path.relative_to(ROOT)}::{name}" for suite in sorted(ROOT.glob("tests_*"))
           for path in sorted(suite.glob("test_*.py")) for name in _reads_every_recording_live(ast.parse(path.read_text()))
           if name not in READS_HISTORY_LIVE]
    assert bad == [], f"mark them @pytest.mark.targets(recorded=..., live=False): {bad}"
    # the checker sees the case it is for
    case = ("import pytest\n@pytest.mark.gpu\ndef test_t(request):\n    recordings.candidates(1, 2, 3, 4)\n")
    assert _reads_every_recording_live(ast.parse(case)) == ["test_t"]
    marked = case.replace("@pytest.mark.gpu\n", "@pytest.mark.gpu\n@pytest.mark.targets(recorded='x', live=False)\n")
    assert _reads_every_recording_live(ast.parse(marked)) == []
    # the module-level marker that let the live target in (test_latency_sequence_cost.py before the fix)
    live_module = case.replace("import pytest\n", "import pytest\npytestmark = pytest.mark.targets(recorded='x', live=True)\n")
    assert _reads_every_recording_live(ast.parse(live_module)) == ["test_t"]
    assert _reads_every_recording_live(ast.parse(live_module.replace("@pytest.mark.gpu\n", "@pytest.mark.gpu\n"
                                                                     "@pytest.mark.targets(recorded='x')\n"))) == []
