"""What `gpus:` adds to `envkit lock`: reading the GPU code of the locked wheels from their zips.

The wheels are those of the readiness tests' cache (``$ENVKIT_CUDA_WHEELS``, else
``~/.cache/envkit-tests/cuda-wheels``: torchvision, torchaudio, xformers, bitsandbytes, and torch /
paddlepaddle-gpu / NVIDIA's wheels when that cache holds them), each pinned by its own sha256 as a
lock pins it. The figure is the time of :func:`envkit.readiness.lockcheck.lock_gpu_code` (sha256 of
each file, then the fatbins of every ``.so`` member read in place), per wheel and in all. Smoke: one
crafted wheel.

Then the framework wheel a `gpus:` lock always reads: torch 2.15.0's CUDA 13.2 wheel at full size
(539 MB; the one the readiness tests' cache holds, else ``$ENVKIT_BENCH_TORCH_WHEEL``): the scan, and
deriving the image's ``NVIDIA_REQUIRE_ARCH`` from what it recorded. Smoke: a crafted torch wheel.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
import zipfile
from pathlib import Path

from benchmarks._goals import smoke
from envkit.lock import PipPackage
from envkit.readiness.lockcheck import image_arch_requirement, lock_gpu_code


def _wheels() -> list[Path]:
    if smoke():
        from tests.unit.readiness.crafted import Library, sm

        path = Path(tempfile.mkdtemp()) / "ext-1.0-py3-none-any.whl"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("ext/_k.so", Library(fatbins=[sm(80, 90)] * 50).encode())
        return [path]
    return sorted(p for p in _cache().glob("*.whl") if not p.name.startswith("torch-"))


def _cache() -> Path:
    return Path(
        os.environ.get("ENVKIT_CUDA_WHEELS") or Path.home() / ".cache" / "envkit-tests" / "cuda-wheels"
    )


def _torch() -> Path | None:
    if smoke():
        from tests.unit.readiness.crafted import Library, sm

        path = Path(tempfile.mkdtemp()) / "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl"
        cuda = Library("libtorch_cuda.so", fatbins=[sm(75, 80, 86, 90, 100, 120)] * 20).encode()
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("torch/lib/libtorch_cuda.so", cuda)
        return path
    named = os.environ.get("ENVKIT_BENCH_TORCH_WHEEL")
    found = [Path(named)] if named else sorted(_cache().glob("torch-2.15.0-cp311-*.whl"))
    return found[-1] if found and found[-1].is_file() else None


def _torch_row() -> None:
    path = _torch()
    if path is None:
        print(
            "   torch: skipped: torch 2.15.0 is not in the CUDA wheel cache (ENVKIT_DOWNLOAD_CUDA_WHEELS=1)"
        )
        return
    pin = _pin(path)
    start = time.perf_counter()
    code = lock_gpu_code([pin], "13.2", ["V100", "H100"], [path.parent])
    scanned = time.perf_counter() - start
    start = time.perf_counter()
    arch = image_arch_requirement(code)
    derived = time.perf_counter() - start
    size = path.stat().st_size
    libs = sum(len(w.libraries) for w in code.wheels)
    print(
        f"   torch {path.name} ({size / 1e6:.0f} MB, {libs} libraries with GPU code): scan {scanned:.2f} s "
        f"({scanned / (size / 1e9):.1f} s per GB of wheel) added to `envkit lock`; "
        f"NVIDIA_REQUIRE_ARCH={arch.value} derived in {derived * 1e3:.1f} ms"
    )


def _pin(path: Path) -> PipPackage:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    name, version = path.name.split("-")[:2]
    return PipPackage(name, version, f"https://files.example/{path.name}", (digest,))


def main() -> None:
    _torch_row()
    wheels = _wheels()
    if not wheels:
        print("   skipped: no wheels in the CUDA wheel cache (ENVKIT_DOWNLOAD_CUDA_WHEELS=1 fills it)")
        return
    total_bytes = 0
    total = 0.0
    for path in wheels:
        pin = _pin(path)
        start = time.perf_counter()
        code = lock_gpu_code([pin], "13.2", ["H100"], [path.parent])
        took = time.perf_counter() - start
        size = path.stat().st_size
        total += took
        total_bytes += size
        libs = sum(len(w.libraries) for w in code.wheels)
        print(f"   {path.name}: {size / 1e6:.1f} MB, {libs} libraries with GPU code, {took:.2f} s")
    print(f"   all {len(wheels)} wheels ({total_bytes / 1e6:.0f} MB): {total:.2f} s added to `envkit lock`")
