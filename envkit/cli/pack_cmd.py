"""``envkit pack``: one tarball for an air-gapped conda build (composition root for the downloads)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from envkit.catalog import load_catalog
from envkit.cli import cli
from envkit.cli._app import command, err_console, project_root, services
from envkit.cli.build_cmd import find_links_from_env
from envkit.offline.collect import PackProgress
from envkit.pack.packer import PackOptions, PackResult, pack_environment
from envkit.result import CommandResult
from envkit.spec.load import load_spec, resolve_spec_path

__all__ = ["pack", "pack_progress"]


@contextmanager
def pack_progress(enabled: bool) -> Iterator[Callable[[PackProgress], None] | None]:
    """A progress bar over the pack's files (on a terminal, or with $ENVKIT_PROGRESS)."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("[bold]pack[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}"))  # fmt: skip
    with Progress(*columns, console=err_console, transient=False) as bar:
        task = bar.add_task("", total=None)

        def show(event: PackProgress) -> None:
            how = "downloaded" if event.downloaded else "cached"
            bar.update(task, total=event.total, completed=event.done, description=f"{how} {event.item[-60:]}")

        yield show


@command(cli, "pack")
@click.argument("name", metavar="NAME|PATH")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Tarball to write [default: NAME-<lock12>.envkit-pack.tar in the project].")  # fmt: skip
@click.option("--frozen", is_flag=True, help="Refuse to pack unless a fresh lock exists (never lock).")
@click.option(
    "--find-links", "find_links", multiple=True, metavar="DIR",
    help="Local wheel directory for the wheels (repeatable; also $ENVKIT_FIND_LINKS, ':'-separated).",
)  # fmt: skip
def pack(name: str, output: Path | None, frozen: bool, find_links: tuple[str, ...]) -> CommandResult:
    """Pack everything an air-gapped build of conda environment NAME needs into one tarball.

    On a connected machine: from the fresh lock (locked first when missing or stale), download every
    conda package of the lock for the spec's platforms (from the lock's URLs: the channels, or
    mirrors.conda), every wheel of requirements.lock and the installer wheel the offline build runs
    (py-rattler, pinned in the catalog), each checked against its sha256 while downloading. Writes one
    tar with a manifest (name, platforms, lock digest, every file's sha256, envkit version). Downloads
    are cached in .envkit/cache: packing an unchanged lock again downloads nothing and writes identical
    bytes. Carry the file, then build inside with `envkit build NAME --pack FILE`.

    Exit codes: 0 packed, 2 bad spec or no lock (--frozen), 3 a download failed or a file does not match
    the lock's sha256 (no tarball is left).
    """
    root = project_root()
    catalog = load_catalog()
    loaded = load_spec(resolve_spec_path(name, root), catalog)
    options = PackOptions(output=output.resolve() if output else None, frozen=frozen,
                          find_links=tuple(find_links) + find_links_from_env())  # fmt: skip
    show = err_console.is_terminal or bool(os.environ.get("ENVKIT_PROGRESS"))
    with pack_progress(show) as on_progress:
        result = pack_environment(
            root, loaded, locker=services().locker(), fetcher=services().fetcher(),
            options=options, on_progress=on_progress,
        )  # fmt: skip
    return CommandResult("pack", result.to_json(), lambda: _text(result), warnings=list(loaded.warnings))


def _text(result: PackResult) -> str:
    return "\n".join(
        [
            f"{result.name}: packed {result.path} ({result.size / 1e6:.1f} MB, {result.seconds:.1f} s)",
            f"  sha256 {result.sha256}",
            f"  {result.conda_packages} conda packages, {result.wheels} wheels, the installer; "
            f"{result.downloaded} downloaded, {result.reused} from the cache; lock {result.lock_sha256[:12]} "
            f"({result.lock})",
            f"  build it without network: envkit build {result.name} --pack {Path(result.path).name}",
        ]
    )
