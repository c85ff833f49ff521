"""latency_card_findings' recorded ratios recomputed from every recording of the card they name: each is the measured /
predicted of its check, with that session's own setup (the prediction the live check made)."""

from __future__ import annotations

import latency_card_findings as cf
import pytest
from latency_findings_common import MEASURED_ON
import test_latency_load as load
from latency_setups import mean_context

from pytest_anatomy import recordings
from pytest_anatomy.session import get_session
from pytest_anatomy.theory import latency as lat


def _card_recordings(request, target, name: str, uuid: str) -> list:
    results = get_session(request.config).settings.results_dir
    out = []
    for path in recordings.candidates(results, target.name, "latency", name):
        rec = recordings.load_file(path)
        gpu = rec.provenance.get("gpu")
        if isinstance(gpu, dict) and gpu.get("uuid") == uuid:
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
            res = load._sim_overload(setup_beside(model, rec), rec)
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
