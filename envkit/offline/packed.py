"""Offline conda builds: the lock's packages go into the build context as a local channel.

The files come from a pack (``--pack FILE``, verified against the lock by
:func:`envkit.offline.archive.open_pack`) or are collected on the host right away
(``--offline``: :func:`envkit.offline.collect.collect`, cached). The context gets
``channel/<subdir>/<archive>``, ``wheels/`` for requirements.lock, ``installer/`` with the
py-rattler wheel, the install script (:mod:`envkit.offline.payload.conda_install`) and
``installer/packages.json`` (each locked URL -> its file, sha256 and md5), so the builder stage
installs the explicit lock with no network and checks every archive again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from envkit import _proc
from envkit.offline.archive import open_pack
from envkit.offline.collect import INSTALLER, CollectedPack, PackProgress, PackRequest, collect
from envkit.offline.fetch import Fetcher
from envkit.render.context import ContextEntry

__all__ = ["INSTALL_SCRIPT", "PACKAGES_JSON", "PackedContext", "packed_context"]

INSTALL_SCRIPT = f"{INSTALLER}/conda_install.py"
PACKAGES_JSON = f"{INSTALLER}/packages.json"


@dataclass(frozen=True)
class PackedContext:
    """The build-context entries of an offline conda build, and where they came from."""

    entries: tuple[ContextEntry, ...]
    has_wheels: bool
    files: int
    source: str  # the pack file, or "collected" when gathered on the host for this build
    downloaded: int


def packed_context(
    request: PackRequest,
    cache_root: Path,
    fetcher: Fetcher,
    *,
    pack: Path | None = None,
    pip_runner: _proc.Runner = _proc.run,
    on_progress: Callable[[PackProgress], None] | None = None,
) -> PackedContext:
    """The context entries of an offline conda build, from ``pack`` or collected now."""
    if pack is not None:
        collected = open_pack(pack, request, cache_root)
    else:
        collected = collect(request, cache_root, fetcher, pip_runner=pip_runner, on_progress=on_progress)
    return PackedContext(
        tuple(_entries(collected)),
        any(f.kind == "wheel" for f in collected.manifest.files),
        len(collected.manifest.files),
        str(pack) if pack is not None else "collected",
        collected.downloaded,
    )


def _entries(collected: CollectedPack) -> list[ContextEntry]:
    entries = [
        ContextEntry(f.path, f.sha256, f.size, source=collected.sources[f.path])
        for f in collected.manifest.files
    ]
    known = {
        f.url: {"path": f.path, "sha256": f.sha256, "md5": f.md5}
        for f in collected.manifest.files
        if f.kind == "conda"
    }
    script = resources.files("envkit.offline").joinpath("payload").joinpath("conda_install.py").read_bytes()
    packages = (json.dumps(known, indent=1, sort_keys=True) + "\n").encode("utf-8")
    for path, data in ((INSTALL_SCRIPT, script), (PACKAGES_JSON, packages)):
        entries.append(ContextEntry(path, hashlib.sha256(data).hexdigest(), len(data), data=data))
    return entries
