"""What the capacity suite measures live on the detected card: vLLM engine starts chosen by our
own theory, so a 24 GB card starts the models that fit it and an H200 the larger ones too.

A candidate is kept when the predicted ledger (theory/vllm_memory.py: weights as loaded, the
profile run's activation peak, non-torch growth) leaves a KV pool of at least one max-length
request on the card's budget: the same arithmetic the planner answers with. Candidates are
ordered by value per second of engine start: the fast subset (`-m "gpu and not slow"`) is the
first, a mid-size model eager; the rest are marked slow. Each start is ~30-40 s eager and ~70-80 s
with CUDA graphs on an H200 (vLLM import included: the engine runs in its own subprocess), more for
the first start on a fresh machine and a new architecture's first (start_estimates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_anatomy.specs.model import load_model
from pytest_anatomy.theory.capacity import NotModeled
from pytest_anatomy.theory.vllm_memory import predict_ledger

# Engine start times, import included, FITTED (least squares on the start kinds below) on the eight starts of
# each of the two full live sessions results/h200/live-runs/20261201T235925Z.full.log.xz (873 s in all) and
# 20261202T022605Z.full.log.xz (957 s, a CPU ~20% slower at imports and engine starts): (faster, slower) machine.
EAGER_START_S = (32.1, 39.3)  # a Qwen2 eager start after the first (0.5B, 14B, 32B, 7B at 32k: 26-48 s)
FIRST_START_EXTRA_S = (42.5, 53.0)  # the session's first start on a fresh machine: cold caches (75 s and 92 s;
#                                     the fast subsets run right after on the warm machine started in 30-38 s)
NEW_ARCHITECTURE_EXTRA_S = (24.0, 23.8)  # the first start of another architecture (Llama 57/62 s, Mistral 55/64 s)
GRAPHS_START_S = (72.1, 81.7)  # torch.compile and CUDA graph capture (Qwen2.5-7B)


def start_estimates(models_and_eager: list[tuple[str, bool]]) -> list[tuple[float, float]]:
    """(faster, slower machine) seconds of each engine start, in the order the session makes them."""
    from pytest_anatomy.specs import catalog

    seen: set[str] = set()
    out = []
    for i, (model, eager) in enumerate(models_and_eager):
        arch = str((catalog.load_config(model).get("architectures") or [model])[0])
        parts = [EAGER_START_S if eager else GRAPHS_START_S]
        parts += [FIRST_START_EXTRA_S] if i == 0 else []
        parts += [NEW_ARCHITECTURE_EXTRA_S] if seen and arch not in seen else []
        seen.add(arch)
        out.append((sum(p[0] for p in parts), sum(p[1] for p in parts)))
    return out


@dataclass(frozen=True)
class Candidate:
    model: str
    settings: dict[str, Any]
    slow: bool
    min_gpus: int = 1

    @property
    def estimate_s(self) -> float:
        """A warm start's time on the faster machine (start_estimates prices a session's starts in order)."""
        return (EAGER_START_S if self.settings.get("enforce_eager") else GRAPHS_START_S)[0]


def _s(util: float, length: int, eager: bool = True, tp: int = 1) -> dict[str, Any]:
    return {"gpu_memory_utilization": util, "max_model_len": length, "max_num_seqs": None,
            "max_num_batched_tokens": None, "kv_cache_dtype": "auto", "enforce_eager": eager, "block_size": None,
            "tensor_parallel_size": tp, "kv_cache_memory_bytes": None, "enable_prefix_caching": False,
            "dtype": "bfloat16", "seed": 0, "model_runner": None}


CANDIDATES: tuple[Candidate, ...] = (
    Candidate("qwen2.5-7b", _s(0.9, 8192), slow=False),
    Candidate("qwen2.5-0.5b", _s(0.9, 8192), slow=True),
    Candidate("qwen2.5-14b", _s(0.9, 8192), slow=True),
    Candidate("qwen2.5-32b", _s(0.9, 8192), slow=True),
    Candidate("qwen2.5-7b", _s(0.9, 8192, eager=False), slow=True),
    # Added after the first live run (199 reconciliations, ~300 wanted): three more cheap eager starts,
    # other architectures and a long context, each a configuration the recordings already hold.
    # Mistral-7B-v0.3 (Llama's architecture again, 14 reconciliations) is out again: on the slower machine of
    # 2026-12-02 02:26 its start took 64 s and the session 957 s; without it --anatomy-plan's slower end is
    # ~828 s against ~891 s with it. Its recordings stay in the replay.
    Candidate("llama-3.1-8b", _s(0.9, 8192), slow=True),
    Candidate("qwen2.5-7b", _s(0.5, 32768), slow=True),
    Candidate("qwen2.5-7b", _s(0.9, 8192, tp=2), slow=True, min_gpus=2),
)


def run_id(c: Candidate) -> str:
    from pytest_anatomy.measure.vllm_engine import EngineSettings

    return f"{c.model}.{EngineSettings.from_dict(c.settings).tag()}"


def fits(c: Candidate, spec: Any) -> tuple[bool, str]:
    """(fits, why) from the predicted ledger on `spec`."""
    try:
        ledger = predict_ledger(load_model(c.model), spec, c.settings)
    except NotModeled as exc:
        return False, f"ledger not modeled: {exc}"
    except Exception as exc:  # noqa: BLE001 - a spec missing a fact cannot plan this start
        return False, f"cannot predict on {spec.name}: {exc}"
    blocks = ledger["num_gpu_blocks"].value
    need = -(-c.settings["max_model_len"] // 16)
    if blocks < need:
        return False, f"predicted {blocks:,.0f} KV blocks < {need:,} for one {c.settings['max_model_len']}-token request"
    return True, f"predicted {blocks:,.0f} KV blocks"


def plan(spec: Any, gpu_count: int) -> list[tuple[Candidate, str]]:
    """The candidates that fit `spec` with `gpu_count` GPUs, with the reason each was kept."""
    out = []
    for c in CANDIDATES:
        if c.min_gpus > gpu_count:
            continue
        ok, why = fits(c, spec)
        if ok:
            out.append((c, why))
    return out
