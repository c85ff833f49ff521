"""latency_pace_carry: the Poisson mean-ITL band carried to the checked run's own prompt pace. Its tables recomputed
from the recordings, the rule that picks the rates it applies at, and that the carry follows the prompts, not the
ITLs it judges."""

from __future__ import annotations

import latency_findings as lf
import latency_pace_carry as pc
import pytest
from latency_findings_common import MEASURED_ON
import latency_load_runs as lr
import test_latency_load as load
from latency_setups import prompt_pace_of

from pytest_anatomy import recordings
from pytest_anatomy.session import get_session


def _runs(request, target, factor: str) -> dict[str, recordings.Recording]:
    """Every recorded Qwen2.5-7B Poisson run at `factor` with a kept timeline, by stamp, oldest first."""
    results = get_session(request.config).settings.results_dir
    out = {}
    for path in recordings.candidates(results, target.name, "latency", f"{lf.QWEN}.poisson.f{factor}"):
        rec = recordings.load_file(path)
        if prompt_pace_of(rec) is not None:
            out[rec.recorded_at] = rec
    return out


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False, hardware=MEASURED_ON)
def test_pace_tables_are_the_recorded_ones(request, target, setup_beside):
    """pc.POISSON_PROMPT_PART_MS and pc.POISSON_PACE_SHIFT: every recorded run at each rate the mean-ITL band is derived
    at (lf.ITL_MEAN_DERIVED), its lone-prompt compute part and its pace shift against the reference part, as
    test_latency_load.pace_shift computes it (here for every rate, so that the rule below can be judged)."""
    parts: dict[str, dict[str, float]] = {}
    shifts: dict[str, dict[str, float]] = {}
    for factor in lf.ITL_MEAN_DERIVED:
        runs = _runs(request, target, factor)
        parts[factor] = {s: round(prompt_pace_of(r).prompt_part_s() * 1e3, 2) for s, r in runs.items()}
        reference = pc.reference_part_ms(factor, lf.POISSON_PACE_FLAGGED[factor], parts[factor])
        for stamp, rec in runs.items():
            setup = setup_beside(lf.QWEN, rec)
            shift = load.pace_shift_at(setup, rec, lr.simulate_run(setup, rec), parts[factor][stamp] / reference)
            shifts.setdefault(factor, {})[stamp] = round(shift, 4)
    assert parts == pc.POISSON_PROMPT_PART_MS
    assert shifts == pc.POISSON_PACE_SHIFT
    assert {f: list(v) for f, v in parts.items()} == {f: list(v) for f, v in pc.POISSON_PROMPT_PART_MS.items()}


@pytest.mark.gpu
@pytest.mark.targets(recorded="qwen2.5-7b.poisson.", live=False, hardware=MEASURED_ON)
def test_pace_carries_where_it_narrows_the_spread(request, target):
    """The rates the band is carried at are those where the clean sessions' mean-ITL ratios, each taken to the
    reference pace, spread less (population standard deviation) than as measured: where the lone-prompt pace explains
    the sessions' differences. Every clean run at the rate must have a pace (a kept timeline) to be judged."""
    narrowing = []
    for factor in lf.ITL_MEAN_DERIVED:
        clean = {s: r for s, r in lf.POISSON_ITL_MEAN[factor].items() if s not in lf.POISSON_PACE_FLAGGED[factor]}
        assert set(clean) <= set(pc.POISSON_PACE_SHIFT[factor]), factor
        raw, carried = pc.spread(list(clean.values())), pc.spread(list(pc.at_reference_pace(factor, clean).values()))
        if carried < raw:
            narrowing.append(factor)
    assert tuple(narrowing) == pc.PACE_CARRIED


def test_the_carried_band_moves_with_the_shift_only_where_carried():
    """At a carried rate the band is the reference-pace envelope times the run's pace shift (a run at the reference
    pace, shift 1, keeps it; a slow-decode run with normal prompts is not carried into agreement); at a rate not
    carried the shift changes nothing."""
    factor = pc.PACE_CARRIED[0]
    newest = max(lf.POISSON_ITL_MEAN[factor])
    base = lf.itl_mean_envelope(factor, 0.02, exclude=newest)
    slow = lf.itl_mean_envelope(factor, 0.02, exclude=newest, own_shift=1.10)
    assert slow == pytest.approx((base[0] * 1.10, base[1] * 1.10), abs=2e-4)
    assert lf.itl_mean_envelope("1", 0.02, exclude=newest) == lf.itl_mean_envelope("1", 0.02, exclude=newest,
                                                                                   own_shift=1.10)
