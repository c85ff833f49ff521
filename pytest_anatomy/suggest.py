""""Did you mean ...?": the one way a bad name gets its near misses suggested.

Every refusal of a name (a model, a GPU, a dtype, a format, an engine setting) suggests the
closest known names the same way, with difflib's ratio, and phrases them the same way."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def close_matches(word: str, choices: Iterable[str], *, n: int = 1, cutoff: float = 0.6,
                  fold: bool = False) -> list[str]:
    """Up to `n` choices spelled like `word`, closest first. `fold` compares case-insensitively and
    returns every spelling of a match ("bf16" and "BF16" can both be real, different keys)."""
    if not fold:
        return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
    spellings: dict[str, list[str]] = {}
    for choice in choices:
        spellings.setdefault(choice.casefold(), []).append(choice)
    close = difflib.get_close_matches(word.casefold(), list(spellings), n=n, cutoff=cutoff)
    return [spelled for key in close for spelled in spellings[key]]


def phrase(matches: Sequence[str], *, sentence: bool = False) -> str:
    """"did you mean 'a' or 'b'?" ("Did ..." to start a sentence); "" for no matches."""
    if not matches:
        return ""
    return f"{'Did' if sentence else 'did'} you mean {' or '.join(map(repr, matches))}?"


def did_you_mean(word: str, choices: Iterable[str], *, n: int = 1, cutoff: float = 0.6, fold: bool = False,
                 sentence: bool = False) -> str:
    """phrase(close_matches(...)): the suggestion for `word`, or "" when nothing is close."""
    return phrase(close_matches(word, choices, n=n, cutoff=cutoff, fold=fold), sentence=sentence)
