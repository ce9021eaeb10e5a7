"""``envkit diff`` and ``envkit snapshot``."""

from __future__ import annotations

import os
from pathlib import Path

import click

from envkit._atomic import state_dir
from envkit.cli import cli
from envkit.cli._app import command, lock_environment_option, lock_python_option, project_root, services
from envkit.drift import DriftReport, diff_inventories
from envkit.drift.models import SEVERITIES, severity_rank
from envkit.errors import ExitCode, UsageError
from envkit.inventory import FORMATS, Inventory, read_inventory
from envkit.inventory.selector import Selected, split_selector
from envkit.inventory.snapshot import EnvironmentSource, LocalSource, take_snapshot, write_snapshot
from envkit.result import CommandResult, Lines

_STORE_HELP = "Snapshot store (default $ENVKIT_STORE or .envkit/snapshots)."


def store_dir(store: Path | None) -> Path:
    if store is not None:
        return store
    env = os.environ.get("ENVKIT_STORE")
    return Path(env) if env else state_dir(project_root(), "snapshots")


def resolve_input(name: str, store: Path) -> tuple[Path, str]:
    """A file path, or a host name with a snapshot in the store."""
    path = Path(name)
    if path.is_file():
        return path, path.stem
    stored = store / f"{name}.json"
    if stored.is_file():
        return stored, name
    raise UsageError(
        f"{name}: no such file, and no snapshot {stored}",
        hint="pass a file, or take one on that host with `envkit snapshot --store DIR`",
    )


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


def _describe(inv: Inventory) -> str:
    """``label: format (choice), N packages (path)``: says which platform/environment of a lock was read."""
    chosen = inv.meta.get("selected")
    what = f"{inv.format} ({chosen})" if chosen else inv.format
    return f"{inv.label}: {what}, {len(inv.packages)} packages ({inv.path})"


def _text(report: DriftReport, min_severity: str) -> Lines:
    lines = [_describe(i) for i in report.inventories]
    if not report.findings:
        return [*lines, "no differences"]
    floor = severity_rank(min_severity)
    shown = [f for f in report.findings if severity_rank(f.severity) >= floor]
    width = max((len(f.package) for f in shown), default=0)
    for f in shown:
        tag = f.rule or f.kind
        lines.append(f"{f.severity.upper():<8} {f.package:<{width}}  [{tag}] {f.message}")
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in reversed(SEVERITIES)}
    hidden = len(report.findings) - len(shown)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    if hidden:
        below = ", ".join(s for s in SEVERITIES if severity_rank(s) < floor)
        summary += (
            f"; {hidden} {below} finding{'s' if hidden != 1 else ''} hidden (--min-severity info shows all)"
        )
    lines.append(summary)
    return lines


@command(cli, "diff")
@click.argument("inputs", nargs=-1, metavar="FILE|HOST...")
@click.option(
    "--check",
    "check",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Check one inventory against the rules only.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(FORMATS)),
    help="Force the input format (default: detected from content).",
)
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), help=_STORE_HELP)
@click.option(
    "--platform",
    metavar="SUBDIR",
    help="Platform to read from multi-platform locks (conda-lock.yml, pixi.lock, uv.lock, pylock.toml, "
    "poetry.lock), e.g. linux-64, osx-arm64, win-64. Default: this machine's.",
)
@lock_environment_option
@lock_python_option
@click.option(
    "--min-severity",
    type=click.Choice(SEVERITIES),
    default="warning",
    show_default=True,
    help="Hide findings below this severity in the text output (JSON keeps all; `info` shows all).",
)
def diff(
    inputs: tuple[str, ...],
    check: Path | None,
    fmt: str | None,
    store: Path | None,
    platform: str | None,
    environment: str | None,
    python_minor: str | None,
    min_severity: str,
) -> CommandResult:
    """Compare environments and flag drift with known-incompatibility rules.

    Inputs are files (conda list, conda list --export/--json/--explicit, mamba list,
    conda env export, pip freeze, pip list --format=json, collect_env output,
    probe reports, conda-lock.yml, requirements.lock, snapshots) or host names with a
    snapshot in the store. Two inputs: A -> B differences. Three or more: a fleet view
    naming the majority value and the outliers. Exits 1 on a warning or worse.
    """
    if check is not None and inputs:
        raise UsageError("--check takes one file and no other inputs", hint="drop the positional inputs")
    if check is None and len(inputs) < 2:
        raise UsageError(
            "diff needs two or more inputs", hint="or check one file with `envkit diff --check FILE`"
        )
    where = store_dir(store)
    chosen = [Selected(str(check))] if check is not None else [split_selector(n) for n in inputs]
    resolved = [resolve_input(s.name, where) for s in chosen]
    labels = _unique([label + s.suffix for (_, label), s in zip(resolved, chosen, strict=True)])
    inventories: list[Inventory] = [
        read_inventory(
            p,
            fmt,
            label=lbl,
            platform=s.platform or platform,
            environment=s.environment or environment,
            python=python_minor,
        )
        for (p, _), lbl, s in zip(resolved, labels, chosen, strict=True)
    ]
    report = diff_inventories(inventories)
    worst = report.worst
    code = ExitCode.FINDINGS if worst in {"warning", "critical"} else ExitCode.OK
    warnings = [w for inv in inventories for w in inv.warnings]
    return CommandResult(
        "diff", report.to_json(), lambda: _text(report, min_severity), exit_code=code, warnings=warnings
    )


@command(cli, "snapshot")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (default STORE/<host>.json).",
)
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), help=_STORE_HELP)
@click.option("--image", help="Capture the environment inside this image (or envkit/NAME) instead.")
def snapshot(output: Path | None, store: Path | None, image: str | None) -> CommandResult:
    """Capture this environment (conda list --json in a conda env, pip's view, Python, platform, host).

    Written to the store as <host>.json so that `envkit diff host-a host-b` works. With --image, a
    stdlib script runs in a container of the image (its conda-meta records and importlib.metadata's
    view; no conda binary needed) and the snapshot is stored under the image's name.
    """
    data = take_snapshot(LocalSource() if image is None else _image_source(image))
    path = output or store_dir(store) / f"{data['host']}.json"
    changed = write_snapshot(data, path)
    conda = data["conda"]
    count = len(data["pip"]) + (len(conda) if conda else 0)
    result = {"host": data["host"], "path": str(path), "changed": changed, "records": count}
    state = "written" if changed else "unchanged"
    return CommandResult(
        "snapshot", result, f"snapshot of {data['host']} -> {path} ({state}, {count} records)"
    )


def _image_source(ref: str) -> EnvironmentSource:
    from envkit.inventory.image_source import ImageSource
    from envkit.probe.run import resolve_image

    engine = services().engine()
    return ImageSource(engine, resolve_image(engine, ref))


__all__ = ["diff", "resolve_input", "snapshot", "store_dir"]
