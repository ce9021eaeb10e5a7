"""Readers of sources ``envkit init --from`` reads beyond :mod:`envkit.init.from_source`'s: each
takes the source's text, its label and the options, and returns what it says as one
:class:`~envkit.init.adopted.Collected` (every pin with the file and line or table it came from)."""

from __future__ import annotations

from envkit.adopt.sources.pixi_toml import is_pixi_manifest, read_pixi_manifest
from envkit.adopt.sources.pyproject_uv import is_pep621_project, read_pep621_project

__all__ = ["is_pep621_project", "is_pixi_manifest", "read_pep621_project", "read_pixi_manifest"]
