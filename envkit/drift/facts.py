"""Facts derived from one inventory: torch CUDA flavour, CUDA toolkit, cuDNN major, BLAS, Python."""

from __future__ import annotations

import re
from collections.abc import Callable

from envkit.drift.cuda_wheels import placeholder
from envkit.drift.torch_flavour import inferred_torch_flavour, inventory_os
from envkit.inventory.models import Inventory, Package

__all__ = ["FACTS", "cuda_flavour", "major_minor", "wheel_cuda"]

_LOCAL_CU = re.compile(r"\+(cu\d+|cpu|rocm[\d.]+)\Z")
# a local version that starts with the flavour: +rocm7.13.0a20260401 (a ROCm nightly), +cu121.post1
_LOCAL_PREFIX = re.compile(r"\+(?:(cu\d{2,3}|cpu)(?![a-z])|rocm(\d+)\.(\d+))")
_BUILD_CUDA = re.compile(r"cuda(\d+)\.?(\d+)")
# py36_cu102, cu118_py310; the 2017 'soumith' channel's py36hf0d2509_4cu75 (the CUDA after the build number)
_BUILD_CU = re.compile(r"(?:^|_|\d)cu(\d{2,})(?:_|$)")
_MAJOR_MINOR = re.compile(r"^(\d+)\.(\d+)")


_PIP_VIEW_FORMATS = {
    "pip-freeze",
    "pip-json",
    "pip-list",
    "requirements-lock",
    "conda-list",
    "env-export",
    "conda-export",
    "uv-lock",
    "pylock",
    "poetry-lock",
}


def major_minor(version: str) -> str | None:
    match = _MAJOR_MINOR.match(version)
    return f"{match[1]}.{match[2]}" if match else None


def cuda_flavour(package: Package) -> str | None:
    """``cu121`` / ``cpu`` for torch-family packages, from pip local versions or conda builds."""
    local = _LOCAL_CU.search(package.version)
    if local:
        return local[1]
    prefix = _LOCAL_PREFIX.search(package.version)
    if prefix:
        return prefix[1] or f"rocm{prefix[2]}.{prefix[3]}"
    build = package.build or ""
    if package.installer == "conda" and build:
        if "cpu" in build:
            return "cpu"
        cuda = _BUILD_CUDA.search(build)
        if cuda:
            return f"cu{cuda[1]}{cuda[2]}"
        cu = _BUILD_CU.search(build)
        if cu:
            return f"cu{cu[1]}"
    return None


# PyPI's CUDA runtime wheels, most telling first. From CUDA 13 on the wheels drop the -cuXX
# suffix (nvidia-cuda-runtime 13.0.96) and torch requires them through the cuda-toolkit
# metapackage (torch 2.15.0: cuda-toolkit[cublas,cudart,...]==13.2.2); before, torch 2.x
# required nvidia-cuda-runtime-cu12 etc. directly. Source: the wheels' metadata on PyPI.
_CUDA_WHEELS = (
    "nvidia-cuda-runtime",
    "nvidia-cuda-runtime-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu11",
    "cuda-toolkit",
    "nvidia-cuda-nvrtc",
    "nvidia-cuda-nvrtc-cu12",
    "nvidia-cuda-nvrtc-cu11",
    "nvidia-cublas",
    "nvidia-cublas-cu12",
    "nvidia-cublas-cu11",
)
_POST_CUDA = re.compile(r"\.post(\d{2,3})\Z")


def wheel_cuda(pkgs: dict[str, Package]) -> str | None:
    """``cu130`` from the CUDA runtime wheels present (nvidia-cuda-runtime 13.0.96, cuda-toolkit 13.0.2)."""
    for project in _CUDA_WHEELS:
        package = pkgs.get(project)
        match = _MAJOR_MINOR.match(package.version) if package and not placeholder(package.version) else None
        if match:
            return f"cu{match[1]}{match[2]}"
    return None


def _torch_cuda(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    torch = pkgs.get("torch")
    flavour = cuda_flavour(torch) if torch else None
    if flavour:
        return flavour
    rocm = _MAJOR_MINOR.match(inv.meta.get("torch_rocm", ""))
    if rocm:  # collect_env's "ROCM used to build PyTorch: 6.1.40093" (its CUDA line says N/A)
        return f"rocm{rocm[1]}.{rocm[2]}"
    built = inv.meta.get("torch_cuda") or inv.meta.get("torch.cuda")
    if built:
        match = _MAJOR_MINOR.match(built)
        return f"cu{match[1]}{match[2]}" if match else ("cpu" if built.lower() == "none" else None)
    if torch and torch.installer == "conda" and inventory_os(inv, pkgs) == "macos":
        return "cpu"  # conda's macOS pytorch builds (py3.7_0) are CPU builds: there is no macOS CUDA build
    cuda_pin = pkgs.get("pytorch-cuda") or pkgs.get("conda:pytorch-cuda")
    if torch and cuda_pin:
        pinned = _MAJOR_MINOR.match(cuda_pin.version)  # pytorch-cuda 11.7 or 11.7.0: cu117
        return f"cu{pinned[1]}{pinned[2]}" if pinned else None
    if torch and torch.installer == "pip":
        # a PyPI torch without +cuXXX: its CUDA is the nvidia wheels', else what the platform says
        return wheel_cuda(pkgs) or inferred_torch_flavour(inv, pkgs, torch)
    return None


def _paddle_cuda(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    """``cpu`` for paddlepaddle; for paddlepaddle-gpu its ``.postXYZ`` (2.6.1.post120: CUDA 12.0),
    else the CUDA runtime wheels beside it, else ``gpu`` (CUDA unknown)."""
    gpu = pkgs.get("paddlepaddle-gpu")
    if gpu is not None:
        local = _LOCAL_CU.search(gpu.version)
        if local:
            return local[1]
        post = _POST_CUDA.search(gpu.version)
        if post:
            return _post_cuda(gpu.version, post[1])
        return wheel_cuda(pkgs) or "gpu"
    return "cpu" if "paddlepaddle" in pkgs else None


def _post_cuda(version: str, digits: str) -> str:
    """paddle >= 2: ``.post120`` is CUDA 12.0, ``.post117`` 11.7, ``.post101`` 10.1 (paddle's own index);
    paddle 1.x on PyPI: ``.post107`` is CUDA 10 with cuDNN 7, ``.post97`` CUDA 9 with cuDNN 7."""
    if version.split(".", 1)[0] in {"0", "1"}:
        return f"cu{digits[:-1]}0"
    return f"cu{digits}"


_RUNTIME_PROJECTS = (
    "conda:cuda-cudart",
    "conda:cuda-runtime",
    "conda:cudatoolkit",
    "nvidia-cuda-runtime",
    "nvidia-cuda-runtime-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu11",
    "cuda-toolkit",
)


def _cuda_toolkit(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    """The CUDA runtime the packages install. The ``cuda-version`` metapackage only when no runtime
    package says otherwise: it is a constraint (cuda-version 12.6 beside a 12.4 runtime is common)."""
    for project in (*_RUNTIME_PROJECTS, "conda:cuda-version"):
        if project in pkgs and not placeholder(pkgs[project].version):
            return major_minor(pkgs[project].version)
    return None


def _cudnn_major(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    for project in (
        "conda:cudnn",
        "nvidia-cudnn-cu13",
        "nvidia-cudnn-cu12",
        "nvidia-cudnn-cu11",
        "nvidia-cudnn",
    ):
        if project in pkgs and not placeholder(pkgs[project].version):
            return pkgs[project].version.split(".", 1)[0]
    for key in ("torch.cudnn", "cudnn_version"):  # collect_env's `cudnn` is a host fact (drift.host)
        value = inv.meta.get(key, "")
        match = re.match(r"^(\d)(\d{3})\Z|^(\d+)\.", value)  # torch reports 8902 for 8.9.2
        if match:
            return match[1] or match[3]
    # the torch build's bundled cuDNN (py3.9_cuda11.7_cudnn8.5.0_0), also when the compared torch row is
    # pip's view of it (collect_env's [pip] torch beside [conda] pytorch, one install)
    builds = [p.build for p in inv.packages if p.project == "torch" and p.build]
    torch = pkgs.get("torch")
    if torch and torch.build:
        builds.insert(0, torch.build)
    build_cudnn = next((m for m in (re.search(r"cudnn(\d+)", b) for b in builds) if m), None)
    return build_cudnn[1] if build_cudnn else None


_BLAS_IMPLS = ("mkl", "openblas", "accelerate", "blis", "netlib")  # accelerate: also newaccelerate


def _blas_impl(package: Package | None) -> str | None:
    build = package.build if package else None
    return next((impl for impl in _BLAS_IMPLS if build and impl in build), None)


def _blas(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    """The BLAS numpy links. conda-forge's numpy links ``libblas.so.3``, so ``libblas``'s build
    (``16_linux64_mkl``, ``5_h4a7cf45_openblas``, ``1_h8933c1f_netlib``) names it; the ``blas``
    metapackage is a selector that can disagree with it in a mixed environment. Anaconda's
    (defaults) numpy links the implementation its ``blas 1.0 <impl>`` metapackage selects.
    Sources: conda-forge docs, "Switching BLAS implementation"; anaconda's blas recipe."""
    numpy = pkgs.get("numpy")
    libblas, selector = _blas_impl(pkgs.get("conda:libblas")), _blas_impl(pkgs.get("conda:blas"))
    defaults_selector = selector is not None and pkgs["conda:blas"].version.startswith("1.")  # c-f: 2.x
    numpy_from_defaults = (
        numpy is not None and numpy.installer == "conda" and "conda-forge" not in (numpy.channel or "")
    )
    if defaults_selector and numpy_from_defaults:
        return selector
    if libblas or selector:
        return libblas or selector
    if "blas" in inv.meta:
        return inv.meta["blas"].lower()
    if "conda:mkl" in pkgs and pkgs.get("numpy") and pkgs["numpy"].installer == "conda":
        return "mkl"
    numpy = pkgs.get("numpy")
    from_conda_build = numpy is not None and "conda" in (numpy.url or "")
    if numpy and numpy.installer == "pip" and not from_conda_build and inv.format in _PIP_VIEW_FORMATS:
        return "openblas"  # PyPI numpy wheels bundle OpenBLAS (numpy.org building/blas_lapack)
    return None


def _python_minor(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    python = pkgs.get("conda:python")
    if python:
        return major_minor(python.version)
    value = inv.meta.get("python") or inv.meta.get("python.version")
    return major_minor(value) if value else None


FACTS: dict[str, Callable[[Inventory, dict[str, Package]], str | None]] = {
    "torch_cuda": _torch_cuda,
    "paddle_cuda": _paddle_cuda,
    "cuda_toolkit": _cuda_toolkit,
    "cudnn_major": _cudnn_major,
    "blas": _blas,
    "python_minor": _python_minor,
}
