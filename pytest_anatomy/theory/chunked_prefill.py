"""Chunked prefill: what the token budget (max_num_batched_tokens) does to the running decodes' ITL.

vLLM V1 schedules the running decodes first (one token each) and fills the rest of the step's
budget with a waiting prompt's next chunk. A prompt of L tokens joining B running decodes is
therefore split into ceil(L / (budget - B)) steps, each carrying a chunk of up to budget - B
tokens beside the B decodes. Every such step is an ITL sample of the running requests that is
longer than a pure decode step by

    t_mixed(B, chunk) - t_decode(B)

A larger budget means fewer, longer interfering steps (a worse ITL tail, a shorter TTFT for the
new prompt); a smaller one, more and shorter ones.
"""

from __future__ import annotations

import math

from pytest_anatomy.specs.model import ModelSpec
from pytest_anatomy.theory.latency import Ceilings, EngineCalibration, decode_step_time, mixed_step_time
from pytest_anatomy.theory.prediction import Prediction, Term


def interference(model: ModelSpec, ceilings: Ceilings, calib: EngineCalibration, decode_batch: int,
                 context: float, prompt_len: int, budget: int) -> Prediction:
    """Extra ITL of one step that carries a prompt chunk beside `decode_batch` decodes; the number of
    such steps the prompt takes is a term."""
    if decode_batch < 1 or prompt_len < 1 or budget <= decode_batch:
        raise ValueError(f"need decode_batch >= 1, prompt_len >= 1 and budget > decode_batch; got {decode_batch!r}, "
                         f"{prompt_len!r}, {budget!r}")
    room = budget - decode_batch
    chunk = min(prompt_len, room)
    steps = math.ceil(prompt_len / room)
    plain = decode_step_time(model, ceilings, calib, decode_batch, context).value
    mixed = mixed_step_time(model, ceilings, calib, decode_batch, context, chunk).value
    return Prediction(
        mixed - plain, "s", "t_mixed(B, min(L, budget - B)) - t_decode(B)",
        {"decode_batch": decode_batch, "context": context, "prompt_len": prompt_len, "budget": budget},
        terms=(Term("t_decode", plain, "s"), Term("t_mixed", mixed, "s"), Term("chunk", chunk, "tokens"),
               Term("interfering steps per prompt", steps, "steps")),
        notes=("the first chunk's step; later chunks attend to more past and cost a little more",
               calib.describe()))
