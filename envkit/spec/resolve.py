"""The spec resolved once: every catalog fact its image, lock and pack need, looked up when it loads.

:func:`resolve_spec` is the one place that asks the catalog which image a spec runs in
(:func:`envkit.spec.images.runtime_base`), which builder image and installers go with it, which
CUDA release, NVIDIA wheel set, cuDNN and framework wheels it means, and which OS libraries its
frameworks need. ``envkit.spec.load.load_spec`` calls it; render, offline, lock and verify take the
:class:`ResolvedSpec` (``loaded.resolved``), never the catalog.

Resolving never fails: what the catalog does not know is ``None`` here, and the stage that needs it
raises the error it always raised (a CUDA without a runtime image: on :attr:`ResolvedSpec.runtime`).
"""

from __future__ import annotations

from dataclasses import dataclass

from envkit.catalog import (
    BaseImage,
    Catalog,
    CudaRelease,
    CudaWheelSet,
    InstallerFile,
    OfflineInstaller,
    OsLibrary,
    Wheel,
)
from envkit.errors import UsageError
from envkit.spec.images import RuntimeBase, cudnn_version, runtime_base
from envkit.spec.models import ARCHES, CudaRuntime, Spec

__all__ = ["ResolvedSpec", "resolve_spec"]


@dataclass(frozen=True)
class ResolvedSpec:
    """A spec and the catalog's answers about it (each ``None`` where the catalog has none)."""

    spec: Spec
    runtime_or_none: RuntimeBase | None  # None: no CUDA runtime image is known (``runtime`` raises)
    base_row: BaseImage | None  # the catalog's row of the runtime image (its OS, its Python)
    os_image: BaseImage | None  # the OS image of that row's OS: the conda builder stage's image
    installers: tuple[tuple[str, InstallerFile | None], ...]  # platform -> the spec's installer
    offline_installers: tuple[tuple[str, OfflineInstaller | None], ...]  # platform -> py-rattler wheel
    cuda_release: CudaRelease | None
    cuda_wheels: CudaWheelSet | None  # NVIDIA's runtime wheels on PyPI for the spec's CUDA
    cuda_wheel_versions: tuple[str, ...]  # the CUDA versions that have such a set (hints)
    cudnn: str | None  # the cuDNN the framework wheels were built against ("8.6", "9.1")
    wheels: tuple[tuple[str, Wheel | None], ...]  # framework -> the wheel the lock requests
    libraries: tuple[tuple[str, OsLibrary], ...]  # (framework, library) the wheels need from the OS

    @property
    def runtime(self) -> RuntimeBase:
        """The image the environment runs in and why (``UsageError`` when the catalog has none)."""
        if self.runtime_or_none is None:
            raise UsageError(f"no CUDA {self.spec.cuda} runtime image is known", hint="set base_image")
        return self.runtime_or_none

    @property
    def runtime_ref(self) -> str:
        return self.runtime.ref

    @property
    def base(self) -> BaseImage | None:
        """The catalog's row of :attr:`runtime` (None: an image the catalog does not know)."""
        self.runtime  # noqa: B018 (the error of a missing runtime image comes first)
        return self.base_row

    @property
    def builder_image(self) -> str:
        """An OS image with the runtime image's glibc, so the environment runs there."""
        runtime = self.runtime.ref
        if self.base_row is None:
            return runtime
        return self.os_image.ref if self.os_image else runtime

    def installer(self, platform: str) -> InstallerFile | None:
        return dict(self.installers).get(platform)

    def offline_installer(self, platform: str) -> OfflineInstaller | None:
        return dict(self.offline_installers).get(platform)

    def wheel(self, framework: str) -> Wheel | None:
        return dict(self.wheels).get(framework)


def resolve_spec(spec: Spec, catalog: Catalog) -> ResolvedSpec:
    """Ask ``catalog`` everything about ``spec`` once (never raises; see :class:`ResolvedSpec`)."""
    try:
        runtime: RuntimeBase | None = runtime_base(spec, catalog)
    except UsageError:
        runtime = None
    base_row = catalog.base_image(runtime.ref) if runtime is not None else None
    return ResolvedSpec(
        spec=spec,
        runtime_or_none=runtime,
        base_row=base_row,
        os_image=catalog.os_image(base_row.os) if base_row is not None else None,
        installers=tuple(
            (p, catalog.installer(spec.installer.value, ARCHES[p], spec.python)) for p in spec.platforms
        ),
        offline_installers=tuple((p, catalog.offline_installer(ARCHES[p])) for p in spec.platforms),
        cuda_release=catalog.cuda_release(spec.cuda),
        cuda_wheels=catalog.cuda_wheels(spec.cuda),
        cuda_wheel_versions=tuple(s.cuda for s in catalog.cuda_wheel_sets),
        cudnn=cudnn_version(spec, catalog),
        wheels=tuple((fw, _framework_wheel(spec, catalog, fw, v)) for fw, v in spec.frameworks.items()),
        libraries=tuple(catalog.libraries_for(fw for fw, _ in spec.frameworks.items())),
    )


def _framework_wheel(spec: Spec, catalog: Catalog, framework: str, version: str) -> Wheel | None:
    """The catalog's wheel for the spec's CUDA; with ``cuda_runtime: pypi``, PyPI's own wheel when
    its CUDA is the spec's (``torch==2.5.1`` is CUDA 12.4 on PyPI: not ``+cu124`` from the framework's
    index), so that every package of the image comes from PyPI."""
    wheel = catalog.requested_wheel(framework, version, spec.cuda)
    release = catalog.framework_release(framework, version)
    if (
        wheel is not None
        and wheel.index
        and spec.cuda_runtime is CudaRuntime.PYPI
        and release is not None
        and release.pypi_cuda == spec.cuda
    ):
        package = next((w.package for w in release.wheels if w.cuda == spec.cuda), wheel.package)
        return wheel.model_copy(update={"package": package, "pip_version": version, "index": None,
                                        "index_mode": None, "index_only": False})  # fmt: skip
    return wheel
