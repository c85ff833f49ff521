"""What the GPU and the host were doing during the recorded latency parts: measure/gpu_sampler.py's rows (NVML SM
clock, power, clock-event reasons; /proc/stat's busy share), kept in each session's raw file since 2026-12-02.

Pre-registered before any sample existed (docs/RECORDING.md, the eighth visit's plan, 2026-12-02 ~08:45), for the
load runs (closed loop, Poisson, overload):
  - the SM clock at the 1,980 MHz boost throughout ("a reading below ~1,900 MHz would itself be news");
  - power well under the 700 W limit (decode is memory-bound: 350-600 W);
  - no power, thermal or hardware-slowdown reason bit (0x4, 0x8, 0x20, 0x40) in an undisturbed run;
  - host CPU busy 0.10-0.30 of the cores.
The first sessions with samples (2026-12-02 14:18 full, 14:26 NVML-spec fast) missed the first three and the
fourth low: OUTCOME below, recomputed from the kept rows. What the rows then show is a mechanism that can fail:
every dip below the news line is the software power cap's (its bit in that row or one of the next two; the bit
trails the clock by up to two 100 ms rows, one until 2026-12-04 10:05), and no thermal or hardware cap ever acts.
The load runs' predictions are affected only as far as the cap differs from the calibration's conditions: the step
overhead and eta are fitted on the same session's runs under the same cap. A lone prompt's pace did not follow the
sampled clock at 0.25x-0.8x (the same median pair time at sampled clocks above and below 1,900 MHz; docs/RECORDING.md,
ninth visit, has the numbers).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from latency_findings_common import MEASURED_ON
from latency_setups import raw_digest, raw_files

from pytest_anatomy.importers.xz import read_kept
from pytest_anatomy.measure.gpu_sampler import SW_POWER_CAP, THERMAL_OR_HARDWARE, summarize
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.session import get_session
from pytest_anatomy.stats import median
from pytest_anatomy.theory.prediction import Prediction

NEWS_MHZ = 1900  # the pre-registered line: "a reading below ~1,900 MHz would itself be news"
LOAD_KINDS = (".closed.c", ".poisson.f", ".overload")

# Per session with samples (its kept raw file's batch date): (span of the load runs' mean SM clock in MHz, share of
# all its rows below NEWS_MHZ, parts with the power-cap bit / parts sampled, peak power in W, the load runs' mean
# host CPU busy share, 0.0 where the session ran no load run).
OUTCOME: dict[str, tuple[tuple[float, float], float, tuple[int, int], float, float]] = {
    "2026-12-02T14:18:58+00:00": ((1735.3, 1974.0), 0.4812, (40, 41), 711.743, 0.05),  # full: Qwen2.5-7B, Llama-3.1-8B
    "2026-12-02T14:26:26+00:00": ((0.0, 0.0), 0.7385, (15, 15), 706.719, 0.0),  # NVML-spec fast: steps only
    "2026-12-02T16:29:14+00:00": ((1762.4, 1975.0), 0.4159, (39, 39), 706.745, 0.058),  # full, card GPU-4606b8e1
    # NVML fast, same card: the three parts without the cap bit are short ones sampled at 1,980 MHz throughout
    # (decode b=1 second attempt and b=2 first, 8 rows each; prefill 512, 4 rows)
    "2026-12-02T16:37:12+00:00": ((0.0, 0.0), 0.5981, (18, 21), 710.001, 0.0),
    "2026-12-02T23:51:19+00:00": ((1734.4, 1970.9), 0.4858, (38, 38), 711.2, 0.0493),  # full, card GPU-73fa8706
    "2026-12-02T23:58:45+00:00": ((0.0, 0.0), 0.7137, (14, 14), 710.455, 0.0),  # NVML fast, same card
    # full, card GPU-60943228: the part without the cap bit is a short one sampled at 1,980 MHz throughout (Llama-3.1-8B
    # prefill 512, 3 rows)
    "2026-12-03T08:29:08+00:00": ((1756.0, 1976.1), 0.4397, (37, 38), 704.785, 0.0472),
    "2026-12-03T08:36:49+00:00": ((0.0, 0.0), 0.7342, (14, 14), 705.035, 0.0),  # NVML fast, same card
    # full, card GPU-833ea41f: the part without the cap bit is a short one sampled at 1,980 MHz throughout (Llama-3.1-8B
    # decode b=1, 8 rows)
    "2026-12-03T12:06:46+00:00": ((1719.9, 1971.8), 0.4921, (38, 39), 711.209, 0.0556),
    "2026-12-03T12:14:50+00:00": ((0.0, 0.0), 0.7273, (14, 14), 702.535, 0.0),  # NVML fast, same card
    "2026-12-03T14:16:33+00:00": ((1744.2, 1972.7), 0.4784, (38, 38), 707.683, 0.0477),  # full, card GPU-0a76d8fe
    "2026-12-03T14:23:49+00:00": ((0.0, 0.0), 0.7238, (14, 14), 711.542, 0.0),  # NVML fast, same card
    "2026-12-03T21:25:39+00:00": ((1753.5, 1972.2), 0.4571, (39, 39), 706.538, 0.0472),  # full, card GPU-d9670574
    "2026-12-03T21:32:29+00:00": ((0.0, 0.0), 0.7292, (14, 14), 706.754, 0.0),  # NVML fast, same card
    "2026-12-03T22:26:09+00:00": ((0.0, 0.0), 0.7213, (14, 14), 700.664, 0.0),  # the fast latency subset alone, new card
    # full, card GPU-c23a57d2: the part without the cap bit is a short one sampled at 1,980 MHz throughout (Llama-3.1-8B
    # prefill 512, 4 rows)
    "2026-12-03T23:32:23+00:00": ((1759.6, 1974.3), 0.4429, (37, 38), 708.481, 0.0542),
    # NVML fast, same card (decode b=4, 8 and 16 measured twice: the first attempts flagged by the validity check); the
    # part without the cap bit is a short one sampled at 1,980 MHz throughout (Qwen2.5-7B prefill 512, 4 rows)
    "2026-12-03T23:40:05+00:00": ((0.0, 0.0), 0.6496, (16, 17), 704.212, 0.0),
    # full, cut short by the device time (no ledger), card GPU-04f89884 (Qwen2.5-7B decode b=64 measured twice, both
    # attempts flagged by the validity check); the part without the cap bit is a short one sampled at 1,980 MHz
    # throughout (Qwen2.5-7B prefill 512, 4 rows)
    "2026-12-04T00:09:44+00:00": ((1751.8, 1976.9), 0.4283, (38, 39), 707.914, 0.0599),
    # full, cut at 540 s when the machine was given back (its latency parts all kept), card GPU-afc51c9f
    "2026-12-04T09:53:42+00:00": ((1711.4, 1972.3), 0.5147, (38, 38), 709.159, 0.0423),
    "2026-12-04T10:05:35+00:00": ((1768.1, 1967.8), 0.436, (38, 38), 705.118, 0.0426),  # full, card GPU-dbafddd4
    "2026-12-04T10:12:03+00:00": ((0.0, 0.0), 0.7425, (14, 14), 703.141, 0.0),  # NVML fast, same card
    # Not latency sessions: the quantized-decode batches on the same card (scripts/device/quant_decode.py, Qwen2.5-7B
    # dummy weights, decode b = 1/8/32/64 only), rows of the same sampler. fp8 (qwen2.5-7b-fp8): decode b=1 measured
    # twice (both attempts flagged by the validity check), the second attempt the part without the cap bit, a short
    # one sampled at 1,980 MHz throughout (6 rows); power peaked at 663 W, under the 700 W limit
    "2026-12-04T10:15:29+00:00": ((0.0, 0.0), 0.234, (4, 5), 662.852, 0.0),
    # AWQ (qwen2.5-7b-awq): no row below the news line (lowest 1,920 MHz), yet the cap bit in every part, the b=1 one
    # included, whose power stayed at or under 364 W; power peaked at 617 W
    "2026-12-04T10:17:01+00:00": ((0.0, 0.0), 0.0, (4, 4), 616.984, 0.0),
    # The twenty-first call's two batches (another card): fp8 across the dispatch's M buckets (b = 16, 17, 24, 32, 48,
    # 64; b=16 measured twice, the first attempt flagged) with the cap bit in all 7 parts and power to 667 W; GPTQ
    # (b = 1/8/32/64), the cap bit in all 4 parts, 47% of its rows under the news line, power to 705 W
    "2026-12-04T13:37:45+00:00": ((0.0, 0.0), 0.2727, (7, 7), 666.745, 0.0),
    "2026-12-04T13:39:16+00:00": ((0.0, 0.0), 0.4706, (4, 4), 704.516, 0.0),
    # the prefill calls of 2026-12-04 18:50-18:56 (fp8, AWQ, GPTQ: lone prompts and 64 x 512; bf16's 64 x 512): no load
    # run, power 649-698 W, the cap's bit in every part
    "2026-12-04T18:50:15+00:00": ((0.0, 0.0), 0.7429, (4, 4), 693.28, 0.0),
    "2026-12-04T18:52:40+00:00": ((0.0, 0.0), 0.0, (4, 4), 649.076, 0.0),
    "2026-12-04T18:54:09+00:00": ((0.0, 0.0), 0.8679, (4, 4), 698.301, 0.0),
    "2026-12-04T18:56:01+00:00": ((0.0, 0.0), 1.0, (1, 1), 693.207, 0.0),
    # decode and lone prefills of Qwen2.5-7B, -3B and -32B (no load run; Qwen2.5-3B decode b=4, 16, 64 and 128
    # measured twice); the three parts without the cap bit are short ones sampled at 1,980 MHz throughout (Qwen2.5-3B
    # prefill 128, 512 and 2048, 3-4 rows each)
    "2026-12-06T08:39:30+00:00": ((0.0, 0.0), 0.7606, (43, 46), 707.839, 0.0),
    # decode and lone prefills of Qwen2.5-7B and -3B (no load run; Qwen2.5-3B decode b=16 measured twice); the four
    # parts without the cap bit are short ones sampled at 1,980 MHz throughout (Qwen2.5-3B decode b=4, 6 rows, and
    # prefill 128 and 512, 3-4 rows; Qwen2.5-7B prefill 512, 4 rows)
    "2026-12-06T09:41:35+00:00": ((0.0, 0.0), 0.6185, (25, 29), 708.291, 0.0),
    # decode and lone prefills of Qwen2.5-7B and -3B (no load run; Qwen2.5-3B decode b=8, 32 and 64 measured twice,
    # both attempts flagged by the validity check); the two parts without the cap bit are short ones sampled at 1,980
    # MHz throughout (Qwen2.5-3B prefill 128 and 512, 3 rows each)
    "2026-12-07T05:34:54+00:00": ((0.0, 0.0), 0.6422, (29, 31), 710.898, 0.0),
    # decode and lone prefills of Qwen2.5-7B and -3B (no load run; Qwen2.5-3B decode b=1 measured twice, the first
    # attempt flagged by the validity check); of the five parts without the cap bit four are short ones sampled at
    # 1,980 MHz throughout (Qwen2.5-3B decode b=1's second attempt and b=2, 6 rows each; prefill 128 and 512, 3 rows
    # each) and one Qwen2.5-3B's prefill 2048 (3 rows, lowest 1,920 MHz)
    "2026-12-07T17:25:29+00:00": ((0.0, 0.0), 0.6456, (24, 29), 707.606, 0.0),
}


@functools.lru_cache(maxsize=None)
def _sampled_parts(batches: str) -> dict[str, list[dict[str, Any]]]:
    """Batch date -> the raw lines (one per part) of its latency raw files that carry gpu_samples, each with its
    latency_setups.SAMPLED_KEYS only: what this module and its readers (test_latency_card_findings,
    test_latency_prompt_pace) take from a sampled part (the requests and timelines are 99% of a line: 112 MB pickled
    against 1 MB). Each raw file is decompressed and parsed once a run (latency_setups.raw_digest, with the step
    timelines the load tests read): ~7 s of CPU, which both xdist workers, the background report build and the catalog-clock mutation's replay each
    paid (2026-12-06)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for date, paths in raw_files(batches).items():
        for path in paths:
            if not _recorded_conditions(path):
                continue  # a batch whose runs carry no summary has no samples either (small file, read first)
            sampled = raw_digest(path)["sampled"]
            if sampled:
                out.setdefault(date, []).extend(sampled)
    return out


@functools.lru_cache(maxsize=None)
def _recorded_conditions(raw_path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """(run id, attempt) -> the `conditions` summary the plan wrote beside each run of the raw file's batch file."""
    stem = raw_path.name.split("-raw.jsonl")[0]
    for doc in (raw_path.with_name(f"{stem}.json"), raw_path.with_name(f"{stem}.json.xz")):
        if doc.is_file():
            runs = json.loads(read_kept(doc)).get("runs") or []
            return {(r["id"], int(r.get("attempt", 1))): r["conditions"] for r in runs if r.get("conditions")}
    return {}


@pytest.fixture
def sampled(request, target) -> dict[str, list[dict[str, Any]]]:
    parts = _sampled_parts(str(get_session(request.config).settings.results_dir / target.name / "batches"))
    if not parts:
        pytest.skip(f"{target.name}: no recorded session carries GPU samples")
    return parts


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False)
def test_recorded_conditions_are_the_raw_samples(request, target, sampled):
    """The summary written beside each run is the summary of its kept rows (gpu_sampler.summarize, the function the
    plan used): the rows this module reads are the ones the run was judged with."""
    results = get_session(request.config).settings.results_dir
    files = raw_files(str(results / target.name / "batches"))
    for date, parts in sampled.items():
        recorded: dict[tuple[str, int], dict[str, Any]] = {}
        for path in files[date]:
            recorded.update(_recorded_conditions(path))
        attempts = {(raw["id"], int(raw.get("attempt", 1))) for raw in parts}
        for raw in parts:
            key = (raw["id"], int(raw.get("attempt", 1)))
            want = recorded.get(key)
            if want is None:  # a part the plan measured again (decode validity): the batch keeps the last attempt's
                assert (key[0], key[1] + 1) in attempts, (date, key)
                continue
            got = summarize(raw["gpu_samples"])
            assert {k: got[k] for k in want} == want, (date, raw["id"])  # older summaries hold fewer keys


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False)
def test_sm_clock_dips_are_the_software_power_cap(target, sampled):
    """Every row below the news line carries the software power-cap bit, in itself or in one of the next two rows
    (NVML's reason bitmask is read a few queries after the clock and the cap's controller acts on a power average, so
    the bit may trail the drop by up to two 100 ms rows); no row of any part carries a thermal or hardware-slowdown
    bit. A dip without the cap, or a thermal bit, would make these rows a different story and fails here. The
    allowance was one row until the 2026-12-04 10:05 full session (card GPU-dbafddd4): in its qwen2.5-7b.closed.c8
    part the clock read 1,980, 1,635, 1,575 and 1,950 MHz in four rows and the bit first came with the 1,950 MHz row,
    two rows after the first dip row, while the power rose through those rows (440 -> 475 W)."""
    boost = target.require_spec().boost_clock_hz / 1e6
    assert NEWS_MHZ < boost
    dips = 0
    for date, parts in sampled.items():
        for raw in parts:
            g = raw["gpu_samples"]
            reasons = [int(r) if r is not None else None for r in g["event_reasons"]]
            for i, sm in enumerate(g["sm_mhz"]):
                assert reasons[i] is None or not reasons[i] & THERMAL_OR_HARDWARE, (date, raw["id"], i, reasons[i])
                if sm is None or sm >= NEWS_MHZ:
                    continue
                dips += 1
                near = [r for r in reasons[i:i + 3] if r is not None]
                assert any(r & SW_POWER_CAP for r in near), (date, raw["id"], i, sm, reasons[i:i + 3])
    assert dips > 0, "no dip in any sampled part: the cap's finding has nothing left to say"


def _outcome(parts: list[dict[str, Any]]) -> tuple[tuple[float, float], float, tuple[int, int], float, float]:
    load_means = [summarize(p["gpu_samples"])["sm_mhz_mean"] for p in parts if any(k in p["id"] for k in LOAD_KINDS)]
    sm = [v for p in parts for v in p["gpu_samples"]["sm_mhz"] if v is not None]
    summaries = [summarize(p["gpu_samples"]) for p in parts]
    capped = sum(1 for s in summaries if (s["event_reasons_any"] or 0) & SW_POWER_CAP)
    busy = [v for p in parts if any(k in p["id"] for k in LOAD_KINDS) for v in p["gpu_samples"]["host_cpu_busy"]
            if v is not None]
    return ((min(load_means), max(load_means)) if load_means else (0.0, 0.0),
            round(sum(1 for v in sm if v < NEWS_MHZ) / len(sm), 4), (capped, len(summaries)),
            max(s["power_w_max"] for s in summaries), round(sum(busy) / len(busy), 4) if busy else 0.0)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_the_preregistered_sample_expectations_missed_as_recorded(sampled):
    """OUTCOME is what the kept rows say, session by session; and against the pre-registration: the load runs' mean
    SM clock fell below the news line, power rose above 600 W (not 350-600 W: to the 700 W limit in every latency
    session, to 617 and 663 W in the two quantized-decode batches of 2026-12-04, which ran decode steps only, 649-698 W in its
    prefill calls), the
    power-cap bit was set in most parts, the host stayed below the expected busy share. A later session that meets
    the expectations changes OUTCOME and fails here, to be read, not absorbed."""
    got = {date: _outcome(parts) for date, parts in sampled.items()}
    assert got == OUTCOME
    full = [o for o in got.values() if o[0] != (0.0, 0.0)]  # the fast session runs no load run
    assert full and all(o[0][0] < NEWS_MHZ for o in full), "a load run's mean SM clock stayed at boost"
    assert all(o[3] > 600 for o in got.values()), "power stayed within the expected 350-600 W"
    # "most parts": the tenth visit's fast session left it out of 3 short parts of 21 (sampled at 1,980 MHz throughout),
    # so "all but one", this line's wording until then, was stricter than the miss it records (the bit is not rare)
    assert all(2 * o[2][0] > o[2][1] for o in got.values()), "the cap's bit was rare"
    assert all(o[4] < 0.10 for o in full), "the host's busy share during load runs reached the expected 0.10-0.30"


def _uncapped_rows(parts: list[dict[str, Any]]) -> list[float]:
    """The SM clock of every row the software power cap did not touch: no cap bit in it nor in the next two rows (the
    bit trails the clock by up to two rows, test_sm_clock_dips_are_the_software_power_cap)."""
    rows = []
    for raw in parts:
        g = raw["gpu_samples"]
        reasons = [int(r) if r is not None else None for r in g["event_reasons"]]
        for i, sm in enumerate(g["sm_mhz"]):
            near = [r for r in reasons[i:i + 3] if r is not None]
            if sm is not None and reasons[i] is not None and not any(r & SW_POWER_CAP for r in near):
                rows.append(float(sm))
    return rows


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False)
def test_the_uncapped_sm_clock_is_the_catalog_boost_clock(target, sampled, reconcile):
    """The catalog's boost clock (a published `nvidia-smi -q` max graphics clock, not our recordings) predicts the SM
    clock NVML reads while the card works and nothing caps it. Measured: the median over every sampled session's rows
    with no power-cap bit near them (each session's own median in the samples; a session with no such row adds
    none). The kernel ledgers price instructions at this clock (clock_hz=spec.boost_clock_hz) and the wgmma findings'
    bands divide by it, so this is the catalog number's own evidence; on the H200 sessions of 2026-12-02..04 every
    session's median is 1,980 MHz and no uncapped row is more than one 15 MHz step below it."""
    spec = target.require_spec()
    per_session = [median(rows) * 1e6 for parts in sampled.values() if (rows := _uncapped_rows(parts))]
    every = [v * 1e6 for parts in sampled.values() for v in _uncapped_rows(parts)]
    if not every:
        pytest.skip(f"{target.name}: no sampled row without the power cap")
    pred = Prediction(float(spec.require("boost_clock_hz")), "Hz", "the catalog's boost clock",
                      {"card": target.name, "source": spec.sources.get("boost_clock_hz", "?")})
    got = Measurement(median(every), "Hz", samples=tuple(per_session), source="recorded",
                      provenance={"what": "median NVML SM clock of the uncapped rows", "rows": len(every),
                                  "sessions": len(per_session), "batches": sorted(sampled)})
    reconcile("uncapped_sm_clock", pred, got, abs=15e6,
              why="NVML reads the SM clock on the card's 15 MHz ladder (1,965, 1,980 MHz rows): one step")
