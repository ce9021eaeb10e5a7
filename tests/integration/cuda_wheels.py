"""NVIDIA's and the frameworks' real CUDA wheels for the readiness tests: found in a cache, else skipped.

The cache is ``$ENVKIT_CUDA_WHEELS`` (else ``~/.cache/envkit-tests/cuda-wheels``). With
``ENVKIT_DOWNLOAD_CUDA_WHEELS=1`` (CI) a missing wheel is downloaded there with pip, once per
machine: ~2.5 GB in all (paddlepaddle-gpu 2.6.2 759 MB, torch 2.15.0 539 MB, cuDNN 8.6 716 MB,
cuBLAS 11.11 418 MB, the rest small). Members are extracted beside the wheels once
(``extracted/<wheel>/``); libphi.so alone is 1.96 GB unpacked.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

__all__ = ["CACHE", "extracted", "wheel"]

CACHE = Path(os.environ.get("ENVKIT_CUDA_WHEELS") or Path.home() / ".cache" / "envkit-tests" / "cuda-wheels")
# requirement -> (filename glob, pip's --python-version, --platform)
WHEELS = {
    "paddlepaddle-gpu==2.6.2": ("paddlepaddle_gpu-2.6.2-cp310-*.whl", "3.10", "manylinux1_x86_64"),
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
}


def wheel(requirement: str) -> Path:
    """The cached wheel of ``requirement`` (downloaded when allowed), else a skip."""
    pattern, python, platform = WHEELS[requirement]
    found = sorted(CACHE.glob(pattern))
    if not found and os.environ.get("ENVKIT_DOWNLOAD_CUDA_WHEELS") == "1":
        CACHE.mkdir(parents=True, exist_ok=True)
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
    return found[-1]


def extracted(requirement: str, prefixes: tuple[str, ...]) -> Path:
    """The wheel's members under ``prefixes``, unpacked once into the cache; the unpacked root."""
    whl = wheel(requirement)
    root = CACHE / "extracted" / whl.stem
    stamp = root / (".done-" + "-".join(p.strip("/").replace("/", "_") for p in prefixes))
    if stamp.exists():
        return root
    partial = root.with_name(root.name + f".partial{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(whl) as z:
        members = [n for n in z.namelist() if n.startswith(prefixes)]
        z.extractall(partial, members)
    for path in partial.rglob("*"):
        if path.is_file() and ("/bin/" in str(path) or path.suffix != ".py"):
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    root.mkdir(parents=True, exist_ok=True)
    for item in partial.iterdir():
        target = root / item.name
        if target.exists():
            shutil.copytree(item, target, dirs_exist_ok=True)
        else:
            item.rename(target)
    shutil.rmtree(partial, ignore_errors=True)
    stamp.touch()
    return root
