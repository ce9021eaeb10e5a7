"""``envkit lock``: pinned, hashed, multi-platform locks in images/NAME/."""

from __future__ import annotations

import click

from envkit.cli import cli
from envkit.cli._app import command, project_root, services, working
from envkit.errors import ExitCode
from envkit.lock import current_lock, lock_environment
from envkit.result import CommandResult
from envkit.spec.load import image_dir, load_spec, resolve_spec_path


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
def lock(name: str, platforms: tuple[str, ...], update: tuple[str, ...], check: bool) -> CommandResult:
    """Solve the spec and write conda-lock.yml, conda-<platform>.lock, requirements.lock, environment.yml.

    The conda part is solved with py-rattler against the spec's channels (through mirrors.conda),
    with __cuda set from the spec, so no GPU is needed; the pip part with uv for the spec's Python
    and platform, with hashes. The previous lock is the solver's preference: relocking an unchanged
    spec gives identical files, and --update PKG moves PKG (and what it must) only.

    Exit codes: 0 locked or fresh, 1 stale or missing (--check), 2 unsatisfiable or bad spec,
    3 a channel or index could not be reached.
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
    data: dict[str, object] = {
        "name": loaded.spec.name,
        "directory": str(directory),
        "platforms": list(result.contents.platforms),
        "conda_packages": counts,
        "pip_packages": pip_counts,
        "files": list(result.files),
        "changed": list(result.changed),
        "lock_sha256": result.lock_sha256,
    }

    def text() -> str:
        per = ", ".join(f"{p}: {counts[p]} conda + {pip_counts[p]} pip" for p in result.contents.platforms)
        state = f"{len(result.changed)} changed" if result.changed else "unchanged"
        return f"locked {loaded.spec.name} -> {directory} ({per}; {state})"

    return CommandResult("lock", data, text, warnings=(*loaded.warnings, *result.warnings))
