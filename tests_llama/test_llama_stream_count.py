"""How many tokens a streamed llama-server completion generated: the server's count, not the chunks' ids.

The 2026-12-02 07:28 sweeps counted 20-73% of C x 256 tokens per level while the server's own counters say it
generated every one (docs/LLAMA.md). The cause, in this build's source (tools/server/server-context.cpp
process_token): a token after which the generated text ends inside a UTF-8 sequence sends no chunk, the chunk that
completes the sequence carries the held text but only its own token id, and a streamed final chunk carries no ids.
`llama_stream` below replays that rule on byte pieces; `stream_result` must count the server's tokens and keep the
client's count beside it, and a level's throughput must come from the server's count.
"""

from __future__ import annotations

import pytest

from pytest_anatomy.measure import llama_cpp

STEP_S, PROMPT_S = 0.004, 0.1


def incomplete_utf8(text: bytes) -> bool:
    """validate_utf8 of tools/server/server-common.cpp: a lead byte in the last 1-3 bytes short of its sequence."""
    for i in range(1, min(4, len(text)) + 1):
        c = text[-i]
        if ((c & 0xE0) == 0xC0 and i < 2) or ((c & 0xF0) == 0xE0 and i < 3) or ((c & 0xF8) == 0xF0 and i < 4):
            return True
    return False


def llama_stream(pieces: list[bytes], timings: bool = True) -> tuple[list[tuple[float, dict]], float]:
    """(arrival, chunk) pairs as this build streams the generated pieces (one per decode step), and the end."""
    text, sent, events = b"", 0, []
    for i, piece in enumerate(pieces):
        text += piece
        if incomplete_utf8(text):
            continue  # process_token: no partial response for this token
        events.append((PROMPT_S + i * STEP_S, {"content": text[sent:].decode(errors="replace"), "tokens": [500 + i],
                                              "stop": False, "tokens_predicted": i + 1}))
        sent = len(text)
    n = len(pieces)
    end = PROMPT_S + n * STEP_S
    final: dict = {"content": "", "tokens": [], "stop": True, "tokens_predicted": n}
    if timings:
        final["timings"] = {"prompt_n": 1024, "prompt_ms": PROMPT_S * 1e3, "predicted_n": n,
                            "predicted_ms": (n - 1) * STEP_S * 1e3, "predicted_per_token_ms": STEP_S * 1e3}
    return [*events, (end, final)], end


# 9 pieces: a CJK character split over two tokens (one held), then lead bytes repeated: held, and so is the ASCII
# "d" after them (validate_utf8 only looks for a lead byte too close to the end), until "e" completes the count
PIECES = [b"ab", b"\xe4", b"\xb8\xad", b"c", b"\xe4", b"\xe4", b"\xe4", b"d", b"e"]


def test_held_tokens_are_counted_from_the_servers_timings():
    r = llama_cpp.stream_result(*llama_stream(PIECES))
    assert (r["tokens"], r["tokens_server"], r["tokens_client"]) == (9, 9.0, 4)
    assert r["first_chunk_tokens"] == 1 and r["ttft_s"] == PROMPT_S
    # the gaps are between the chunks that carry ids: the held tokens lengthen them (2 and 5 steps)
    assert r["itl_s"] == pytest.approx([2 * STEP_S, STEP_S, 5 * STEP_S])


def test_a_held_run_at_the_start_delays_the_first_arrival():
    """The Q4_K_M sweep's C = 1 request: its first counted chunk came ~158 steps after its prompt."""
    r = llama_cpp.stream_result(*llama_stream([b"\xe4"] * 6 + [b"xy", b"z"]))
    assert (r["tokens"], r["tokens_client"]) == (8, 2)
    assert r["first_chunk_tokens"] == 7 and r["ttft_s"] == pytest.approx(PROMPT_S + 6 * STEP_S)


def test_without_timings_the_client_count_stands():
    r = llama_cpp.stream_result(*llama_stream(PIECES, timings=False))
    assert (r["tokens"], r["tokens_server"], r["tokens_client"], r["timings"]) == (4, None, 4, None)


class FakeServer:
    def __init__(self, pieces: list[bytes], timings: bool = True) -> None:
        self.pieces, self.timings = pieces, timings

    def stream_completion(self, prompt_ids: list[int], n_predict: int) -> dict:
        assert n_predict == len(self.pieces)
        return llama_cpp.stream_result(*llama_stream(self.pieces, self.timings))


def test_a_levels_throughput_is_the_servers_count_and_the_clients_is_kept():
    lv = llama_cpp.concurrency_level(FakeServer(PIECES), 4, 16, len(PIECES))
    assert (lv["output_tokens"], lv["output_tokens_client"], lv["output_tokens_source"]) == (36, 16, "server")
    assert lv["throughput_tok_per_s"] / lv["throughput_tok_per_s_client"] == pytest.approx(36 / 16)
    assert lv["samples"]["output_tokens"] == [9] * 4 and lv["samples"]["output_tokens_client"] == [4] * 4
    assert lv["first_chunk_tokens"]["median"] == 1 and set(llama_cpp.LEVEL_METRICS) <= set(lv)
    old = llama_cpp.concurrency_level(FakeServer(PIECES, timings=False), 2, 16, len(PIECES))
    assert (old["output_tokens"], old["output_tokens_source"]) == (8, "client")


def test_client_plus_held_is_the_server_and_a_gap_is_divided_by_the_tokens_it_spans():
    """The next sweep's per-request check (docs/LLAMA.md): the chunks' tokens_predicted say how many tokens came
    without an id of their own; with the client's ids they must make the final timings' predicted_n."""
    events, end = llama_stream(PIECES)
    r = llama_cpp.stream_result(events, end)
    assert r["tokens_client"] + r["held_tokens"] == r["tokens_server"] == len(PIECES)
    assert r["held_tokens"] == 5 and r["first_chunk_tokens"] == 1
    assert r["itl_per_token_s"] == pytest.approx([STEP_S] * len(r["itl_per_token_s"]))
    assert max(r["itl_s"]) == pytest.approx(5 * STEP_S)  # the counted gap spanning the held run


def test_held_tokens_at_the_end_are_counted_from_the_final_chunk():
    events, end = llama_stream([b"a", b"b", b"\xe4"])  # the last token held: only the final chunk says so
    r = llama_cpp.stream_result(events, end)
    assert r["tokens_client"] == 2 and r["held_tokens"] == 1 and r["tokens_server"] == 3
