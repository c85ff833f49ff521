"""kernel_noise_findings' reasons against the recordings: each slower finding's sign holds in every recorded session
(the faster one's in most, and it is not strict), the
SGEMM rungs' runs agree with one another to about 1% and their timing blocks to 0.6%, and each case's finding band
(other sessions' envelope +- the run's scatter) never uses the checked run."""

from __future__ import annotations

import json

import kernel_noise_findings as kn
import pytest


@pytest.mark.parametrize("case", sorted(kn.CASES), ids=lambda c: f"{c[1]}-{c[2]}")
def test_the_sign_holds_in_every_session(case: tuple[str, str, str]) -> None:
    r = kn.ratios(*case)
    assert len(r) >= 3, f"{case}: fewer than three recorded sessions"
    if kn.CASES[case] == kn.READ_FASTER:  # straddles its header (strict=False): under it in most sessions
        assert kn._median(kn.READ_FASTER) < 1.0 < max(r)
    else:
        assert min(r) > 1.0


def test_the_sgemm_rungs_are_steady_across_sessions() -> None:
    for case, fid in kn.CASES.items():
        if fid != kn.SGEMM_SLOW:
            continue
        r = kn.ratios(*case)
        assert max(r) / min(r) - 1 < 0.015, case  # "agree with one another to about 1%"
        ladder, rung, shape = case
        for p in kn.KERNELS.glob(f"{ladder}.{rung}.{shape}@*.json"):
            m = json.loads(p.read_text())["measurements"]
            if "time_repeat" in m:
                assert abs(m["time"]["value"] / m["time_repeat"]["value"] - 1) < 0.0065, p.name  # "to 0.6%"


def test_the_band_is_the_other_sessions() -> None:
    assert kn.band([1.1, 1.2], 0.01) == (1.089, 1.212)  # takes no checked ratio: it cannot enter
    assert kn.band([], 0.01) is None
