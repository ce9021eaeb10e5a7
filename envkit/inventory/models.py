"""One model for every environment listing envkit reads: conda, pip, locks, probe reports."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from envkit._memo import by_identity

__all__ = ["VCS_VERSION_PREFIX", "Inventory", "Package"]

Installer = Literal["conda", "pip"]
# The version readers give a VCS checkout (``name @ git+...@<sha>``): 0+git.<sha12>, not a release.
VCS_VERSION_PREFIX = "0+git."


@dataclass(frozen=True, order=True)
class Package:
    """One installed (or locked) package.

    ``name`` is normalized (PEP 503 for pip; lower-case for conda). ``project``
    is the cross-ecosystem identity used for comparison: the PyPI name of the
    project when a conda package and a PyPI distribution are the same project
    (conda ``pytorch`` -> ``torch``), else ``conda:<name>`` for conda-only
    packages, so unrelated same-name packages never merge.
    """

    project: str
    name: str
    version: str
    installer: Installer
    build: str | None = None
    channel: str | None = None
    url: str | None = None
    line: int | None = None  # where it came from in the source file
    env: str | None = None  # which environment of a multi-environment file (collect_env's [pip3]/[conda])


@dataclass(frozen=True)
class Inventory:
    """The packages of one environment, read from one file or host, in one model."""

    label: str  # host name, file stem, or what the user named it
    path: str
    format: str  # e.g. conda-list, conda-export, conda-json, conda-explicit, env-export, pip-freeze, ...
    packages: tuple[Package, ...]
    meta: Mapping[str, str] = field(default_factory=dict)  # python, platform, cuda, driver, ...
    warnings: tuple[str, ...] = ()  # rows that could not be read ("file:line: why"), choices made

    @functools.cached_property
    def _primary(self) -> dict[str, Package]:
        # Inventories read from one text share their packages (envkit.inventory.read): one table.
        return _primary_of(self.packages, self.meta.get("active_env"))

    def primary(self) -> dict[str, Package]:
        """:meth:`primary_table`, computed once per inventory (callers must not change it)."""
        return self._primary

    def primary_table(self) -> dict[str, Package]:
        """One package per project, by precedence, never by sort order.

        The active environment's row first (``meta["active_env"]``: collect_env's environment
        that ran torch), then pip over conda (pip's files shadow conda's), then the row that
        is the project itself (``numpy`` over ``numpy-base``), then the earlier line.
        """
        return _primary_table(self.packages, self.meta.get("active_env"))

    def by_project(self) -> dict[str, list[Package]]:
        found: dict[str, list[Package]] = {}
        for package in self.packages:
            found.setdefault(package.project, []).append(package)
        return found


def _primary_table(packages: tuple[Package, ...], active: str | None) -> dict[str, Package]:
    chosen: dict[str, Package] = {}
    for package in packages:
        held = chosen.get(package.project)
        if held is None or _rank(package, active) > _rank(held, active):
            chosen[package.project] = package
    return chosen


@by_identity
def _shared_tables(packages: tuple[Package, ...]) -> dict[str | None, dict[str, Package]]:
    """The tables made of one package tuple, by active environment (filled by :func:`_primary_of`)."""
    return {}


def _primary_of(packages: tuple[Package, ...], active: str | None) -> dict[str, Package]:
    """:func:`_primary_table`, once per package tuple (and active environment)."""
    tables = _shared_tables(packages)
    if active not in tables:
        tables[active] = _primary_table(packages, active)
    return tables[active]


def _rank(package: Package, active: str | None) -> tuple[bool, bool, bool, int]:
    line = package.line if package.line is not None else 0
    return (package.env == active, package.installer == "pip", package.name == package.project, -line)
