"""NVIDIA's and the frameworks' real CUDA wheels for the readiness tests: found in a cache, else skipped.

The cache is ``$ENVKIT_CUDA_WHEELS`` (else ``~/.cache/envkit-tests/cuda-wheels``). With
``ENVKIT_DOWNLOAD_CUDA_WHEELS=1`` (CI) a missing wheel is downloaded there with pip, once per
machine: ~2.5 GB in all (paddlepaddle-gpu 2.6.2 759 MB, torch 2.15.0 539 MB, cuDNN 8.6 716 MB,
cuBLAS 11.11 418 MB, the rest small). Members are extracted beside the wheels once
(``extracted/<wheel>/``); libphi.so alone is 1.96 GB unpacked.

Paddle (the cp311 wheel, as in the flagship image), cuDNN 8.6, cuBLAS 11.11, the CUDA 11.8 runtime
and NVRTC are the flagship image's wheels: when the flagship's build already downloaded them into
the checkout's wheelhouse (``.envkit/wheelhouse``), the file whose sha256 the committed flagship
lock pins is linked from there instead of downloaded again (1.92 GB of the 2.46); only torch and
cuobjdump are downloaded then. Downloads are made under the machine lock ``cuda-wheels``
(``.ci/run``'s prebuild fills the cache while the first tests run).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.integration.machine_lock import machine_lock

__all__ = ["CACHE", "FLAGSHIP_LOCK", "WHEELHOUSE", "download_all", "extracted", "from_flagship", "wheel"]

REPO = Path(__file__).resolve().parents[2]
FLAGSHIP_LOCK = REPO / "images" / "cuda11.8-paddle2.6" / "requirements.lock"
WHEELHOUSE = REPO / ".envkit" / "wheelhouse"  # the checkout's: tests/integration/conftest.py links builds' in

CACHE = Path(os.environ.get("ENVKIT_CUDA_WHEELS") or Path.home() / ".cache" / "envkit-tests" / "cuda-wheels")
# requirement -> (filename glob, pip's --python-version, --platform)
WHEELS = {
    "paddlepaddle-gpu==2.6.2": ("paddlepaddle_gpu-2.6.2-cp311-*.whl", "3.11", "manylinux1_x86_64"),
    "torch==2.15.0": ("torch-2.15.0-cp311-*.whl", "3.11", "manylinux_2_28_x86_64"),
    "nvidia-cudnn-cu11==8.6.0.163": ("nvidia_cudnn_cu11-8.6.0.163-*.whl", "3.10", "manylinux1_x86_64"),
    "nvidia-cublas-cu11==11.11.3.6": ("nvidia_cublas_cu11-11.11.3.6-*.whl", "3.10", "manylinux2014_x86_64"),
    "nvidia-cuda-runtime-cu11==11.8.89": (
        "nvidia_cuda_runtime_cu11-11.8.89-*.whl",
        "3.10",
        "manylinux2014_x86_64",
    ),
    "nvidia-cuda-nvrtc-cu11==11.8.89": (
        "nvidia_cuda_nvrtc_cu11-11.8.89-*.whl",
        "3.10",
        "manylinux2014_x86_64",
    ),
    "nvidia-cuda-cuobjdump": ("nvidia_cuda_cuobjdump-*.whl", "3.10", "manylinux2014_x86_64"),
    # third-party wheels with CUDA code, for `check`'s every-library walk (56 MB in all)
    "torchvision==0.29.2": ("torchvision-0.29.2-*.whl", "3.11", "manylinux_2_28_x86_64"),
    "torchaudio==2.11.0": ("torchaudio-2.11.0-cp311-*.whl", "3.11", "manylinux_2_28_x86_64"),
    "xformers==0.0.35": ("xformers-0.0.35-*.whl", "3.11", "manylinux_2_28_x86_64"),
    "bitsandbytes==0.50.2": ("bitsandbytes-0.50.2-*.whl", "3.11", "manylinux_2_24_x86_64"),
}
# sha256 of the files these requirements resolved to when the tests were written (Dec 2026): a
# download that differs is refused, not tested
PINNED = {
    # torch 2.15.0+cu132, PyPI's default CUDA build (also pinned by images/cuda13.2-torch2.15's lock)
    "torch==2.15.0": "48c2d861134c0b5697c7602cb5ffa68f62a2989fdcd1717e593356f67996ca1e",
    "torchvision==0.29.2": "0875f7a23bd298813240f716c56df44ce72ddb45146589442a38edd0e1f59637",
    "torchaudio==2.11.0": "1a07ec72fd6f26a588c39b5f029e0130d16bb40bc4221635580bf8fb18fcbc80",
    "xformers==0.0.35": "ccc73c7db9890224ab05f5fb60e2034f9e6c8672a10be0cf00e95cbbae3eda7c",
    "bitsandbytes==0.50.2": "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283",
}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def from_flagship(pattern: str, wheelhouse: Path = WHEELHOUSE, lock: Path = FLAGSHIP_LOCK) -> Path | None:
    """A wheel matching ``pattern`` in a finished entry of ``wheelhouse`` whose sha256 ``lock`` pins."""
    if not lock.is_file() or not wheelhouse.is_dir():
        return None
    pinned = set(re.findall(r"--hash=sha256:([0-9a-f]{64})", lock.read_text("utf-8")))
    for candidate in sorted(wheelhouse.glob(f"[!.]*/{pattern}")):
        if candidate.is_file() and _sha256(candidate) in pinned:
            return candidate
    return None


def _link_into(source: Path, folder: Path) -> None:
    partial = folder / f".{source.name}.partial{os.getpid()}"
    partial.unlink(missing_ok=True)
    try:
        os.link(source, partial)
    except OSError:  # another file system
        shutil.copyfile(source, partial)
    partial.rename(folder / source.name)


def wheel(requirement: str) -> Path:
    """The cached wheel of ``requirement`` (linked from the flagship's wheelhouse or downloaded, when
    allowed), else a skip."""
    pattern, python, platform = WHEELS[requirement]
    found = sorted(CACHE.glob(pattern))
    if not found and os.environ.get("ENVKIT_DOWNLOAD_CUDA_WHEELS") == "1":
        with machine_lock("cuda-wheels"):
            found = sorted(CACHE.glob(pattern))  # another process may have fetched it meanwhile
            CACHE.mkdir(parents=True, exist_ok=True)
            shared = None if found else from_flagship(pattern)
            if shared is not None:
                _link_into(shared, CACHE)
            elif not found:
                subprocess.run(
                    [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                     "--python-version", python, "--platform", platform, "-d", str(CACHE), requirement],
                    check=True, timeout=3600,
                )  # fmt: skip
            found = sorted(CACHE.glob(pattern))
    if not found:
        pytest.skip(
            f"{requirement} is not in {CACHE} (set ENVKIT_CUDA_WHEELS, or ENVKIT_DOWNLOAD_CUDA_WHEELS=1)"
        )
    pin = PINNED.get(requirement)
    if pin is not None and _sha256(found[-1]) != pin:
        pytest.fail(f"{found[-1]} is not the {requirement} wheel pinned (sha256 {pin})")
    return found[-1]


def extracted(requirement: str, prefixes: tuple[str, ...]) -> Path:
    """The wheel's members under ``prefixes``, unpacked once into the cache; the unpacked root.

    A member already unpacked there (by a call with other prefixes: libphi.so, 1.96 GB, is in both
    ``paddle/libs/libphi.so`` and ``paddle/libs/``) at its size is not unpacked again."""
    whl = wheel(requirement)
    root = CACHE / "extracted" / whl.stem
    stamp = root / (".done-" + "-".join(p.strip("/").replace("/", "_") for p in prefixes))
    if stamp.exists():
        return root
    partial = root.with_name(root.name + f".partial{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with zipfile.ZipFile(whl) as z:
        members = [
            m for m in z.infolist()
            if m.filename.startswith(prefixes) and not m.is_dir() and not _unpacked(root / m.filename, m)
        ]  # fmt: skip
        z.extractall(partial, members)
    for path in sorted(partial.rglob("*")):  # moved into place file by file: a rename each
        if not path.is_file():
            continue
        if "/bin/" in str(path) or path.suffix != ".py":
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        target = root / path.relative_to(partial)
        target.parent.mkdir(parents=True, exist_ok=True)
        path.replace(target)
    shutil.rmtree(partial, ignore_errors=True)
    stamp.touch()
    return root


def _unpacked(target: Path, member: zipfile.ZipInfo) -> bool:
    return target.is_file() and target.stat().st_size == member.file_size


def download_all() -> list[Path]:
    """Every wheel of WHEELS in the cache (``.ci/run``'s prebuild, with ENVKIT_DOWNLOAD_CUDA_WHEELS=1)."""
    return [wheel(requirement) for requirement in WHEELS]
