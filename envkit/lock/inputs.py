"""What the solvers see for one spec, and its hash: the lock's identity.

``lock_inputs(resolved)`` translates a spec (resolved once: :mod:`envkit.spec.resolve`) into
the conda and pip requests of every platform (channels after the conda mirror, virtual packages,
framework wheels and their indexes, the pip mirror). Its :attr:`LockInputs.sha256` is what the
lock files record and what ``envkit lock --check`` compares: editing what no solver reads
(``description``, ``env``, ``audit``, ``offline``, a ``base_image`` on the same OS) leaves a lock
fresh; editing a conda or pip line, the Python, CUDA, a framework, a channel, a mirror or a
platform makes it stale.

Render reuses the same translation (:func:`conda_channels`, :func:`framework_requirements`,
:func:`index_options`), so the unlocked ``environment.yml`` and the lock agree by construction.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from envkit.lock.solver import CondaPackage, CondaRequest, PipPackage, PipRequest
from envkit.lock.virtual import python_platform, virtual_packages
from envkit.spec.models import CudaRuntime, Spec
from envkit.spec.resolve import ResolvedSpec

__all__ = [
    "INPUTS_VERSION",
    "LockInputs",
    "PipIndexes",
    "conda_channels",
    "cuda_runtime_requirements",
    "framework_requirements",
    "index_options",
    "lock_inputs",
    "pip_indexes",
]

INPUTS_VERSION = 1  # bump when the meaning of a field changes: every lock becomes stale once


@dataclass(frozen=True)
class PipIndexes:
    """Where pip looks: the spec's mirror and the framework wheels' own indexes."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()

    def options(self) -> list[str]:
        """pip options in a stable order: ``--index-url`` first, then sorted extra indexes and links."""
        head = [f"--index-url {self.index_url}"] if self.index_url else []
        rest = {f"--extra-index-url {u}" for u in self.extra_index_urls}
        rest |= {f"--find-links {u}" for u in self.find_links}
        return head + sorted(rest)


def conda_channels(spec: Spec) -> list[str]:
    """The spec's channels, rewritten to the conda mirror when one is set.

    No ``nodefaults`` entry: conda 23.5 / 24.3 drop it in ``conda env create`` (``conda_env``'s
    installer), but 26.7.1 keeps it as a channel and fails fetching
    ``conda.anaconda.org/nodefaults`` (executed: tests/integration/realconda). conda < 25 adds the
    channels of its own configuration (a Miniconda's: the implicit ``defaults``) unless its root
    ``.condarc`` says ``channels: []``, which the Dockerfile's ``conda env create`` step writes.
    """
    result = []
    for channel in spec.channels:
        if spec.mirrors.conda and "://" not in channel:
            channel = f"{spec.mirrors.conda.rstrip('/')}/{channel}"
        result.append(channel)
    return result


def framework_requirements(resolved: ResolvedSpec) -> list[str]:
    """``paddlepaddle-gpu==2.6.2``, ``torch==2.1.2+cu118``, … for the spec's CUDA."""
    lines = []
    for _, wheel in resolved.wheels:
        if wheel is not None:  # validation guarantees it for releases the catalog knows
            lines.append(wheel.requirement)
    return lines


def cuda_runtime_requirements(resolved: ResolvedSpec) -> list[str]:
    """NVIDIA's runtime wheels of ``cuda_runtime: pypi`` (cudart, cuBLAS, cuDNN, ...), as pip lines.

    Pinned from the catalog (cuDNN: the one the framework was built for), except for frameworks
    whose own wheels pin them (torch): then only the names, so the lock takes the framework's pins.
    """
    spec = resolved.spec
    if not spec.is_gpu or spec.cuda_runtime is not CudaRuntime.PYPI:
        return []
    found = resolved.cuda_wheels
    if found is None:  # validation refuses the spec; nothing to add
        return []
    cudnn = found.cudnn_for(resolved.cudnn)
    wheels = [*found.wheels, *([cudnn] if cudnn else [])]
    bare = any(framework in found.framework_pins for framework, _ in spec.frameworks.items())
    return sorted(w.package if bare and w.framework_pinned else w.requirement for w in wheels)


def pip_indexes(resolved: ResolvedSpec) -> PipIndexes:
    extra: set[str] = set()
    links: set[str] = set()
    for _, wheel in resolved.wheels:
        if wheel is not None and wheel.index and wheel.index_mode:
            (links if wheel.index_mode == "find-links" else extra).add(wheel.index)
    return PipIndexes(resolved.spec.mirrors.pypi, tuple(sorted(extra)), tuple(sorted(links)))


def index_options(resolved: ResolvedSpec) -> list[str]:
    """pip options for the spec's mirror and the framework indexes, sorted and deduplicated."""
    return pip_indexes(resolved).options()


@dataclass(frozen=True)
class PlatformInputs:
    """One platform's requests, without the previous lock's preferences."""

    platform: str
    conda: CondaRequest | None
    pip: PipRequest


@dataclass(frozen=True)
class LockInputs:
    """Everything the solvers see for one spec; :attr:`sha256` is the lock's identity."""

    uses_conda: bool
    channels: tuple[str, ...]  # as the solver gets them (mirror applied)
    platforms: tuple[PlatformInputs, ...]
    pip_options: tuple[str, ...]  # the index options written into requirements.lock
    env_channels: tuple[str, ...]  # the channels written into the pinned environment.yml

    @property
    def sha256(self) -> str:
        data = {"version": INPUTS_VERSION, **asdict(self)}
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def platform(self, name: str) -> PlatformInputs:
        return next(p for p in self.platforms if p.platform == name)

    def conda_request(self, platform: str, preferred: tuple[CondaPackage, ...]) -> CondaRequest | None:
        request = self.platform(platform).conda
        return replace(request, preferred=preferred) if request is not None else None

    def pip_request(
        self, platform: str, preferred: tuple[PipPackage, ...], upgrade: tuple[str, ...]
    ) -> PipRequest:
        return replace(self.platform(platform).pip, preferred=preferred, upgrade=upgrade)


def lock_inputs(resolved: ResolvedSpec) -> LockInputs:
    spec = resolved.spec
    channels = conda_channels(spec)
    solver_channels = tuple(channels)
    indexes = pip_indexes(resolved)
    requirements = (
        *framework_requirements(resolved),
        *cuda_runtime_requirements(resolved),
        *spec.pip,
    )
    platforms = []
    for platform in spec.platforms:
        conda = None
        if spec.installer.uses_conda:
            conda = CondaRequest(
                specs=_conda_specs(spec),
                channels=solver_channels,
                platform=platform,
                virtual_packages=virtual_packages(resolved, platform),
                cuda=spec.cuda if spec.is_gpu else None,
            )
        platforms.append(
            PlatformInputs(platform, conda, _pip_request(resolved, requirements, indexes, platform))
        )
    return LockInputs(
        uses_conda=spec.installer.uses_conda,
        channels=solver_channels,
        platforms=tuple(platforms),
        pip_options=tuple(o for o in indexes.options() if "file://" not in o),
        env_channels=tuple(channels),
    )


def _conda_specs(spec: Spec) -> tuple[str, ...]:
    specs = [f"python {spec.python}.*", *spec.conda]
    if spec.is_gpu and not any(s.split()[0].split("=")[0] == "cuda-version" for s in spec.conda):
        specs.append(f"cuda-version {spec.cuda}.*")  # a CUDA lock always pins the CUDA it was solved for
    if spec.pip or spec.frameworks.items():
        specs.append("pip")
    return tuple(specs)


def _pip_request(
    resolved: ResolvedSpec, requirements: tuple[str, ...], indexes: PipIndexes, platform: str
) -> PipRequest:
    spec = resolved.spec
    target = python_platform(resolved, platform)
    mirror = indexes.index_url
    if mirror and mirror.startswith("file://") and not _is_simple_index(mirror):
        # a local directory of wheels: air-gapped, every wheel (frameworks too) must be in it
        return PipRequest(requirements, spec.python, target, find_links=(mirror,), no_index=True)
    return PipRequest(
        requirements, spec.python, target, index_url=mirror,
        extra_index_urls=indexes.extra_index_urls, find_links=indexes.find_links,
    )  # fmt: skip


def _is_simple_index(url: str) -> bool:
    return (Path(unquote(urlsplit(url).path)) / "index.html").is_file()
