"""Deployment workloads as data: a JSON file -> a seeded list of requests, shared by the load driver
(token ids to send) and the serving simulator (lengths and prefix hits), so both see the same requests.

A file (tests_deployment/workloads/*.json):

    {"name": "chat", "description": "...", "seed": 7, "num_requests": 200,
     "arrival": {"process": "closed", "concurrency": 32} | {"process": "poisson", "rate": 6.0},
     "suffix_len": {"distribution": "lognormal", "median": 300, "sigma": 0.6, "min": 16, "max": 2000},
     "output_len": {"distribution": "lognormal", "median": 180, "sigma": 0.5, "min": 16, "max": 600},
     "shared_prefix": {"tokens": 256, "fraction": 0.9, "count": 1},
     "slo": {"ttft_ms": 500, "itl_ms": 30}}

A request's prompt is, with probability `fraction`, one of `count` shared system prompts of `tokens`
tokens followed by its own suffix (suffix_len); otherwise only the suffix. Token ids are uniform in
[VOCAB_LOW, VOCAB_HIGH): a suffix never repeats a prefix block, so only the shared prefix can hit.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from pytest_anatomy.specs.workload import poisson_arrivals

# Token ids drawn from a range every modelled vocabulary holds (Qwen2.5: 152k, Llama 3.1: 128k),
# above the ids tokenizers reserve for specials.
VOCAB_LOW, VOCAB_HIGH = 1000, 30000


class WorkloadError(ValueError):
    """A workload file that cannot be used; the message names the problem and the fix."""


@dataclass(frozen=True)
class LengthDist:
    median: float
    sigma: float
    low: int
    high: int

    def draw(self, rng: random.Random) -> int:
        """Lognormal around the median, rounded and clipped to [low, high]."""
        x = rng.lognormvariate(math.log(self.median), self.sigma) if self.sigma > 0 else self.median
        return int(min(self.high, max(self.low, round(x))))


@dataclass(frozen=True)
class Slo:
    ttft_ms: float
    itl_ms: float

    def met(self, ttft_s: float, tpot_s: float) -> bool:
        """A request meets the SLO when its TTFT and its mean time per output token are within it."""
        return ttft_s * 1e3 <= self.ttft_ms and tpot_s * 1e3 <= self.itl_ms


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    seed: int
    num_requests: int
    process: str  # "closed" | "poisson"
    concurrency: int | None
    rate: float | None
    suffix_len: LengthDist
    output_len: LengthDist
    prefix_tokens: int
    prefix_fraction: float
    prefix_count: int
    slo: Slo
    description: str = ""

    @property
    def max_request_tokens(self) -> int:
        return self.prefix_tokens + self.suffix_len.high + self.output_len.high


@dataclass(frozen=True)
class Request:
    prompt: tuple[int, ...]  # token ids
    output_len: int
    prefix: int | None  # which shared prefix it carries, None for none
    prefix_len: int  # tokens of that prefix (0 for none)


@dataclass(frozen=True)
class GeneratedWorkload:
    spec: WorkloadSpec
    requests: tuple[Request, ...]
    arrivals: tuple[float, ...] | None  # Poisson send offsets, None for a closed loop
    prefixes: tuple[tuple[int, ...], ...]  # the shared prefixes: the warm-up sends each once

    @property
    def prompt_lens(self) -> tuple[int, ...]:
        return tuple(len(r.prompt) for r in self.requests)

    @property
    def output_lens(self) -> tuple[int, ...]:
        return tuple(r.output_len for r in self.requests)


def load(path: str | Path) -> WorkloadSpec:
    """Read and check a workload file; WorkloadError (one line: what is wrong, how to fix it) otherwise."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise WorkloadError(f"workload file {p} not found; pass a path to a workload JSON or a name in "
                            "tests_deployment/workloads/ (chat, rag)") from None
    except IsADirectoryError:  # its errno tuple read "not readable JSON ([Errno 21] Is a directory: ...)"
        raise WorkloadError(f"workload file {p} is a folder; pass a workload JSON file or a name in "
                            "tests_deployment/workloads/ (chat, rag)") from None
    except OSError as exc:
        raise WorkloadError(f"workload file {p} cannot be read ({exc.strerror or exc}); fix its permissions") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkloadError(f"workload file {p} is not readable JSON ({exc}); fix the file") from None
    try:
        return parse(data)
    except WorkloadError as exc:
        raise WorkloadError(f"workload file {p}: {exc}") from None


def parse(data: Any) -> WorkloadSpec:
    if not isinstance(data, dict):
        raise WorkloadError("must be a JSON object with name, seed, num_requests, arrival, suffix_len, output_len, slo")
    try:
        arrival, prefix, slo = data["arrival"], data.get("shared_prefix") or {}, data["slo"]
        spec = WorkloadSpec(
            name=str(data["name"]), seed=_int(data["seed"], "seed"),
            num_requests=_int(data["num_requests"], "num_requests"), process=str(arrival["process"]),
            concurrency=_opt(arrival.get("concurrency"), "arrival.concurrency", _int),
            rate=_opt(arrival.get("rate"), "arrival.rate", _num), suffix_len=_dist(data["suffix_len"], "suffix_len"),
            output_len=_dist(data["output_len"], "output_len"),
            prefix_tokens=_int(prefix.get("tokens", 0), "shared_prefix.tokens"),
            prefix_fraction=_num(prefix.get("fraction", 0.0), "shared_prefix.fraction"),
            prefix_count=_int(prefix.get("count", 1), "shared_prefix.count"),
            slo=Slo(_num(slo["ttft_ms"], "slo.ttft_ms"), _num(slo["itl_ms"], "slo.itl_ms")),
            description=str(data.get("description", "")))
    except WorkloadError:
        raise
    except KeyError as exc:
        raise WorkloadError(f"missing field {exc.args[0]!r}; see pytest_anatomy/specs/workload_file.py") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise WorkloadError(f"a field has the wrong type ({exc}); numbers and objects as in the examples") from None
    _check(spec)
    return spec


def _int(value: Any, name: str) -> int:
    """A JSON integer, as written. int() coerced what was not one: true was 1 request, 96.7 was 96, "96" was 96."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"{name} has the wrong type: {value!r} is not a JSON integer; write it as in "
                            "tests_deployment/workloads/chat.json")
    return value


def _num(value: Any, name: str) -> float:
    """A JSON number, as written: float() took true as 1 ms and "400" as 400."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkloadError(f"{name} has the wrong type: {value!r} is not a JSON number; write it as in "
                            "tests_deployment/workloads/chat.json")
    return float(value)


def _opt(value: Any, name: str, kind: Callable[[Any, str], Any]) -> Any:
    return None if value is None else kind(value, name)


def _dist(d: dict[str, Any], name: str) -> LengthDist:
    if d.get("distribution", "lognormal") != "lognormal":
        raise WorkloadError(f"{name}.distribution {d.get('distribution')!r} is not supported; use 'lognormal' "
                            "(sigma 0 for a fixed length)")
    dist = LengthDist(_num(d["median"], f"{name}.median"), _num(d.get("sigma", 0.0), f"{name}.sigma"),
                      _int(d["min"], f"{name}.min"), _int(d["max"], f"{name}.max"))
    if not 1 <= dist.low <= dist.median <= dist.high or dist.sigma < 0:
        raise WorkloadError(f"{name} needs 1 <= min <= median <= max and sigma >= 0, got {d}")
    return dist


# Bounds far above any workload here, below what would make generation or simulation run for hours
# (the simulator prices every token of every request: about a microsecond each).
MAX_REQUESTS = 100_000
MAX_TOKENS = 1_000_000


def _check(s: WorkloadSpec) -> None:
    if not 1 <= s.num_requests <= MAX_REQUESTS:
        raise WorkloadError(f"num_requests must be in [1, {MAX_REQUESTS:,}], got {s.num_requests}")
    if max(s.suffix_len.high, s.output_len.high, s.prefix_tokens) > MAX_TOKENS or s.prefix_count > 1000:
        raise WorkloadError(f"lengths must be <= {MAX_TOKENS:,} tokens and shared_prefix.count <= 1,000")
    if s.process == "closed" and (s.concurrency is None or s.concurrency < 1):
        raise WorkloadError("a closed-loop arrival needs concurrency >= 1")
    if s.process == "poisson" and (s.rate is None or not s.rate > 0 or math.isinf(s.rate)):
        raise WorkloadError("a poisson arrival needs a finite rate > 0 (requests/s)")
    if s.process not in ("closed", "poisson"):
        raise WorkloadError(f"arrival.process {s.process!r} is not 'closed' or 'poisson'")
    if s.prefix_tokens < 0 or not 0 <= s.prefix_fraction <= 1 or s.prefix_count < 1:
        raise WorkloadError("shared_prefix needs tokens >= 0, fraction in [0, 1], count >= 1")
    if not (s.slo.ttft_ms > 0 and s.slo.itl_ms > 0):
        raise WorkloadError("slo.ttft_ms and slo.itl_ms must be > 0")


def generate(spec: WorkloadSpec) -> GeneratedWorkload:
    """The requests of `spec`, fully determined by its seed (one Random per purpose, so adding a
    field to one stream never shifts another)."""
    prefix_rng = random.Random(f"{spec.seed}/prefix")
    prefixes = tuple(tuple(prefix_rng.randrange(VOCAB_LOW, VOCAB_HIGH) for _ in range(spec.prefix_tokens))
                     for _ in range(spec.prefix_count)) if spec.prefix_tokens else ()
    rng = random.Random(f"{spec.seed}/requests")
    requests = []
    for _ in range(spec.num_requests):
        carries = bool(prefixes) and rng.random() < spec.prefix_fraction
        which = rng.randrange(len(prefixes)) if carries else None
        suffix = tuple(rng.randrange(VOCAB_LOW, VOCAB_HIGH) for _ in range(spec.suffix_len.draw(rng)))
        head = prefixes[which] if which is not None else ()
        requests.append(Request(head + suffix, spec.output_len.draw(rng), which, len(head)))
    arrivals = (tuple(poisson_arrivals(spec.rate, spec.num_requests, spec.seed)) if spec.process == "poisson"
                and spec.rate is not None else None)
    return GeneratedWorkload(spec, tuple(requests), arrivals, prefixes)


def share(work: GeneratedWorkload, replicas: int, index: int) -> GeneratedWorkload:
    """What replica `index` of `replicas` identical engines serves when a router deals the requests
    round-robin: every replicas-th request (and arrival), a closed loop's users split as evenly."""
    if not 0 <= index < replicas:
        raise ValueError(f"replica {index} of {replicas}")
    spec = work.spec
    users = None if spec.concurrency is None else max(1, -(-spec.concurrency // replicas))
    reqs = work.requests[index::replicas]
    return GeneratedWorkload(replace(spec, num_requests=len(reqs), concurrency=users), reqs,
                             None if work.arrivals is None else work.arrivals[index::replicas], work.prefixes)


def goodput(slo: Slo, ttft_s: tuple[float, ...], e2e_s: tuple[float, ...], output_lens: tuple[int, ...],
            duration_s: float) -> float:
    """Requests per second that met the SLO (TTFT, and TPOT = (e2e - TTFT) / (O - 1)); one definition
    for the simulator and the measurement."""
    if not len(ttft_s) == len(e2e_s) == len(output_lens) or duration_s <= 0:
        raise ValueError("goodput needs one TTFT, e2e and output length per request and a duration > 0")
    met = sum(slo.met(t, (e - t) / max(1, o - 1)) for t, e, o in zip(ttft_s, e2e_s, output_lens))
    return met / duration_s
