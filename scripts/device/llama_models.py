"""The llama.cpp device plan's models phase: random-weight F16 GGUFs (scripts/device/llama_plan.py runs it; kept apart from the plan for size)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any



def write_f16(model: Any, path: Path, writer_dir: Path, tiny: dict[str, int]) -> dict[str, Any]:
    """An F16 GGUF of the model's shape; make_random_gguf.py's header and tokenizer, fast tensor fill."""
    sys.path.insert(0, str(writer_dir))
    import gguf
    import make_random_gguf as mrg
    import numpy as np

    t0 = time.monotonic()
    cfg = dict(mrg.PRESETS[model.preset])
    if model.tiny:
        cfg.update(tiny)
    s = mrg.shape_from_config(cfg, model.layers)
    w = gguf.GGUFWriter(str(path), s["arch"])
    w.add_name(f"random-{model.id}-f16")
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["H"])
    w.add_block_count(s["L"])
    w.add_feed_forward_length(s["FF"])
    w.add_head_count(s["NH"])
    w.add_head_count_kv(s["NKV"])
    w.add_rope_freq_base(s["theta"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_vocab_size(s["V"])
    w.add_file_type(mrg.FTYPE["f16"])
    if model.tiny:
        w.add_tokenizer_model("none")
    else:
        tokens, types, merges = mrg.synthetic_bpe(s["V"])
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(mrg.PRE.get(s["arch"], "default"))
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(s["V"] - 3)
        w.add_eos_token_id(s["V"] - 1)
        w.add_pad_token_id(s["V"] - 3)
        w.add_add_bos_token(False)
        w.add_chat_template(mrg.CHATML)
    plan = mrg.tensor_list(s)
    for name, shape, _ in plan:
        kind, npdt, nbytes, sshape = mrg.storage(shape, "f16")
        w.add_tensor_info(name, sshape, np.dtype(npdt), nbytes, raw_dtype=None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    block = (np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32) * 0.02)
    for name, shape, is_norm in plan:
        n = int(np.prod(shape))
        if is_norm or len(shape) == 1:
            d = np.ones(shape, np.float32) if is_norm else np.resize(block, n).reshape(shape)
        else:
            d = np.resize(block.astype(np.float16), n).reshape(shape)
        w.write_tensor_data(d)
    w.close()
    return {"path": str(path), "seconds": time.monotonic() - t0, "bytes": path.stat().st_size}


def phase_models(args: Any, all_models: tuple[Any, ...], tiny: dict[str, int]) -> int:
    models = Path(args.models_dir)
    models.mkdir(parents=True, exist_ok=True)
    wanted = set(args.models.split(",")) if args.models else {m.id for m in all_models}
    order = sorted((m for m in all_models if m.id in wanted), key=lambda m: m.id == "qwen2.5-7b")  # the 7B last: the small ones are needed first
    report = []
    for m in order:
        p = m.path(models, "F16")
        try:
            r = write_f16(m, p.with_suffix(".part"), Path(args.writer_dir), tiny)
            p.with_suffix(".part").replace(p)
            report.append({"model": m.id, **r, "path": str(p)})
        except Exception as exc:  # noqa: BLE001 - reported; the measure phase skips what is missing
            report.append({"model": m.id, "error": f"{type(exc).__name__}: {exc}"})
        print(f"[models] {report[-1]}", flush=True)
    (models / "models.json").write_text(json.dumps(report, indent=1))
    return 0
