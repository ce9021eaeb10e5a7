"""``envkit init --from SOURCE``: adopt an environment a team already has (see :mod:`envkit.adopt.plan`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.adopt import AdoptOptions, adopt
from envkit.adopt.adoption import Adoption
from envkit.catalog import load_catalog
from envkit.cli._app import project_root, services, working
from envkit.errors import EnvkitError
from envkit.inventory.snapshot import EnvironmentSource
from envkit.result import CommandResult

if TYPE_CHECKING:
    from envkit.adopt.compare_lock import LockComparison

__all__ = ["adopt_command"]


def _image(ref: str) -> EnvironmentSource:
    from envkit.inventory.image_source import ImageSource

    return ImageSource(services().engine(), ref)


def adopt_command(
    source: str,
    *,
    name: str | None,
    cuda: str | None,
    python: str | None,
    lock: bool,
    keep_defaults: bool,
    environment: str | None = None,
) -> CommandResult:
    root = project_root()
    catalog = load_catalog()
    options = AdoptOptions(name, cuda, python, keep_defaults, image_reader=_image, environment=environment)
    with working(f"reading {source}"):
        adopted = adopt(source, root, options, catalog=catalog)
    adoption, path, inventory = adopted.adoption, adopted.path, adopted.inventory
    data: dict[str, object] = adoption.to_json()
    comparison: LockComparison | None = None
    if lock:
        from envkit.adopt.compare_lock import lock_and_compare  # the solvers load only when asked for

        try:
            with working(f"locking {adoption.name}"):
                comparison = lock_and_compare(root, path, adoption, inventory, catalog, services().solvers())
        except EnvkitError as e:
            raise type(e)(
                f"wrote {adoption.relative_path}, but locking it failed: {e.message}",
                hint=e.hint or f"fix the spec, then `envkit lock {adoption.name}`",
            ) from e
        data["lock"] = comparison.to_json()
    return CommandResult("init", data, lambda: _text(adoption, comparison), warnings=adoption.warnings)


def _text(adoption: Adoption, comparison: LockComparison | None) -> str:
    d = adoption.detected
    frameworks = ", ".join(f"{fw} {d[fw]}" for fw in ("torch", "paddle") if fw in d) or "no framework"
    flavour = "cpu" if d["cuda"] == "cpu" else f"CUDA {d['cuda']}"
    lines = [
        f"adopted {adoption.source} ({adoption.kind}) -> {adoption.relative_path}",
        f"  {frameworks}, {flavour}, Python {d['python']}"
        + (f", base image {d['base_image']}" if "base_image" in d else ""),
        f"  {len(adoption.pins['conda'])} conda and {len(adoption.pins['pip'])} pip pins carried",
    ]
    lines += [f"  {key}: {value}" for key, value in sorted(adoption.how.items())]
    lines += [f"  note: {note}" for note in adoption.notes]
    if adoption.lost:
        lines.append(f"not carried ({len(adoption.lost)}):")
        lines += [f"  {item}" for item in adoption.lost]
    else:
        lines.append("not carried: nothing")
    if comparison is None:
        lines.append(f"next: envkit validate {adoption.name}; envkit lock {adoption.name}")
        return "\n".join(lines)
    lines.append(f"locked: {comparison.lock}")
    lines.append(f"compare: {comparison.command}")
    if not comparison.compared:
        lines.append(
            "  the source is no listing of installed versions (ranges), so there is nothing to compare"
        )
    elif comparison.versions:
        lines.append(f"  {len(comparison.versions)} version difference(s):")
        lines += [f"    {v}" for v in comparison.versions]
    else:
        lines.append("  no version differences")
    if comparison.only_source:
        lines.append(f"  not in the lock: {', '.join(comparison.only_source)}")
    if comparison.compared:
        lines.append(f"  {comparison.only_lock} package(s) only in the lock (dependencies the solver added)")
    return "\n".join(lines)
