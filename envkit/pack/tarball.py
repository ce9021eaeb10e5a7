"""Write a pack: one byte-stable tar of what :func:`envkit.offline.collect.collect` gathered.

``write_pack`` writes ``manifest.json`` and the collected files in path order into a temporary
file beside the target and renames it into place: a failure leaves no tarball.
:func:`envkit.offline.archive.open_pack` reads it again, checked against the lock.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from pathlib import Path

from envkit.errors import PackError
from envkit.offline.collect import CollectedPack
from envkit.offline.pack_manifest import MANIFEST
from envkit.render.context import FILE_MODE, file_sha256, tar_info

__all__ = ["write_pack"]


def write_pack(collected: CollectedPack, out: Path) -> str:
    """Write the pack to ``out`` atomically; return the tarball's sha256."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh, tarfile.open(fileobj=fh, mode="w", format=tarfile.PAX_FORMAT) as tar:
            manifest = collected.manifest.to_json().encode("utf-8")
            tar.addfile(tar_info(MANIFEST, tarfile.REGTYPE, len(manifest), FILE_MODE), io.BytesIO(manifest))
            for entry in collected.manifest.files:
                source = collected.sources[entry.path]
                if file_sha256(source) != entry.sha256:  # the cache changed under us
                    raise PackError(f"{source} changed while packing", hint="run `envkit pack` again")
                with source.open("rb") as data:
                    tar.addfile(tar_info(entry.path, tarfile.REGTYPE, entry.size, FILE_MODE), data)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return file_sha256(out)
