"""The environment spec (``environments/<name>.yaml``) as strict pydantic models.

Syntax-level rules live here (names, shapes, characters that could inject
into a Dockerfile or shell line). Facts about what exists (CUDA versions,
framework wheels, base image tags) are checked against the catalog in
:mod:`envkit.spec.check`.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import AfterValidator, Field, field_validator

from envkit._safe import printable_line
from envkit._strict import StrictModel
from envkit.project import NAME_RE

__all__ = [
    "ARCHES",
    "MAX_DESCRIPTION",
    "NAME_RE",
    "AuditConfig",
    "AuditIgnore",
    "CudaRuntime",
    "Frameworks",
    "Installer",
    "Mirrors",
    "Spec",
    "StrictModel",
]

_PYTHON_RE = re.compile(r"^3\.[0-9]{1,2}\Z")
_CUDA_RE = re.compile(r"^(cpu|[0-9]{1,2}\.[0-9])\Z")
_VERSION_RE = re.compile(r"^[0-9]+(\.[0-9]+){1,3}([a-z]+[0-9]*)?\Z")
# conda MatchSpec: name, optional version, optional build, optional channel:: and [key=value] brackets.
_MATCHSPEC_RE = re.compile(
    r"^(?:[A-Za-z0-9_.\-/]+::)?[A-Za-z0-9_.\-]+"
    r"(?: *[=<>!~]{0,2} *[A-Za-z0-9_.*+!=<>,|\-]+)?"  # spaces only: no newline, no tab
    r"(?: +[A-Za-z0-9_.*+\-]+)?"
    r"(?:\[[A-Za-z0-9_.*=,'\"<> \-]+\])?\Z"
)
# Docker image reference: [registry[:port]/]path[:tag][@sha256:digest]
_IMAGE_RE = re.compile(
    r"^(?:[a-z0-9]+(?:[.-][a-z0-9]+)*(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(?:@sha256:[a-f0-9]{64})?\Z"
)
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_URL_RE = re.compile(r"^(https?|file)://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+\Z")
_CHANNEL_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.\-]*|(?:https?|file)://[^\s'\"`$\\]+)\Z")
ARCHES = {"linux-64": "x86_64", "linux-aarch64": "aarch64"}  # conda subdir -> uname -m
_PLATFORMS = tuple(ARCHES)
_MATCHSPEC_FORBIDDEN = set(";&`$\\\n\r\t'\"")
MAX_DESCRIPTION = 300  # one line; it becomes an OCI label and a README paragraph
MAX_ENV_VALUE = 4096


class Installer(str, Enum):
    """How the image gets its Python: a conda installer, or the base image's own (venv)."""

    MINICONDA = "miniconda"
    MINIFORGE = "miniforge"
    MICROMAMBA = "micromamba"
    VENV = "venv"

    @property
    def uses_conda(self) -> bool:
        return self is not Installer.VENV


class CudaRuntime(str, Enum):
    """Where a CUDA image's runtime libraries come from.

    ``image``: the catalog's ``nvidia/cuda`` runtime image (the default, where its registry is
    reachable); ``pypi``: NVIDIA's runtime wheels from PyPI (cudart, cuBLAS, cuDNN, ...), pinned in
    the lock and installed into the environment on a base with no CUDA (``base_image``, default the
    debootstrapped ``envkit/debian-python:bookworm``), so the image builds with no container registry.
    """

    IMAGE = "image"
    PYPI = "pypi"


def _check_version(value: str) -> str:
    if not _VERSION_RE.match(value):
        raise ValueError(f"{value!r} is not a release version such as '2.6.2'")
    return value


FrameworkVersion = Annotated[str, AfterValidator(_check_version)]


class Frameworks(StrictModel):
    """The framework versions of a spec (``paddle`` and/or ``torch``)."""

    paddle: FrameworkVersion | None = None
    torch: FrameworkVersion | None = None

    def items(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in (("paddle", self.paddle), ("torch", self.torch)) if v]


class Mirrors(StrictModel):
    """The package mirrors of a spec: a PyPI index and a conda channel alias."""

    pypi: str | None = Field(None, description="PyPI-compatible simple index URL")
    conda: str | None = Field(None, description="conda channel alias URL")

    @field_validator("pypi", "conda")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not _URL_RE.match(value):
            raise ValueError(f"{value!r} is not an http(s):// or file:// URL")
        return value


class AuditIgnore(StrictModel):
    """An advisory the audit ignores for this environment, with the reason."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    reason: str = Field(min_length=1)


class AuditConfig(StrictModel):
    """The spec's audit settings."""

    ignore: tuple[AuditIgnore, ...] = ()


def _check_match_spec(value: str) -> str:
    bad = any(c in _MATCHSPEC_FORBIDDEN for c in value) or not _MATCHSPEC_RE.match(value)
    if not bad:
        import rattler  # on first use: the commands that never load a spec (audit, diff) skip its import

        try:
            rattler.MatchSpec(value)
        except Exception:  # noqa: BLE001 - rattler raises its own parse error types
            bad = True
    if bad:
        raise ValueError(
            f"{value!r} is not a conda match spec such as 'numpy>=1.26,<2' or 'pytorch=2.1.2=*cuda118*'"
        )
    return value


def _check_requirement(value: str) -> str:
    if "\n" in value or "\r" in value or "`" in value or "$(" in value:
        raise ValueError(f"{value!r} contains a newline or shell substitution")
    try:
        req = Requirement(value)
    except InvalidRequirement as e:
        raise ValueError(f"{value!r} is not a PEP 508 requirement: {e}") from e
    if req.url:
        raise ValueError(f"{value!r}: direct URL requirements cannot be locked with hashes")
    return value


MatchSpec = Annotated[str, AfterValidator(_check_match_spec)]
PipRequirement = Annotated[str, AfterValidator(_check_requirement)]


class Spec(StrictModel):
    """One named environment."""

    name: str = Field(description="must equal the file's stem; `[a-z0-9][a-z0-9._-]*`")
    description: str = Field(
        "", description="one printable line for people (≤ 300 characters); the image's OCI description"
    )
    python: str = Field(description='Python minor version, quoted: `"3.10"`')
    cuda: str = Field(description='CUDA version, quoted (`"11.8"`), or `cpu`; sets `__cuda` and the wheels')
    frameworks: Frameworks = Field(
        Frameworks(), description="`paddle: VERSION` and/or `torch: VERSION`; the wheel follows `cuda`"
    )
    conda: tuple[MatchSpec, ...] = Field((), description="conda match specs, e.g. `numpy>=1.24,<2`")
    pip: tuple[PipRequirement, ...] = Field((), description="PEP 508 requirements, installed after conda")
    channels: tuple[str, ...] = Field(
        ("conda-forge",), description="conda channels (names or URLs), in order"
    )
    platforms: tuple[str, ...] = Field(("linux-64",), description="`linux-64` and/or `linux-aarch64`")
    installer: Installer = Field(
        Installer.MINICONDA,
        description="`miniconda`, `miniforge`, `micromamba`, or `venv` (the base image's own Python)",
    )
    base_image: str | None = Field(
        None, description="runtime base image, tag or `@sha256:` digest; default from the catalog"
    )
    cuda_runtime: CudaRuntime = Field(
        CudaRuntime.IMAGE,
        description="`image` (the nvidia/cuda runtime image, default) or `pypi` (NVIDIA's runtime wheels "
        "from PyPI on `base_image`: no container registry needed)",
    )
    mirrors: Mirrors = Field(
        Mirrors(), description="`pypi:` index URL, `conda:` channel alias (no credentials)"
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="environment variables baked into the image (one printable line each); "
        "a `PATH` is prepended to the environment's own",
    )
    offline: bool = Field(
        False, description="build from a host-side wheelhouse with no network (`--offline`)"
    )
    audit: AuditConfig = Field(
        AuditConfig(), description="`ignore: [{id, reason}]` for `envkit audit`, shown in its output"
    )
    gpus: tuple[str, ...] = Field(
        (),
        description="the GPUs the environment must run on (`H100`, `A100`, ... or `sm_90`): `envkit lock` "
        "reads the GPU code of every locked wheel at hand and fails when one cannot run there",
    )

    drivers: tuple[str, ...] = Field(
        (),
        description="the host drivers it must run on (`535.104.05`): with `gpus:`, each GPU on each driver; "
        "`envkit lock` applies `envkit check`'s driver rules to the spec's CUDA",
    )

    @field_validator("drivers")
    @classmethod
    def _drivers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for driver in value:
            if not re.match(r"^\d{2,4}(\.\d{1,3}){1,2}\Z", driver):
                raise ValueError(f"{driver!r} is not a driver version (e.g. 535.104.05)")
        return value

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from envkit.catalog.gpu import load_gpu_facts, parse_cc

        facts = load_gpu_facts()
        for gpu in value:
            if parse_cc(gpu) is None and facts.gpu(gpu) is None:
                names = ", ".join(g.name for g in facts.gpus.list)
                raise ValueError(f"{gpu!r} is no GPU of the catalog ({names}) nor a capability (sm_90)")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.match(value) or len(value) > 100:
            raise ValueError(f"{value!r} must match [a-z0-9][a-z0-9._-]* (at most 100 characters)")
        return value

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        if len(value) > MAX_DESCRIPTION:
            raise ValueError(f"the description is {len(value)} characters; at most {MAX_DESCRIPTION}")
        if not printable_line(value):
            raise ValueError(
                "the description must be one line of printable text (no newline, NUL or control characters)"
            )
        return value

    @field_validator("python")
    @classmethod
    def _python(cls, value: str) -> str:
        if not _PYTHON_RE.match(value):
            raise ValueError(f"{value!r} is not a Python minor version such as '3.10'")
        return value

    @field_validator("cuda")
    @classmethod
    def _cuda(cls, value: str) -> str:
        if not _CUDA_RE.match(value):
            raise ValueError(f"{value!r} is not a CUDA version such as '11.8', or 'cpu'")
        return value

    @field_validator("channels")
    @classmethod
    def _channels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for channel in value:
            if not _CHANNEL_RE.match(channel):
                raise ValueError(f"{channel!r} is not a channel name or URL")
        return value

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for platform in value:
            if platform not in _PLATFORMS:
                raise ValueError(f"{platform!r} is not one of {', '.join(_PLATFORMS)}")
        if not value:
            raise ValueError("at least one platform is needed")
        return value

    @field_validator("base_image")
    @classmethod
    def _base_image(cls, value: str | None) -> str | None:
        if value is not None and not _IMAGE_RE.match(value):
            raise ValueError(
                f"{value!r} is not an image reference such as 'nvidia/cuda:11.8.0-runtime-ubuntu22.04'"
            )
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, val in value.items():
            if not _ENV_NAME_RE.match(key):
                raise ValueError(f"{key!r} is not an environment variable name")
            if not printable_line(val):
                raise ValueError(f"{key}: the value contains a newline or a control character")
            if len(val) > MAX_ENV_VALUE:
                raise ValueError(f"{key}: the value is longer than {MAX_ENV_VALUE} characters")
        return value

    @property
    def is_gpu(self) -> bool:
        return self.cuda != "cpu"

    @property
    def python_tag(self) -> str:
        """``3.10`` -> ``310``."""
        return self.python.replace(".", "")
