"""The ledger as the report page embeds it: the compact suites' reconciliations left out and counted, each distinct
provenance and each distinct shared text (test ids' module and function among them) written once and referred to by
index (report/html.py embeds it, the page's script reads it; expand_embedded gives back the JSON ledger's
reconciliations). The page carries it gzip-compressed in base64 (pack; read_page reads it back)."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

# Suites shown in the page only through the validation table and their findings: each has
# thousands of reconciliations (other people's published runs), whose derivations and plot rows
# would multiply the page's size. The JSON ledger beside the page keeps every one of them.
COMPACT_SUITES = frozenset({"validation"})


def is_compact(recon: Mapping[str, Any]) -> bool:
    return str(recon.get("suite") or "") in COMPACT_SUITES


# The texts a derivation shows that many reconciliations repeat word for word: a finding's reason on every row it
# covers, a prediction's formula and notes, a tolerance's why, a term's note. The page writes each distinct one once
# (text_table) and the field holds its index there; (container key, field) -> whether the field is a list of texts.
_SHARED_TEXTS = ((("finding",), "reason", False), (("prediction",), "formula", False),
                 (("prediction",), "notes", True), (("tolerance",), "why", False), (("prediction", "terms"), "note", False),
                 (("prediction", "terms"), "name", False))
# A prediction's terms as rows [name, value, unit, note] instead of objects: ~5,000 terms on the page, their four keys
# written once here rather than on every term (~0.2 MB); a term with other keys stays an object.
TERM_FIELDS = ("name", "value", "unit", "note")
# A finding mark's defaults (findings.FindingMark: every reconciliation, every card, strict), left out of the page where
# all three hold and marked by "d": 1 (~650 finding rows); the page's script reads only a finding's id and reason.
_FINDING_DEFAULTS: dict[str, Any] = {"quantity": None, "hardware": None, "strict": True}
DEFAULT_KIND = "prediction"  # a reconciliation's kind, left out of the page where it is this (expand_embedded puts it back)
DEFAULT_SOURCE = "recorded"  # a measurement's source, left out likewise (~2,000 rows replay recordings: ~40 kB)
# gap_abs, gap_rel and ratio are reconcile.Reconciliation's arithmetic on predicted and measured: left out where they
# are exactly that arithmetic (marked "g": 1; ~150 kB), recomputed by expand_embedded and by the page's script, whose
# IEEE doubles give the same values.
GAP_FIELDS = ("gap_abs", "gap_rel", "ratio")


def gap_fields(predicted: Any, measured: Any) -> dict[str, Any] | None:
    """reconcile.Reconciliation's gap_abs, gap_rel and ratio of two numbers (None for anything else)."""
    if type(predicted) not in (int, float) or type(measured) not in (int, float):
        return None
    gap = measured - predicted
    return {"gap_abs": gap, "gap_rel": None if predicted == 0 else gap / abs(predicted),
            "ratio": None if predicted == 0 else measured / predicted}


class _Texts:
    """The page's text table: each distinct string once, a field's text replaced by its index."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: Any) -> Any:
        if not isinstance(text, str):
            return text
        if text not in self._index:
            self._index[text] = len(self.table)
            self.table.append(text)
        return self._index[text]


def _share_texts(recon: Mapping[str, Any], texts: _Texts) -> dict[str, Any]:
    """recon with every _SHARED_TEXTS field replaced by its index in the text table (expand_embedded undoes it)."""
    out = dict(recon)
    for path, field, is_list in _SHARED_TEXTS:
        parent = out.get(path[0])
        if not isinstance(parent, Mapping):
            continue
        if len(path) == 1:
            containers: list[Any] = [parent]
        else:
            items = parent.get(path[1])
            if not isinstance(items, list):
                continue
            containers = items
        copies = []
        for item in containers:
            if isinstance(item, Mapping) and field in item:
                value = item[field]
                item = {**item, field: [texts.ref(v) for v in value] if is_list and isinstance(value, list)
                        else texts.ref(value) if not is_list else value}
            copies.append(item)
        out[path[0]] = copies[0] if len(path) == 1 else {**parent, path[1]: copies}
    return out


def _terms(recon: Mapping[str, Any], convert: Any) -> dict[str, Any]:
    pred = recon.get("prediction")
    if not isinstance(pred, Mapping) or not isinstance(pred.get("terms"), list):
        return dict(recon)
    return {**recon, "prediction": {**pred, "terms": [convert(t) for t in pred["terms"]]}}


def _share_inputs(recon: dict[str, Any], table: list[Any], index: dict[str, int]) -> dict[str, Any]:
    """A prediction's inputs as an index into inputs_table: ~1,700 predictions carry ~980 distinct inputs."""
    pred = recon.get("prediction")
    if not isinstance(pred, Mapping) or not isinstance(pred.get("inputs"), Mapping) or not pred["inputs"]:
        return recon
    key = json.dumps(pred["inputs"], sort_keys=True, default=str)
    if key not in index:
        index[key] = len(table)
        table.append(pred["inputs"])
    return {**recon, "prediction": {**pred, "inputs": index[key]}}


def _defaults_out(recon: dict[str, Any]) -> dict[str, Any]:
    """The defaults most reconciliations repeat, left out exactly (expand_embedded puts them back): kind "prediction"
    (a reconciliation without a kind gets kind null instead), source "recorded" (likewise), the gap fields where they
    are gap_fields' arithmetic ("g": 1), a tolerance's abs 0.0 with ratio null, and a finding's
    quantity null, hardware null and strict true (each marked by "d": 1, so that one without those keys stays as it
    was)."""
    out = dict(recon)
    if out.get("kind") == DEFAULT_KIND:
        del out["kind"]
    elif "kind" not in out:
        out["kind"] = None
    if out.get("source") == DEFAULT_SOURCE:
        del out["source"]
    elif "source" not in out:
        out["source"] = None
    gaps = gap_fields(out.get("predicted"), out.get("measured"))
    if gaps is not None and "g" not in out and all(
            k in out and type(out[k]) is type(v) and out[k] == v for k, v in gaps.items()):
        out = {k: v for k, v in out.items() if k not in GAP_FIELDS}
        out["g"] = 1
    found = out.get("finding")
    if isinstance(found, Mapping) and "d" not in found and all(
            k in found and found[k] is v for k, v in _FINDING_DEFAULTS.items()):
        out["finding"] = {**{k: v for k, v in found.items() if k not in _FINDING_DEFAULTS}, "d": 1}
    tol = out.get("tolerance")
    if (isinstance(tol, Mapping) and type(tol.get("abs")) is float and tol["abs"] == 0.0 and "ratio" in tol
            and tol["ratio"] is None and "d" not in tol):
        out["tolerance"] = {**{k: v for k, v in tol.items() if k not in ("abs", "ratio")}, "d": 1}
    return out


def _defaults_in(recon: dict[str, Any], inputs_table: Sequence[Any]) -> dict[str, Any]:
    out = dict(recon)
    if "kind" not in out:
        out["kind"] = DEFAULT_KIND
    elif out["kind"] is None:
        del out["kind"]
    if "source" not in out:
        out["source"] = DEFAULT_SOURCE
    elif out["source"] is None:
        del out["source"]
    if out.get("g") == 1:
        del out["g"]
        out.update(gap_fields(out.get("predicted"), out.get("measured")) or {})
    found = out.get("finding")
    if isinstance(found, Mapping) and found.get("d") == 1:
        out["finding"] = {**{k: v for k, v in found.items() if k != "d"}, **_FINDING_DEFAULTS}
    tol = out.get("tolerance")
    if isinstance(tol, Mapping) and tol.get("d") == 1:
        out["tolerance"] = {**{k: v for k, v in tol.items() if k != "d"}, "abs": 0.0, "ratio": None}
    pred = out.get("prediction")
    if isinstance(pred, Mapping) and isinstance(pred.get("inputs"), int) and not isinstance(pred["inputs"], bool):
        out["prediction"] = {**pred, "inputs": inputs_table[pred["inputs"]]}
    return out


def _term_row(term: Any) -> Any:
    return [term[f] for f in TERM_FIELDS] if isinstance(term, Mapping) and set(term) == set(TERM_FIELDS) else term


def _term_object(term: Any) -> Any:
    return dict(zip(TERM_FIELDS, term)) if isinstance(term, list) and len(term) == len(TERM_FIELDS) else term


def _share_test_id(recon: dict[str, Any], texts: _Texts) -> dict[str, Any]:
    """A test id's module path and function, which every parameter set of a test repeats (~100 characters each, 0.1 MB
    in all), is a text_table index; its parameters follow as written: [index, "[params]"], or the index alone."""
    test_id = recon.get("test_id")
    if isinstance(test_id, str):
        head, bracket, params = test_id.partition("[")
        recon["test_id"] = [texts.ref(head), bracket + params] if bracket else texts.ref(head)
    return recon


def _expand_test_id(test_id: Any, table: Sequence[str]) -> Any:
    if isinstance(test_id, int) and not isinstance(test_id, bool):
        return table[test_id]
    if isinstance(test_id, list) and len(test_id) == 2 and isinstance(test_id[0], int):
        return table[test_id[0]] + str(test_id[1])
    return test_id


# A provenance's structured or long fields repeat across recordings of one session (the GPU's facts, the
# command, the settings): each distinct value is written once in provenance_values and the field holds
# {"$v": index} (the page's script resolves it; expand_embedded undoes it).
_VALUE_REF = "$v"


def _share_values(prov: Mapping[str, Any], values: list[Any], index: dict[str, int]) -> dict[str, Any]:
    out = {}
    for k, v in prov.items():
        if isinstance(v, (dict, list)) or (isinstance(v, str) and len(v) > 60):
            key = json.dumps(v, sort_keys=True, default=str)
            if key not in index:
                index[key] = len(values)
                values.append(v)
            v = {_VALUE_REF: index[key]}
        out[k] = v
    return out


def _expand_values(prov: Any, values: Sequence[Any]) -> Any:
    if not isinstance(prov, Mapping):
        return prov
    return {k: values[v[_VALUE_REF]] if isinstance(v, Mapping) and set(v) == {_VALUE_REF} else v
            for k, v in prov.items()}


def embedded_ledger(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger embedded in the page: compact suites' reconciliations left out and counted, each distinct
    provenance written once (provenance_table; a reconciliation's provenance is its index there: the ~1,300
    embedded reconciliations share ~370 provenances, ~0.8 MB of repeats), and each distinct shared text once
    (text_table, _SHARED_TEXTS: ~300 finding rows carry ~160 reasons, ~0.24 MB of them; formulas, notes and
    tolerance reasons repeat as much again; and each test id's part before its parameters, _share_test_id).
    expand_embedded undoes them."""
    recons = ledger.get("reconciliations") or []
    left_out = sum(1 for recon in recons if is_compact(recon))
    table: list[Any] = []
    index: dict[str, int] = {}
    texts = _Texts()
    inputs_table: list[Any] = []
    inputs_index: dict[str, int] = {}
    kept = []
    for recon in recons:
        if is_compact(recon):
            continue
        prov = recon.get("provenance")
        if isinstance(prov, Mapping) and prov:
            key = json.dumps(prov, sort_keys=True, default=str)
            if key not in index:
                index[key] = len(table)
                table.append(prov)
            recon = {**recon, "provenance": index[key]}
        kept.append(_defaults_out(_share_inputs(_terms(_share_test_id(_share_texts(recon, texts), texts), _term_row),
                                                inputs_table, inputs_index)))
    values: list[Any] = []
    value_index: dict[str, int] = {}
    table = [_share_values(p, values, value_index) for p in table]
    # a skip's reason through the text table too: ~490 skips of a CPU run share ~100 reasons (~50 KB, 2026-12-05)
    skips = [{**skip, "reason": texts.ref(skip.get("reason"))} if isinstance(skip, Mapping) else skip
             for skip in ledger.get("skips") or []]
    out = {**ledger, "reconciliations": kept, "provenance_table": table, "provenance_values": values,
           "text_table": texts.table, "inputs_table": inputs_table}
    if "skips" in ledger:
        out["skips"] = skips
    if left_out:
        out["reconciliations_left_out"] = {"count": left_out, "suites": sorted(COMPACT_SUITES),
                                           "where": "the JSON ledger written beside this page"}
    return out


def _expand_texts(recon: Mapping[str, Any], table: Sequence[str]) -> dict[str, Any]:
    def text(v: Any) -> Any:
        return table[v] if isinstance(v, int) and not isinstance(v, bool) else v

    out = _terms(recon, _term_object)
    if "test_id" in out:
        out["test_id"] = _expand_test_id(out["test_id"], table)
    for path, field, is_list in _SHARED_TEXTS:
        parent = out.get(path[0])
        if not isinstance(parent, Mapping):
            continue
        containers = [parent] if len(path) == 1 else parent.get(path[1])
        if not isinstance(containers, list):
            continue
        copies = [{**item, field: [text(v) for v in item[field]] if is_list and isinstance(item[field], list)
                   else text(item[field]) if not is_list else item[field]}
                  if isinstance(item, Mapping) and field in item else item for item in containers]
        out[path[0]] = copies[0] if len(path) == 1 else {**parent, path[1]: copies}
    return out


def expand_embedded(embedded: Mapping[str, Any]) -> dict[str, Any]:
    """The embedded ledger with each reconciliation's provenance index and shared-text indexes replaced by their
    entries (the page's script does the same when it draws a derivation): the JSON ledger's reconciliations."""
    values = embedded.get("provenance_values") or []
    table = [_expand_values(p, values) for p in embedded.get("provenance_table") or []]
    texts = embedded.get("text_table") or []
    inputs_table = embedded.get("inputs_table") or []
    recons = [_defaults_in(_expand_texts({**recon, "provenance": table[recon["provenance"]]}
                                         if isinstance(recon.get("provenance"), int) else recon, texts), inputs_table)
              for recon in embedded.get("reconciliations") or []]
    skips = [{**skip, "reason": texts[skip["reason"]]} if isinstance(skip, Mapping) and isinstance(
        skip.get("reason"), int) and not isinstance(skip.get("reason"), bool) else skip
        for skip in embedded.get("skips") or []]
    out = {**embedded, "reconciliations": recons, **({"skips": skips} if "skips" in embedded else {})}
    return {k: v for k, v in out.items()
            if k not in ("provenance_table", "provenance_values", "text_table", "inputs_table")}


# The page carries the embedded ledger's JSON gzip-compressed, in base64 (the script's atob and the browser's
# DecompressionStream open it): 2.6 MB of JSON became ~0.4 MB on a page of ~5 MB (2026-12-05), which left the page
# ~2 MB under its 5 MB limit instead of ~50 kB, before the next visit's recordings add their rows.
PAGE_ENCODING = "gzip+base64"
_LEDGER_SCRIPT = re.compile(r'<script\b([^>]*)\bid="anatomy-ledger"([^>]*)>(.*?)</script>', re.DOTALL)


def pack(json_text: str) -> str:
    """The ledger's JSON as the page carries it: gzip (mtime 0, so one ledger gives one page byte for byte), then
    base64, whose alphabet holds no '<' or '&' to escape inside <script>."""
    return base64.b64encode(gzip.compress(json_text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def read_page(page: str) -> dict[str, Any]:
    """The embedded ledger of a report page (expand_embedded gives back the JSON ledger's reconciliations): packed as
    PAGE_ENCODING, or plain JSON as pages written before 2026-12-05 carried it. ValueError where the page has none."""
    found = _LEDGER_SCRIPT.search(page)
    if found is None:
        raise ValueError("no <script id=\"anatomy-ledger\"> in the page: not a pytest-anatomy report")
    attrs, text = found[1] + found[2], found[3]
    if f'data-encoding="{PAGE_ENCODING}"' in attrs:
        text = gzip.decompress(base64.b64decode(text)).decode("utf-8")
    loaded = json.loads(text)
    if not isinstance(loaded, dict):
        raise ValueError("the page's embedded ledger is not a JSON object")
    return loaded
