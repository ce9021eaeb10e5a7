"""What a source says, read without the catalog: :func:`read_evidence`.

The reader of the source's format (:mod:`envkit.adopt.sources`) gives the typed evidence
(:class:`~envkit.adopt.evidence.Collected`: every pin, channel, index, image and Python with the
file and line, image tag or wheel it came from); the stacks envkit does not build (ROCm, Ascend,
XPU, nightlies, companions of another release) are refused here, before the catalog is asked
(:func:`envkit.adopt.releases.read_releases`) and the plan decides (:mod:`envkit.adopt.plan`).
"""

from __future__ import annotations

from pathlib import Path

from envkit._io import read_text_bounded
from envkit.adopt.accelerators import refuse_other_accelerators
from envkit.adopt.companions import refuse_mismatched_companions
from envkit.adopt.evidence import AdoptError, Collected
from envkit.adopt.nightly import refuse_nightly
from envkit.adopt.options import AdoptOptions
from envkit.adopt.sources import (
    is_pep621_project,
    is_pixi_manifest,
    read_pep621_project,
    read_pixi_manifest,
    read_source,
)
from envkit.adopt.sources.requirements import MAX_TEXT_BYTES
from envkit.inventory.models import Inventory

__all__ = ["Collected", "read_evidence"]


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
