"""Lock one spec: solve each platform, write the lock files, tell fresh from stale.

``lock_environment`` is what ``envkit lock`` calls; ``current_lock`` is what ``render`` and
``build`` call to find out whether a fresh lock can feed the Dockerfile.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from envkit._atomic import write_bytes_atomic
from envkit._io import TooLarge, open_regular, read_limited
from envkit._pep503 import canonicalize_name
from envkit.errors import LockError, UsageError
from envkit.lock.inputs import LockInputs, lock_inputs
from envkit.lock.lockfile import (
    CONDA_LOCK,
    ENVIRONMENT_YML,
    REQUIREMENTS_LOCK,
    LockContents,
    conda_lock_yml,
    explicit_file,
    explicit_name,
    pinned_environment_yml,
    read_conda_lock,
    requirements_lock,
)
from envkit.lock.lockset import GPU_CODE, MANIFEST, LockState, manifest_bytes, set_digest, verify_lock
from envkit.lock.solver import CondaPackage, CondaSolution, CondaSolver, PipPackage, PipResolver
from envkit.lock.variant import check_variants
from envkit.spec.load import LoadedSpec
from envkit.spec.models import Spec

__all__ = ["LockResult", "LockState", "current_lock", "expected_files", "lock_environment", "lock_header"]

_Package = TypeVar("_Package", CondaPackage, PipPackage)


@dataclass(frozen=True)
class LockResult:
    """What ``envkit lock`` wrote: the contents, the changed files, the digest, the verified state."""

    directory: Path
    contents: LockContents
    changed: tuple[str, ...]
    files: tuple[str, ...]
    warnings: tuple[str, ...]
    lock_sha256: str  # the digest over the set (the image label when the set is complete)
    state: LockState  # the written set, verified as `envkit lock --check` would (no re-read)


def expected_files(spec: Spec) -> tuple[str, ...]:
    files = [CONDA_LOCK, REQUIREMENTS_LOCK]
    if spec.installer.uses_conda:
        files += [ENVIRONMENT_YML, *(explicit_name(p) for p in spec.platforms)]
    return tuple(sorted(files))


def current_lock(loaded: LoadedSpec, image_dir: Path) -> LockState:
    """Read the lock set once and verify it (:mod:`envkit.lock.lockset`): fresh, stale or missing."""
    inputs = lock_inputs(loaded.resolved)
    expected = expected_files(loaded.spec)
    files = {name: data for name in expected if (data := _read(image_dir / name)) is not None}
    state = _verify(loaded, inputs, image_dir, files, _read(image_dir / MANIFEST))
    if state.lock is not None and (gpu_code := _read(image_dir / GPU_CODE)) is not None:
        state = replace(state, lock=replace(state.lock, gpu_code=gpu_code))
    return state


MAX_LOCK_FILE_BYTES = 64 << 20  # a CUDA environment's conda-lock.yml is ~1 MB


def _read(path: Path) -> bytes | None:
    """A lock set file, at most :data:`MAX_LOCK_FILE_BYTES` of a regular file (None: absent, not a file)."""
    try:
        with open_regular(path, follow=True) as fh:  # a FIFO never blocks; a sparse file is not read whole
            return read_limited(fh, MAX_LOCK_FILE_BYTES, path)
    except TooLarge as e:
        raise LockError(
            f"{path}: larger than {e.limit} bytes: not a lock file envkit wrote",
            hint="restore it from version control, or delete images/NAME/ and run `envkit lock NAME`",
        ) from e
    except OSError:
        return None


def _verify(
    loaded: LoadedSpec,
    inputs: LockInputs,
    directory: Path,
    files: Mapping[str, bytes],
    manifest: bytes | None,
) -> LockState:
    def derived(contents: LockContents) -> dict[str, bytes]:
        return {k: v.encode("utf-8") for k, v in _derived(loaded, inputs, contents).items()}

    return verify_lock(
        directory,
        expected_files(loaded.spec),
        inputs.sha256,
        loaded.spec.platforms,
        files,
        manifest,
        derived,
        inputs.pip_options,
    )


def lock_environment(
    loaded: LoadedSpec,
    image_dir: Path,
    conda_solver: CondaSolver,
    pip_resolver: PipResolver,
    *,
    platforms: tuple[str, ...] = (),
    update: tuple[str, ...] = (),
) -> LockResult:
    """Solve and write the lock set (``lockset.json`` last); the previous lock is the solvers' preference."""
    spec = loaded.spec
    unknown = sorted(set(platforms) - set(spec.platforms))
    if unknown:
        raise UsageError(
            f"{', '.join(unknown)} is not among the spec's platforms",
            hint=f"the spec has {', '.join(spec.platforms)}",
        )
    wanted = platforms or spec.platforms
    inputs = lock_inputs(loaded.resolved)
    warnings: list[str] = []
    previous = _previous(image_dir, warnings)
    # the other platforms' packages stay as locked when the lock is of these very inputs
    same = previous is not None and all(
        previous.content_hash.get(p) == inputs.sha256 for p in previous.platforms
    )
    updates: set[str] = {canonicalize_name(u) for u in update}
    solved = _solve(
        inputs, [p for p in spec.platforms if p in wanted], previous, updates, conda_solver, pip_resolver
    )
    contents = _merge(spec, inputs, solved, previous if same else None, warnings)
    check_variants(spec.cuda, contents.conda, contents.pip)  # a CPU build in a CUDA spec: exit 2
    texts = {
        CONDA_LOCK: conda_lock_yml(lock_header(loaded, inputs), contents, inputs.sha256, _source(loaded)),
        **_derived(loaded, inputs, contents),
    }
    files = {name: texts[name].encode("utf-8") for name in sorted(texts)}
    changed = [name for name, data in files.items() if write_bytes_atomic(image_dir / name, data)]
    manifest = manifest_bytes(files, inputs.sha256)  # last: a set without it is never fresh
    if write_bytes_atomic(image_dir / MANIFEST, manifest):
        changed.append(MANIFEST)
    state = _verify(loaded, inputs, image_dir, files, manifest)
    return LockResult(
        image_dir, contents, tuple(changed), (*files, MANIFEST), tuple(warnings), set_digest(files), state
    )


def _merge(
    spec: Spec,
    inputs: LockInputs,
    solved: Mapping[str, tuple[CondaSolution | None, tuple[PipPackage, ...]]],
    kept: LockContents | None,
    warnings: list[str],
) -> LockContents:
    """The platforms just solved, the others as ``kept`` locked them (the lock of these very inputs)."""
    conda: dict[str, tuple[CondaPackage, ...]] = {}
    pip: dict[str, tuple[PipPackage, ...]] = {}
    for platform in spec.platforms:
        if platform in solved:
            solution, pip[platform] = solved[platform]
            if solution is not None:
                conda[platform] = solution.packages
                warnings += solution.warnings
        elif kept is not None and platform in kept.platforms:
            conda[platform] = kept.conda.get(platform, ())
            pip[platform] = kept.pip.get(platform, ())
        else:
            warnings.append(f"{platform} is not locked: run `envkit lock {spec.name}` for every platform")
    return LockContents(
        platforms=tuple(p for p in spec.platforms if p in pip),
        channels=inputs.channels,
        conda={k: v for k, v in conda.items() if v},
        pip={k: v for k, v in pip.items() if v},
    )


def _solve(
    inputs: LockInputs,
    platforms: list[str],
    previous: LockContents | None,
    updates: set[str],
    conda_solver: CondaSolver,
    pip_resolver: PipResolver,
) -> dict[str, tuple[CondaSolution | None, tuple[PipPackage, ...]]]:
    """Each platform's conda solution and pip pins; the pip part resolves beside the conda part.

    It needs nothing of the conda part, and uv is a child process: it resolves in a worker thread
    while py-rattler solves here. Results are taken in the order of a sequential lock (conda, then
    pip, platform by platform), so the first error raised is the one a sequential lock would meet.
    """
    upgrade = tuple(sorted(updates))
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envkit-pip")
    try:
        resolving = {
            platform: pool.submit(
                pip_resolver.resolve,
                inputs.pip_request(
                    platform, _kept(previous.pip.get(platform, ()) if previous else (), updates), upgrade
                ),
            )
            for platform in platforms
        }
        solved: dict[str, tuple[CondaSolution | None, tuple[PipPackage, ...]]] = {}
        for platform in platforms:
            old_conda = previous.conda.get(platform, ()) if previous else ()
            request = inputs.conda_request(platform, _kept(old_conda, updates))
            solution = conda_solver.solve(request) if request is not None else None
            solved[platform] = (solution, resolving[platform].result())
        return solved
    finally:  # after a failure: the running resolve ends, the queued ones never start
        pool.shutdown(wait=True, cancel_futures=True)


def _source(loaded: LoadedSpec) -> str:
    return f"{loaded.path.parent.name}/{loaded.path.name}"


def lock_header(loaded: LoadedSpec, inputs: LockInputs) -> str:
    """The lock files' header: the source spec and the hash of what the solvers saw (not the spec's)."""
    return (
        f"# GENERATED by envkit from {_source(loaded)} (lock inputs sha256 {inputs.sha256}).\n"
        f"# Do not edit: regenerate with `envkit lock {loaded.spec.name}`.\n"
    )


def _derived(loaded: LoadedSpec, inputs: LockInputs, contents: LockContents) -> dict[str, str]:
    """The files rendered from the locked contents: explicit files, requirements.lock, environment.yml."""
    header = lock_header(loaded, inputs)
    options = list(inputs.pip_options)
    files = {REQUIREMENTS_LOCK: requirements_lock(header, contents.pip, options if contents.pip else [])}
    if inputs.uses_conda:
        for platform in contents.platforms:
            files[explicit_name(platform)] = explicit_file(header, platform, contents.conda.get(platform, ()))
        files[ENVIRONMENT_YML] = pinned_environment_yml(
            header,
            loaded.spec.name,
            inputs.env_channels,
            contents,
            [o for o in options if o.startswith("--")],
        )
    return dict(sorted(files.items()))


def _previous(image_dir: Path, warnings: list[str]) -> LockContents | None:
    """The previous conda-lock.yml's contents (the solvers' preference); an unreadable one is ignored."""
    path = image_dir / CONDA_LOCK
    if not path.is_file():
        return None
    try:
        return read_conda_lock(path)
    except LockError as e:
        warnings.append(f"the previous {CONDA_LOCK} is unreadable, solved without it: {e.message}")
        return None


def _kept(packages: tuple[_Package, ...], updates: set[str]) -> tuple[_Package, ...]:
    """The previous lock's packages the solver should keep: all but those named by ``--update``."""
    return tuple(p for p in packages if canonicalize_name(p.name) not in updates)
