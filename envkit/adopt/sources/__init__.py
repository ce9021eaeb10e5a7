"""The readers of what a source says, one module per format, none of which sees the catalog.

Each format has one reader of one signature (:data:`~envkit.adopt.sources.reader.Reader`: a
:class:`SourceText` in; the :class:`~envkit.adopt.evidence.Collected` evidence, every pin with the
file and line or table it came from, and the ``envkit diff`` inventory of the file out):
:func:`read_requirements`, :func:`read_conda_env`, :func:`read_dockerfile` (with :mod:`~.shell`),
:func:`read_inventory`, :func:`read_pixi_toml`, :func:`read_pyproject_uv`.
:func:`~envkit.adopt.sources.read.read_source` picks the reader of a file, ``image:REF`` or
``host``; :func:`envkit.adopt.facts.read_evidence` the manifests'."""

from __future__ import annotations

from envkit.adopt.sources.conda_env import read_conda_env
from envkit.adopt.sources.dockerfile import read_dockerfile
from envkit.adopt.sources.inventory import read_inventory
from envkit.adopt.sources.pixi_toml import is_pixi_manifest, read_pixi_toml
from envkit.adopt.sources.pyproject_uv import is_pep621_project, read_pyproject_uv
from envkit.adopt.sources.read import ImageReader, read_source
from envkit.adopt.sources.reader import Read, Reader, SourceText
from envkit.adopt.sources.requirements import read_requirements

__all__ = [
    "ImageReader",
    "Read",
    "Reader",
    "SourceText",
    "is_pep621_project",
    "is_pixi_manifest",
    "read_conda_env",
    "read_dockerfile",
    "read_inventory",
    "read_pixi_toml",
    "read_pyproject_uv",
    "read_requirements",
    "read_source",
]
