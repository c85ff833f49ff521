"""Fixtures of the capacity suite: live engine starts for the ledger (the seed's model is the
top-level conftest's `qwen`)."""

from __future__ import annotations

import pytest


# --- vLLM's memory ledger: one live engine start per run and session -------------------------------
@pytest.fixture(scope="session")
def vllm_ledger_live(tmp_path_factory: pytest.TempPathFactory):
    """Factory `make(run_id, model, settings, held_out)` -> zero-argument callable for `measured(live=...)`.

    The callable starts vLLM once (pytest_anatomy.measure.vllm_engine, bounded subprocess, dummy
    weights from the catalog config.json) with the recording's own settings and maps the result
    onto the recording's measurement names with the device importer's mapping, so a live run and
    a replay are compared by the same tests. `measured` calls it once per run and session (its
    session cache, failures included), however many tests read the ledger. A failed start raises
    with the engine's error class, its message and the log tail, instead of a silently empty
    measurement."""
    def make(run_id: str, model: str, settings: dict, held_out: bool):
        def live() -> dict:
            import importlib.util

            if importlib.util.find_spec("vllm") is None:  # a GPU box without the gpu extra
                pytest.skip("a live GPU was detected but vLLM is not importable here: `pip install -e '.[gpu]'`, "
                            "or replay the recordings with --anatomy-source=recorded")
            from pytest_anatomy.importers.device import _capacity_measurements
            from pytest_anatomy.measure.vllm_engine import EngineSettings, measure_memory_ledger
            from pytest_anatomy.specs import catalog

            config = {k: v for k, v in catalog.load_config(model).items()
                      if not k.startswith("_") or k == "_name_or_path"}
            work = tmp_path_factory.mktemp(f"vllm-{run_id}".replace(".", "-"))
            result = measure_memory_ledger(config, EngineSettings.from_dict(settings), timeout_s=600,
                                           workdir=work / "run", model_dir=work / "model")
            if result.get("status") != "ok":
                tail = "\n".join((result.get("log_tail") or [])[-40:])
                raise RuntimeError(f"vLLM engine start for {run_id} failed ({result.get('error_class')}): "
                                   f"{result.get('error_message')}\n--- log tail ---\n{tail}")
            versions = result.get("versions") or {}
            return {
                "measurements": _capacity_measurements(result),
                "provenance": {"engine": "vllm", "engine_version": versions.get("vllm"), "model": model,
                               "settings": settings, "held_out": held_out, "status": result.get("status")},
                "data": {"run": {"id": run_id, "model": model, "held_out": held_out, "settings": settings,
                                 "result": result}},
            }
        return live

    return make


def pytest_anatomy_live_plan(config: pytest.Config, items: list[pytest.Item]) -> list[dict]:
    """One vLLM engine start per live run the selected capacity tests read."""
    import capacity_live_plan as live_plan

    runs: dict[str, tuple[str, bool]] = {}
    for item in items:
        run = getattr(item, "callspec", None) and item.callspec.params.get("run")
        if "tests_capacity" in item.nodeid and run is not None and getattr(run, "live", False):
            runs.setdefault(run.run_id, (run.model, bool(run.settings.get("enforce_eager"))))
    estimates = live_plan.start_estimates(list(runs.values()))
    return [{"suite": "capacity", "what": f"vLLM engine start {rid}", "estimate_s": lo, "estimate_high_s": hi}
            for rid, (lo, hi) in zip(runs, estimates)]
