"""``envkit init --from``: adopt an environment a team already has, as one use case.

:func:`adopt` is the one function below the CLI that reads a source (a file, ``image:REF`` or
``host``), plans the spec against the catalog and writes ``environments/NAME.yaml``; the CLI
(:mod:`envkit.cli.init_from`) and the corpus grader (``tests/corpus/grade_init.py``) both call
it, so what the grader measures is what a user gets. The readers of each format are in
:mod:`envkit.adopt.sources`, the catalog is asked once in :mod:`envkit.adopt.releases`, and the
decision is :mod:`envkit.adopt.plan`'s; :mod:`envkit.init` is the starter command, ``envkit init``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envkit.adopt.adoption import Adoption, write_adoption
from envkit.adopt.facts import read_evidence
from envkit.adopt.options import AdoptOptions
from envkit.adopt.plan import plan_adoption
from envkit.catalog import Catalog, load_catalog
from envkit.inventory.models import Inventory

__all__ = ["AdoptOptions", "Adopted", "adopt", "plan_adoption", "read_evidence"]


@dataclass(frozen=True)
class Adopted:
    """The adoption, the spec file written, and the source's inventory when ``envkit diff`` reads
    it (what ``--lock`` compares the lock with)."""

    adoption: Adoption
    path: Path
    inventory: Inventory | None


def adopt(
    source: str, root: Path, options: AdoptOptions | None = None, *, catalog: Catalog | None = None
) -> Adopted:
    """Read ``source``, plan its spec and write it under ``root``; :class:`~envkit.adopt.evidence.AdoptError`
    (exit 2) when no spec follows from it faithfully. Nothing is written on a refusal."""
    options = options or AdoptOptions()
    catalog = catalog if catalog is not None else load_catalog()
    found, inventory = read_evidence(source, options)
    adoption = plan_adoption(found, catalog, options)
    return Adopted(adoption, write_adoption(root, adoption), inventory)
