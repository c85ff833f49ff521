"""A byte-level BPE tokenizer built from a GGUF's own vocabulary and merges (SmolLM2's, gpt2 model).

Why not the `tokenizers` wheel: it depends on huggingface_hub (a hub client and its dependencies)
for a job of sixty lines; and the GGUF is what llama.cpp tokenizes with, so its vocabulary is the
one to use. What llama.cpp does for `tokenizer.ggml.pre = smollm` (llama-vocab.cpp, the STARCODER
group): split off every single digit (`\\p{N}`), then split the rest with GPT-2's pattern; map each
piece's UTF-8 bytes to GPT-2's printable byte alphabet; apply the merges lowest rank first. The
Unicode classes need the `regex` package (the standard `re` has no \\p{L}).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import regex

_DIGIT = regex.compile(r"\p{N}")
_GPT2 = regex.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")


@lru_cache(maxsize=1)
def byte_alphabet() -> tuple[str, ...]:
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest map from U+0100 up."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return tuple(table[b] for b in range(256))


def pre_split(text: str) -> list[str]:
    """llama.cpp's smollm pre-tokenizer: single digits first, GPT-2's pattern on what is between."""
    pieces: list[str] = []
    start = 0
    for m in _DIGIT.finditer(text):
        pieces += _GPT2.findall(text[start:m.start()])
        pieces.append(m.group())
        start = m.end()
    pieces += _GPT2.findall(text[start:])
    return pieces


class ByteBpe:
    def __init__(self, tokens: Sequence[str], merges: Sequence[str]) -> None:
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(merges)}
        self._alphabet = byte_alphabet()
        self._decode = {c: b for b, c in enumerate(self._alphabet)}
        self._cache: dict[str, list[int]] = {}

    def _bpe(self, piece: str) -> list[int]:
        if piece in self._cache:
            return self._cache[piece]
        parts = list(piece)
        while len(parts) > 1:
            ranked = [(self.ranks.get((a, b)), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            best = min(((r, i) for r, i in ranked if r is not None), default=None)
            if best is None:
                break
            i = best[1]
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        try:
            ids = [self.ids[p] for p in parts]
        except KeyError as exc:
            raise ValueError(f"piece {piece!r}: {exc} is not in the vocabulary (is this a byte-level BPE GGUF?)") from None
        self._cache[piece] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in pre_split(text):
            out += self._bpe("".join(self._alphabet[b] for b in piece.encode("utf-8")))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        chars = "".join(self.tokens[i] for i in ids)
        return bytes(self._decode[c] for c in chars).decode("utf-8", errors="replace")
