"""``envkit validate`` and ``envkit render``."""

from __future__ import annotations

from pathlib import Path

import click

from envkit.cli import cli
from envkit.cli._app import command, project_root
from envkit.errors import Problem, SpecError, UsageError
from envkit.lock import current_lock
from envkit.render import DockerfileInputs, render_image, write_image
from envkit.result import CommandResult
from envkit.spec.load import find_specs, image_dir, load_spec, resolve_spec_path


@command(cli, "validate")
@click.argument("specs", nargs=-1, metavar="[NAME|PATH]...")
@click.option(
    "--strict", is_flag=True, help="A framework release the catalog does not know is an error, not a warning."
)
def validate(specs: tuple[str, ...], strict: bool) -> CommandResult:
    """Check specs: every problem of a file at once, with line, field and a hint.

    Without arguments, every spec in environments/ is checked. Exits 2 when any
    spec is invalid. A framework release the catalog does not know is a warning
    (an error with --strict): `envkit lock` then tells whether its wheel exists.
    """
    root = project_root()
    paths = [resolve_spec_path(s, root) for s in specs] or find_specs(root)
    if not paths:
        raise UsageError(
            "no specs found in environments/", hint="create environments/<name>.yaml or run `envkit init`"
        )
    results: list[dict[str, object]] = []
    warnings: list[str] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            loaded = load_spec(path, strict=strict)
        except SpecError as e:
            problems.extend(e.problems)
            results.append({"path": str(path), "ok": False, "problems": [p.to_json() for p in e.problems]})
            continue
        warnings.extend(loaded.warnings)
        results.append({"path": str(path), "ok": True, "name": loaded.spec.name, "sha256": loaded.sha256})
    if problems:
        raise SpecError(problems)

    def text() -> str:
        return "\n".join(f"ok  {r['name']}  sha256 {str(r['sha256'])[:12]}" for r in results)

    return CommandResult("validate", {"specs": results}, text, warnings=warnings)


@command(cli, "render")
@click.argument("name", metavar="NAME|PATH")
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write (default images/NAME).",
)
def render(name: str, output: Path | None) -> CommandResult:
    """Write the build context: Dockerfile, environment.yml, .dockerignore, README.md.

    Output is byte-stable; unchanged files are not rewritten. Writes are atomic.
    """
    root = project_root()
    loaded = load_spec(resolve_spec_path(name, root))
    directory = output or image_dir(root, loaded.spec.name)
    lock = current_lock(loaded, directory)
    warnings = list(loaded.warnings)
    if lock.status == "stale":
        warnings.append(
            f"lock is stale ({lock.reason}); rendered without it: `envkit lock {loaded.spec.name}`"
        )
    rendered = render_image(loaded, DockerfileInputs.from_lock(loaded.sha256, lock, resolved=loaded.resolved))
    changed = write_image(rendered, directory)
    base = loaded.resolved.runtime
    data = {
        "name": loaded.spec.name,
        "directory": str(directory),
        "files": sorted(rendered.files),
        "changed": changed,
        "lock": lock.status,
        "runtime_base": {"image": base.ref, "reason": base.reason, "cuda_from_pypi": base.pypi_cuda},
    }

    def text() -> str:
        state = f"{len(changed)} changed" if changed else "up to date"
        return (
            f"rendered {loaded.spec.name} -> {directory} ({state}: {', '.join(changed) or 'no changes'})\n"
            f"  runtime base: {base.ref} ({base.reason})"
        )

    return CommandResult("render", data, text, warnings=warnings)
