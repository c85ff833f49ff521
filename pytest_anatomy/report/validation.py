"""The validation table: how far predictions land from measurements, per source, GPU, engine and metric.

Computed from a ledger (the reconciliations of a run, or the JSON beside the HTML report), never
typed: `pytest-anatomy report` writes it into README between the markers below, the HTML report
shows it. It is not checked at the end of a run (a partial run or another ledger would make that
flaky): regenerate it with the report command after changing predictions or recordings.

Per group: the count, the median and p90 of |measured / predicted - 1|, the sign bias (share of
rows measured above predicted) and the outcomes: agree, finding with a sourced cause, finding whose
cause is not established (ids ending in UNESTABLISHED), diverge. Rows:
every third-party reconciliation, and beside them the comparable metrics of our own H200 and the
seed's RTX 4090 (KV blocks and tokens, decode and prefill steps, TTFT, ITL, throughput), fit-point
repeats excluded (in-sample, not tests of the model). Predictions only: an identity, a setting, a
fit point or a replay (reconcile's `kind`) is no test of the model. Only replayed recordings count:
a live run's numbers are not what README tabulates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_anatomy.stats import percentile

BEGIN, END = "<!-- validation-table -->", "<!-- /validation-table -->"
# The same table as data, written beside README's block by the same command, for `predict latency`
# to print each answer's reconciled error (installed with the package; README is not).
TABLE_JSON = Path(__file__).with_name("validation_table.json")
SOURCES = {"aiconfigurator": "AIConfigurator", "argonne-llm-inference-bench": "Argonne LLM-Inference-Bench",
           "inference-sim-blis": "inference-sim"}
OWN = {"h200": "ours (H200)", "rtx4090": "seed (RTX 4090)"}
OWN_METRICS = frozenset({
    "num_gpu_blocks", "kv_tokens", "available_kv_bytes", "decode_step", "decode_step_other_model", "prefill",
    "prefill_other_model", "ttft_mean", "ttft_p50", "engine_ttft_p50", "engine_ttft_mean", "itl_mean", "itl_median",
    "itl_p99", "output_throughput"})
_ORDER = [*SOURCES.values(), *OWN.values()]
_FIT_REPEAT = "fit-repeat"
# Suffix of finding ids that record a miss without an established cause (tests_validation/validation_findings.py).
UNESTABLISHED = "-cause-not-established"


@dataclass(frozen=True)
class Row:
    source: str
    gpu: str
    engine: str
    metric: str
    count: int
    median_abs_error: float
    p90_abs_error: float
    measured_above: float  # share of rows with measured > predicted
    agree: int
    finding: int  # a finding with a sourced cause
    unexplained: int  # a finding whose cause is not established
    diverge: int


def _hardware_of(recon: Mapping[str, Any]) -> str | None:
    if recon.get("hardware"):
        return str(recon["hardware"])
    where = str((recon.get("provenance") or {}).get("recording") or "")
    m = re.search(r"results/([^/]+)/", where)
    return m.group(1) if m else None


def _group(recon: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    if recon.get("source") != "recorded":  # the table is of the committed recordings, not of a live run
        return None
    if str(recon.get("kind") or "prediction") != "prediction":  # an identity, setting, fit or replay tests no model
        return None
    prov = recon.get("provenance") or {}
    engine = str(prov.get("engine") or "?")
    hw = _hardware_of(recon)
    if prov.get("source") == "third-party":
        return SOURCES.get(str(prov.get("third_party")), str(prov.get("third_party"))), str(hw), engine, recon["name"]
    if recon.get("suite") in ("capacity", "latency") and hw in OWN and recon["name"] in OWN_METRICS \
            and _FIT_REPEAT not in str(recon.get("test_id", "")):
        return OWN[hw], hw, engine, recon["name"]
    return None


def rows(reconciliations: Iterable[Mapping[str, Any]]) -> list[Row]:
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for recon in reconciliations:
        key = _group(recon)
        if key is None or not recon.get("predicted"):
            continue
        groups.setdefault(key, []).append(recon)
    out = []
    for (source, gpu, engine, metric), recons in groups.items():
        errors = sorted(abs(r["measured"] / r["predicted"] - 1) for r in recons)
        verdicts = [r["verdict"] for r in recons]
        open_ = sum(1 for r in recons if r["verdict"] == "finding"
                    and str((r.get("finding") or {}).get("id", "")).endswith(UNESTABLISHED))
        out.append(Row(source, gpu, engine, metric, len(recons), percentile(errors, 50), percentile(errors, 90),
                       sum(1 for r in recons if r["measured"] > r["predicted"]) / len(recons),
                       verdicts.count("agree") + verdicts.count("resolved"), verdicts.count("finding") - open_,
                       open_, verdicts.count("diverge")))
    rank = {name: i for i, name in enumerate(_ORDER)}
    return sorted(out, key=lambda r: (rank.get(r.source, len(rank)), r.source, r.gpu, r.engine, r.metric))


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if x < 10 else f"{x:.3g}x"


def markdown(table: list[Row]) -> str:
    lines = ["| source | GPU | engine | metric | n | median abs. error | p90 abs. error | measured > predicted "
             "| agree / explained / cause not established / diverge |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in table:
        lines.append(f"| {r.source} | {r.gpu} | {r.engine} | {r.metric} | {r.count} | {_pct(r.median_abs_error)} | "
                     f"{_pct(r.p90_abs_error)} | {r.measured_above * 100:.0f}% | {r.agree} / {r.finding} / "
                     f"{r.unexplained} / {r.diverge} |")
    return "\n".join(lines)


def readme_block(table: list[Row]) -> str:
    return f"{BEGIN}\n{markdown(table)}\n{END}"


def current_readme_table(readme: Path) -> str | None:
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start:end + len(END)]


def update_readme(readme: Path, table: list[Row]) -> bool:
    """Replace the block between the markers; True when README changed. Raises when they are missing."""
    text = readme.read_text(encoding="utf-8")
    old = current_readme_table(readme)
    if old is None:
        raise ValueError(f"{readme} has no '{BEGIN}' ... '{END}' block for the validation table")
    new = readme_block(table)
    if old == new:
        return False
    readme.write_text(text.replace(old, new), encoding="utf-8")
    return True


def complete_run(suites_run: Iterable[str]) -> bool:
    """The table covers third-party and own data only when all three suites ran."""
    return {"validation", "latency", "capacity"} <= set(suites_run)


def write_json(table: list[Row], path: Path | None = None) -> bool:
    """Write the table as data; True when the file changed."""
    path = path or TABLE_JSON
    text = json.dumps([asdict(r) for r in table], indent=1) + "\n"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def load_json(path: Path | None = None) -> list[Row]:
    """The table the report command last wrote; [] when there is none (a checkout that never ran it)."""
    path = path or TABLE_JSON
    if not path.is_file():
        return []
    return [Row(**r) for r in json.loads(path.read_text(encoding="utf-8"))]
