"""llama.cpp measured with its own tools: llama-bench, llama-server, llama-perplexity.

Everything runs as a subprocess of a built llama.cpp (binaries in ANATOMY_LLAMA_BIN, default
/root/llama/build/bin, where shared/device/llama/device_run.sh builds them); nothing here imports
anything heavy, and the standard library is enough (HTTP through urllib, threads for concurrent
requests). What each function returns is plain data (dicts of numbers, lists of samples) that a
device plan writes into a batch and the importer turns into recordings.

- `run_bench`: llama-bench -o json: per test the tokens/s of every repetition (`samples_ts`) and the
  run's build commit (-v, off by default, adds the load log but logs while timing).
- `LlamaServer`: start on a GGUF with the given flags (-lv 4 for the buffer lines), wait for /health,
  stop; `completion` (token-id prompt, the server's own `timings`), `stream_completion` (client-side
  TTFT and inter-token gaps from the SSE stream, the token count from the server's final timings and
  the client's beside it: `stream_result`), `metrics` (/metrics, Prometheus text), `slots`
  (/slots: each slot's n_ctx, `parse_slots`).
- `concurrency_sweep`: C identical token-id requests at once for each C, with TTFT, ITL and
  throughput per level (from the server's token count; the client's count and throughput kept beside it).
- `run_perplexity`: llama-perplexity's final estimate and per-chunk values.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pytest_anatomy.stats import median, percentile
from pytest_anatomy.measure.llama_log import LoadLog, parse_load_log

BIN_ENV = "ANATOMY_LLAMA_BIN"
DEFAULT_BIN = "/root/llama/build/bin"
BUILD_HINT = ("build llama.cpp with CUDA first: `bash <shared>/device/llama/device_run.sh` with STEPS= (or "
              "`bash <shared>/device/llama/build.sh <llama.cpp source> /root/llama/build llama llama-bench "
              "llama-quantize llama-server`), or point ANATOMY_LLAMA_BIN at a folder holding the binaries")


# The llama.cpp the device builds: the copy vendored in the llama-cpp-python 0.3.36 sdist (pinned by sha256 in
# shared/device/llama/make_carry.sh). Its commit is the sdist's .git/modules/vendor/llama.cpp/HEAD; the carry
# drops .git, so the binaries' own build_commit (llama-bench's JSON) may read "unknown". Every device plan that runs
# these tools writes it into its batch's provenance (versions["llama.cpp"]), and the importers into each recording.
ENGINE_BUILD = {"engine": "llama.cpp", "version": "llama-cpp-python 0.3.36 (vendored llama.cpp)", "ggml": "0.25.3",
                "source_commit": "0c1e57098bba43ac29e6e3b677cdceebdd22334f"}


class LlamaBinaryMissing(FileNotFoundError):
    """A llama.cpp tool that is not built here; the message carries the build command."""


class LlamaRunError(RuntimeError):
    """A llama.cpp tool that exited with an error; the message carries its log tail."""


def bin_dir() -> Path:
    return Path(os.environ.get(BIN_ENV) or DEFAULT_BIN)


def binary(name: str) -> Path:
    path = bin_dir() / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise LlamaBinaryMissing(f"{path} is not an executable llama.cpp tool: {BUILD_HINT}")
    return path


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


# --- llama-bench ------------------------------------------------------------------------------
def parse_bench_json(text: str) -> list[dict[str, Any]]:
    """llama-bench -o json: one object per test (pp512, tg128 ...), numbers as llama-bench wrote them."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LlamaRunError(f"llama-bench -o json printed no JSON ({exc.msg}); its output began: {text[:200]!r}") from None
    if not isinstance(doc, list):
        raise LlamaRunError(f"llama-bench -o json printed a {type(doc).__name__}, not a list of tests")
    return doc


def bench_summary(entry: dict[str, Any]) -> dict[str, Any]:
    """One llama-bench test as a named result: 'pp512' (prompt) or 'tg128' (generation)."""
    n_prompt, n_gen = int(entry.get("n_prompt", 0)), int(entry.get("n_gen", 0))
    test = f"pp{n_prompt}" if n_gen == 0 else f"tg{n_gen}" if n_prompt == 0 else f"pp{n_prompt}+tg{n_gen}"
    samples = [float(x) for x in entry.get("samples_ts") or []]
    return {
        "test": test, "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": int(entry.get("n_depth", 0)),
        "tok_per_s": {"median": median(samples) if samples else float(entry["avg_ts"]),
                      "mean": float(entry["avg_ts"]), "stddev": float(entry.get("stddev_ts", 0.0))},
        "samples": {"tok_per_s": samples},
        "settings": {k: entry.get(k) for k in ("n_batch", "n_ubatch", "flash_attn", "type_k", "type_v", "n_gpu_layers",
                                               "n_threads", "model_type", "model_size", "model_n_params")},
        "build": {"commit": entry.get("build_commit"), "number": entry.get("build_number")},
    }


def run_bench(model: str | Path, *, n_prompt: int = 512, n_gen: int = 128, repetitions: int = 5,
              flash_attn: bool = True, n_gpu_layers: int = 99, extra: tuple[str, ...] = (),
              verbose: bool = False, timeout_s: float = 300) -> dict[str, Any]:
    """llama-bench on one GGUF; returns {"tests": [...], "load_log": LoadLog as dict, "command": [...]}.

    verbose (-v) routes every library log line, debug included, to stderr while the repetitions are
    timed: off by default, so the timings carry no logging; the load log is then empty."""
    cmd = [str(binary("llama-bench")), "-m", str(model), "-ngl", str(n_gpu_layers), "-p", str(n_prompt),
           "-n", str(n_gen), "-r", str(repetitions), "-fa", "1" if flash_attn else "0", "-o", "json",
           *(["-v"] if verbose else []), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise LlamaRunError(f"llama-bench exited {proc.returncode}:\n{_tail(proc.stderr)}")
    tests = [bench_summary(e) for e in parse_bench_json(proc.stdout)]
    return {"tests": tests, "load_log": load_log_dict(parse_load_log(proc.stderr)), "command": cmd}


def binary_commit(tool: str = "llama-batched-bench") -> str | None:
    """The commit a common-args tool was built from (`--version`: "version: ... (build N, commit C)"), None when the
    tool is missing or says nothing parseable. llama-bench reports its own in -o json; the other tools only here."""
    try:
        proc = subprocess.run([str(binary(tool)), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (LlamaBinaryMissing, OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"commit ([0-9a-f]{7,40}|unknown)", proc.stdout + proc.stderr)
    return found.group(1) if found else None


# --- llama-batched-bench ----------------------------------------------------------------------
def parse_batched_jsonl(text: str) -> list[dict[str, Any]]:
    """llama-batched-bench --output-format jsonl: one object per (pp, tg, pl) row, as the tool wrote it."""
    rows = [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]
    if not rows:
        raise LlamaRunError("llama-batched-bench printed no JSONL row (was the context too small for every -npl?)")
    return rows


def batched_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows grouped by (pp, tg, pl): each timed quantity's repetitions (the -npl list repeats a batch) and median."""
    groups: dict[tuple[int, int, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((int(r["pp"]), int(r["tg"]), int(r["pl"])), []).append(r)
    out = []
    for (pp, tg, pl), rs in sorted(groups.items()):
        samples = {k: [float(r[k]) for r in rs] for k in ("t_pp", "speed_pp", "t_tg", "speed_tg")}
        out.append({"pp": pp, "tg": tg, "pl": pl, "n_kv": rs[0].get("n_kv"), "samples": samples,
                    "median": {k: median(v) for k, v in samples.items()}})
    return out


def run_batched_bench(model: str | Path, *, n_prompt: int = 512, n_gen: int = 128, sequences: tuple[int, ...] = (1, 64),
                      repetitions: int = 3, n_batch: int = 2048, n_ubatch: int = 512, n_gpu_layers: int = 99,
                      timeout_s: float = 300) -> dict[str, Any]:
    """llama-batched-bench on one GGUF: each batch in `sequences` timed `repetitions` times (the -npl list repeated),
    prompts not shared, one KV stream per sequence (-no-kvu), flash attention on, n_ctx for the largest batch."""
    n_ctx = max(sequences) * (n_prompt + n_gen)
    npl = ",".join(str(b) for _ in range(repetitions) for b in sequences)
    cmd = [str(binary("llama-batched-bench")), "-m", str(model), "-ngl", str(n_gpu_layers), "-fa", "on", "-no-kvu",
           "-c", str(n_ctx), "-b", str(n_batch), "-ub", str(n_ubatch), "-npp", str(n_prompt), "-ntg", str(n_gen),
           "-npl", npl, "--output-format", "jsonl"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise LlamaRunError(f"llama-batched-bench exited {proc.returncode}:\n{_tail(proc.stderr)}")
    return {"rows": batched_summary(parse_batched_jsonl(proc.stdout)), "load_log": load_log_dict(parse_load_log(proc.stderr)),
            "command": cmd}


def load_log_dict(log: LoadLog) -> dict[str, Any]:
    return {"buffers_bytes": {f"{kind}.{dev}": v for (kind, dev), v in sorted(log.buffers.items())},
            "kv": log.kv, "offloaded_layers": list(log.offloaded_layers) if log.offloaded_layers else None,
            "file_size_bytes": log.file_size_bytes, "file_bpw": log.file_bpw, "context": log.context}


# --- llama-server -----------------------------------------------------------------------------
def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text from /metrics -> {"llamacpp:prompt_tokens_total": 1234.0, ...} (no labels)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) >= 2 and "{" not in parts[0]:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return out


def parse_slots(doc: Any) -> dict[str, Any]:
    """/slots (server-context.cpp server_slot::to_json): per slot its id, `n_ctx` (the cells it may fill: n_ctx_seq,
    all of -c with --kv-unified), `is_processing` and, once it served a task, `next_token` with `n_decoded` (an object,
    or a one-element list of it). Returned: the slot count, each slot's n_ctx, how many were busy, and n_decoded."""
    if not isinstance(doc, list) or not all(isinstance(s, dict) and "n_ctx" in s for s in doc):
        raise LlamaRunError(f"/slots answered no list of slots with n_ctx (start llama-server with --slots): "
                            f"{str(doc)[:200]}")
    decoded = []
    for slot in doc:
        nxt = slot.get("next_token")
        nxt = nxt[0] if isinstance(nxt, list) and nxt else nxt
        decoded.append(int(nxt["n_decoded"]) if isinstance(nxt, dict) and "n_decoded" in nxt else None)
    return {"count": len(doc), "n_ctx": [int(s["n_ctx"]) for s in doc],
            "processing": sum(bool(s.get("is_processing")) for s in doc), "n_decoded": decoded}


def completion_timings(response: dict[str, Any]) -> dict[str, float]:
    """The server's own timings of one completion, in seconds and tokens."""
    t = response.get("timings")
    if not isinstance(t, dict):
        raise LlamaRunError(f"a completion came back without `timings`: {str(response)[:200]}")
    return {"prompt_n": float(t["prompt_n"]), "prompt_s": float(t["prompt_ms"]) / 1e3,
            "predicted_n": float(t["predicted_n"]), "predicted_s": float(t["predicted_ms"]) / 1e3,
            "predicted_per_token_s": float(t["predicted_per_token_ms"]) / 1e3}


class LlamaServer:
    """llama-server as a context manager: `with LlamaServer(model, ["-c", "8192", "-np", "4"]) as s: ...`.

    Started with -lv 4 so the load log carries llama.cpp's buffer lines (the library's INFO lines are the
    server's verbosity 4, "trace"; -v would add per-batch debug lines during the timed requests; `load_log()`
    parses them), --metrics for /metrics and --slots for /slots. Token-id prompts need no real tokenizer."""

    def __init__(self, model: str | Path, args: list[str], *, port: int = 8091, log_path: str | Path = "server.log",
                 n_gpu_layers: int = 99, start_timeout_s: float = 180) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.log_path = Path(log_path)
        self.cmd = [str(binary("llama-server")), "-m", str(model), "-ngl", str(n_gpu_layers), *args,
                    "--host", "127.0.0.1", "--port", str(port), "--metrics", "--slots", "-lv", "4"]
        self.start_timeout_s = start_timeout_s
        self.ready_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        log = self.log_path.open("wb")
        t0 = time.monotonic()
        self._proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        while True:
            if self._proc.poll() is not None:
                raise LlamaRunError(f"llama-server exited {self._proc.returncode} during start:\n{_tail(self.log_text())}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() - t0 > self.start_timeout_s:
                self.__exit__(None, None, None)
                raise LlamaRunError(f"llama-server not healthy after {self.start_timeout_s:.0f} s:\n{_tail(self.log_text())}")
            time.sleep(0.1)
        self.ready_s = time.monotonic() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def load_log(self) -> LoadLog:
        return parse_load_log(self.log_text())

    def _get(self, path: str) -> str:
        with urllib.request.urlopen(self.base + path, timeout=30) as r:
            return r.read().decode()

    def metrics(self) -> dict[str, float]:
        return parse_metrics(self._get("/metrics"))

    def slots(self) -> dict[str, Any]:
        """/slots as `parse_slots` summarises it."""
        return parse_slots(json.loads(self._get("/slots")))

    def completion(self, prompt_ids: list[int], n_predict: int, timeout_s: float = 300) -> dict[str, Any]:
        body = {"prompt": prompt_ids, "n_predict": n_predict, "temperature": 0, "ignore_eos": True,
                "cache_prompt": False}
        req = urllib.request.Request(self.base + "/completion", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return json.loads(r.read())

    def stream_completion(self, prompt_ids: list[int], n_predict: int, timeout_s: float = 300) -> dict[str, Any]:
        """One streamed completion: client-side TTFT and the gaps between streamed tokens (`stream_result`)."""
        body = {"prompt": prompt_ids, "n_predict": n_predict, "temperature": 0, "ignore_eos": True,
                "cache_prompt": False, "stream": True,
                "return_tokens": True}  # token ids per chunk: a byte token can stream an empty string
        req = urllib.request.Request(self.base + "/completion", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        t0 = time.perf_counter()
        events: list[tuple[float, dict[str, Any]]] = []
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data:"):
                    events.append((time.perf_counter() - t0, json.loads(line[5:])))
        return stream_result(events, time.perf_counter() - t0)


def stream_result(events: list[tuple[float, dict[str, Any]]], end_s: float) -> dict[str, Any]:
    """One streamed completion from its chunks as they arrived ((seconds since the request, chunk)).

    The generated-token count is the server's own (`timings.predicted_n` of the final chunk) when it is there,
    else the client's (token ids in the chunks), and both are kept (`tokens_server`, `tokens_client`): the client
    count misses tokens. llama-server (tools/server/server-context.cpp process_token) sends no chunk for a token
    after which the generated text ends inside a UTF-8 sequence, and the chunk that completes it carries the
    held text but only its own token id; the final chunk's `tokens` is empty when streaming. On the random
    vocabulary of the device's GGUFs (arbitrary byte strings) that held 27-80% of a sweep level's tokens
    (docs/LLAMA.md). TTFT and the gaps are between chunks that carry ids, so a held token also delays the first
    arrival and lengthens a gap: `first_chunk_tokens` (the server's `tokens_predicted` in the first such chunk)
    says how many tokens the first arrival stands for, `held_tokens` how many the chunks' `tokens_predicted` say were
    generated without an id of their own (so that client + held = server is a check of the two server counters and
    the client's reading), and `itl_per_token_s` each gap divided by the tokens it spans."""
    arrivals: list[float] = []
    first_chunk_tokens: float | None = None
    last: dict[str, Any] = {}
    held: float | None = None
    spans: list[float] = []
    before: tuple[float | None, float] = (None, 0.0)  # (arrival, tokens_predicted) of the last id-carrying chunk
    for now, chunk in events:
        ids = chunk.get("tokens") or []
        predicted = chunk.get("tokens_predicted")
        if isinstance(predicted, (int, float)) and (ids or chunk.get("stop")):
            held = (held or 0.0) + max(0.0, float(predicted) - before[1] - len(ids))
            if ids and before[0] is not None:
                spans.append((now - before[0]) / max(1.0, float(predicted) - before[1]))
            before = (now, float(predicted)) if ids else before
        if ids and not arrivals and isinstance(predicted, (int, float)):
            first_chunk_tokens = float(predicted)
        arrivals += [now] * len(ids)
        last = chunk
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    timings = completion_timings(last) if "timings" in last else None
    server = timings["predicted_n"] if timings else None
    return {"ttft_s": arrivals[0] if arrivals else end_s, "e2e_s": end_s,
            "tokens": len(arrivals) if server is None else server, "tokens_client": len(arrivals),
            "tokens_server": server, "first_chunk_tokens": first_chunk_tokens, "held_tokens": held, "itl_s": gaps,
            "itl_per_token_s": spans, "timings": timings}


def token_ids(n: int, offset: int = 1000) -> list[int]:
    """A token-id prompt (ids the synthetic vocabulary holds); distinct offsets avoid prompt-cache hits."""
    return list(range(offset, offset + n))


def concurrency_level(server: LlamaServer, concurrency: int, n_prompt: int, n_predict: int) -> dict[str, Any]:
    """`concurrency` identical-length requests sent at once (distinct prompts); per-level summary."""
    results: list[dict[str, Any] | BaseException] = [None] * concurrency  # type: ignore[list-item]

    def one(i: int) -> None:
        try:
            results[i] = server.stream_completion(token_ids(n_prompt, 1000 + 7 * i), n_predict)
        except Exception as exc:  # noqa: BLE001 - recorded per request, the level goes on
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ok = [r for r in results if isinstance(r, dict)]
    failures = [repr(r) for r in results if not isinstance(r, dict)]
    tokens, client = sum(r["tokens"] for r in ok), sum(r["tokens_client"] for r in ok)
    n_server = sum(r["tokens_server"] is not None for r in ok)
    itls = [g for r in ok for g in r["itl_s"]]
    ttfts = [r["ttft_s"] for r in ok]
    firsts = [r["first_chunk_tokens"] for r in ok if r["first_chunk_tokens"] is not None]
    helds = [r["held_tokens"] for r in ok if r["held_tokens"] is not None]
    per_token = [median(r["itl_per_token_s"]) for r in ok if r["itl_per_token_s"]]
    return {
        "concurrency": concurrency, "completed": len(ok), "failed": len(failures), "wall_s": wall,
        # the server's count (each request's timings.predicted_n) where every request has it; the client's beside it
        "output_tokens": tokens, "output_tokens_client": client,
        "output_tokens_source": "server" if ok and n_server == len(ok) else "client" if n_server == 0 else "mixed",
        "throughput_tok_per_s": tokens / wall if wall > 0 else 0.0,
        "throughput_tok_per_s_client": client / wall if wall > 0 else 0.0,
        "ttft_s": _stats(ttfts), "itl_s": _stats(itls), "first_chunk_tokens": _stats(firsts),
        "held_tokens": _stats(helds), "itl_per_token_s": _stats(per_token),
        "server_predicted_per_token_s": _stats([r["timings"]["predicted_per_token_s"] for r in ok if r["timings"]]),
        "samples": {"ttft_s": ttfts, "itl_median_per_request_s": [median(r["itl_s"]) for r in ok if r["itl_s"]],
                    "output_tokens": [r["tokens"] for r in ok], "output_tokens_client": [r["tokens_client"] for r in ok],
                    "first_chunk_tokens": firsts, "held_tokens": helds if len(helds) == len(ok) else [],
                    "itl_per_token_median_per_request_s": per_token},
        "failures": failures,
    }


# What a device plan keeps of each level as measurements (c<C>.<key>), and the per-request samples behind them
# ("<quantity>": key in the level's samples): the medians' scatter the sweep's tolerances are built from, and
# both token counts per request.
LEVEL_METRICS = ("throughput_tok_per_s", "throughput_tok_per_s_client", "ttft_s", "itl_s", "wall_s", "completed",
                 "failed", "output_tokens", "output_tokens_client", "first_chunk_tokens", "held_tokens", "itl_per_token_s")
LEVEL_SAMPLES = (("itl_s", "itl_median_per_request_s"), ("ttft_s", "ttft_s"), ("output_tokens", "output_tokens"),
                 ("output_tokens_client", "output_tokens_client"), ("first_chunk_tokens", "first_chunk_tokens"),
                 ("held_tokens", "held_tokens"), ("itl_per_token_s", "itl_per_token_median_per_request_s"))


def concurrency_sweep(server: LlamaServer, levels: list[int], n_prompt: int, n_predict: int,
                      deadline: float | None = None) -> list[dict[str, Any]]:
    """Levels in order; stops early (what was measured is kept) when `deadline` (monotonic) passes."""
    out = []
    for c in levels:
        if deadline is not None and time.monotonic() > deadline:
            break
        out.append(concurrency_level(server, c, n_prompt, n_predict))
    return out


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": median(values), "mean": sum(values) / len(values),
            "p90": percentile(values, 90), "p99": percentile(values, 99)}


# --- llama-perplexity -------------------------------------------------------------------------
_PPL_FINAL = re.compile(r"Final estimate: PPL = (?P<ppl>[0-9.]+) \+/- (?P<err>[0-9.]+)")
_PPL_CHUNK = re.compile(r"\[(?P<i>\d+)\](?P<ppl>[0-9.]+)")


def parse_perplexity(text: str) -> dict[str, Any]:
    m = _PPL_FINAL.search(text)
    if m is None:
        raise LlamaRunError(f"llama-perplexity printed no final estimate:\n{_tail(text)}")
    chunks = [float(c["ppl"]) for c in _PPL_CHUNK.finditer(text)]
    return {"ppl": float(m["ppl"]), "ppl_stderr": float(m["err"]), "chunks": chunks}


def run_perplexity(model: str | Path, text_file: str | Path, *, n_ctx: int = 512, n_chunks: int | None = None,
                   n_gpu_layers: int = 99, timeout_s: float = 600) -> dict[str, Any]:
    cmd = [str(binary("llama-perplexity")), "-m", str(model), "-f", str(text_file), "-c", str(n_ctx),
           "-ngl", str(n_gpu_layers)]
    if n_chunks:
        cmd += ["--chunks", str(n_chunks)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise LlamaRunError(f"llama-perplexity exited {proc.returncode}:\n{_tail(proc.stderr)}")
    return {**parse_perplexity(proc.stdout + proc.stderr), "command": cmd}
