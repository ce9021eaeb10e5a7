"""``envkit init --from SOURCE --lock``: lock the adopted spec at once and compare the lock with the source.

The comparison is ``envkit diff SOURCE images/NAME/conda-lock.yml``: what still differs between
the machine that worked and the environment envkit will build (versions, packages only one
side has). Version differences are the ones that matter; packages the lock adds are the
dependencies the solver chose around the pins.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envkit.adopt.adoption import Adoption
from envkit.catalog import Catalog
from envkit.drift import diff_inventories
from envkit.inventory import Inventory, read_inventory
from envkit.lock import lock_environment
from envkit.lock.solver import CondaSolver, PipResolver
from envkit.spec.load import image_dir, load_spec

__all__ = ["LockComparison", "lock_and_compare"]


@dataclass(frozen=True)
class LockComparison:
    """The new lock against the source: the ``envkit diff`` that shows it, and what differs."""

    command: str  # the `envkit diff` command line that shows the same
    lock: str  # images/NAME/conda-lock.yml, relative to the root
    compared: bool  # False when the source is no listing `envkit diff` reads (a hand-written range)
    versions: tuple[str, ...]  # one line per version difference
    only_source: tuple[str, ...]  # projects the lock lacks
    only_lock: int  # projects only the lock has (dependencies the solver added)

    def to_json(self) -> dict[str, object]:
        return {
            "command": self.command,
            "lock": self.lock,
            "compared": self.compared,
            "version_differences": list(self.versions),
            "missing_from_lock": list(self.only_source),
            "added_by_lock": self.only_lock,
        }


def lock_and_compare(
    root: Path,
    spec_path: Path,
    adoption: Adoption,
    source: Inventory | None,
    catalog: Catalog,
    solvers: tuple[CondaSolver, PipResolver],
) -> LockComparison:
    loaded = load_spec(spec_path, catalog)
    directory = image_dir(root, loaded.spec.name)
    lock_environment(loaded, directory, *solvers)
    lock_path = directory / "conda-lock.yml"
    relative = str(lock_path.relative_to(root)) if lock_path.is_relative_to(root) else str(lock_path)
    command = f"envkit diff {adoption.source} {relative}"
    if source is None:
        return LockComparison(command, relative, False, (), (), 0)
    locked = read_inventory(lock_path, platform=loaded.spec.platforms[0], label="lock")
    report = diff_inventories([source, locked])
    versions = tuple(f"{f.package}: {f.message}" for f in report.findings if f.kind == "version")
    removed = tuple(
        f.package for f in report.findings if f.kind in ("removed", "added") and f.values.get("lock") is None
    )
    added = sum(
        1 for f in report.findings if f.kind in ("removed", "added") and f.values.get(source.label) is None
    )
    return LockComparison(command, relative, True, versions, removed, added)
