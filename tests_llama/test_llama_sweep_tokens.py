"""The recorded sweeps' token counts: the server generated every requested token, the client counted 20-73%.

The 2026-12-02 07:28 sweeps' levels hold the client's count of streamed token ids. The server's own counters,
read from /metrics after each sweep (data.run.result.server_metrics), say it generated C x 256 tokens for every
level and processed C x 1,024 prompt tokens, and the F16 sweep's server log (kept in the batch) prints
`eval time = ... / 256 tokens` for each of its 105 requests (the Q4_K_M sweep's log did not come back).
llama_sweep.sweep_tokens derives a level's tokens as C x n_gen only where that counter agrees, else keeps the
client's count and says so; these tests pin both branches.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from llama_findings import MEASURED_ON
from llama_sweep import COUNTER, SECONDS, c1_first_token_s, sweep_tokens

from pytest_anatomy import recordings
from pytest_anatomy.importers.xz import read_kept

ROOT = Path(__file__).resolve().parents[1]
STAMP = "2026-12-02T07:28:00Z"
BATCH = ROOT / "results" / MEASURED_ON / "batches" / "20261202T072800Z"
# (run, levels, the client's count per level as recorded)
SWEEPS = {
    "qwen2.5-7b.f16.server-sweep.c_81920_np_64_fa_on": {1: 127, 8: 1236, 32: 5883, 64: 11998},
    "qwen2.5-7b.q4_k_m.server-sweep.c_81920_np_64_fa_on": {1: 50, 2: 265, 4: 462, 8: 1285, 16: 2648, 32: 5521,
                                                           64: 11319},
}


def _recording(name: str) -> recordings.Recording:
    return recordings.load_latest(ROOT / "results", MEASURED_ON, "llama", name, STAMP)


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_the_server_counted_every_requested_token(name):
    rec = _recording(name)
    client = SWEEPS[name]
    counters = rec.data["run"]["result"]["server_metrics"]
    assert counters[COUNTER] == sum(c * 256 for c in client)  # 26,880 (F16), 32,512 (Q4_K_M)
    assert counters["llamacpp:prompt_tokens_total"] == sum(c * 1024 for c in client)
    assert counters["llamacpp:prompt_tokens_cached_total"] == 0
    counted = sweep_tokens(rec)
    assert counted.server_derived and counted.tokens == {c: c * 256 for c in client}
    assert counted.client == client and all(client[c] < c * 256 for c in client)
    assert all(counted.throughput[c] == c * 256 / rec[f"c{c}.wall_s"].value for c in client)
    # what the client missed, per level: 27-80% of C x 256
    missed = [1 - client[c] / (c * 256) for c in client]
    assert 0.26 < min(missed) and max(missed) < 0.81


def test_the_f16_server_log_prints_256_tokens_for_every_request():
    log = read_kept(BATCH / "qwen2.5-7b.f16.server-sweep.c_81920_np_64_fa_on.log.xz").decode()
    generated = re.findall(r"\|\s+eval time =\s+[0-9.]+ ms /\s+(\d+) tokens", log)
    assert len(generated) == 1 + 8 + 32 + 64 and set(generated) == {"256"}


def _synthetic(counter: float | None, failed: int = 0, new_client: bool = False,
               seconds: float | None = None) -> recordings.Recording:
    levels = {1: 100, 4: 700}
    meas = {}
    for c, n in levels.items():
        meas.update({f"c{c}.throughput_tok_per_s": {"value": n / 2.0, "unit": "tokens/s"},
                     f"c{c}.output_tokens": {"value": float(c * 256 if new_client else n), "unit": "tokens"},
                     f"c{c}.wall_s": {"value": 2.0, "unit": "s"}, f"c{c}.failed": {"value": failed, "unit": "count"},
                     f"c{c}.ttft_s.median": {"value": 0.5, "unit": "s"}})
        if new_client:
            meas[f"c{c}.output_tokens_client"] = {"value": float(n), "unit": "tokens"}
    result = {"server_metrics": {**({} if counter is None else {COUNTER: counter}),
                                 **({} if seconds is None else {SECONDS: seconds})},
              "sweep": [{"concurrency": c, "output_tokens_source": "server",  # 255 steps of 6 ms per request
                         "server_predicted_per_token_s": {"median": 0.006, "mean": 0.006}} for c in levels]}
    return recordings.Recording(suite="llama", name="synthetic.q4_k_m.server-sweep", hardware="any",
                                recorded_at="2000-01-01T00:00:00Z",
                                provenance={"settings": {"sweep": {"levels": [1, 4], "n_gen": 256}}},
                                measurements=meas, data={"run": {"result": result}})


@pytest.mark.parametrize("counter,failed,why", [
    (1279.0, 0, "is not the sum of C x 256, 1,280"), (None, 0, "no server counter recorded"),
    (1280.0, 1, "2 requests failed")], ids=["counter-off-by-one", "no-counter", "a-failure-per-level"])
def test_without_the_counters_agreement_the_client_count_stands(counter, failed, why):
    counted = sweep_tokens(_synthetic(counter, failed))
    assert not counted.server_derived and counted.tokens == counted.client == {1: 100, 4: 700}
    assert counted.throughput == {1: 50.0, 4: 350.0} and why in counted.basis and "client" in counted.basis


def test_a_sweep_recorded_with_the_server_count_is_read_as_it_is():
    counted = sweep_tokens(_synthetic(1280.0, new_client=True))
    assert counted.server_derived and counted.tokens == {1: 256, 4: 1024} and counted.client == {1: 100, 4: 700}
    assert "timings.predicted_n" in counted.basis and "differs" not in counted.basis
    assert "differs from their sum 1,280" in sweep_tokens(_synthetic(1000.0, new_client=True)).basis


@pytest.mark.parametrize("name,first_token_ms,client_ms", [
    ("qwen2.5-7b.f16.server-sweep.c_81920_np_64_fa_on", 155, 153),  # its log: prompt eval 151.12 ms
    ("qwen2.5-7b.q4_k_m.server-sweep.c_81920_np_64_fa_on", 122, 767)], ids=["f16", "q4_k_m"])
def test_the_c1_first_token_from_the_servers_generation_time(name, first_token_ms, client_ms):
    """Per-request generation times (predicted_ms / (predicted_n - 1) each) times 255, summed, are the server's own
    seconds counter: every request generated 256 tokens. C = 1's wall time less those 255 steps is its first token;
    the client's first counted chunk came 158 steps later in the Q4_K_M sweep."""
    rec = _recording(name)
    result = rec.data["run"]["result"]
    summed = sum(lv["concurrency"] * lv["server_predicted_per_token_s"]["mean"] * 255 for lv in result["sweep"])
    assert summed == pytest.approx(result["server_metrics"][SECONDS], abs=0.05)  # 1,190.6 s and 1,464.6 s as printed
    value, basis = c1_first_token_s(rec, sweep_tokens(rec))
    assert round(value * 1e3) == first_token_ms and f"{client_ms} ms" in basis
    assert round(rec["c1.ttft_s.median"].value * 1e3) == client_ms


def test_without_the_servers_times_adding_up_the_client_ttft_stands():
    assert c1_first_token_s(rec := _synthetic(1280.0), sweep_tokens(rec))[0] == 0.5  # no seconds counter
    assert c1_first_token_s(rec := _synthetic(1300.0, seconds=5 * 255 * 0.006), sweep_tokens(rec))[0] == 0.5
    off = c1_first_token_s(rec := _synthetic(1280.0, seconds=5 * 255 * 0.006 * 1.01), sweep_tokens(rec))
    assert off[0] == 0.5 and "sum to 7.7 s" in off[1]
    value, _ = c1_first_token_s(rec := _synthetic(1280.0, seconds=5 * 255 * 0.006), sweep_tokens(rec))
    assert value == pytest.approx(2.0 - 255 * 0.006)


@pytest.mark.gpu
@pytest.mark.llama_runs("server-sweep")
def test_client_plus_held_is_the_server_per_request(target, run, measured):
    """Written before the sweep it checks (the client counts held tokens since 2026-12-02 15:00, after the 07:28
    sweeps, so those skip): per request, the ids the client read plus the tokens the chunks' tokens_predicted say came
    without one equal the server's predicted_n. A miss means a chunk the client did not read, or counters that disagree."""
    from llama_sweep import levels

    rec = measured(run.name)
    checked = 0
    for c in levels(rec):
        if f"c{c}.held_tokens.median" not in rec.measurements:
            continue
        held = rec[f"c{c}.held_tokens.median"].samples
        client, server = rec[f"c{c}.output_tokens_client"].samples, rec[f"c{c}.output_tokens"].samples
        assert len(held) == len(client) == len(server), f"C = {c}: {len(held)} / {len(client)} / {len(server)}"
        bad = [(i, a, h, s) for i, (a, h, s) in enumerate(zip(client, held, server)) if a + h != s]
        assert not bad, f"{run.name} C = {c}: (request, client, held, server) {bad[:8]}"
        checked += 1
    if not checked:
        pytest.skip(f"{run.name}: recorded before the client counted held tokens (no c<C>.held_tokens)")
