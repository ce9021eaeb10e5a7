"""The catalog: facts about CUDA, frameworks, base images and installers, each with a source.

Facts live in YAML files beside this module and are validated on load.
:func:`load_catalog` returns one immutable :class:`Catalog`.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml
from packaging.version import InvalidVersion, Version

from envkit._yaml import C_SAFE_LOADER
from envkit.catalog.known_bad import KnownBadRule, known_bad_hits, load_known_bad
from envkit.errors import CatalogError

if TYPE_CHECKING:  # the pydantic models load with the catalog (load_catalog), not with this package
    from envkit.catalog.gpu import GpuFacts
    from envkit.catalog.models import (
        BaseImage,
        CudaRelease,
        CudaWheel,
        CudaWheelSet,
        ExplicitHashSupport,
        FrameworkFamily,
        FrameworkRelease,
        InstallerFile,
        OfflineInstaller,
        OsLibraries,
        OsLibrary,
        Wheel,
    )

__all__ = [
    "FRAMEWORK_PACKAGES",
    "BaseImage",
    "Catalog",
    "CatalogOnDemand",
    "CudaRelease",
    "CudaWheel",
    "CudaWheelSet",
    "ExplicitHashSupport",
    "FrameworkRelease",
    "InstallerFile",
    "KnownBadRule",
    "OfflineInstaller",
    "OsLibraries",
    "OsLibrary",
    "Wheel",
    "impossible_in",
    "load_catalog",
    "requested_wheel_in",
]

_MODELS = frozenset(
    {
        "BaseImage",
        "CudaRelease",
        "CudaWheel",
        "CudaWheelSet",
        "ExplicitHashSupport",
        "FrameworkFamily",
        "FrameworkRelease",
        "InstallerFile",
        "OfflineInstaller",
        "OsLibraries",
        "OsLibrary",
        "Wheel",
    }
)


def __getattr__(name: str) -> Any:
    """The catalog's pydantic models, imported on first use: an audit of a file needs none of them."""
    if name in _MODELS:
        from envkit.catalog import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The pip distributions that carry each framework.
FRAMEWORK_PACKAGES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "paddle": ("paddlepaddle", "paddlepaddle-gpu"),
}


@dataclass(frozen=True)
class Catalog:
    """Every fact envkit relies on, each with its source: CUDA, wheels, base images, installers, rules."""

    cuda: tuple[CudaRelease, ...]
    frameworks: dict[str, FrameworkFamily]
    base_images: tuple[BaseImage, ...]
    installers: tuple[InstallerFile, ...]
    known_bad: tuple[KnownBadRule, ...]
    explicit_hashes: tuple[ExplicitHashSupport, ...] = ()
    offline_installers: tuple[OfflineInstaller, ...] = ()
    os_libraries: dict[str, OsLibraries] = field(default_factory=dict)
    cuda_wheel_sets: tuple[CudaWheelSet, ...] = ()
    pypi_runtime_base: str = "envkit/debian-python:bookworm"  # where `cuda_runtime: pypi` wheels go

    @property
    def gpu(self) -> GpuFacts:
        """``gpu.yaml``'s facts (GPUs, their rules, the container toolkit, dynload tables): loaded on
        first use and cached, so a command that needs no GPU fact never parses it."""
        from envkit.catalog.gpu import load_gpu_facts

        return load_gpu_facts()

    def libraries_for(self, frameworks: Iterable[str]) -> list[tuple[str, OsLibrary]]:
        """(framework, library) pairs the frameworks' wheels need from the OS, sorted by soname."""
        found = {
            lib.soname: (fw, lib)
            for fw in sorted(frameworks)
            for lib in (self.os_libraries[fw].libraries if fw in self.os_libraries else ())
        }
        return [found[k] for k in sorted(found)]

    def os_packages(self) -> list[str]:
        """Every Debian package the catalog's frameworks need: what `envkit base-image` installs."""
        return sorted({lib.deb for entry in self.os_libraries.values() for lib in entry.libraries})

    # -- CUDA ---------------------------------------------------------------
    def cuda_release(self, version: str) -> CudaRelease | None:
        return next((c for c in self.cuda if c.version == version), None)

    def cuda_versions(self) -> list[str]:
        return [c.version for c in self.cuda]

    # -- frameworks ---------------------------------------------------------
    def framework_release(self, framework: str, version: str) -> FrameworkRelease | None:
        family = self.frameworks.get(framework)
        if family is None:
            return None
        return next((r for r in family.releases if r.version == version), None)

    def framework_versions(self, framework: str) -> list[str]:
        family = self.frameworks.get(framework)
        return [r.version for r in family.releases] if family else []

    def impossible(self, framework: str, version: str, cuda: str, python: str) -> str | None:
        """Why no wheel of a release the catalog does not know can exist (see :func:`impossible_in`)."""
        family = self.frameworks.get(framework)
        return impossible_in(framework, family.releases if family else (), version, cuda, python)

    def wheel(self, framework: str, version: str, cuda: str) -> Wheel | None:
        release = self.framework_release(framework, version)
        return release.wheel_for(cuda) if release else None

    def requested_wheel(self, framework: str, version: str, cuda: str) -> Wheel | None:
        """The catalog's wheel, or a template of it (see :func:`requested_wheel_in`)."""
        family = self.frameworks.get(framework)
        return requested_wheel_in(family.releases, version, cuda) if family else None

    # -- base images --------------------------------------------------------
    def base_image(self, ref: str) -> BaseImage | None:
        bare = ref.split("@", 1)[0]
        return next((b for b in self.base_images if b.ref == bare), None)

    def closest_images(self, ref: str, n: int = 3) -> list[str]:
        refs = [b.ref for b in self.base_images]
        return difflib.get_close_matches(ref.split("@", 1)[0], refs, n=n, cutoff=0.3)

    def runtime_image(self, cuda: str, *, cudnn_major: str | None = None) -> BaseImage | None:
        """The nvidia/cuda runtime image for a CUDA version (with cuDNN when known)."""
        candidates = [b for b in self.base_images if b.kind == "cuda-runtime" and b.cuda == cuda]
        if cudnn_major:
            with_cudnn = [b for b in candidates if b.cudnn == cudnn_major]
            candidates = with_cudnn or candidates
        candidates.sort(key=lambda b: (b.cudnn is None, b.ref))
        return candidates[0] if candidates else None

    def cuda_wheels(self, cuda: str) -> CudaWheelSet | None:
        """NVIDIA's runtime wheels on PyPI for CUDA ``cuda`` (``cuda_runtime: pypi``), if known."""
        return next((s for s in self.cuda_wheel_sets if s.cuda == cuda), None)

    def os_image(self, os_name: str) -> BaseImage | None:
        return next((b for b in self.base_images if b.kind == "os" and b.os == os_name), None)

    # -- installers ---------------------------------------------------------
    def installer(self, kind: str, arch: str, python: str | None = None) -> InstallerFile | None:
        """The installer of ``kind`` for ``arch``: verified first, then newest.

        Miniconda installers differ by their base Python; envkit creates its own
        environment beside the base, so any base Python works; one matching
        ``python`` is preferred. An unverified checksum is still safe to use (a
        wrong one fails the build loudly), so it is a fallback, not a refusal.
        """
        found = [i for i in self.installers if i.kind == kind and i.arch == arch]
        found.sort(key=lambda i: (i.verified, i.python == python, _version_key(i.version)), reverse=True)
        return found[0] if found else None

    def explicit_hash_since(self, tool: str, hash_kind: str) -> ExplicitHashSupport | None:
        """From which ``tool`` version ``url#<hash_kind>`` lines of an explicit lock are read."""
        return next((h for h in self.explicit_hashes if h.tool == tool and h.hash == hash_kind), None)

    def offline_installer(self, arch: str) -> OfflineInstaller | None:
        """The pinned installer wheel an offline conda build runs (py-rattler), for ``arch``."""
        return next((i for i in self.offline_installers if i.arch == arch), None)

    # -- known-bad combinations ---------------------------------------------
    def known_bad_hits(self, versions: dict[str, str]) -> list[KnownBadRule]:
        """Rules whose every condition matches ``versions`` (normalized name -> version)."""
        return known_bad_hits(self.known_bad, versions)


def impossible_in(
    framework: str, releases: tuple[FrameworkRelease, ...], version: str, cuda: str, python: str
) -> str | None:
    """Why no wheel of a release that ``releases`` (one framework's, as the catalog lists them) do
    not hold can exist for this CUDA and Python, or None. A release older than the oldest cannot
    support a newer Python or CUDA than that oldest release does (support is added in new releases,
    never backported)."""
    if not releases or any(r.version == version for r in releases):
        return None
    try:
        oldest = min(releases, key=lambda r: Version(r.version))
        if Version(version) >= Version(oldest.version):
            return None
        newest_python = max(oldest.python, key=Version)
        if Version(python) > Version(newest_python):
            return (
                f"{framework} {version} is older than {framework} {oldest.version}, "
                f"whose newest Python is "
                f"{newest_python}: no {framework} {version} wheel for Python {python} exists"
            )
        cudas = [w.cuda for w in oldest.wheels if w.cuda != "cpu"]
        if cuda != "cpu" and cudas and Version(cuda) > max(Version(c) for c in cudas):
            return (
                f"{framework} {version} is older than {framework} {oldest.version}, whose newest CUDA is "
                f"{max(cudas, key=Version)}: no {framework} {version} wheel for CUDA {cuda} exists"
            )
    except InvalidVersion:
        return None
    return None


def requested_wheel_in(releases: tuple[FrameworkRelease, ...], version: str, cuda: str) -> Wheel | None:
    """The wheel of ``version`` for ``cuda`` among one framework's ``releases``; for a release they
    do not hold, the wheel the newest release with this CUDA flavour names, with the version
    replaced (the lock then says whether it exists)."""
    release = next((r for r in releases if r.version == version), None)
    if release is not None:
        return release.wheel_for(cuda)
    for known in reversed(releases):
        template = known.wheel_for(cuda)
        if template is not None and template.pip_version.startswith(known.version):
            pip_version = version + template.pip_version.removeprefix(known.version)
            return template.model_copy(update={"pip_version": pip_version, "index_only": False})
    return None


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.replace("-", ".").split(".") if p.isdigit())


def _read(name: str) -> Any:
    text = resources.files("envkit.catalog").joinpath("data").joinpath(name).read_text("utf-8")
    # libyaml when present: the generated frameworks.yaml is ~70 KB (0.8 s in pure Python)
    return yaml.load(text, Loader=C_SAFE_LOADER)  # noqa: S506 (a safe loader)


@functools.cache
def load_catalog() -> Catalog:
    """Load and validate the packaged catalog (cached: it is immutable)."""
    from pydantic import ValidationError

    from envkit.catalog import models as m

    try:
        frameworks = _read("frameworks.yaml")
        installers = _read("installers.yaml")
        wheel_sets = _read("cuda_wheels.yaml")
        return Catalog(
            cuda=tuple(m.CudaRelease.model_validate(r) for r in _read("cuda.yaml")["releases"]),
            frameworks={k: m.FrameworkFamily.model_validate(v) for k, v in frameworks.items()},
            base_images=tuple(m.BaseImage.model_validate(i) for i in _read("base_images.yaml")["images"]),
            installers=tuple(m.InstallerFile.model_validate(i) for i in installers["installers"]),
            known_bad=load_known_bad(),
            explicit_hashes=tuple(
                m.ExplicitHashSupport.model_validate(h) for h in installers["explicit_hashes"]
            ),
            offline_installers=tuple(m.OfflineInstaller.model_validate(i) for i in installers["offline"]),
            os_libraries={
                k: m.OsLibraries.model_validate(v)
                for k, v in _read("os_libraries.yaml")["frameworks"].items()
            },
            cuda_wheel_sets=tuple(m.CudaWheelSet.model_validate(r) for r in wheel_sets["releases"]),
            pypi_runtime_base=str(wheel_sets["base_image"]),
        )
    except (ValidationError, KeyError, yaml.YAMLError, OSError) as e:
        raise CatalogError(
            f"the packaged catalog is invalid: {e}", hint="reinstall envkit; this is a bug if it persists"
        ) from e


class CatalogOnDemand:
    """The catalog's answers, each loading only what it needs: what an audit asks.

    The known-bad rules (every audit checks them) come from ``known_bad.yaml`` alone, without
    pydantic; a CUDA release or an installer (``--driver``, a spec's installer) loads the whole
    catalog on that first question (:func:`load_catalog`).
    """

    def known_bad_hits(self, versions: dict[str, str]) -> list[KnownBadRule]:
        return known_bad_hits(load_known_bad(), versions)

    def cuda_release(self, version: str) -> CudaRelease | None:
        return load_catalog().cuda_release(version)

    def installer(self, kind: str, arch: str, python: str | None = None) -> InstallerFile | None:
        return load_catalog().installer(kind, arch, python)
