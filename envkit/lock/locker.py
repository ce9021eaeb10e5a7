"""Lock one spec: solve each platform, write the lock files, tell fresh from stale.

``lock_environment`` is what ``envkit lock`` calls; ``current_lock`` is what ``render`` and
``build`` call to find out whether a fresh lock can feed the Dockerfile.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from packaging.utils import canonicalize_name

from envkit._atomic import write_text_atomic
from envkit.catalog import Catalog, load_catalog
from envkit.errors import UsageError
from envkit.lock.inputs import LockInputs, lock_inputs
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
from envkit.lock.solver import CondaPackage, CondaSolver, PipPackage, PipResolver
from envkit.lock.variant import check_variants
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


def current_lock(loaded: LoadedSpec, image_dir: Path, catalog: Catalog | None = None) -> LockState:
    """fresh (every lock file carries the hash of what the solvers see now), stale or missing."""
    inputs = lock_inputs(loaded.spec, catalog or load_catalog())
    files = expected_files(loaded.spec)
    present = [f for f in files if (image_dir / f).is_file()]
    if CONDA_LOCK not in present:
        return LockState("missing", f"no {CONDA_LOCK} in {image_dir}", files)
    for name in files:
        if name not in present:
            return LockState("stale", f"{name} is missing", files)
        text = (image_dir / name).read_text("utf-8", errors="replace")
        found = header_sha256(text)
        if found is None:
            return LockState(
                "stale", f"{name} has no lock-inputs hash (written by an older envkit: relock once)", files
            )
        if found != inputs.sha256:
            return LockState("stale", f"{name} was locked from other solver inputs (conda, pip, ...)", files)
    data = (image_dir / CONDA_LOCK).read_bytes()
    pip_lock = REQUIREMENTS_LOCK if _has_requirements(image_dir / REQUIREMENTS_LOCK) else None
    conda = tuple(explicit_name(p) for p in loaded.spec.platforms) if loaded.spec.installer.uses_conda else ()
    return LockState(
        "fresh",
        "every lock file carries the hash of the spec's solver inputs",
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
    inputs = lock_inputs(spec, catalog)
    previous = _previous(image_dir)
    # the other platforms' packages stay as locked when the lock is of these very inputs
    same_spec = previous if previous is not None and _same_inputs(image_dir, inputs.sha256) else None
    updates: set[str] = {canonicalize_name(u) for u in update}
    upgrade = tuple(sorted(updates))
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
        request = inputs.conda_request(platform, _kept(old_conda, updates))
        if request is not None:
            solution = conda_solver.solve(request)
            conda[platform] = solution.packages
            warnings += solution.warnings
        pip[platform] = pip_resolver.resolve(inputs.pip_request(platform, _kept(old_pip, updates), upgrade))
    contents = LockContents(
        platforms=tuple(p for p in spec.platforms if p in pip),
        channels=inputs.channels,
        conda={k: v for k, v in conda.items() if v},
        pip={k: v for k, v in pip.items() if v},
    )
    check_variants(spec.cuda, contents.conda, contents.pip)  # a CPU build in a CUDA spec: exit 2
    files = _render(loaded, inputs, contents)
    changed = tuple(name for name, text in files.items() if write_text_atomic(image_dir / name, text))
    lock_sha = hashlib.sha256(files[CONDA_LOCK].encode("utf-8")).hexdigest()
    return LockResult(image_dir, contents, changed, tuple(files), tuple(warnings), lock_sha)


def lock_header(loaded: LoadedSpec, inputs: LockInputs) -> str:
    """The lock files' header: the source spec and the hash of what the solvers saw (not the spec's)."""
    source = f"{loaded.path.parent.name}/{loaded.path.name}"
    return (
        f"# GENERATED by envkit from {source} (lock inputs sha256 {inputs.sha256}).\n"
        f"# Do not edit: regenerate with `envkit lock {loaded.spec.name}`.\n"
    )


def _render(loaded: LoadedSpec, inputs: LockInputs, contents: LockContents) -> dict[str, str]:
    spec = loaded.spec
    header = lock_header(loaded, inputs)
    source = f"{loaded.path.parent.name}/{loaded.path.name}"
    options = list(inputs.pip_options)
    files = {
        CONDA_LOCK: conda_lock_yml(header, contents, inputs.sha256, source),
        REQUIREMENTS_LOCK: requirements_lock(header, contents.pip, options if contents.pip else []),
    }
    if inputs.uses_conda:
        for platform in contents.platforms:
            files[explicit_name(platform)] = explicit_file(header, platform, contents.conda.get(platform, ()))
        files[ENVIRONMENT_YML] = pinned_environment_yml(
            header, spec.name, inputs.env_channels, contents, [o for o in options if o.startswith("--")]
        )
    return dict(sorted(files.items()))


def _previous(image_dir: Path) -> LockContents | None:
    path = image_dir / CONDA_LOCK
    return read_conda_lock(path) if path.is_file() else None


def _same_inputs(image_dir: Path, sha256: str) -> bool:
    return header_sha256((image_dir / CONDA_LOCK).read_text("utf-8")) == sha256


def _kept(packages: tuple[_Package, ...], updates: set[str]) -> tuple[_Package, ...]:
    """The previous lock's packages the solver should keep: all but those named by ``--update``."""
    return tuple(p for p in packages if canonicalize_name(p.name) not in updates)
