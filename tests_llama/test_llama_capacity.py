"""llama.cpp's memory on a recorded card, predicted from config.json alone.

- the header llama-quantize wrote: every tensor's type as gguf_mix predicts it, and the file's
  tensor bytes to the byte;
- every buffer line a server load logged (llama-server -lv 4): model buffer per device,
  KV, output and compute buffers (CUDA0, and CUDA_Host: the graph's inputs and the embedding gather), from the
  predicted header and the run's own flags, exact at the log's two decimals;
- the server's GPU memory (nvidia-smi, loaded minus before) against those buffers and the one term no line
  reports, fitted on the loads recorded twice and held out on the others (llama_context.py).
"""

from __future__ import annotations

import pytest
from llama_context import fit_context
from llama_findings import server_compute_band, server_marks
from llama_runs import SUITE, mistyped

from pytest_anatomy import recordings
from pytest_anatomy import session as anatomy_session

from pytest_anatomy.measure.llama_log import MIB_HALF_STEP
from pytest_anatomy.measure.measurement import Measurement
from pytest_anatomy.specs.gguf_file import header_from_dict
from pytest_anatomy.theory import gguf_mix
from pytest_anatomy.theory import llamacpp_memory as lm
from pytest_anatomy.theory.prediction import Prediction, Term
from pytest_anatomy.units import MiB

LOG_ROUNDING = "llama.cpp logs MiB with 2 decimals: the byte count is within half a hundredth of a MiB"


def _settings(run, rec) -> lm.ContextSettings:
    s = rec.provenance.get("settings") or {}
    if run.kind == "bench":  # llama-bench: one sequence, n_ctx = n_prompt + n_gen, default batches
        return lm.ContextSettings(n_ctx=int(s["n_prompt"]) + int(s["n_gen"]), n_seq_max=1,
                                  flash_attn=bool(s.get("flash_attn", True)))
    return lm.ContextSettings.from_flags(s.get("args") or [], server=True)


@pytest.mark.gpu
@pytest.mark.llama_runs("quantize")
def test_llama_quantize_types_every_tensor_as_predicted(target, run, measured, header_for, reconcile):
    rec = measured(run.name)
    written = header_from_dict(rec.data["run"]["result"]["header"], f"{run.name} (recorded)")
    predicted = header_for(run)
    wrong = mistyped(predicted, written)
    assert not wrong, (f"{len(wrong)} tensors typed otherwise than llama_tensor_get_type's rules predict "
                       f"(name, predicted, written): {wrong[:8]}")
    reconcile("gguf_tensor_bytes", gguf_mix.tensor_bytes(predicted.tensors, run.weights), rec["tensor_bytes"],
              model=run.model)


_BUFFERS = (("model", "CUDA0"), ("model", "CPU_Mapped"), ("KV", "CUDA0"), ("output", "CUDA_Host"), ("compute", "CUDA0"),
            ("compute", "CUDA_Host"))


def _predict(kind: str, device: str, header, settings):
    if (kind, device) == ("model", "CUDA0"):
        return lm.model_buffer_gpu(header, settings)
    if (kind, device) == ("model", "CPU_Mapped"):
        return lm.model_buffer_host(header)
    if kind == "KV":
        return lm.kv_buffer(header, settings)
    if kind == "output":
        return lm.output_buffer(header, settings)
    if device == "CUDA_Host":  # the graph's inputs and the token_embd gather, flash attention on or off
        return lm.compute_buffer_host(header, settings)
    return lm.compute_buffer_gpu(header, settings)


@pytest.mark.gpu
@pytest.mark.llama_runs("server-load", "server-sweep", findings=server_marks)
def test_logged_buffers_from_config(target, run, measured, header_for, reconcile, request):
    rec = measured(run.name)
    settings = _settings(run, rec)
    header = header_for(run)
    checked = 0
    for kind, device in _BUFFERS:
        name = f"load.buffers_bytes.{kind}.{device}"
        if name not in rec.measurements:
            continue
        gpu_compute = (kind, device) == ("compute", "CUDA0")
        if gpu_compute and not settings.flash_attn:
            continue  # lm.ComputeBufferNotModeled: without flash attention the score matrix may be the peak
        # the server's compute buffer on the build of llama_findings.SERVER_COMPUTE_FINDING: its band is that
        # finding's mechanism (server_compute_band), set only where the mark is (another build is judged alone)
        band = (server_compute_band(header, settings) if gpu_compute and request.node.get_closest_marker("finding")
                else None)
        reconcile(f"llamacpp_{kind.lower()}_buffer_{device}", _predict(kind, device, header, settings), rec[name],
                  abs=MIB_HALF_STEP, why=LOG_ROUNDING, model=run.model, finding_band=band)
        checked += 1
    assert checked >= 3, f"{run.name}: only {checked} buffer lines recorded; the load log lost its buffer lines"
    if rec.measurements.get("load.file_size_bytes") is not None:  # print_info: "file size = X MiB|GiB"
        size = gguf_mix.tensor_bytes(header.tensors, run.weights)
        half_step = 0.005 * (2**30 if size.value >= 2**30 else 2**20) + 1  # ties print rounded to even
        reconcile("gguf_tensor_bytes_logged", size, rec["load.file_size_bytes"], abs=half_step,
                  why="print_info logs the tensor bytes with 2 decimals, in GiB from 1 GiB up", model=run.model)


HOST_COMPUTE = "load.buffers_bytes.compute.CUDA_Host"


@pytest.mark.gpu
@pytest.mark.llama_runs("server-load", "server-sweep")
def test_host_compute_buffer_in_every_visit(target, run, measured, header_for, request):
    """The CUDA_Host compute buffer of every visit that recorded the load, not only the newest the test above
    reconciles: lm.compute_buffer_host from the header and that visit's flags, exact at the log's two decimals."""
    measured(run.name)  # the newest visit: skips with the device plan's reason where it skipped the run
    results = anatomy_session.of_config(request.config, SUITE)[1]
    recs = [r for r in recordings.load_runs([results], target.name, SUITE, run.name) if HOST_COMPUTE in r.measurements]
    if not recs:
        pytest.skip(f"{run.name}: no visit logged the CUDA_Host compute buffer")
    header = header_for(run)
    for rec in recs:
        pred = lm.compute_buffer_host(header, _settings(run, rec))
        logged = rec[HOST_COMPUTE].value
        assert abs(pred.value - logged) <= MIB_HALF_STEP, (
            f"{run.name}@{rec.recorded_at}: CUDA_Host compute buffer {logged / MiB:.2f} MiB logged, "
            f"{pred.value / MiB:.4f} predicted ({LOG_ROUNDING}); terms: "
            + ", ".join(f"{t.name} {t.value:,.0f} B" for t in pred.terms))


@pytest.mark.gpu
@pytest.mark.llama_runs("server-load", "server-sweep")
def test_slots_and_their_cells_are_the_kv_layout(target, run, measured, reconcile):
    """-np slots, each with the cells kv_cells lays out (n_ctx_seq: -c padded to 256 and split into -np streams,
    each padded to 256, or all of it with --kv-unified): against the load log's llama_context lines and the
    server's /slots (its slot count; each slot's n_ctx where the run recorded it, from the next visit on)."""
    rec = measured(run.name)
    settings = _settings(run, rec)
    per_stream, streams, total = lm.kv_cells(settings)
    result = rec.data["run"]["result"]
    logged = (result.get("load_log") or {}).get("context") or {}
    if "n_ctx_seq" not in logged and "load.slot_ctx_tokens" not in rec.measurements:
        pytest.skip(f"{run.name}: neither the load log's llama_context lines nor /slots' n_ctx were recorded")
    for name, seen in (("the log's n_seq_max", logged.get("n_seq_max")), ("/slots", result.get("slots"))):
        assert seen is None or int(seen) == settings.n_seq_max, f"{run.name}: -np {settings.n_seq_max}, {name} {seen}"
    assert int(logged.get("n_ctx", total)) == total, f"{run.name}: n_ctx {logged['n_ctx']} logged, {total} predicted"
    cells = Prediction(per_stream, "tokens", "each slot's cells: n_ctx padded to 256 (split: / -np, padded to 256)",
                       {"n_ctx": settings.n_ctx, "n_seq_max": settings.n_seq_max, "streams": streams})
    any_m = rec[next(iter(rec.measurements))]
    seen = rec["load.slot_ctx_tokens"] if "load.slot_ctx_tokens" in rec.measurements else Measurement(
        float(logged["n_ctx_seq"]), "tokens", source=any_m.source, provenance=any_m.provenance)
    reconcile("llamacpp_slot_cells", cells, seen, abs=0, why="cell counts are integers", model=run.model)


@pytest.mark.gpu
@pytest.mark.llama_runs("server-load", "server-sweep")
def test_server_gpu_memory_is_buffers_plus_one_context(target, run, measured, header_for, reconcile, request):
    """nvidia-smi's growth from before the start to loaded: the predicted model and KV buffers (exact, above), the
    compute buffer the server logged (its size is the finding h200-llama-server-reserves-n-parallel-outputs, not
    priced here) and one unlogged term, fitted on the loads recorded in two visits and held out on the others
    (llama_context.py; it replaces a bound that agreed only through the unallocated compute buffer)."""
    rec = measured(run.name)
    if not {"load.gpu_memory_used_bytes", "load.gpu_memory_before_bytes"} <= set(rec.measurements):
        pytest.skip(f"{run.name}: no nvidia-smi readings around the server start")
    fit = fit_context(anatomy_session.of_config(request.config, SUITE)[1], target.name)
    if fit is None:
        pytest.skip(f"{target.name}: no server load recorded twice to fit the unlogged term on")
    settings, header = _settings(run, rec), header_for(run)
    model, kv = lm.model_buffer_gpu(header, settings), lm.kv_buffer(header, settings)
    compute = rec["load.buffers_bytes.compute.CUDA0"].value
    predicted = Prediction(model.value + kv.value + compute + fit.value, "B",
                           "model + KV buffers (predicted) + compute buffer (logged) + the unlogged term",
                           {"n_ctx": settings.n_ctx, "n_seq_max": settings.n_seq_max, "fitted_on": fit.fit_names},
                           terms=(Term("model buffer", model.value, "B"), Term("KV buffer", kv.value, "B"),
                                  Term("compute buffer (logged)", compute, "B"),
                                  Term("unlogged term (fitted)", fit.value, "B", f"{fit.n} loads")))
    used, before = rec["load.gpu_memory_used_bytes"], rec["load.gpu_memory_before_bytes"]
    growth = Measurement(used.value - before.value, "B", source=used.source, provenance=used.provenance)
    reconcile("llamacpp_gpu_memory_growth", predicted, growth, abs=fit.tolerance(), model=run.model,
              kind="fit" if run.name in fit.fit_names else "prediction",
              why=f"3 sd of a load about the fitted term ({fit.sd / MiB:.2f} MiB, pooled over the repeated loads) "
                  "+ nvidia-smi's whole MiB twice")
