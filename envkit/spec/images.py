"""Which image a spec's environment runs in: one answer for the lock (its glibc) and the Dockerfile."""

from __future__ import annotations

from dataclasses import dataclass

from envkit.catalog import Catalog
from envkit.errors import UsageError
from envkit.spec.models import CudaRuntime, Spec

__all__ = [
    "DEFAULT_CPU_IMAGE",
    "RuntimeBase",
    "cudnn_major",
    "cudnn_version",
    "runtime_base",
]

DEFAULT_CPU_IMAGE = "ubuntu:22.04"


@dataclass(frozen=True)
class RuntimeBase:
    """The image the environment runs in, and why that one (the render says both)."""

    ref: str
    reason: str
    pypi_cuda: bool = False  # the CUDA libraries come from NVIDIA's PyPI wheels, not from the image


def cudnn_version(spec: Spec, catalog: Catalog) -> str | None:
    """The cuDNN the spec's framework wheels were built against (``"8.6"``, ``"9.26"``), if known."""
    for framework, version in spec.frameworks.items():
        release = catalog.framework_release(framework, version)
        wheel = catalog.wheel(framework, version, spec.cuda)
        cudnn = (wheel.cudnn if wheel else None) or (release.cudnn if release else None)
        if cudnn:
            return cudnn
    return None


def cudnn_major(spec: Spec, catalog: Catalog) -> str | None:
    """The cuDNN major the spec's framework wheels were built against (``"8"``, ``"9"``), if known."""
    found = cudnn_version(spec, catalog)
    return found.split(".")[0] if found else None


def runtime_base(spec: Spec, catalog: Catalog) -> RuntimeBase:
    """``base_image``, else the CUDA runtime image with the wheels' cuDNN major (with ``cuda_runtime:
    pypi``: the registry-free Debian base), else Ubuntu for CPU; and the reason for it.

    Called once per loaded spec, by :func:`envkit.spec.resolve.resolve_spec`: every stage reads the
    answer from the :class:`~envkit.spec.resolve.ResolvedSpec`.
    """
    if spec.is_gpu and spec.cuda_runtime is CudaRuntime.PYPI:
        ref = spec.base_image or catalog.pypi_runtime_base
        origin = "base_image" if spec.base_image else "the catalog's registry-free base (`envkit base-image`)"
        return RuntimeBase(
            ref,
            f"cuda_runtime: pypi: {origin}, with NVIDIA's CUDA {spec.cuda} runtime wheels from PyPI "
            "in the environment (pinned in the lock); no container registry needed",
            pypi_cuda=True,
        )
    if spec.base_image:
        return RuntimeBase(spec.base_image, "base_image in the spec")
    if spec.is_gpu:
        major = cudnn_major(spec, catalog)
        image = catalog.runtime_image(spec.cuda, cudnn_major=major)
        if image is None:
            raise UsageError(f"no CUDA {spec.cuda} runtime image is known", hint="set base_image")
        cudnn = f", cuDNN {major}" if major and image.cudnn == major else ""
        return RuntimeBase(
            image.ref,
            f"cuda_runtime: image (the default): the catalog's CUDA {spec.cuda}{cudnn} runtime image; "
            "without its registry, set cuda_runtime: pypi",
        )
    os_image = catalog.os_image("ubuntu22.04")
    return RuntimeBase(os_image.ref if os_image else DEFAULT_CPU_IMAGE, "CPU: the catalog's OS image")
