"""Plain text out of a MediaWiki XML dump (the gensim wheel's English Wikipedia extract).

Perplexity is measured on prose, so the markup a reader never sees is removed: templates
({{...}}), tables ({|...|}), references (<ref>...</ref>), comments, file/category links, bold and
italic quotes, external-link URLs, headings' '=' and list markers. Wiki links keep their label
([[a|b]] -> b). Redirect pages are skipped. The result is deterministic: the same dump gives the
same text, page by page, joined by blank lines.
"""

from __future__ import annotations

import bz2
import html
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

_INNER_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_INNER_TABLE = re.compile(r"\{\|(?:(?!\{\|).)*?\|\}", re.S)
_REF = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_DROPPED_LINK = re.compile(r"\[\[(?:File|Image|Category|[a-z]{2,3}(?:-[a-z]+)?):[^\[\]]*\]\]", re.I)
_LINK = re.compile(r"\[\[(?:[^\[\]|]*\|)?([^\[\]]*)\]\]")
_EXTERNAL = re.compile(r"\[(?:https?|ftp)://[^\s\]]*\s*([^\]]*)\]")
_TAG = re.compile(r"<[^>]+>")
_HEADING = re.compile(r"^=+\s*(.*?)\s*=+\s*$", re.M)
_LIST = re.compile(r"^[*#:;]+\s*", re.M)
_BLANKS = re.compile(r"\n{3,}")


def _until_stable(pattern: re.Pattern[str], text: str, repl: str = "") -> str:
    """Remove innermost constructs until none is left (templates and tables nest)."""
    while True:
        new = pattern.sub(repl, text)
        if new == text:
            return text
        text = new


def strip_markup(wikitext: str) -> str:
    text = _COMMENT.sub("", wikitext)
    text = _REF.sub("", text)
    text = _until_stable(_INNER_TEMPLATE, text)
    text = _until_stable(_INNER_TABLE, text)
    text = _until_stable(_DROPPED_LINK, text)
    text = _until_stable(_LINK, text, r"\1")
    text = _EXTERNAL.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = html.unescape(text).replace("'''", "").replace("''", "")
    text = _HEADING.sub(r"\1", text)
    text = _LIST.sub("", text)
    lines = [line.strip() for line in text.splitlines()]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def pages(xml_bytes: bytes) -> Iterator[tuple[str, str]]:
    """(title, wikitext) of every non-redirect page, in file order."""
    title = ""
    for _, elem in ET.iterparse(io.BytesIO(xml_bytes)):
        tag = elem.tag.rsplit("}", 1)[-1]
        if tag == "title":
            title = elem.text or ""
        elif tag == "text":
            body = elem.text or ""
            if body and not body.lstrip().upper().startswith("#REDIRECT"):
                yield title, body
        elif tag == "page":
            elem.clear()


def plain_text(bz2_bytes: bytes, max_chars: int | None = None) -> str:
    """The dump's prose, pages joined by blank lines; stops once max_chars are collected."""
    out: list[str] = []
    size = 0
    for _title, body in pages(bz2.decompress(bz2_bytes)):
        text = strip_markup(body)
        if not text:
            continue
        out.append(text)
        size += len(text) + 2
        if max_chars is not None and size >= max_chars:
            break
    joined = "\n\n".join(out)
    return joined if max_chars is None else joined[:max_chars]
