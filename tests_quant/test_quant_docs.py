"""docs/QUANT.md's tables of the second visit are rendered from the recordings (quant_tables.py), never typed: a new
recording or a changed computation shows here as a page to re-render (`python tests_quant/quant_tables.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from quant_tables import TABLES

from pytest_anatomy.session import get_session

PAGE = Path(__file__).resolve().parents[1] / "docs" / "QUANT.md"


@pytest.mark.quant_runs("bench", only=("F16",))  # each recorded target whose visit benched the files
@pytest.mark.parametrize("table", sorted(TABLES))
def test_the_page_holds_the_rendered_table(target, file_type, table, request):
    results = Path(get_session(request.config).settings.results_dir)
    rendered = TABLES[table](results, target.name)
    assert rendered in PAGE.read_text(), f"docs/QUANT.md's {table} table is not the recordings':\n{rendered}"
