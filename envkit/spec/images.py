"""Which image a spec's environment runs in: one answer for the lock (its glibc) and the Dockerfile."""

from __future__ import annotations

from envkit.catalog import Catalog
from envkit.errors import UsageError
from envkit.spec.models import Spec

__all__ = ["DEFAULT_CPU_IMAGE", "cudnn_major", "runtime_image_ref"]

DEFAULT_CPU_IMAGE = "ubuntu:22.04"


def cudnn_major(spec: Spec, catalog: Catalog) -> str | None:
    """The cuDNN major the spec's framework wheels were built against (``"8"``, ``"9"``), if known."""
    for framework, version in spec.frameworks.items():
        release = catalog.framework_release(framework, version)
        wheel = catalog.wheel(framework, version, spec.cuda)
        cudnn = (wheel.cudnn if wheel else None) or (release.cudnn if release else None)
        if cudnn:
            return cudnn.split(".")[0]
    return None


def runtime_image_ref(spec: Spec, catalog: Catalog) -> str:
    """``base_image``, else the CUDA runtime image with the wheels' cuDNN major, else Ubuntu for CPU."""
    if spec.base_image:
        return spec.base_image
    if spec.is_gpu:
        image = catalog.runtime_image(spec.cuda, cudnn_major=cudnn_major(spec, catalog))
        if image is None:
            raise UsageError(f"no CUDA {spec.cuda} runtime image is known", hint="set base_image")
        return image.ref
    os_image = catalog.os_image("ubuntu22.04")
    return os_image.ref if os_image else DEFAULT_CPU_IMAGE
