"""``envkit init --from``: adopt an environment a team already has, as one use case.

:func:`adopt` is the one function below the CLI that reads a source (a file, ``image:REF`` or
``host``), plans the spec against the catalog and writes ``environments/NAME.yaml``; the CLI
(:mod:`envkit.cli.init_from`) and the corpus grader (``tests/corpus/grade_init.py``) both call
it, so what the grader measures is what a user gets. The readers and the planner live in
:mod:`envkit.init` for now (``init/`` also holds the starter command, ``envkit init``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envkit._io import read_text_bounded
from envkit.adopt.accelerators import refuse_other_accelerators
from envkit.adopt.companions import refuse_mismatched_companions
from envkit.adopt.nightly import refuse_nightly
from envkit.adopt.releases import read_releases
from envkit.adopt.sources import (
    is_pep621_project,
    is_pixi_manifest,
    read_pep621_project,
    read_pixi_manifest,
)
from envkit.catalog import Catalog, load_catalog
from envkit.init.adopt import Adoption, plan_adoption, spec_check, write_adoption
from envkit.init.adopted import AdoptError, Collected
from envkit.init.from_requirements import MAX_TEXT_BYTES
from envkit.init.from_source import ImageReader, read_source
from envkit.inventory.models import Inventory

__all__ = ["AdoptOptions", "Adopted", "adopt", "plan", "read_evidence"]


@dataclass(frozen=True)
class AdoptOptions:
    """What the user chose: ``--name``, ``--cuda``, ``--python``, ``--keep-defaults``; and how an
    ``image:REF`` source is read (the CLI passes the Docker engine's reader)."""

    name: str | None = None
    cuda: str | None = None
    python: str | None = None
    keep_defaults: bool = False
    image_reader: ImageReader | None = None
    environment: str | None = None  # which environment of a multi-environment source (pixi)


@dataclass(frozen=True)
class Adopted:
    """The adoption, the spec file written, and the source's inventory when ``envkit diff`` reads
    it (what ``--lock`` compares the lock with)."""

    adoption: Adoption
    path: Path
    inventory: Inventory | None


def read_evidence(source: str, options: AdoptOptions | None = None) -> tuple[Collected, Inventory | None]:
    """What the source says (a pixi manifest read here, every other kind by :func:`read_source`),
    and its inventory when ``envkit diff`` reads it; a ROCm/Ascend/XPU stack refused (exit 2)."""
    options = options or AdoptOptions()
    found, inventory = _read(source, options)
    refuse_other_accelerators(found)  # a ROCm/Ascend/XPU stack is never written as a CPU spec
    refuse_nightly(found)  # nor a nightly build as the newest release
    refuse_mismatched_companions(found)  # nor torch==2.1.2 beside torchaudio==2.2.0 as either
    return found, inventory


def _read(source: str, options: AdoptOptions) -> tuple[Collected, Inventory | None]:
    path = Path(source)
    if path.name in ("pixi.toml", "pyproject.toml") and path.is_file():
        text = read_text_bounded(path, MAX_TEXT_BYTES)
        if is_pixi_manifest(path.name, text):
            return read_pixi_manifest(text, source, environment=options.environment), None
        if is_pep621_project(path.name, text) and not options.environment:
            return read_pep621_project(text, source), None
    if options.environment:
        raise AdoptError(
            f"--environment {options.environment}: {source} has no environments (a pixi manifest has)",
            hint="drop --environment",
        )
    return read_source(source, image_reader=options.image_reader)


def adopt(
    source: str, root: Path, options: AdoptOptions | None = None, *, catalog: Catalog | None = None
) -> Adopted:
    """Read ``source``, plan its spec and write it under ``root``; :class:`~envkit.init.adopted.AdoptError`
    (exit 2) when no spec follows from it faithfully. Nothing is written on a refusal."""
    options = options or AdoptOptions()
    catalog = catalog if catalog is not None else load_catalog()
    found, inventory = read_evidence(source, options)
    adoption = plan(found, catalog, options)
    return Adopted(adoption, write_adoption(root, adoption), inventory)


def plan(found: Collected, catalog: Catalog, options: AdoptOptions | None = None) -> Adoption:
    """The adoption of what a source said: the catalog asked once (:func:`read_releases`), the plan
    made with those answers, the spec validated as ``envkit validate`` does, on the tables that one
    call read."""
    options = options or AdoptOptions()
    releases = read_releases(catalog, found.base_image)  # the walk's one entry into the catalog
    return plan_adoption(
        found,
        releases,
        spec_check(releases.tables or catalog),
        name=options.name,
        cuda=options.cuda,
        python=options.python,
        keep_defaults=options.keep_defaults,
    )
