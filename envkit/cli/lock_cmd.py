"""``envkit lock``: pinned, hashed, multi-platform locks in images/NAME/."""

from __future__ import annotations

import time
from pathlib import Path

import click

from envkit._atomic import write_text_atomic
from envkit._safe import one_line
from envkit.catalog import load_catalog
from envkit.cli import cli
from envkit.cli._app import command, project_root, services, working
from envkit.cli.check_text import verdict_lines
from envkit.errors import ExitCode
from envkit.lock import CondaPackage, LockResult, PipPackage, current_lock, lock_environment
from envkit.readiness.lockcheck import GPU_CODE, LockVerdict, dump, lock_gpu_code, lock_verdicts
from envkit.readiness.targets import Target, gpu_target
from envkit.result import CommandResult
from envkit.spec.load import LoadedSpec, image_dir, load_spec, resolve_spec_path


@command(cli, "lock")
@click.argument("name", metavar="NAME|PATH")
@click.option(
    "--platform", "platforms", multiple=True, metavar="P", help="Lock only this platform (repeatable)."
)
@click.option(
    "--update", "update", multiple=True, metavar="PKG", help="Let PKG move to its newest allowed version."
)
@click.option(
    "--check", is_flag=True, help="Only say whether the lock is fresh: exit 0 fresh, 1 stale or missing."
)
@click.option(
    "--archives",
    "archive_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Where locked wheels and conda packages are at hand for the spec's `gpus:` check, besides "
    "the project's wheelhouse and ~/.conda/pkgs (repeatable). Named, their GPU code is recorded in "
    "gpu-code.json even without `gpus:` (render derives the image's NVIDIA_REQUIRE_ARCH from it).",
)
def lock(
    name: str,
    platforms: tuple[str, ...],
    update: tuple[str, ...],
    check: bool,
    archive_dirs: tuple[Path, ...],
) -> CommandResult:
    """Solve the spec and write conda-lock.yml, conda-<platform>.lock, requirements.lock, environment.yml.

    The conda part is solved with py-rattler against the spec's channels (through mirrors.conda),
    with __cuda set from the spec, so no GPU is needed; the pip part with uv for the spec's Python
    and platform, with hashes. The previous lock is the solver's preference: relocking an unchanged
    spec gives identical files, and --update PKG moves PKG (and what it must) only.

    With `gpus:` in the spec, the GPU code of every locked wheel and conda package at hand (the
    wheelhouse, ~/.conda/pkgs, --archives DIR; its sha256 one the lock pins) is read from the
    archive without installing, recorded in
    images/NAME/gpu-code.json (for `envkit check --lock`, and for `envkit render`, which writes the
    image's NVIDIA_REQUIRE_ARCH from the framework's fatbins), and a wheel with no code a GPU can
    run is a finding naming the wheel and file (exit 1). --archives DIR records it without `gpus:`.

    Exit codes: 0 locked or fresh, 1 stale or missing (--check) or a wheel that cannot run on a
    spec GPU, 2 unsatisfiable or bad spec, 3 a channel or index could not be reached.
    """
    root = project_root()
    loaded = load_spec(resolve_spec_path(name, root))
    directory = image_dir(root, loaded.spec.name)
    if check:
        state = current_lock(loaded, directory)
        found = {
            "name": loaded.spec.name,
            "status": state.status,
            "reason": state.reason,
            "directory": str(directory),
        }
        code = ExitCode.OK if state.fresh else ExitCode.FINDINGS
        return CommandResult(
            "lock", found, f"{loaded.spec.name}: lock is {state.status} ({state.reason})", code
        )
    targets = ", ".join(platforms or loaded.spec.platforms)
    with working(f"locking {loaded.spec.name} ({targets})"):
        result = lock_environment(
            loaded,
            directory,
            *services().solvers(),
            platforms=platforms,
            update=update,
        )
    counts = {p: len(result.contents.conda.get(p, ())) for p in result.contents.platforms}
    pip_counts = {p: len(result.contents.pip.get(p, ())) for p in result.contents.platforms}
    data = _data(loaded, result, counts, pip_counts)
    dirs = [*archive_dirs, root / ".envkit" / "wheelhouse", Path.home() / ".conda" / "pkgs"]
    verdicts = _gpu_check(loaded, result, dirs, data, record=bool(archive_dirs))
    code = ExitCode.FINDINGS if any(v.status != "ready" for v in verdicts) else ExitCode.OK

    def text() -> str:
        return _text(loaded, result, counts, pip_counts, verdicts)

    return CommandResult("lock", data, text, code, warnings=(*loaded.warnings, *result.warnings))


def _data(
    loaded: LoadedSpec, result: LockResult, counts: dict[str, int], pip_counts: dict[str, int]
) -> dict[str, object]:
    return {
        "name": loaded.spec.name,
        "directory": str(result.directory),
        "platforms": list(result.contents.platforms),
        "conda_packages": counts,
        "pip_packages": pip_counts,
        "files": list(result.files),
        "changed": list(result.changed),
        "lock_sha256": result.lock_sha256,
    }


def _text(
    loaded: LoadedSpec,
    result: LockResult,
    counts: dict[str, int],
    pip_counts: dict[str, int],
    verdicts: tuple[LockVerdict, ...],
) -> str:
    per = ", ".join(f"{p}: {counts[p]} conda + {pip_counts[p]} pip" for p in result.contents.platforms)
    state = f"{len(result.changed)} changed" if result.changed else "unchanged"
    lines = [f"locked {loaded.spec.name} -> {result.directory} ({per}; {state})"]
    lines += verdict_lines(verdicts)
    skipped = [f.message for f in (verdicts[0].findings if verdicts else ()) if f.severity == "note"]
    if skipped:
        lines.append(f"  - {len(skipped)} packages not read (not at hand): see {GPU_CODE}")
    return "\n".join(one_line(line) for line in lines)


def _gpu_check(
    loaded: LoadedSpec, result: LockResult, dirs: list[Path], data: dict[str, object], *, record: bool = False
) -> tuple[LockVerdict, ...]:
    """The spec's `gpus:` against the locked wheels at hand; gpu-code.json written beside the lock
    (``record``: --archives named, so written even without `gpus:`)."""
    spec = loaded.spec
    if not spec.gpus and not spec.drivers and not (record and spec.is_gpu):
        return ()
    catalog = load_catalog()
    platforms = result.contents.platforms
    platform = "linux-64" if "linux-64" in platforms else next(iter(platforms), None)
    packages: list[CondaPackage | PipPackage] = []
    if platform is not None:
        packages = [*result.contents.conda.get(platform, ()), *result.contents.pip.get(platform, ())]
    started = time.monotonic()
    with working(f"reading the GPU code of {len(packages)} locked packages"):
        code = lock_gpu_code(packages, None if spec.cuda == "cpu" else spec.cuda, spec.gpus, dirs)
    write_text_atomic(result.directory / GPU_CODE, dump(code))
    drivers: list[str | None] = list(spec.drivers) or [None]
    targets = [gpu_target(g, catalog, d) for g in spec.gpus for d in drivers]
    targets += [Target(f"driver {d}", driver=d) for d in spec.drivers if not spec.gpus]
    verdicts = lock_verdicts(code, targets, catalog)
    data["gpu_code"] = {
        "file": str(result.directory / GPU_CODE),
        "wheels_read": len(code.wheels),
        "wheels_not_read": len(code.not_scanned),
        "seconds": round(time.monotonic() - started, 2),
        "verdicts": [v.to_json() for v in verdicts],
    }
    return verdicts
