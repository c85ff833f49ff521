"""The config.json reader never traces back: encoding, shapes and size bounds each get one line
naming the file, the field and the fix, and a bound is refused before any work is done."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_anatomy.cli import main
from pytest_anatomy.specs import model_config as model_module
from pytest_anatomy.specs.catalog import MODELS
from pytest_anatomy.specs.model import ModelConfigError, load_model


def _config(tmp_path: Path, base: str = "qwen2.5-7b", **changes: Any) -> Path:
    doc = json.loads(MODELS[base].config_path.read_text())
    doc.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_config_that_is_not_utf8_names_the_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xff\xfe{\x00}")
    with pytest.raises(ModelConfigError, match=rf"{path}: `config.json` is not UTF-8 text \(byte 0"):
        load_model(path)
    assert main(["predict", "capacity", "--model", str(path), "--hardware", "h200"]) == 2
    assert str(path) in capsys.readouterr().err


@pytest.mark.parametrize("value", ["linear", 8, ["llama3"]])
def test_rope_scaling_must_be_an_object(tmp_path: Path, value: Any) -> None:
    with pytest.raises(ModelConfigError, match=r"`rope_scaling` must be an object or null, got .*Fix: write it as"):
        load_model(_config(tmp_path, rope_scaling=value))


def test_rope_scaling_factor_must_be_a_positive_number(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match=r"`rope_scaling` has factor 'x', not a positive number"):
        load_model(_config(tmp_path, rope_scaling={"rope_type": "linear", "factor": "x"}))


@pytest.mark.parametrize("layers", [1_000_000, 10**12])
def test_a_million_layers_is_refused_at_once_with_the_bound_and_its_reason(tmp_path: Path, layers: int) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelConfigError, match=rf"`num_hidden_layers` is {layers:,}, above the bound of 1,024 "
                                               r"\(the deepest published decoder has 126 layers"):
        load_model(_config(tmp_path, num_hidden_layers=layers))
    assert time.perf_counter() - start < 1.0


def test_the_deepest_allowed_model_still_answers_quickly(tmp_path: Path, capsys) -> None:
    """The bound is what keeps the inventory cheap: at the bound, a whole CLI answer takes seconds at most."""
    path = _config(tmp_path, "smollm2-135m", num_hidden_layers=model_module.MAX_LAYERS)
    start = time.perf_counter()
    main(["predict", "capacity", "--model", str(path), "--hardware", "h200", "--json"])
    assert time.perf_counter() - start < 10
    capsys.readouterr()


def test_expert_counts_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match=r"`num_experts` is 100,000, above the bound of 4,096"):
        load_model(_config(tmp_path, "qwen3-30b-a3b", num_experts=100_000))
    with pytest.raises(ModelConfigError, match=r"x num_hidden_layers is 196,608, above the bound of 65,536"):
        load_model(_config(tmp_path, "qwen3-30b-a3b", num_experts=4096))


def test_dimensions_beyond_int32_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match=r"`hidden_size` is 4,294,967,296, above the bound of 2,147,483,647 "
                                               r"\(tensor dimensions are int32"):
        load_model(_config(tmp_path, hidden_size=2**32))


@pytest.mark.parametrize("field, value", [("torch_dtype", ["bfloat16"]), ("layer_types", [["full_attention"]] * 28)])
def test_unhashable_values_are_named_not_traced_back(tmp_path: Path, field: str, value: Any) -> None:
    with pytest.raises(ModelConfigError, match=rf"`{field}`"):
        load_model(_config(tmp_path, **{field: value}))


def test_an_oversized_file_is_refused_without_reading_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_module, "MAX_CONFIG_BYTES", 100)
    with pytest.raises(ModelConfigError, match=r"above the 100-byte bound for a config \(real ones are a few KiB\)"):
        load_model(_config(tmp_path))
