"""The compiler's view of a rung, without a GPU: ptxas's resource report and static SASS counts.

Every cubin here is compiled the way the device compiles it: NVRTC through cuda.core, with the options
`nvrtc_options` gives (measure/kernel_runner.py uses the same function). `resource_report(source, arch)` parses
NVRTC's `ptxas -v` log: registers, shared memory, stack frame and spills per kernel. `sass_counts(source, arch)`
runs `cuobjdump --dump-sass` on that cubin and counts instructions by class (LDG.128, LDS.32, FFMA, HMMA, ...).
Both are cached on disk by a hash of the source, the arch, the options and the NVRTC version, so a warm test session
compiles nothing, and a cold one (CI's clean clone) reads them from a committed record while its key is this
checkout's (RECORDED, nvrtc_record.py). NVRTC 13.0.88 is not a pure function of those inputs: with the xdist
workers, the background report build and the mutation replays compiling at once on 2 cores, the same source now and
then allocates differently (s16: 3 of 13 compiles with 8 or more processes busy, 2026-12-05). A full run so cached
s16's loop bodies and SASS counts with other spills, and s6 at 123 registers where the device and a quiet compile
give 121. So a cubin is cached only once a second compile gave the same bytes (`_confirmed_compile`), and every entry
is written whole (`_write`).

Why NVRTC and not nvcc: the compiled resources the CI checks must be the device's. nvcc 13.0.88 and NVRTC 13.0.88
share a version number but not their allocations: on 2026-12-04 the device's NVRTC 13.0.88 spilled s16 (96-byte
stack, 19 spill loads in its main loop) and s13 (32 bytes), where nvcc 13.0.88 here gave neither a spill. The NVRTC
wheel is pinned to the device's version (pyproject's `kernels` extra; test_nvrtc_is_the_devices checks it against
the latest device batch).

Tools: NVRTC is the library cuda-bindings loads (the nvidia-cuda-nvrtc wheel); cuobjdump and nvdisasm are found on
PATH, then in CUDA_HOME/bin, then in the pip packages nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm
(nvidia/cu13/bin). Missing tools raise ToolMissing with the install hint, which tests turn into a skip.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_anatomy.file_lock import exclusive
from pytest_anatomy.kernels.emulator import cache_dir
from pytest_anatomy.kernels.registry import CUDA_DIR, arch_for

# What kernel_runner and these checks pass NVRTC besides the arch, the name and the defines: one table, which
# nvrtc_options passes and the cache key spells ("std=c++17", "ptxas_options=-v"), so the two cannot drift apart.
NVRTC_OPTIONS = {"std": "c++17", "ptxas_options": "-v"}


class ToolMissing(RuntimeError):
    pass


# Results of this module a committed record holds (kind -> {entry name -> value}), read before the disk cache: a cold
# run otherwise compiles every source at least twice to confirm it (~60 s of NVRTC and cuobjdump on 2 cores, the
# record's commit says). nvrtc_record.use fills it only where the record's key (the kernel sources, this module, the
# NVRTC and cuobjdump versions) is this checkout's, and an entry's name is its disk cache name, a hash of its inputs:
# an entry is read for the very inputs it was computed from, or not at all.
RECORDED: dict[str, dict[str, Any]] = {}


@dataclass(frozen=True)
class ResourceUse:
    kernel: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int


def _pip_bin(name: str) -> str | None:
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels
    except ImportError:
        return None
    for base in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cu12", "cuda_cuobjdump", "cuda_nvdisasm"):
            p = Path(base) / sub / "bin" / name
            if p.exists():
                return str(p)
    return None


def find_tool(name: str) -> str:
    """The path of a tool: cuobjdump, nvdisasm, or "nvrtc" (the NVRTC library cuda-bindings loads)."""
    if name == "nvrtc":
        return nvrtc_library()
    for cand in (shutil.which(name), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", name),
                 _pip_bin(name)):
        if cand and os.path.exists(cand):
            return cand
    hint = {"cuobjdump": "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm",
            "nvdisasm": "pip install nvidia-cuda-nvdisasm"}[name]
    raise ToolMissing(f"{name} not found on PATH, in $CUDA_HOME/bin or in NVIDIA's pip wheels; {hint}")


@functools.cache
def nvrtc_library() -> str:
    """The path of the NVRTC library cuda-bindings loads; ToolMissing without cuda-core or NVRTC."""
    try:
        from cuda.bindings import nvrtc
        from cuda.pathfinder import load_nvidia_dynamic_lib

        nvrtc.nvrtcVersion()
        return str(Path(load_nvidia_dynamic_lib("nvrtc").abs_path).resolve())
    except Exception as exc:  # noqa: BLE001 - any failure to load NVRTC means: not here
        raise ToolMissing(f"NVRTC unavailable ({type(exc).__name__}: {str(exc)[:120]}); "
                          "pip install -e '.[kernels]' (cuda-core, nvidia-cuda-nvrtc)") from exc


@functools.cache
def nvrtc_version() -> str:
    """The loaded NVRTC's version: its wheel's ('13.0.88', what the device batches record) when the library is the
    nvidia-cuda-nvrtc wheel's file, else 'major.minor' as NVRTC reports it and the library's path."""
    lib = Path(nvrtc_library())
    from importlib import metadata

    try:
        dist = metadata.distribution("nvidia-cuda-nvrtc")
        files = {Path(str(dist.locate_file(f))).resolve() for f in dist.files or ()}
        if lib in files:
            return dist.version
    except metadata.PackageNotFoundError:
        pass
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor} ({lib})"


@functools.cache  # a subprocess, asked by every SASS lookup (disk cache hits included)
def _version(tool: str) -> str:
    proc = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "?"


def _cached(kind: str, key_parts: tuple[str, ...]) -> Path:
    key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()[:24]
    folder = cache_dir().parent / kind
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}.json"


def _entry(kind: str, key_parts: tuple[str, ...]) -> tuple[Path, Any]:
    """The disk cache path of an entry and its value: the committed record's, else the disk cache's, else None."""
    path = _cached(kind, key_parts)
    recorded = RECORDED.get(kind, {}).get(path.stem)
    if recorded is not None:
        return path, copy.deepcopy(recorded)  # the caller's to change, as a value parsed from disk is
    return path, json.loads(path.read_text()) if path.exists() else None


def _write(path: Path, data: str) -> None:
    """`data` at `path`, whole or not at all: written to a temp file in the same folder, then renamed over it, so an
    xdist worker reading the entry while another process writes it never parses half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


Defines = tuple[tuple[str, int], ...]


def nvrtc_options(source: str, arch: str, defines: Defines = ()) -> Any:
    """cuda.core's ProgramOptions for `source`: the device's (kernel_runner) and the CPU checks' alike."""
    from cuda.core import ProgramOptions

    macros = [(k, str(v)) for k, v in defines]  # an autotuning candidate's tile shape
    return ProgramOptions(arch=arch_for(source, arch), name=source, define_macro=macros or None, **NVRTC_OPTIONS)


def _compile(source: str, text: str, arch: str, defines: Defines = ()) -> tuple[bytes, str]:
    """NVRTC's cubin of `text` (the source as given, or edited) and its ptxas -v log."""
    from cuda.core import Program

    find_tool("nvrtc")
    log = io.StringIO()
    try:
        obj = Program(text, "c++", nvrtc_options(source, arch, defines)).compile("cubin", logs=log)
    except Exception as exc:  # noqa: BLE001 - NVRTC's error carries its log
        raise RuntimeError(f"NVRTC failed on {source} for {arch}:\n{str(exc)[-4000:]}") from exc
    return bytes(obj.code), log.getvalue().replace("\x00", "")


# Compiles of one key that must give the same cubin before it is cached, and the most counted (a third settles a tie)
CONFIRM, MAX_COMPILES = 2, 3
# A compile whose wall time exceeds STARVED x its own CPU time (+ SLACK_S) ran starved of the CPU and is not counted;
# at most MAX_TRIES compiles of a key are tried in all. Measured 2026-12-06 (s16 for sm_90, NVRTC 13.0.88, 2 cores,
# /tmp experiment, n compiles each): quiet 28/28 the device's 96-byte stack (wall = CPU, ~2.2 s); 3 processes compiling
# other sources beside it 20/20 (wall ~2x CPU); 3 numpy copy loops 20/20 (~2x); SIGSTOP/SIGCONT throttling to a
# quarter of the CPU 20/20 (up to 3.7x); 3 busy loops beside a full test run 16/20 (3 at 80 bytes, 1 at 80 with 216
# bytes of spill stores; wall ~4-5x); 7 busy loops 15/16 (the stray at 4.1x). NVRTC compiles in the calling thread
# (no thread of its own), so the stray comes with starving the compile of the CPU, not with other compiles beside it
# (which a lock would serialise; capping them at 2 did not help): every stray ran at 4x or more, no compile at 3.7x
# or less strayed. Which of ptxas's heuristics starving reaches is not known.
STARVED, SLACK_S, MAX_TRIES = 2.5, 0.1, 8


def _counted_compile(source: str, text: str, arch: str, defines: Defines) -> tuple[bytes, str, bool]:
    """_compile's cubin and log, and whether the compile had the CPU (wall time within STARVED x its CPU time)."""
    wall, cpu = time.perf_counter(), time.thread_time()
    cubin, log = _compile(source, text, arch, defines)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    return cubin, log, wall <= STARVED * cpu + SLACK_S


def _confirmed_compile(source: str, text: str, arch: str, defines: Defines = ()) -> tuple[bytes, str, bool]:
    """NVRTC's cubin and log, and whether a second compile gave the same cubin: only then may it be cached. Two
    disagreeing compiles get a third; the first cubin seen twice wins. A stray allocation is the rarer outcome (3 of 13
    s16 compiles under load, two different ones among them), so two in a row that match are the quiet one but for
    a small chance -- which an unconfirmed write took every time. Two starved compiles could agree on a stray one
    (s16's 80-byte stack, 2026-12-06, in 1-2 of 8-10 full runs): a starved compile is not counted at all (STARVED).

    A confirmed cubin is itself cached (with its log), so the ptxas report, the SASS counts, the listing and the loop
    bodies of one source share its two compiles instead of confirming one each (a cold run compiled each source up to
    eight times)."""
    path = _cached("cubin", _key(text, arch, defines))
    if path.exists():
        return _read_cubin(path)
    # One process compiles a key, the others wait for its entry: an xdist worker and a mutation replay asked for s16's
    # sm_90 cubin at the same moment and both confirmed it, four compiles of ~2 s where two do (2026-12-06). The lock
    # files lie in a folder of their own, so the cubin folder holds entries only.
    locks = path.parent.parent / "cubin-locks"
    locks.mkdir(exist_ok=True)
    with exclusive(locks / path.name):
        if path.exists():
            return _read_cubin(path)
        seen: dict[bytes, int] = {}
        cubin, log = b"", ""
        for _ in range(MAX_TRIES):
            cubin, log, counted = _counted_compile(source, text, arch, defines)
            if not counted:
                continue
            seen[cubin] = seen.get(cubin, 0) + 1
            if seen[cubin] >= CONFIRM:
                _write(path, json.dumps({"cubin": base64.b64encode(cubin).decode("ascii"), "log": log}))
                return cubin, log, True
            if sum(seen.values()) >= MAX_COMPILES:
                break
    return cubin, log, False  # no two agreed, or the CPU was never free: the numbers are returned, never cached


def _read_cubin(path: Path) -> tuple[bytes, str, bool]:
    entry = json.loads(path.read_text())
    return base64.b64decode(entry["cubin"]), entry["log"], True


def _key(text: str, arch: str, defines: Defines, *tools: str) -> tuple[str, ...]:
    # The options as _compile passes them now (not a copy taken at import), so a changed table is another key
    flags = tuple(f"{k}={v}" for k, v in NVRTC_OPTIONS.items())
    return (text, arch, *flags, *(f"{k}={v}" for k, v in defines), nvrtc_version(), *tools)


def parse_ptxas(log: str) -> dict[str, ResourceUse]:
    """ptxas -v lines -> {kernel: ResourceUse} (the format nvcc and NVRTC both print)."""
    out: dict[str, ResourceUse] = {}
    for block in re.split(r"(?=ptxas info\s*: Compiling entry function)", log):
        m = re.search(r"Compiling entry function '([^']+)'", block)
        if not m:
            continue
        # NVRTC's line names the cumulative stack before the shared memory where there is one:
        # "Used 128 registers, used 1 barriers, 32 bytes cumulative stack size, 49152 bytes smem"
        used = re.search(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, \d+ bytes cumulative stack size)?"
                         r"(?:, (\d+) bytes smem)?", block)
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", block)
        if used is None or frame is None:
            raise ValueError(f"unparsable ptxas report for {m.group(1)}:\n{block}")
        out[m.group(1)] = ResourceUse(m.group(1), int(used.group(1)), int(used.group(3) or 0), int(frame.group(1)),
                                      int(frame.group(2)), int(frame.group(3)), int(used.group(2) or 0))
    return out


def resource_report(source: str, arch: str = "sm_90", defines: Defines = ()) -> dict[str, ResourceUse]:
    arch = arch_for(source, arch)
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    path, hit = _entry("ptxas", _key(text, arch, defines, "stack-aware parse"))  # a report parsed before it lost smem
    if hit is not None:
        return {k: ResourceUse(**v) for k, v in hit.items()}
    _, log, confirmed = _confirmed_compile(source, text, arch, defines)
    report = parse_ptxas(log)
    if confirmed:
        _write(path, json.dumps({k: asdict(v) for k, v in report.items()}))
    return report


# How much of NVRTC's refusal check_compiles keeps: the "NVRTC failed on SOURCE for ARCH" line the checks match and
# ptxas's first errors (a refusal's log runs to thousands of characters, one line per instruction the target lacks)
ERROR_CHARS = 600


def check_compiles(source: str, arch: str = "sm_90", defines: Defines = ()) -> None:
    """Raise what resource_report raises where NVRTC does not compile `source` for `arch` ("NVRTC failed ..."), at
    the cost of one compile where no check reads the cubin: whether NVRTC accepts a source is not what varies between
    its compiles under load (a kernel's allocation is), so the answer needs no second compile to confirm it, and only
    the answer is cached (with the head of NVRTC's error: ERROR_CHARS). test_kernels_arch asks this at every file's
    requirement and around it: ~60 compiles, most at targets no other check reads, which confirmed twice each cost
    ~20 s of NVRTC more on a cold run. The target the other checks read (sm_90, or the file's sm_90a), or one already
    cached, goes through resource_report, whose confirmed compile those checks then read instead of compiling it
    again."""
    target = arch_for(source, arch)
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    if target == arch_for(source, "sm_90") or _cached("cubin", _key(text, target, defines)).exists():
        resource_report(source, arch, defines)
        return
    path, answer = _entry("compiles", _key(text, target, defines))
    if answer is None:
        try:
            _compile(source, text, target, defines)
            answer = {"error": None}
        except ToolMissing:
            raise
        except RuntimeError as exc:  # NVRTC refused the source: the answer, cached like an acceptance
            answer = {"error": str(exc)[:ERROR_CHARS]}
        _write(path, json.dumps(answer))
    if answer["error"] is not None:
        raise RuntimeError(answer["error"])



def _dump_sass(source: str, cubin: bytes) -> str:
    cuobjdump, nvdisasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    env = {**os.environ, "PATH": f"{Path(nvdisasm).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / (Path(source).stem + ".cubin")
        path.write_bytes(cubin)
        proc = subprocess.run([cuobjdump, "--dump-sass", str(path)], capture_output=True, text=True, timeout=120,
                              check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump failed on {source}: {proc.stderr[-2000:]}")
    return proc.stdout


def classify(opcode: str) -> str:
    """'LDG.E.128.CONSTANT' -> 'LDG.128', 'LDS.U.64' -> 'LDS.64', 'LDS' -> 'LDS.32', 'FFMA' -> 'FFMA'."""
    parts = opcode.split(".")
    base = parts[0]
    if base in ("LDG", "LDS", "STG", "STS", "LDL", "STL", "LDSM"):
        width = next((p for p in parts[1:] if p in ("64", "128")), "32")
        return f"{base}.{width}"
    return base


def parse_sass(text: str) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = out.setdefault(m.group(1), Counter())
            continue
        ins = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\d+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if ins and current is not None:
            current[classify(ins.group(1))] += 1
    return out


def sass_counts(source: str, arch: str = "sm_90") -> dict[str, dict[str, int]]:
    """Static instruction counts per kernel by class (a loop body counts once)."""
    arch = arch_for(source, arch)
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    path, hit = _entry("sass", _key(text, arch, (), _version(find_tool("cuobjdump"))))
    if hit is not None:
        return hit
    cubin, _, confirmed = _confirmed_compile(source, text, arch)
    counts = {k: dict(v) for k, v in parse_sass(_dump_sass(source, cubin)).items()}
    if confirmed:
        _write(path, json.dumps(counts))
    return counts


def sass_text(source: str, arch: str = "sm_90") -> str:
    """cuobjdump's SASS listing of `source` as NVRTC compiles it (every kernel, in address order): for checks of where
    an instruction sits, which counts cannot show (x10: its three pair loads issued before the first is used)."""
    arch = arch_for(source, arch)
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    path = _cached("sass-text", _key(text, arch, (), _version(find_tool("cuobjdump"))))
    if path.exists():
        return str(json.loads(path.read_text()))
    cubin, _, confirmed = _confirmed_compile(source, text, arch)
    listing = _dump_sass(source, cubin)
    if confirmed:
        _write(path, json.dumps(listing))
    return listing


def parse_loops(text: str) -> dict[str, list[dict[str, int]]]:
    """SASS text -> {kernel: [counts by class of each loop body]}: a loop is a backward branch, its body the
    instructions from the branch target to the branch, each counted once (what one iteration issues when the
    loop has no branch inside that is taken)."""
    out: dict[str, list[dict[str, int]]] = {}
    kernel: str | None = None
    ins: list[tuple[int, str, str]] = []
    for line in [*text.splitlines(), "Function : <end>"]:
        m = re.search(r"Function : (\S+)", line)
        if m:
            if kernel is not None:
                loops = []
                for addr, op, rest in ins:
                    t = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
                    if t and int(t.group(1), 16) < addr:
                        lo = int(t.group(1), 16)
                        loops.append(dict(Counter(classify(o) for a, o, _ in ins if lo <= a <= addr)))
                out[kernel] = loops
            kernel, ins = m.group(1), []
            continue
        i = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)", line)
        if i and kernel is not None:
            ins.append((int(i.group(1), 16), i.group(2), i.group(3)))
    return out


def loop_bodies(source: str, arch: str = "sm_90", replace: tuple[tuple[str, str], ...] = (),
                defines: Defines = ()) -> dict[str, list[dict[str, int]]]:
    """Per kernel, the instruction counts of each loop body of `source` as compiled for `arch`.

    `replace`: exact (old, new) text substitutions made first, each of which must occur once -- e.g. a uniform
    branch fixed to the side a timing shape takes, so a loop that holds both sides counts one."""
    arch = arch_for(source, arch)
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    for old, new in replace:
        if text.count(old) != 1:
            raise ValueError(f"{source}: {old!r} occurs {text.count(old)} times, not once")
        text = text.replace(old, new)
    path, hit = _entry("loops", _key(text, arch, defines, _version(find_tool("cuobjdump"))))
    if hit is not None:
        return hit
    cubin, _, confirmed = _confirmed_compile(source, text, arch, defines)
    loops = parse_loops(_dump_sass(source, cubin))
    if confirmed:
        _write(path, json.dumps(loops))
    return loops
