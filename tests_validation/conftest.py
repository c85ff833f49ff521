"""Fixtures of the validation suite: the H200 calibration as a transferable `Transfer`
(sweeps.h200_transfer: h200_setup's fit, from the same recordings). Nothing reads third-party data."""

from __future__ import annotations

import pytest
from sweeps import h200_transfer as fit_transfer

from pytest_anatomy import recordings
from pytest_anatomy.session import get_session
from pytest_anatomy.theory.transfer import Transfer


@pytest.fixture(scope="session")
def h200_transfer(request: pytest.FixtureRequest) -> Transfer:
    try:
        return fit_transfer(get_session(request.config).settings.results_dir)
    except recordings.MissingRecording as exc:
        pytest.skip(f"the H200 calibration's recording {exc.args[0]} is missing")
