"""Import the seed study's published data (`shared/seed-results/`, `shared/seed/STUDY.md`)
into recordings under `results/rtx4090/`.

Two kinds of input, both kept byte-faithful:

1. Raw files (vLLM `bench serve --save-result` JSON, nvidia-smi fingerprints): each becomes a
   recording whose `data.payload` is the parsed file, unchanged, and whose provenance cites the
   upstream repository, the path and the file's sha256. Measurements are the payload's numbers
   converted to SI base units (ms -> s); nothing is retyped.
2. Facts the study quotes from logs that were not published (vLLM's start-up lines, its memory
   breakdown, the KV-linearity fit). Each is a `SeedQuote`: an exact excerpt of STUDY.md, checked
   to occur in the file (whitespace-normalised) before anything is written, and the numbers are
   parsed out of that excerpt by regular expressions; the excerpt travels in the recording.

Re-running the importer writes nothing that already exists (recordings are never overwritten).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pytest_anatomy import recordings
from pytest_anatomy.units import GiB, MiB

UPSTREAM = "github.com/daleiyang/llm-inference-anatomy"
STAGE01 = "01-decode-latency-anatomy/Results"
HARDWARE = "rtx4090"
ENGINE_VERSIONS = {"vllm": "0.27.1", "llama.cpp": "eab8ee41f"}
# Per round: driver, CUDA and date range from the seed's fingerprint files (STUDY.md "Setup").
ROUNDS = {
    1: {"driver": "590.48.01", "cuda": "13.1", "torch": "2.13.0+cu130"},
    2: {"driver": "580.159.03", "cuda": "13.0", "torch": "2.13.0+cu130"},
}
VLLM_SERVE = ("vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.90 --max-model-len 8192 "
              "--max-num-seqs 128 --no-enable-prefix-caching --enable-mfu-metrics")
LLAMA_SERVER = ("llama-server -m Qwen2.5-7B-Instruct-Q4_K_M.gguf -ngl 99 -np 64 -c 262144 --cache-ram 0 "
                "--slot-prompt-similarity 0 -b 2048 -ub 512 --metrics")
VLLM_SETTINGS = {"model": "qwen2.5-7b", "gpu_memory_utilization": 0.90, "max_model_len": 8192,
                 "max_num_seqs": 128, "enable_prefix_caching": False, "block_size": 16, "dtype": "bfloat16"}
LLAMA_SETTINGS = {"model": "qwen2.5-7b", "weights": "Q4_K_M", "n_ctx": 262144, "n_parallel": 64,
                  "type_k": "f16", "type_v": "f16", "n_batch": 2048, "n_ubatch": 512}

_BENCH_MS_FIELDS = ("ttft", "tpot", "itl", "e2el")
_BENCH_STATS = ("mean", "median", "std", "p50", "p90", "p99")


class SeedImportError(RuntimeError):
    pass


def read_text(path: Path) -> str:
    """A seed file as text; SeedImportError naming it when it is not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SeedImportError(f"{path}: not UTF-8 text (byte {exc.start}); the seed study's files are UTF-8: "
                              "pass an unmodified copy of seed-results") from None


def _read_payload(path: Path) -> dict[str, Any]:
    try:
        payload = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise SeedImportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); pass an unmodified copy "
                              "of seed-results") from None
    if not isinstance(payload, dict):
        raise SeedImportError(f"{path}: a bench result is a JSON object, got {type(payload).__name__}")
    return payload


def _num(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass(frozen=True)
class SeedQuote:
    """A fact quoted in STUDY.md, parsed from its exact excerpt."""

    name: str
    round: int
    excerpt: str
    pattern: str  # regex with named groups, matched against the excerpt
    units: dict[str, tuple[str, Callable[[float], float]]]  # group -> (unit, to SI)
    settings: dict[str, Any]
    engine: str = "vllm"
    command: str = VLLM_SERVE
    note: str = ""
    suite: str = "capacity"  # which results/rtx4090/<suite>/ folder the recording goes to

    def measurements(self) -> dict[str, dict[str, Any]]:
        m = re.search(self.pattern, _normalise(self.excerpt), re.S)
        if m is None:
            raise SeedImportError(f"{self.name}: pattern {self.pattern!r} does not match its own excerpt")
        out = {}
        for group, (unit, to_si) in self.units.items():
            out[group] = {"value": to_si(_num(m.group(group))), "unit": unit}
        return out


def _gib(x: float) -> float:
    return x * GiB


def _same(x: float) -> float:
    return x


def _ms(x: float) -> float:
    return x / 1000.0


def _thousand(x: float) -> float:
    return x * 1000.0


def _pp(x: float) -> float:
    return x / 100.0


def _giga(x: float) -> float:
    return x * 1e9


_STRESS = {**VLLM_SETTINGS, "concurrency": 64, "num_prompts": 128, "input_len": 6144, "output_len": 2048}


QUOTES: tuple[SeedQuote, ...] = (
    SeedQuote(
        "seed-r2-vllm-kv-pool", 2,
        '"Available KV cache memory: 6.41 GiB", "GPU KV cache size: 120,064 tokens" (= 7,504 blocks × 16), '
        '"Maximum concurrency for 8,192 tokens per request: 14.66x"',
        r"Available KV cache memory: (?P<available_kv_bytes>[\d.]+) GiB.*GPU KV cache size: (?P<kv_tokens>[\d,]+) tokens"
        r".*\(= (?P<num_gpu_blocks>[\d,]+) blocks.*Maximum concurrency for (?P<max_model_len>[\d,]+) tokens per request: "
        r"(?P<max_concurrency>[\d.]+)x",
        {"available_kv_bytes": ("B", _gib), "kv_tokens": ("tokens", _same), "num_gpu_blocks": ("blocks", _same),
         "max_model_len": ("tokens", _same), "max_concurrency": ("x", _same)},
        VLLM_SETTINGS,
        note="vLLM start-up log lines quoted in STUDY.md claim 1; num_gpu_blocks is the seed's own division "
             "(tokens / 16), not a log line. Available memory is rounded to 0.01 GiB by the log.",
    ),
    SeedQuote(
        "seed-r1-vllm-kv-pool", 1,
        "Round 1 pool was 4.64 GiB / 86,896 tokens / 10.61x",
        r"(?P<available_kv_bytes>[\d.]+) GiB / (?P<kv_tokens>[\d,]+) tokens / (?P<max_concurrency>[\d.]+)x",
        {"available_kv_bytes": ("B", _gib), "kv_tokens": ("tokens", _same), "max_concurrency": ("x", _same)},
        VLLM_SETTINGS,
        note="Round 1 summary of the same three log lines (STUDY.md claim 1); same command as round 2.",
    ),
    SeedQuote(
        "seed-r2-vllm-memory-ledger", 2,
        "Memory breakdown (round 2 log): weights+non-torch 14.49 GiB, peak activation 0.26 GiB, "
        "CUDA graphs 0.34 GiB, KV 6.41 GiB (sum 21.50 GiB vs 0.9×23.52 = 21.16 GiB budget)",
        r"weights\+non-torch (?P<consumed_bytes>[\d.]+) GiB, peak activation (?P<peak_activation_bytes>[\d.]+) GiB, "
        r"CUDA graphs (?P<cudagraph_bytes>[\d.]+) GiB, KV (?P<available_kv_bytes>[\d.]+) GiB.*"
        r"(?P<gpu_memory_utilization>0\.\d+)×(?P<total_memory_bytes>[\d.]+) =",
        {"consumed_bytes": ("B", _gib), "peak_activation_bytes": ("B", _gib), "cudagraph_bytes": ("B", _gib),
         "available_kv_bytes": ("B", _gib), "gpu_memory_utilization": ("", _same),
         "total_memory_bytes": ("B", _gib)},
        VLLM_SETTINGS,
        note="vLLM's 'Free memory on device ... Actual usage is ...' ledger line, as summarised in STUDY.md claim 2. "
             "Each GiB figure is rounded to 0.01 GiB.",
    ),
    SeedQuote(
        "seed-r1-vllm-memory-ledger", 1,
        "Round 1: 15.49 / 1.04 / 0.34 / 4.64 GiB",
        r"Round 1: (?P<consumed_bytes>[\d.]+) / (?P<peak_activation_bytes>[\d.]+) / (?P<cudagraph_bytes>[\d.]+) / "
        r"(?P<available_kv_bytes>[\d.]+) GiB",
        {"consumed_bytes": ("B", _gib), "peak_activation_bytes": ("B", _gib), "cudagraph_bytes": ("B", _gib),
         "available_kv_bytes": ("B", _gib)},
        VLLM_SETTINGS,
        note="Round 1 ledger (weights+non-torch / peak activation / CUDA graphs / KV), STUDY.md claim 2. "
             "Total memory as in round 2 (same card model): 23.52 GiB.",
    ),
    SeedQuote(
        "seed-r2-kv-linearity", 2,
        "KV usage is linear in input length (C=16): fitted slope 15.9928 tokens/token vs 16 "
        "theoretical (0.045%), R² = 0.99993; fit KV_tok = 15.99·L + 3,933 vs theory 16L + 4,096",
        r"\(C=(?P<concurrency>\d+)\): fitted slope (?P<slope_tokens_per_token>[\d.]+) tokens/token.*"
        r"R² = (?P<r_squared>[\d.]+); fit KV_tok = [\d.]+·L \+ (?P<intercept_tokens>[\d,]+)",
        {"concurrency": ("requests", _same), "slope_tokens_per_token": ("tokens/token", _same),
         "r_squared": ("", _same), "intercept_tokens": ("tokens", _same)},
        {**VLLM_SETTINGS, "concurrency": 16, "input_lens": [256, 512, 1024, 2048, 4096], "output_len": 256},
        note="Least-squares fit of peak KV tokens (from vllm:kv_cache_usage_perc sampled at 1 Hz) against input "
             "length over the round-2 length sweep, STUDY.md claim 3. The 1 Hz CSV itself was not published.",
    ),
    # --- latency facts from the unpublished 1 Hz metrics CSVs (STUDY.md claims 5, 8, 9) ---
    SeedQuote(
        "seed-r2-ttft-decomposition-c064", 2,
        "at C=64, queue 380 ms + prefill 479 ms + frontend residual 141 ms = 1,000 ms mean TTFT (queue 38%)",
        r"at C=(?P<concurrency>\d+), queue (?P<queue_s>[\d,]+) ms \+ prefill (?P<prefill_s>[\d,]+) ms \+ frontend "
        r"residual (?P<residual_s>[\d,]+) ms = (?P<ttft_mean_s>[\d,]+) ms mean TTFT",
        {"concurrency": ("requests", _same), "queue_s": ("s", _ms), "prefill_s": ("s", _ms),
         "residual_s": ("s", _ms), "ttft_mean_s": ("s", _ms)},
        {**VLLM_SETTINGS, "concurrency": 64, "input_len": 1024, "output_len": 256},
        note="Mean TTFT split by differencing vLLM's queue/prefill histograms (_sum/_count) over the C=64 window of "
             "the round-2 sweep, STUDY.md claim 8; the residual is bench-serve TTFT minus both (frontend).",
        suite="latency",
    ),
    SeedQuote(
        "seed-r2-ttft-decomposition-overload", 2,
        "queue 135,042 ms (98.9%) + prefill 1,097 ms (0.8%) + residual 418 ms (0.3%) = 136,557 ms mean TTFT; "
        "p50 TTFT 169 s; Little's-law check 36.4 waiting / 0.260 req/s = 140 s",
        r"queue (?P<queue_s>[\d,]+) ms \((?P<queue_share>[\d.]+)%\) \+ prefill (?P<prefill_s>[\d,]+) ms .*"
        r"residual (?P<residual_s>[\d,]+) ms .*= (?P<ttft_mean_s>[\d,]+) ms mean TTFT; p50 TTFT (?P<ttft_p50_s>\d+) s; "
        r"Little's-law check (?P<waiting_mean>[\d.]+) waiting / (?P<request_rate>[\d.]+) req/s = "
        r"(?P<littles_wait_s>\d+) s",
        {"queue_s": ("s", _ms), "queue_share": ("", _pp), "prefill_s": ("s", _ms), "residual_s": ("s", _ms),
         "ttft_mean_s": ("s", _ms), "ttft_p50_s": ("s", _same), "waiting_mean": ("requests", _same),
         "request_rate": ("requests/s", _same), "littles_wait_s": ("s", _same)},
        _STRESS,
        note="Round-2 overload run (6144/2048, C=64, 128 prompts), STUDY.md claim 8: TTFT split from the server's "
             "queue/prefill histograms, mean waiting requests from the 1 Hz vllm:num_requests_waiting samples.",
        suite="latency",
    ),
    SeedQuote(
        "seed-r2-overload-scheduler", 2,
        "running mean 15.65 (peak 19) of 64; 38 preemptions (round 1: 37), each at KV ≈ 99.58%, "
        "each freeing ~5.20 pp ≈ 6,242 tokens",
        r"running mean (?P<running_mean>[\d.]+) \(peak (?P<running_peak>\d+)\) of \d+; (?P<preemptions>\d+) "
        r"preemptions .*KV ≈ (?P<kv_usage_at_preemption>[\d.]+)%.*≈ (?P<tokens_freed_per_preemption>[\d,]+) tokens",
        {"running_mean": ("requests", _same), "running_peak": ("requests", _same), "preemptions": ("events", _same),
         "kv_usage_at_preemption": ("", _pp), "tokens_freed_per_preemption": ("tokens", _same)},
        _STRESS,
        note="vllm:num_requests_running and vllm:num_preemptions sampled at 1 Hz over the round-2 overload run, "
             "STUDY.md claim 9 (the CSV was not published).",
        suite="latency",
    ),
    SeedQuote(
        "seed-r1-overload-scheduler", 1,
        "38 preemptions (round 1: 37)",
        r"\(round 1: (?P<preemptions>\d+)\)",
        {"preemptions": ("events", _same)},
        _STRESS,
        note="Round 1's preemption count in the same overload workload (smaller pool: 86,896 tokens), "
             "STUDY.md claim 9.",
        suite="latency",
    ),
    SeedQuote(
        "seed-r2-overload-recompute", 2,
        "`estimated_flops` exceeds the calibrated model by +29.2% (≈304k recomputed tokens; "
        "independent 38 × 6,242 = 237k)",
        r"\+(?P<flops_excess>[\d.]+)% \(≈(?P<recomputed_tokens_from_flops>\d+)k recomputed tokens; independent "
        r"\d+ × [\d,]+ = (?P<recomputed_tokens_from_preemptions>\d+)k\)",
        {"flops_excess": ("", _pp), "recomputed_tokens_from_flops": ("tokens", _thousand),
         "recomputed_tokens_from_preemptions": ("tokens", _thousand)},
        _STRESS,
        note="Two estimates of the tokens recomputed after preemption in the round-2 overload run, STUDY.md claim 9 "
             "(rounded to thousands by the study).",
        suite="latency",
    ),
    SeedQuote(
        "seed-r2-estimated-flops", 2,
        "Predicted 67.63 GFLOP per output token for 1024/256 vs vLLM's "
        "`estimated_flops` counter 66.3–68.6 across C=1..64",
        r"Predicted (?P<seed_prediction>[\d.]+) GFLOP .* counter "
        r"(?P<counter_min>[\d.]+)–(?P<counter_max>[\d.]+) across",
        {"seed_prediction": ("FLOP", _giga), "counter_min": ("FLOP", _giga), "counter_max": ("FLOP", _giga)},
        {**VLLM_SETTINGS, "input_len": 1024, "output_len": 256, "concurrency": [1, 2, 4, 8, 16, 32, 64]},
        note="vLLM's --enable-mfu-metrics counter vllm:estimated_flops_per_gpu_total divided by output tokens per "
             "concurrency window, round 2, STUDY.md claim 5; only the range over the 7 windows is given.",
        suite="latency",
    ),
)


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def verify_quote(quote: SeedQuote, study_text: str) -> None:
    if _normalise(quote.excerpt) not in _normalise(study_text):
        raise SeedImportError(
            f"{quote.name}: excerpt not found in STUDY.md (whitespace-normalised):\n  {quote.excerpt!r}\n"
            "The importer only records text the study actually contains; fix the excerpt, not the numbers."
        )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _bench_measurements(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for metric in _BENCH_MS_FIELDS:
        for stat in _BENCH_STATS:
            key = f"{stat}_{metric}_ms"
            if isinstance(payload.get(key), (int, float)):
                out[f"{stat}_{metric}"] = {"value": payload[key] / 1000.0, "unit": "s"}
    for key, unit in (("duration", "s"), ("completed", "requests"), ("failed", "requests"),
                      ("total_input_tokens", "tokens"), ("total_output_tokens", "tokens"),
                      ("request_throughput", "requests/s"), ("output_throughput", "tokens/s"),
                      ("total_token_throughput", "tokens/s"), ("max_concurrency", "requests"),
                      ("num_prompts", "requests"), ("max_concurrent_requests", "requests")):
        if isinstance(payload.get(key), (int, float)) and not isinstance(payload.get(key), bool):
            out[key] = {"value": float(payload[key]), "unit": unit}
    return out


def _bench_name(rel: Path) -> tuple[int, str]:
    """Results/Round2/03-perf-test/len_1024.json -> (2, 'seed-r2-len-1024')."""
    rnd = int(rel.parts[0].removeprefix("Round"))
    folder = rel.parts[1].split("-")[0]
    stem = rel.stem.replace("_", "-").lstrip("-")
    if stem.startswith("vllm-"):
        stem = stem[len("vllm-"):]
    return rnd, f"seed-r{rnd}-{folder}-{stem}"


def _date_of(payload: dict[str, Any]) -> str:
    # bench files carry "date": "20260825-220338" (local time of the client; recorded as given).
    d = str(payload.get("date", ""))
    m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})", d)
    if not m:
        raise SeedImportError(f"unexpected bench date {d!r}")
    return "{}-{}-{}T{}:{}:{}Z".format(*m.groups())


def plan(seed_results: Path, study: Path) -> list[recordings.Recording]:
    """Everything the importer would write, without writing it."""
    if not (seed_results / STAGE01).is_dir():
        raise SeedImportError(f"{seed_results} has no {STAGE01}/; pass the seed-results folder (../shared/seed-results)")
    study_text = read_text(study)
    out: list[recordings.Recording] = []
    base = seed_results / STAGE01
    for path in sorted(base.rglob("*.json")):
        rel = path.relative_to(base)
        payload = _read_payload(path)
        try:
            rnd, name = _bench_name(rel)
            measurements = _bench_measurements(payload)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise SeedImportError(f"{path}: not a seed bench result where one is expected ({exc!r}); "
                                  "pass an unmodified copy of seed-results") from None
        if rnd not in ROUNDS:
            raise SeedImportError(f"{path}: round {rnd} is not one of the seed's rounds {sorted(ROUNDS)}")
        engine = "llama.cpp" if "llamacpp" in path.stem else "vllm"
        out.append(recordings.Recording(
            suite="latency", name=name, hardware=HARDWARE, recorded_at=_date_of(payload),
            provenance={
                "source": "seed", "hardware": HARDWARE, "gpu": "NVIDIA GeForce RTX 4090", **ROUNDS[rnd],
                "engine": engine, "engine_version": ENGINE_VERSIONS[engine], "round": rnd,
                "command": LLAMA_SERVER if engine == "llama.cpp" else VLLM_SERVE,
                "client": "vllm bench serve --dataset-name random --ignore-eos (see STUDY.md Setup)",
                "settings": LLAMA_SETTINGS if engine == "llama.cpp" else VLLM_SETTINGS,
                "origin": {"repo": UPSTREAM, "path": f"{STAGE01}/{rel}", "sha256": _sha256(path)},
            },
            measurements=measurements,
            data={"payload": payload},
        ))
    fp = base / "Round2/05-perf-test/fingerprint.txt"
    text = read_text(fp)
    m = re.search(r"memory\.used \[MiB\]\s*\n\s*(\d+) MiB", text)
    if m is None:
        raise SeedImportError(f"{fp}: no 'memory.used [MiB]' reading")
    out.append(recordings.Recording(
        suite="capacity", name="seed-r2-llamacpp-memory", hardware=HARDWARE, recorded_at="2026-08-25T18:52:01Z",
        provenance={
            "source": "seed", "hardware": HARDWARE, "gpu": "NVIDIA GeForce RTX 4090", **ROUNDS[2],
            "engine": "llama.cpp", "engine_version": ENGINE_VERSIONS["llama.cpp"], "round": 2,
            "command": LLAMA_SERVER, "settings": LLAMA_SETTINGS,
            "origin": {"repo": UPSTREAM, "path": f"{STAGE01}/Round2/05-perf-test/fingerprint.txt", "sha256": _sha256(fp)},
            "note": "nvidia-smi memory.used while llama-server was loaded (the fingerprint was taken with the server up)",
        },
        measurements={"gpu_memory_used_bytes": {"value": int(m.group(1)) * MiB, "unit": "B"}},
        data={"fingerprint": text},
    ))
    for q in QUOTES:
        verify_quote(q, study_text)
        out.append(recordings.Recording(
            suite=q.suite, name=q.name, hardware=HARDWARE,
            recorded_at="2026-08-24T00:00:00Z" if q.round == 1 else "2026-08-25T00:00:00Z",
            provenance={
                "source": "seed", "hardware": HARDWARE, "gpu": "NVIDIA GeForce RTX 4090", **ROUNDS[q.round],
                "engine": q.engine, "engine_version": ENGINE_VERSIONS[q.engine], "round": q.round,
                "command": q.command, "settings": q.settings,
                "origin": {"repo": UPSTREAM, "path": "shared/seed/STUDY.md (summary of the upstream README/reports)",
                           "excerpt": q.excerpt, "study_sha256": _sha256(study)},
                "note": q.note + " Date is the round's date (the day is not given for the log).",
            },
            measurements=q.measurements(),
            data={"excerpt": q.excerpt},
        ))
    return out


def run(seed_results: Path, study: Path, results_dir: Path, *, dry_run: bool = False) -> list[tuple[str, str]]:
    """Write every planned recording that does not exist yet; returns (status, path) pairs."""
    done = []
    for rec in plan(seed_results, study):
        status, target = recordings.save_if_new(results_dir, rec, dry_run=dry_run)
        done.append((status, str(target)))
    return done
