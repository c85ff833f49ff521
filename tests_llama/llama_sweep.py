"""A recorded llama-server sweep's generated tokens per level, and the throughput they give.

A sweep recorded before the client counted the server's tokens (the 2026-12-02 07:28 visit) holds the client's
count of streamed token ids as `c<C>.output_tokens`: 20-73% of C x n_gen per level, because this build's
llama-server sends no chunk for a token that leaves the text inside a UTF-8 sequence (docs/LLAMA.md,
measure/llama_cpp.py stream_result). The server's own counter, /metrics `llamacpp:tokens_predicted_total` read
after the sweep (data.run.result.server_metrics), says how many it generated over the whole sweep. Where that
counter equals the sum of C x n_gen over the recorded levels, and no request failed, every request generated its
n_gen tokens (none can generate more), so a level's tokens are C x n_gen; otherwise the client's count stands
and the basis says so. A sweep recorded by the fixed client holds the server's count per request as
`output_tokens` (the client's beside it as `output_tokens_client`): it is read as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COUNTER = "llamacpp:tokens_predicted_total"


@dataclass(frozen=True)
class SweepTokens:
    tokens: dict[int, float]  # generated tokens per level (concurrency C)
    throughput: dict[int, float]  # tokens / the level's wall time, tokens/s
    client: dict[int, float]  # the client's count per level, as recorded
    server_derived: bool  # True when the counts are the server's, not the client's
    basis: str  # one line: where the counts come from, for a reconciliation's `why`


def _n_gen_and_result(rec: Any) -> tuple[int, dict[str, Any]]:
    """The sweep's n_gen (its plan settings) and the recording's raw result."""
    n_gen = int(((rec.provenance.get("settings") or {}).get("sweep") or {}).get("n_gen") or 0)
    return n_gen, (rec.data.get("run") or {}).get("result") or {}


def levels(rec: Any) -> list[int]:
    return sorted(int(k[1:].split(".")[0]) for k in rec.measurements if k.endswith(".throughput_tok_per_s"))


def sweep_tokens(rec: Any) -> SweepTokens:
    cs = levels(rec)
    n_gen, result = _n_gen_and_result(rec)
    counter = (result.get("server_metrics") or {}).get(COUNTER)
    recorded = {c: rec[f"c{c}.output_tokens"].value for c in cs}
    wall = {c: rec[f"c{c}.wall_s"].value for c in cs}
    failed = sum(rec[f"c{c}.failed"].value for c in cs if f"c{c}.failed" in rec.measurements)
    if all(f"c{c}.output_tokens_client" in rec.measurements for c in cs):
        client = {c: rec[f"c{c}.output_tokens_client"].value for c in cs}
        source = {lv.get("concurrency"): lv.get("output_tokens_source") for lv in result.get("sweep") or []}
        tokens, derived = recorded, all(source.get(c) == "server" for c in cs)
        basis = ("the server's timings.predicted_n per request, as recorded (the client's count beside it)" if derived
                 else "the client's count where a request's final chunk had no timings (output_tokens_source)")
        if counter is not None and counter != sum(tokens.values()):
            basis += f"; the server's {COUNTER} {counter:,.0f} differs from their sum {sum(tokens.values()):,.0f}"
    else:
        client = recorded
        expected = sum(c * n_gen for c in cs)
        derived = counter is not None and n_gen > 0 and failed == 0 and counter == expected
        if derived:
            tokens = {c: float(c * n_gen) for c in cs}
            basis = (f"C x {n_gen} per level: the server's {COUNTER} {counter:,.0f} = the sum of C x {n_gen} over the "
                     f"levels (the client counted {sum(client.values()):,.0f}: no chunk for held tokens)")
        else:
            tokens = recorded
            why = ("no server counter recorded" if counter is None else
                   f"{failed:.0f} requests failed" if failed else
                   f"the server's {COUNTER} {counter:,.0f} is not the sum of C x {n_gen}, {expected:,}")
            basis = f"the client's count of streamed token ids, which may undercount ({why})"
    return SweepTokens(tokens, {c: tokens[c] / wall[c] for c in cs}, client, derived, basis)


SECONDS = "llamacpp:tokens_predicted_seconds_total"


def c1_first_token_s(rec: Any, counted: SweepTokens) -> tuple[float, str]:
    """The C = 1 request's time to its first generated token, and where it comes from.

    The client's TTFT is the arrival of the first chunk that carries a token id, late by every token held before
    it (the 07:28 Q4_K_M request's 0.767 s). The server's generation time is not: this build's
    timings.predicted_per_token_ms is predicted_ms / (predicted_n - 1) (server_slot_stats::t_gen_per_token_ms), so
    the level's wall time less n_gen - 1 steps at that time is the prompt and first token (and the HTTP round
    trip). Used when the counts are the server's and the per-request times add up to the server's own counter
    (sum over levels of C x mean per-step time x (n_gen - 1) = tokens_predicted_seconds_total, to the counter's
    printed digits), which holds only if every request generated n_gen tokens; otherwise the client's TTFT."""
    n_gen, result = _n_gen_and_result(rec)
    spt = {lv["concurrency"]: lv.get("server_predicted_per_token_s") or {} for lv in result.get("sweep") or []}
    total = (result.get("server_metrics") or {}).get(SECONDS)
    client = rec["c1.ttft_s.median"].value
    if not (counted.server_derived and total and "median" in spt.get(1, {})
            and all("mean" in spt.get(c, {}) for c in counted.tokens)):
        return client, "the client's TTFT (no server generation time to check it against)"
    summed = sum(c * spt[c]["mean"] * (n_gen - 1) for c in counted.tokens)
    if abs(summed - total) > 1e-3 * total:
        return client, f"the client's TTFT (per-request generation times sum to {summed:.1f} s, {SECONDS} {total} s)"
    value = rec["c1.wall_s"].value - (n_gen - 1) * spt[1]["median"]
    return value, (f"C = 1 wall time less {n_gen - 1} steps at the server's per-step time: {value * 1e3:.0f} ms "
                   f"(the client's first counted chunk: {client * 1e3:.0f} ms)")
