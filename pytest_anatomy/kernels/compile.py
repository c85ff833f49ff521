"""The compiler's view of a rung, without a GPU: ptxas's resource report and static SASS counts.

`resource_report(source, arch)` compiles one .cu file with `nvcc -cubin -Xptxas -v` and parses
registers, shared memory, stack frame and spills per kernel. `sass_counts(source, arch)` runs
`cuobjdump --dump-sass` on that cubin and counts instructions by class (LDG.128, LDS.32, FFMA,
HMMA, ...). Both are cached on disk by a hash of the source, the arch, the flags and the tool's
version, so a warm test session compiles nothing. The device run reads the same numbers from
the NVRTC log and the loaded kernels (measure/kernel_runner.py); nvcc and NVRTC share ptxas.

Tools are found on PATH, then in CUDA_HOME/bin, then (cuobjdump/nvdisasm only) in the pip
packages nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm (nvidia/cu13/bin). Missing tools raise
ToolMissing with the install hint, which tests turn into a skip.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from pytest_anatomy.kernels.emulator import cache_dir
from pytest_anatomy.kernels.registry import CUDA_DIR, arch_for

NVCC_FLAGS = ("-cubin", "-std=c++17", "-Xptxas", "-v")


class ToolMissing(RuntimeError):
    pass


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
    for cand in (shutil.which(name), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", name),
                 _pip_bin(name)):
        if cand and os.path.exists(cand):
            return cand
    hint = {"nvcc": "install the CUDA toolkit (nvcc)",
            "cuobjdump": "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm",
            "nvdisasm": "pip install nvidia-cuda-nvdisasm"}[name]
    raise ToolMissing(f"{name} not found on PATH, in $CUDA_HOME/bin or in NVIDIA's pip wheels; {hint}")


def _version(tool: str) -> str:
    proc = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "?"


def _cached(kind: str, key_parts: tuple[str, ...]) -> Path:
    key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()[:24]
    folder = cache_dir().parent / kind
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}.json"


Defines = tuple[tuple[str, int], ...]


def _dflags(defines: Defines) -> list[str]:
    return [f"-D{k}={v}" for k, v in defines]


def _compile(source: str, arch: str, workdir: Path, defines: Defines = ()) -> tuple[Path, str]:
    nvcc = find_tool("nvcc")
    arch = arch_for(source, arch)
    cubin = workdir / (Path(source).stem + ".cubin")
    proc = subprocess.run([nvcc, f"-arch={arch}", *NVCC_FLAGS, *_dflags(defines), "-o", str(cubin), str(CUDA_DIR / source)],
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed on {source} for {arch}:\n{proc.stderr[-4000:]}")
    return cubin, proc.stdout + proc.stderr


def parse_ptxas(log: str) -> dict[str, ResourceUse]:
    """ptxas -v lines -> {kernel: ResourceUse} (the format nvcc and NVRTC both print)."""
    out: dict[str, ResourceUse] = {}
    for block in re.split(r"(?=ptxas info\s*: Compiling entry function)", log):
        m = re.search(r"Compiling entry function '([^']+)'", block)
        if not m:
            continue
        used = re.search(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?", block)
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", block)
        if used is None or frame is None:
            raise ValueError(f"unparsable ptxas report for {m.group(1)}:\n{block}")
        out[m.group(1)] = ResourceUse(m.group(1), int(used.group(1)), int(used.group(3) or 0), int(frame.group(1)),
                                      int(frame.group(2)), int(frame.group(3)), int(used.group(2) or 0))
    return out


def resource_report(source: str, arch: str = "sm_90", defines: Defines = ()) -> dict[str, ResourceUse]:
    nvcc = find_tool("nvcc")
    arch = arch_for(source, arch)
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    path = _cached("ptxas", (text, arch, *NVCC_FLAGS, *_dflags(defines), _version(nvcc)))
    if path.exists():
        return {k: ResourceUse(**v) for k, v in json.loads(path.read_text()).items()}
    with tempfile.TemporaryDirectory() as tmp:
        _, log = _compile(source, arch, Path(tmp), defines)
    report = parse_ptxas(log)
    path.write_text(json.dumps({k: asdict(v) for k, v in report.items()}))
    return report


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
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    arch = arch_for(source, arch)
    nvdisasm = find_tool("nvdisasm")
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    path = _cached("sass", (text, arch, *NVCC_FLAGS, _version(nvcc), _version(cuobjdump)))
    if path.exists():
        return json.loads(path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        cubin, _ = _compile(source, arch, Path(tmp))
        env = {**os.environ, "PATH": f"{Path(nvdisasm).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        proc = subprocess.run([cuobjdump, "--dump-sass", str(cubin)], capture_output=True, text=True, timeout=120, check=False,
                              env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"cuobjdump failed on {source}: {proc.stderr[-2000:]}")
    counts = {k: dict(v) for k, v in parse_sass(proc.stdout).items()}
    path.write_text(json.dumps(counts))
    return counts


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
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    nvdisasm = find_tool("nvdisasm")
    arch = arch_for(source, arch)
    text = (CUDA_DIR / source).read_text(encoding="utf-8")
    for old, new in replace:
        if text.count(old) != 1:
            raise ValueError(f"{source}: {old!r} occurs {text.count(old)} times, not once")
        text = text.replace(old, new)
    path = _cached("loops", (text, arch, *NVCC_FLAGS, *_dflags(defines), _version(nvcc), _version(cuobjdump)))
    if path.exists():
        return json.loads(path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        unit = Path(tmp) / Path(source).name
        unit.write_text(text)
        cubin = Path(tmp) / (unit.stem + ".cubin")
        proc = subprocess.run([nvcc, f"-arch={arch}", *NVCC_FLAGS, *_dflags(defines), "-o", str(cubin), str(unit)],
                              capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed on {source} for {arch}:\n{proc.stderr[-4000:]}")
        env = {**os.environ, "PATH": f"{Path(nvdisasm).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        dump = subprocess.run([cuobjdump, "--dump-sass", str(cubin)], capture_output=True, text=True, timeout=120,
                              check=False, env=env)
        if dump.returncode != 0:
            raise RuntimeError(f"cuobjdump failed on {source}: {dump.stderr[-2000:]}")
    loops = parse_loops(dump.stdout)
    path.write_text(json.dumps(loops))
    return loops
