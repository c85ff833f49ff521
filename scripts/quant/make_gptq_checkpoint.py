#!/usr/bin/env python3
"""SmolLM2-135M's int4 weight-only checkpoint for vLLM, made by a real, maintained library (issue 13):
llm-compressor's GPTQ (W4A16, symmetric int4, groups of 64 along the input, no activation reordering), from the
quant suite's reference (the Q4_1 GGUF dequantized to f16, written as a Hugging Face folder by
pytest_anatomy/measure/hf_checkpoint.py), saved in compressed-tensors' pack-quantized format, which vLLM reads.

Why groups of 64: SmolLM2's width is 576 = 4.5 x 128, so the usual group of 128 does not divide the q/k/v/gate/up
inputs and vLLM refuses it (docs/QUANT.md); 64 divides every input (576, 1536). Why symmetric: a 4-bit
*asymmetric* grid over 32 reproduces the reference's own Q4_1 grid (the trap the suite names); a symmetric grid
over 64 spans two Q4_1 blocks with one scale and no offset, so it is not the reference's grid.
Calibration: 64 sequences of 512 tokens from the text *after* the 400,000 characters the quality is measured on
(the evaluation never sees its own calibration), tokenized with the GGUF's own BPE (measure/bpe.py).

Runs on a CPU in a separate venv (llm-compressor pulls transformers, accelerate and datasets, which the project does
not need; torch 2.13.0 is the CPU build on this workplace's disk):
  python3 -m venv /work/qvenv && . /work/qvenv/bin/activate && pip install torch==2.13.0 llmcompressor==0.14.0.1 gguf
  python -m pytest_anatomy.measure.hf_checkpoint .anatomy-data/quant/SmolLM2-135M-Instruct.Q4_1.gguf /work/ref-hf
  python scripts/quant/make_gptq_checkpoint.py /work/ref-hf .devcarry-gptq/smollm2-135m-gptq-w4g64
About 5-10 minutes on 2 cores. The folder is build output (ignored; carried to the device); what it holds is pinned
by the sha256 in its provenance.json, which tests_quant/vllm_quality_preregistered.json copies.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

GROUP_SIZE = 64
SAMPLES, SEQ_LEN = 64, 512
EVAL_CHARS = 400_000  # scripts/device/quant_plan.TEXT_CHARS: the measured text; calibration starts after it
CALIB_CHARS = 200_000


def calibration_ids() -> list[list[int]]:
    import gguf

    from pytest_anatomy import quant_data
    from pytest_anatomy.measure import bpe, wiki_text

    data = quant_data.locate()
    reader = gguf.GGUFReader(str(data.gguf))
    tok = bpe.ByteBpe(reader.get_field("tokenizer.ggml.tokens").contents(),
                      reader.get_field("tokenizer.ggml.merges").contents())
    text = wiki_text.plain_text(data.wiki_bz2(), max_chars=EVAL_CHARS + CALIB_CHARS)[EVAL_CHARS:]
    ids = tok.encode(text)
    if len(ids) < SAMPLES * SEQ_LEN:
        raise SystemExit(f"make_gptq_checkpoint: the calibration text gave {len(ids)} tokens, "
                         f"fewer than {SAMPLES} x {SEQ_LEN}; raise CALIB_CHARS")
    return [ids[i * SEQ_LEN:(i + 1) * SEQ_LEN] for i in range(SAMPLES)]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reference", type=Path, help="the reference Hugging Face folder (measure/hf_checkpoint.py)")
    p.add_argument("out", type=Path)
    args = p.parse_args()
    if not (args.reference / "config.json").is_file():
        raise SystemExit(f"make_gptq_checkpoint: {args.reference} has no config.json; write it with "
                         "`python -m pytest_anatomy.measure.hf_checkpoint <gguf> <folder>`")
    import compressed_tensors
    import llmcompressor
    import torch
    import transformers
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import GPTQModifier

    t0 = time.monotonic()
    seqs = calibration_ids()
    ds = Dataset.from_dict({"input_ids": seqs, "attention_mask": [[1] * SEQ_LEN for _ in seqs]})
    model = transformers.AutoModelForCausalLM.from_pretrained(args.reference, dtype=torch.float32)
    scheme = QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(
        num_bits=4, type="int", symmetric=True, strategy="group", group_size=GROUP_SIZE, actorder=None))
    recipe = GPTQModifier(config_groups={"group_0": scheme}, ignore=["lm_head"])
    # oneshot insists on a processor even for a tokenized dataset: the GGUF's own tokenizer, which transformers
    # builds from the file (the ids above are ours; test_text_tools checks that they are the same tokenizer's)
    from pytest_anatomy import quant_data

    gguf_path = quant_data.locate().gguf
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    oneshot(model=model, dataset=ds, recipe=recipe, processor=tokenizer, max_seq_length=SEQ_LEN,
            num_calibration_samples=SAMPLES)
    model = model.to(torch.float16)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, save_compressed=True)
    files = {f.name: sha256(f) for f in sorted(args.out.iterdir()) if f.suffix in (".safetensors", ".json")}
    prov = {"made_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "seconds": round(time.monotonic() - t0, 1),
            "library": {"llmcompressor": llmcompressor.__version__, "compressed_tensors": compressed_tensors.__version__,
                        "transformers": transformers.__version__, "torch": torch.__version__},
            "recipe": {"modifier": "GPTQModifier", "num_bits": 4, "symmetric": True, "strategy": "group",
                       "group_size": GROUP_SIZE, "actorder": None, "ignore": ["lm_head"], "dampening_frac": "default"},
            "calibration": {"samples": SAMPLES, "seq_len": SEQ_LEN, "text_chars": [EVAL_CHARS, EVAL_CHARS + CALIB_CHARS]},
            "reference": {"config_sha256": sha256(args.reference / "config.json"),
                          "weights_sha256": sha256(args.reference / "model.safetensors")},
            "files": files}
    (args.out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    print(json.dumps(prov, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
