"""The readers of what a source says, one module per format, none of which sees the catalog.

:func:`~envkit.adopt.sources.read.read_source` picks the reader of a file, ``image:REF`` or
``host`` (:mod:`~.requirements`, :mod:`~.conda_env`, :mod:`~.dockerfile` with :mod:`~.shell`,
:mod:`~.inventory`); :mod:`~.pixi_toml` and :mod:`~.pyproject_uv` read the manifests
(:func:`envkit.adopt.facts.read_evidence` chooses). Each returns, or fills, one
:class:`~envkit.adopt.evidence.Collected` (every pin with the file and line or table it came from)."""

from __future__ import annotations

from envkit.adopt.sources.pixi_toml import is_pixi_manifest, read_pixi_manifest
from envkit.adopt.sources.pyproject_uv import is_pep621_project, read_pep621_project
from envkit.adopt.sources.read import ImageReader, read_source

__all__ = [
    "ImageReader",
    "is_pep621_project",
    "is_pixi_manifest",
    "read_pep621_project",
    "read_pixi_manifest",
    "read_source",
]
