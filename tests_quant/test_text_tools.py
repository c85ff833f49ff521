"""The text side of the quality slice without the data: markup stripping and the GGUF tokenizer's rules."""

from __future__ import annotations

import bz2

import pytest

# regex (the quant extra, in dev) tokenizes the text: README's main command installs the core only, so these skip there
pytest.importorskip("regex", reason="the quant suite's tokenizer needs regex: pip install -e '.[quant]' (or '.[dev]')")
from pytest_anatomy.measure import bpe, wiki_text

PAGE = """<mediawiki><page><title>R</title><revision><text>#REDIRECT [[X]]</text></revision></page>
<page><title>T</title><revision><text>{{Infobox|a={{nested|b}}}}
'''Tea''' is a [[drink|beverage]] made in [[China]].&lt;ref&gt;A source&lt;/ref&gt;
== History ==
* It spread [http://example.org to Europe] in 1610.
[[Category:Drinks]]
{| class="wikitable"
| cell
|}</text></revision></page></mediawiki>"""


def test_markup_is_stripped_and_redirects_skipped():
    text = wiki_text.plain_text(bz2.compress(PAGE.encode()))
    assert text == "Tea is a beverage made in China.\nHistory\nIt spread to Europe in 1610."


def test_digits_are_split_one_by_one_then_gpt2_pieces():
    assert bpe.pre_split("In 1610, tea's") == ["In", " ", "1", "6", "1", "0", ",", " tea", "'s"]


def test_bpe_applies_merges_lowest_rank_first_and_round_trips():
    alphabet = bpe.byte_alphabet()
    assert len(set(alphabet)) == 256 and alphabet[ord("a")] == "a" and alphabet[ord(" ")] == "Ġ"
    tokens = [*alphabet, "ab", "abc", "Ġa"]
    tok = bpe.ByteBpe(tokens, ["a b", "ab c", "Ġ a"])
    ids = tok.encode("abc abd")
    assert [tok.tokens[i] for i in ids] == ["abc", "Ġ", "ab", "d"]  # "a b" (rank 0) beats "Ġ a" (rank 2)
    assert tok.decode(ids) == "abc abd"
    swapped = bpe.ByteBpe(tokens, ["Ġ a", "a b", "ab c"])
    assert [swapped.tokens[i] for i in swapped.encode(" abd")] == ["Ġa", "b", "d"]
