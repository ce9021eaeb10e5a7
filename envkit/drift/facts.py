"""Facts derived from one inventory: torch CUDA flavour, CUDA toolkit, cuDNN major, BLAS, Python."""

from __future__ import annotations

import re
from collections.abc import Callable

from envkit.inventory.models import Inventory, Package

__all__ = ["FACTS", "cuda_flavour", "major_minor"]

_LOCAL_CU = re.compile(r"\+(cu\d+|cpu|rocm[\d.]+)$")
_BUILD_CUDA = re.compile(r"cuda(\d+)\.?(\d+)")
_BUILD_CU = re.compile(r"(?:^|_)cu(\d{3,})(?:_|$)")
_MAJOR_MINOR = re.compile(r"^(\d+)\.(\d+)")


_PIP_VIEW_FORMATS = {
    "pip-freeze",
    "pip-json",
    "requirements-lock",
    "conda-list",
    "env-export",
    "conda-export",
}


def major_minor(version: str) -> str | None:
    match = _MAJOR_MINOR.match(version)
    return f"{match[1]}.{match[2]}" if match else None


def cuda_flavour(package: Package) -> str | None:
    """``cu121`` / ``cpu`` for torch-family packages, from pip local versions or conda builds."""
    local = _LOCAL_CU.search(package.version)
    if local:
        return local[1]
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


def _torch_cuda(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    torch = pkgs.get("torch")
    flavour = cuda_flavour(torch) if torch else None
    if flavour:
        return flavour
    built = inv.meta.get("torch_cuda") or inv.meta.get("torch.cuda")
    if built:
        match = _MAJOR_MINOR.match(built)
        return f"cu{match[1]}{match[2]}" if match else ("cpu" if built.lower() == "none" else None)
    cuda_pin = pkgs.get("pytorch-cuda") or pkgs.get("conda:pytorch-cuda")
    if torch and cuda_pin:
        return "cu" + cuda_pin.version.replace(".", "")
    return None


def _cuda_toolkit(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    for project in (
        "conda:cuda-version",
        "conda:cudatoolkit",
        "nvidia-cuda-runtime-cu12",
        "nvidia-cuda-runtime-cu11",
    ):
        if project in pkgs:
            return major_minor(pkgs[project].version)
    return None


def _cudnn_major(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    for project in ("conda:cudnn", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11", "nvidia-cudnn-cu13"):
        if project in pkgs:
            return pkgs[project].version.split(".", 1)[0]
    for key in ("cudnn", "torch.cudnn", "cudnn_version"):
        value = inv.meta.get(key, "")
        match = re.match(r"^(\d)(\d{3})$|^(\d+)\.", value)  # torch reports 8902 for 8.9.2
        if match:
            return match[1] or match[3]
    torch = pkgs.get("torch")
    build_cudnn = re.search(r"cudnn(\d+)", torch.build or "") if torch else None
    return build_cudnn[1] if build_cudnn else None


def _blas(inv: Inventory, pkgs: dict[str, Package]) -> str | None:
    for project in ("conda:blas", "conda:libblas"):
        build = pkgs[project].build if project in pkgs else None
        for impl in ("mkl", "openblas", "accelerate", "blis", "netlib"):
            if build and impl in build:
                return impl
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
    "cuda_toolkit": _cuda_toolkit,
    "cudnn_major": _cudnn_major,
    "blas": _blas,
    "python_minor": _python_minor,
}
