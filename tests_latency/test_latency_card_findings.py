"""latency_card_findings' recorded ratios recomputed from every recording of the card they name: each is the measured /
predicted of its check, with that session's own setup (the prediction the live check made); and every other number its
reason quotes, recomputed from the card's recordings and from every other recorded H200 session's."""

from __future__ import annotations

import latency_card_findings as cf
import pytest
from latency_findings_common import LLAMA, MEASURED_ON, QWEN
import test_latency_conditions as conditions
import latency_load_runs as lr
from latency_setups import mean_context

from pytest_anatomy import recordings
from pytest_anatomy.measure.gpu_sampler import THERMAL_OR_HARDWARE, summarize
from pytest_anatomy.session import get_session
from pytest_anatomy.theory import latency as lat


def _card_recordings(request, target, name: str, uuid: str) -> list:
    results = get_session(request.config).settings.results_dir
    out = []
    for path in recordings.candidates(results, target.name, "latency", name):
        rec = recordings.load_file(path)
        if cf.gpu_uuid(rec) == uuid:
            out.append(rec)
    return sorted(out, key=lambda r: recordings.stamp_of(r.recorded_at))


def _ratio(request, target, setup_beside, uuid: str, test: str, model: str) -> tuple[float, ...]:
    if test == "test_decode_roofline_without_overhead":
        recs = _card_recordings(request, target, f"{model}.decode.b1", uuid)
        out = []
        for rec in recs:
            s, setup = rec.data["run"]["settings"], setup_beside(model, rec)
            pred = lat.decode_step_time(setup.model, setup.ceilings, lat.UNCALIBRATED, 1,
                                        mean_context(s["input_len"], s["output_len"]))
            out.append(rec["step_time_s"].value / pred.value)
        return tuple(out)
    if test == "test_overload_queueing_share_of_ttft":
        out = []
        for rec in _card_recordings(request, target, f"{model}.overload", uuid):
            res = lr.simulate_overload(setup_beside(model, rec), rec)
            out.append(rec["aggregate.engine.prefill_s.mean"].value / (res.stat("ttft", "mean") - res.stat("queue", "mean")))
        return tuple(out)
    name, b = model.split(".b")
    out = []
    for rec in _card_recordings(request, target, f"{name}.decode.b{b}", uuid):
        s, setup = rec.data["run"]["settings"], setup_beside(name, rec)
        pred = lat.decode_step_time(setup.model, setup.ceilings, setup.calib, int(b),
                                    mean_context(s["input_len"], s["output_len"]))
        out.append(rec["step_time_s"].value / pred.value)
    return tuple(out)


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_card_ratios_are_the_recorded_ones(request, target, setup_beside):
    """Every ratio the card findings quote is its check's measured / predicted on that card's recordings, one per
    session of that card that ran it."""
    for uuid, table in cf.CARD_RATIOS.items():
        for (test, model, _quantity), ratios in table.items():
            assert tuple(round(r, 4) for r in _ratio(request, target, setup_beside, uuid, test, model)) == ratios, (
                test, model)


def test_card_mark_applies_only_to_its_card():
    """The mark is keyed by the recording's GPU UUID: another card, or a recording without one, gets none."""
    class Rec:
        def __init__(self, uuid):
            self.provenance = {"gpu": {"uuid": uuid}} if uuid else {}
    key = next(iter(cf.CARD_RATIOS[cf.TENTH_VISIT_CARD]))
    mark = cf.card_mark(Rec(cf.TENTH_VISIT_CARD), *key)
    assert mark is not None and mark.kwargs["quantity"] == key[2]
    lo, hi = mark.kwargs["expected"]
    assert lo < min(cf.CARD_RATIOS[cf.TENTH_VISIT_CARD][key]) <= max(cf.CARD_RATIOS[cf.TENTH_VISIT_CARD][key]) < hi
    assert cf.card_mark(Rec("GPU-00000000-0000-0000-0000-000000000000"), *key) is None
    assert cf.card_mark(Rec(None), *key) is None


def _every(request, target, name: str) -> list:
    """Every recording of `name` on the target (one per session that ran it), oldest first."""
    results = get_session(request.config).settings.results_dir
    recs = [recordings.load_file(p) for p in recordings.candidates(results, target.name, "latency", name)]
    return sorted(recs, key=lambda r: recordings.stamp_of(r.recorded_at))


def _split(rows: list[tuple[str | None, float]], digits: int) -> tuple[tuple[float, ...], tuple[float, float]]:
    """(the card's values, oldest first; the lowest and highest of the others), rounded as the table holds them."""
    card = tuple(round(v, digits) for u, v in rows if u == cf.TENTH_VISIT_CARD)
    others = [v for u, v in rows if u not in cf.CARD_RATIOS]  # the sessions on cards no card finding names
    return card, (round(min(others), digits), round(max(others), digits))


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_card_b1_numbers_are_the_recorded_ones(request, target, session_rec, setup_beside):
    """cf.CARD_SESSIONS, CARD_B1, CARD_OTHER_B1_SESSIONS and PROBE_BUFFER_GIB: Qwen2.5-7B's b=1 step, its session's read
    probe, the step less its bare roofline at that probe (the calibration's t_overhead, as the setup fits it) and the
    step over that roofline, on every recorded H200 session; the card's sit beyond every other session's, as quoted."""
    rows: dict[str, list[tuple[str | None, float]]] = {q: [] for q in cf.CARD_B1}
    card, fast = [], []
    for b1 in _every(request, target, f"{QWEN}.decode.b1"):
        ceil = session_rec("ceilings", suite="ceilings", beside=b1)
        setup, s = setup_beside(QWEN, b1), b1.data["run"]["settings"]
        assert setup.ceilings.bandwidth == ceil["read_bandwidth.value"].value
        roof = lat.decode_step_time(setup.model, setup.ceilings, lat.UNCALIBRATED, 1,
                                    mean_context(s["input_len"], s["output_len"])).value
        step, uuid = b1["step_time_s"].value, cf.gpu_uuid(b1)
        assert setup.calib.step_overhead_s == pytest.approx(step - roof, abs=1e-9), b1.recorded_at
        for q, v in (("step_ms", step * 1e3), ("read_tb_s", setup.ceilings.bandwidth / 1e12),
                     ("overhead_ms", (step - roof) * 1e3), ("roofline_ratio", step / roof)):
            rows[q].append((uuid, v))
        fast.append((b1.recorded_at, uuid, round(step * 1e3, 3), round(setup.ceilings.bandwidth / 1e12, 3),
                     round((step - roof) * 1e3, 3)))
        if uuid == cf.TENTH_VISIT_CARD:
            card.append(b1.recorded_at)
            assert ceil["read_bandwidth.buffer_bytes"].value == cf.PROBE_BUFFER_GIB * 2**30
    assert tuple(card) == cf.CARD_SESSIONS
    assert {q: _split(r, 3) for q, r in rows.items()} == cf.CARD_B1
    assert sum(u not in cf.CARD_RATIOS for u, _ in rows["step_ms"]) == cf.CARD_OTHER_B1_SESSIONS
    (step, _), (bw, (bw_lo, _)) = cf.CARD_B1["step_ms"], cf.CARD_B1["read_tb_s"]
    as_fast = [(stamp, u, s, b, o) for stamp, u, s, b, o in fast if u not in cf.CARD_RATIOS and s <= max(step)]
    assert as_fast == [(stamp, u, *v) for stamp, (u, *v) in cf.CARD_B1_AS_FAST.items()]  # "but ... as fast"
    assert min(step) <= cf.CARD_B1["step_ms"][1][0] and max(bw) < bw_lo  # "at the bottom", "lower than any of them"


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_card_llama_numbers_are_the_recorded_ones(request, target, setup_beside):
    """cf.CARD_LLAMA_B1_MS, CARD_LLAMA_OVER_MS and OTHER_LLAMA_GAP: Llama-3.1-8B's decode steps on every recorded H200
    session against the prediction its check makes (the Qwen calibration known when it ran, transferred)."""
    steps, over, gap = [], [], []
    for b in cf.LLAMA_BATCHES:
        for rec in _every(request, target, f"{LLAMA}.decode.b{b}"):
            setup, s = setup_beside(LLAMA, rec), rec.data["run"]["settings"]
            pred = lat.decode_step_time(setup.model, setup.ceilings, setup.calib, b,
                                        mean_context(s["input_len"], s["output_len"])).value
            measured, uuid = rec["step_time_s"].value, cf.gpu_uuid(rec)
            if b == 1:
                steps.append((uuid, measured * 1e3))
            if uuid == cf.TENTH_VISIT_CARD:
                over.append((measured - pred) * 1e3)
            elif uuid not in cf.CARD_RATIOS:
                gap.append(measured / pred - 1)
    card, others = _split(steps, 3)
    assert (card, others) == ((cf.CARD_LLAMA_B1_MS[0],), cf.CARD_LLAMA_B1_MS[1]) and card[0] > others[1]
    assert len(over) == len(cf.LLAMA_BATCHES)  # the card's one session with Llama
    assert (round(min(over), 3), round(max(over), 3)) == cf.CARD_LLAMA_OVER_MS
    assert (round(min(gap), 3), round(max(gap), 3)) == cf.OTHER_LLAMA_GAP


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_card_conditions_are_the_recorded_ones(request, target, session_rec):
    """cf.CARD_SM_MHZ and CARD_CPU_BUSY: NVML's and /proc/stat's rows kept for the runs the reason quotes on the card
    (Qwen2.5-7B b=1 in both its sessions, every attempt; Llama-3.1-8B at LLAMA_BATCHES), none with a thermal bit."""
    results = get_session(request.config).settings.results_dir
    sampled = conditions._sampled_parts(str(results / target.name / "batches"))
    ids = {f"{QWEN}.decode.b1", *(f"{LLAMA}.decode.b{b}" for b in cf.LLAMA_BATCHES)}
    means, busy = [], []
    for stamp in cf.CARD_SESSIONS:
        date = session_rec(f"{QWEN}.decode.b1", not_after=stamp).provenance["date"]
        for raw in (p for p in sampled[date] if p["id"] in ids):
            summary, cpu = summarize(raw["gpu_samples"]), [v for v in raw["gpu_samples"]["host_cpu_busy"] if v is not None]
            assert not (summary["event_reasons_any"] or 0) & THERMAL_OR_HARDWARE, (date, raw["id"])
            means.append(summary["sm_mhz_mean"])
            busy.append(sum(cpu) / len(cpu))
    assert len(means) >= len(cf.CARD_SESSIONS) + len(cf.LLAMA_BATCHES)
    assert (min(means), max(means)) == cf.CARD_SM_MHZ
    assert round(max(busy), 3) == cf.CARD_CPU_BUSY


def test_card_reason_quotes_the_tables():
    """The reason is formatted from the tables the tests above recompute (spot checks of its printed precision)."""
    reason = cf.card_reason(cf.TENTH_VISIT_CARD)
    assert "{" not in reason and cf.TENTH_VISIT_CARD in reason
    step, (lo, hi) = cf.CARD_B1["step_ms"]
    assert f"({step[0]:.3f} / {step[1]:.3f} ms; the other {cf.CARD_OTHER_B1_SESSIONS} sessions" in reason
    assert f"{lo:.3f}-{hi:.3f} ms, " in reason
    assert f"{cf.CARD_LLAMA_OVER_MS[0]:.2f}-{cf.CARD_LLAMA_OVER_MS[1]:.2f} ms over" in reason


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.decode.", live=False, hardware=MEASURED_ON)
def test_second_card_numbers_are_the_recorded_ones(request, target, session_rec, setup_beside):
    """cf.SECOND_CARD_*: the eleventh visit's card's Qwen2.5-7B b=1 numbers in both its sessions, its Llama-3.1-8B
    steps against the transferred prediction, their NVML rows, and the count of Llama sessions on the other cards."""
    uuid, qwen = cf.ELEVENTH_VISIT_CARD, {q: [] for q in cf.SECOND_CARD_QWEN_B1}
    stamps = []
    for b1 in _every(request, target, f"{QWEN}.decode.b1"):
        if cf.gpu_uuid(b1) == uuid:
            setup = setup_beside(QWEN, b1)
            stamps.append(b1.recorded_at)
            for q, v in (("step_ms", b1["step_time_s"].value * 1e3), ("read_tb_s", setup.ceilings.bandwidth / 1e12),
                         ("overhead_ms", setup.calib.step_overhead_s * 1e3)):
                qwen[q].append(round(v, 3))
    assert tuple(stamps) == cf.SECOND_CARD_SESSIONS
    assert {q: tuple(v) for q, v in qwen.items()} == cf.SECOND_CARD_QWEN_B1
    llama, sessions = {}, set()
    for b in cf.SECOND_CARD_BATCHES:
        for rec in _every(request, target, f"{LLAMA}.decode.b{b}"):
            if cf.gpu_uuid(rec) not in cf.CARD_RATIOS and b == 1:
                sessions.add(rec.recorded_at)
            if cf.gpu_uuid(rec) == uuid:
                setup, s = setup_beside(LLAMA, rec), rec.data["run"]["settings"]
                pred = lat.decode_step_time(setup.model, setup.ceilings, setup.calib, b,
                                            mean_context(s["input_len"], s["output_len"])).value
                llama[b] = (round(rec["step_time_s"].value * 1e3, 3), round(pred * 1e3, 3))
    assert llama == cf.SECOND_CARD_LLAMA_MS and len(sessions) == cf.OTHER_LLAMA_SESSIONS
    assert llama[1][0] > cf.CARD_LLAMA_B1_MS[1][1]  # "against ... in the sessions on other cards": above them all
    results = get_session(request.config).settings.results_dir
    sampled = conditions._sampled_parts(str(results / target.name / "batches"))
    date = session_rec(f"{LLAMA}.decode.b1", not_after=cf.SECOND_CARD_SESSIONS[0]).provenance["date"]
    ids = {f"{LLAMA}.decode.b{b}" for b in (1, 2, 4)}
    means, busy = [], []
    for raw in (p for p in sampled[date] if p["id"] in ids):
        summary, cpu = summarize(raw["gpu_samples"]), [v for v in raw["gpu_samples"]["host_cpu_busy"] if v is not None]
        assert not (summary["event_reasons_any"] or 0) & THERMAL_OR_HARDWARE, raw["id"]
        means.append(summary["sm_mhz_mean"])
        busy.append(sum(cpu) / len(cpu))
    assert len(means) == len(ids) and (min(means), max(means)) == cf.SECOND_CARD_SM_MHZ
    assert round(max(busy), 3) == cf.SECOND_CARD_CPU_BUSY
    reason = cf.card_reason(uuid)
    assert "{" not in reason and uuid in reason and f"b=1 {llama[1][0]:.3f} ms" in reason
