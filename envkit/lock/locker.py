"""Lock one spec: solve each platform, write the lock files, tell fresh from stale.

``lock_environment`` is what ``envkit lock`` calls; ``current_lock`` is what ``render`` and
``build`` call to find out whether a fresh lock can feed the Dockerfile.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name

from envkit._atomic import write_text_atomic
from envkit.catalog import Catalog
from envkit.errors import UsageError
from envkit.lock.lockfile import (
    CONDA_LOCK,
    ENVIRONMENT_YML,
    REQUIREMENTS_LOCK,
    LockContents,
    conda_lock_yml,
    explicit_file,
    explicit_name,
    header_sha256,
    pinned_environment_yml,
    read_conda_lock,
    requirements_lock,
)
from envkit.lock.solver import CondaPackage, CondaRequest, CondaSolver, PipPackage, PipRequest, PipResolver
from envkit.lock.virtual import python_platform, virtual_packages
from envkit.render import DockerfileInputs, generated_header
from envkit.render.conda_env import channels as render_channels
from envkit.render.pip import framework_requirements, index_options
from envkit.spec.load import LoadedSpec
from envkit.spec.models import Spec

__all__ = ["LockResult", "LockState", "current_lock", "expected_files", "lock_environment"]

Status = Literal["fresh", "stale", "missing"]
_Package = TypeVar("_Package", CondaPackage, PipPackage)


@dataclass(frozen=True)
class LockState:
    """Whether ``images/NAME`` holds a lock for the spec as it is now."""

    status: Status
    reason: str
    files: tuple[str, ...] = ()
    conda_locks: tuple[str, ...] = ()
    pip_lock: str | None = None
    lock_sha256: str | None = None

    @property
    def fresh(self) -> bool:
        return self.status == "fresh"

    def dockerfile_inputs(self, spec_sha256: str) -> DockerfileInputs:
        """The Dockerfile's lock inputs when fresh; the unlocked defaults otherwise."""
        if not self.fresh:
            return DockerfileInputs(spec_sha256=spec_sha256)
        return DockerfileInputs(
            spec_sha256=spec_sha256,
            conda_locks=self.conda_locks,
            pip_lock=self.pip_lock,
            lock_sha256=self.lock_sha256,
        )


@dataclass(frozen=True)
class LockResult:
    directory: Path
    contents: LockContents
    changed: tuple[str, ...]
    files: tuple[str, ...]
    warnings: tuple[str, ...]
    lock_sha256: str


def expected_files(spec: Spec) -> tuple[str, ...]:
    files = [CONDA_LOCK, REQUIREMENTS_LOCK]
    if spec.installer.uses_conda:
        files += [ENVIRONMENT_YML, *(explicit_name(p) for p in spec.platforms)]
    return tuple(sorted(files))


def current_lock(loaded: LoadedSpec, image_dir: Path) -> LockState:
    """fresh (every lock file carries the spec's hash), stale (some do not) or missing."""
    files = expected_files(loaded.spec)
    present = [f for f in files if (image_dir / f).is_file()]
    if CONDA_LOCK not in present:
        return LockState("missing", f"no {CONDA_LOCK} in {image_dir}", files)
    for name in files:
        if name not in present:
            return LockState("stale", f"{name} is missing", files)
        found = header_sha256((image_dir / name).read_text("utf-8", errors="replace"))
        if found != loaded.sha256:
            return LockState("stale", f"{name} was locked from another version of the spec", files)
    data = (image_dir / CONDA_LOCK).read_bytes()
    pip_lock = REQUIREMENTS_LOCK if _has_requirements(image_dir / REQUIREMENTS_LOCK) else None
    conda = tuple(explicit_name(p) for p in loaded.spec.platforms) if loaded.spec.installer.uses_conda else ()
    return LockState(
        "fresh",
        "every lock file carries the spec's hash",
        files,
        conda,
        pip_lock,
        hashlib.sha256(data).hexdigest(),
    )


def _has_requirements(path: Path) -> bool:
    lines = path.read_text("utf-8").splitlines()
    return any(line and not line.startswith(("#", "-", " ")) for line in lines)


def lock_environment(
    loaded: LoadedSpec,
    catalog: Catalog,
    image_dir: Path,
    conda_solver: CondaSolver,
    pip_resolver: PipResolver,
    *,
    platforms: tuple[str, ...] = (),
    update: tuple[str, ...] = (),
) -> LockResult:
    """Solve and write the lock files; the previous lock is the solvers' preference."""
    spec = loaded.spec
    unknown = sorted(set(platforms) - set(spec.platforms))
    if unknown:
        raise UsageError(
            f"{', '.join(unknown)} is not among the spec's platforms",
            hint=f"the spec has {', '.join(spec.platforms)}",
        )
    wanted = platforms or spec.platforms
    previous = _previous(image_dir)
    # the other platforms' packages stay as locked when the lock is of this very spec
    same_spec = previous if previous is not None and _same_spec(image_dir, loaded.sha256) else None
    updates: set[str] = {canonicalize_name(u) for u in update}
    channels = tuple(c for c in render_channels(spec) if c != "nodefaults")
    conda: dict[str, tuple[CondaPackage, ...]] = {}
    pip: dict[str, tuple[PipPackage, ...]] = {}
    warnings: list[str] = []
    for platform in spec.platforms:
        if platform not in wanted:
            if same_spec is not None:
                conda[platform] = same_spec.conda.get(platform, ())
                pip[platform] = same_spec.pip.get(platform, ())
            else:
                warnings.append(f"{platform} is not locked: run `envkit lock {spec.name}` for every platform")
            continue
        old_conda = previous.conda.get(platform, ()) if previous else ()
        old_pip = previous.pip.get(platform, ()) if previous else ()
        if spec.installer.uses_conda:
            solution = conda_solver.solve(
                CondaRequest(
                    specs=_conda_specs(spec),
                    channels=channels,
                    platform=platform,
                    virtual_packages=virtual_packages(spec, catalog, platform),
                    cuda=spec.cuda if spec.is_gpu else None,
                    preferred=_kept(old_conda, updates),
                )
            )
            conda[platform] = solution.packages
            warnings += solution.warnings
        pip[platform] = pip_resolver.resolve(
            _pip_request(spec, catalog, platform, _kept(old_pip, updates), updates)
        )
    contents = LockContents(
        platforms=tuple(p for p in spec.platforms if p in pip),
        channels=channels,
        conda={k: v for k, v in conda.items() if v},
        pip={k: v for k, v in pip.items() if v},
    )
    files = _render(loaded, catalog, contents)
    changed = tuple(name for name, text in files.items() if write_text_atomic(image_dir / name, text))
    lock_sha = hashlib.sha256(files[CONDA_LOCK].encode("utf-8")).hexdigest()
    return LockResult(image_dir, contents, changed, tuple(files), tuple(warnings), lock_sha)


def _render(loaded: LoadedSpec, catalog: Catalog, contents: LockContents) -> dict[str, str]:
    spec = loaded.spec
    header = generated_header(loaded, f"envkit lock {spec.name}")
    source = f"{loaded.path.parent.name}/{loaded.path.name}"
    options = [o for o in index_options(spec, catalog) if "file://" not in o]
    files = {
        CONDA_LOCK: conda_lock_yml(header, contents, loaded.sha256, source),
        REQUIREMENTS_LOCK: requirements_lock(header, contents.pip, options if contents.pip else []),
    }
    if spec.installer.uses_conda:
        for platform in contents.platforms:
            files[explicit_name(platform)] = explicit_file(header, platform, contents.conda.get(platform, ()))
        files[ENVIRONMENT_YML] = pinned_environment_yml(
            header, spec.name, render_channels(spec), contents, [o for o in options if o.startswith("--")]
        )
    return dict(sorted(files.items()))


def _conda_specs(spec: Spec) -> tuple[str, ...]:
    specs = [f"python {spec.python}.*", *spec.conda]
    if spec.pip or spec.frameworks.items():
        specs.append("pip")
    return tuple(specs)


def _pip_request(
    spec: Spec, catalog: Catalog, platform: str, preferred: tuple[PipPackage, ...], updates: set[str]
) -> PipRequest:
    requirements = (*framework_requirements(spec, catalog), *spec.pip)
    mirror = spec.mirrors.pypi
    if mirror and mirror.startswith("file://") and not _is_simple_index(mirror):
        # a local directory of wheels: air-gapped, every wheel (frameworks too) must be in it
        return PipRequest(
            requirements, spec.python, python_platform(spec, catalog, platform),
            find_links=(mirror,), no_index=True, preferred=preferred, upgrade=tuple(sorted(updates)),
        )  # fmt: skip
    extra, links, index = [], [], mirror
    for option in index_options(spec, catalog):
        flag, _, url = option.partition(" ")
        if flag == "--extra-index-url":
            extra.append(url)
        elif flag == "--find-links":
            links.append(url)
    return PipRequest(
        requirements, spec.python, python_platform(spec, catalog, platform), index_url=index,
        extra_index_urls=tuple(extra), find_links=tuple(links), preferred=preferred,
        upgrade=tuple(sorted(updates)),
    )  # fmt: skip


def _is_simple_index(url: str) -> bool:
    return (Path(unquote(urlsplit(url).path)) / "index.html").is_file()


def _previous(image_dir: Path) -> LockContents | None:
    path = image_dir / CONDA_LOCK
    return read_conda_lock(path) if path.is_file() else None


def _same_spec(image_dir: Path, sha256: str) -> bool:
    return header_sha256((image_dir / CONDA_LOCK).read_text("utf-8")) == sha256


def _kept(packages: tuple[_Package, ...], updates: set[str]) -> tuple[_Package, ...]:
    """The previous lock's packages the solver should keep: all but those named by ``--update``."""
    return tuple(p for p in packages if canonicalize_name(p.name) not in updates)
