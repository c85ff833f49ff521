"""Which capacity recordings are held out: by time order, never by a label alone.

A recording is held out only if the prediction it is checked against existed before it was
measured. From now on that is shown by a pre-registration (pytest_anatomy/preregistration.py):
a committed file of predictions that the device importer requires, committed before the run.
Recordings measured before that mechanism existed carry the `held_out` flag their plan gave them;
the commit history decides whether the flag is honest:

- the ledger theory was first committed in 2039808 (2026-11-30T01:29:45Z: theory/vllm_memory.py,
  vllm_activation.py, vllm_settings.py);
- seven recordings flagged held out were committed in 53fd270 (2026-11-30T00:59:06Z), half an
  hour earlier: the theory was written with them in the repository, and nothing shows they were
  not looked at. They are in-sample, labelled "in-sample (committed before the theory)";
- the other six were measured and committed after that theory commit (6534a6b, a5f99b5), with no
  pre-registration: held out by commit order only.

test_held_out_labels.py checks this table against `git log` wherever the history is present."""

from __future__ import annotations

THEORY_FIRST_COMMIT = "2039808"
THEORY_FIRST_COMMITTED_AT = "2026-11-30T01:29:45Z"
THEORY_FILE = "pytest_anatomy/theory/vllm_memory.py"

COMMITTED_BEFORE_THE_THEORY = frozenset({
    "vllm-ledger.mistral-7b-v0.3.u0.50.len2048.eager",
    "vllm-ledger.qwen2.5-0.5b.u0.90.len8192.eager.bs32",
    "vllm-ledger.qwen2.5-14b.u0.50.len2048.eager.mbt2048.seqs256",
    "vllm-ledger.qwen2.5-14b.u0.90.len8192.eager",
    "vllm-ledger.qwen2.5-32b.u0.90.len32768.eager.fp8",
    "vllm-ledger.qwen2.5-7b.u0.50.len32768.eager",
    "vllm-ledger.qwen2.5-7b.u0.90.len8192.eager.mbt32768",
})

HELD_OUT = "held-out"
IN_SAMPLE = "in-sample"
LABEL_TEXT = {
    HELD_OUT: f"held out: committed after the ledger theory ({THEORY_FIRST_COMMIT}), before pre-registration existed",
    IN_SAMPLE: f"in-sample (committed before the theory): flagged held out when measured, but committed before the "
               f"ledger theory ({THEORY_FIRST_COMMIT}, {THEORY_FIRST_COMMITTED_AT})",
}


def label(name: str, flagged_held_out: bool) -> str | None:
    """'held-out', 'in-sample' (flagged held out, but committed before the theory), or None (a fit
    or in-sample run that never claimed to be held out)."""
    if not flagged_held_out:
        return None
    return IN_SAMPLE if name in COMMITTED_BEFORE_THE_THEORY else HELD_OUT
