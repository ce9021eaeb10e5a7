"""Typed views of the catalog's data files (``envkit/catalog/data/*.yaml``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envkit._strict import StrictModel

__all__ = [
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
    "PageRef",
    "Wheel",
]


class Sourced(StrictModel):
    source: str = Field(min_length=1)
    verified: bool = False
    note: str | None = None


class CudaRelease(Sourced):
    """A CUDA release: its minimum and compatibility drivers, cuDNN versions, GPU architectures."""

    version: str
    min_driver: str
    compat_driver: str
    cudnn: tuple[str, ...]
    archs: tuple[str, ...]


IndexMode = Literal["index-url", "extra-index-url", "find-links"]


class Wheel(StrictModel):
    """A framework wheel flavour for one CUDA: its package, pip version and the index that serves it."""

    cuda: str
    package: str
    pip_version: str
    index: str | None = None
    index_mode: IndexMode | None = None
    cudnn: str | None = None
    experimental: bool = False  # the release matrix lists this CUDA flavour as experimental
    index_only: bool = False  # not on PyPI (deleted, or never uploaded): only ``index`` has it

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.pip_version}"


class PageRef(StrictModel):
    """A page a fact was read from: its URL, the day it was fetched and the sha256 of the page as served."""

    url: str
    fetched: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class FrameworkRelease(StrictModel):
    """One release; its ``source`` defaults to the family's.

    ``flavours`` says where the CUDA flavours came from: the framework's index
    (``index``) or the hand-checked fallback table (``fallback``); ``pypi_cuda`` is
    the CUDA build of the plain PyPI wheel (from its metadata when it says).
    """

    version: str
    source: str | None = None
    verified: bool = False
    note: str | None = None
    python: tuple[str, ...]
    wheels: tuple[Wheel, ...]
    cudnn: str | None = None
    numpy: str | None = None
    yanked: bool = False
    pypi_cuda: str | None = None
    flavours: Literal["index", "fallback"] | None = None
    sources: tuple[PageRef, ...] = ()

    def wheel_for(self, cuda: str) -> Wheel | None:
        return next((w for w in self.wheels if w.cuda == cuda), None)


class FrameworkFamily(StrictModel):
    """A framework (torch, paddle): its releases and their wheels per CUDA flavour."""

    source: str
    releases: tuple[FrameworkRelease, ...]


class BaseImage(Sourced):
    """A runtime base image the catalog knows, with its CUDA, OS and digest."""

    ref: str
    kind: Literal["os", "python", "cuda-runtime", "cuda-devel", "paddle", "pytorch"]
    os: str
    cuda: str | None = None
    cudnn: str | None = None
    python: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    made_by: str | None = None  # a command that makes it locally (never pulled): `envkit base-image`


class InstallerFile(Sourced):
    """A conda installer (Miniconda, Miniforge, micromamba) for one platform, with its sha256."""

    kind: Literal["miniconda", "miniforge", "micromamba"]
    version: str
    python: str | None = None
    arch: Literal["x86_64", "aarch64"]
    url: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    # the conda (Miniconda/Miniforge) or micromamba version inside: it must read envkit's explicit lock
    tool_version: str
    tool_version_source: str = Field(min_length=1)

    @property
    def tool(self) -> Literal["conda", "micromamba"]:
        return "micromamba" if self.kind == "micromamba" else "conda"


class ExplicitHashSupport(Sourced):
    """From which version a tool reads ``url#<hash>`` lines of this kind in an @EXPLICIT file."""

    tool: Literal["conda", "micromamba"]
    hash: Literal["md5", "sha256"]
    since: str
    # the tool releases this fact was executed against (tests/integration/realconda, real conda from
    # ../shared/conda-bundle): each reads or refuses the fragment as ``since`` says; empty = not run
    executed: tuple[str, ...] = ()


class OfflineInstaller(Sourced):
    """The installer an offline (packed) conda build runs in its builder stage: a pinned wheel."""

    kind: Literal["py-rattler"]
    version: str
    arch: Literal["x86_64", "aarch64"]
    filename: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @property
    def requirement(self) -> str:
        return f"{self.kind}=={self.version} --hash=sha256:{self.sha256}"


class OsLibrary(StrictModel):
    """A shared library a framework's wheels load but do not carry, and the package that provides it."""

    soname: str = Field(pattern=r"^lib[A-Za-z0-9_.+-]+\.so(\.[0-9]+)*$")
    deb: str = Field(pattern=r"^[a-z0-9][a-z0-9+.-]+$")  # Debian/Ubuntu package name


class OsLibraries(Sourced):
    """The OS libraries a framework's wheels need in the image (libgomp1 for Paddle)."""

    libraries: tuple[OsLibrary, ...] = ()


class CudaWheel(StrictModel):
    """One of NVIDIA's CUDA runtime wheels on PyPI: the component, the pin, the sonames it ships."""

    component: str = Field(pattern=r"^[a-z][a-z0-9_]*$")  # cudart, cublas, cudnn, ...
    package: str = Field(pattern=r"^nvidia-[a-z0-9-]+$")
    version: str = Field(pattern=r"^[0-9]+(\.[0-9]+){1,4}$")
    libraries: tuple[str, ...] = Field(min_length=1)  # file names under nvidia/<component>/lib/
    # False: the set's framework_pins frameworks do not require this wheel (torch 2.15 has no cuRAND
    # pin): it is pinned here, not left to the resolver's newest
    framework_pinned: bool = True

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


class CudaWheelSet(Sourced):
    """The runtime wheels of one CUDA release on PyPI (``cuda_runtime: pypi``), read from the wheels.

    ``cudnn`` holds the cuDNN wheels envkit pins for this CUDA (one per cuDNN minor: the framework's
    cuDNN picks one); ``cudnn_on_pypi`` every cuDNN release PyPI serves as a Linux x86_64 wheel of
    the package (the CUDA/cuDNN pairs PyPI can provide); ``framework_pins`` the frameworks whose own
    PyPI wheels require these packages with exact pins (torch): their lock takes the framework's
    versions, and the set only names the packages.
    """

    cuda: str
    wheels: tuple[CudaWheel, ...]
    cudnn: tuple[CudaWheel, ...] = ()
    cudnn_package: str
    cudnn_on_pypi: tuple[str, ...] = ()
    framework_pins: tuple[str, ...] = ()
    sources: tuple[PageRef, ...] = ()

    def cudnn_for(self, version: str | None) -> CudaWheel | None:
        """The pinned cuDNN wheel for ``version`` (``"8.6"``: that minor; ``"9"``: the newest 9.x)."""
        if version is None:
            return self.cudnn[-1] if self.cudnn else None
        found = [w for w in self.cudnn if f"{w.version}.".startswith(f"{version}.")]
        return found[-1] if found else None

    @property
    def libraries(self) -> tuple[str, ...]:
        return tuple(lib for w in self.wheels for lib in w.libraries)
