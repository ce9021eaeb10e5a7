"""A deterministic build context: the same inputs give the same tar bytes and the same digest.

Entries are sorted, every mtime is 0, uid/gid are 0 with empty owner names,
files are 0644 and directories 0755. The digest is computed from the entry
list (path, mode, sha256 of the content), so a no-op rebuild can decide that
nothing changed without reading a large wheelhouse into a tar first.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "ContextEntry",
    "ContextFiles",
    "context_digest",
    "context_tar",
    "entry_from_file",
    "file_sha256",
    "spooled_context_tar",
    "tar_info",
    "write_context_tar",
]

FILE_MODE = 0o644
DIR_MODE = 0o755
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ContextEntry:
    """One file of the context: in-memory ``data`` or a host ``source`` path with a known sha256."""

    path: str  # POSIX path inside the context
    sha256: str
    size: int
    data: bytes | None = None
    source: Path | None = None


@dataclass(frozen=True)
class ContextFiles:
    """A build context's entries, sorted, and their digest (computed once)."""

    entries: tuple[ContextEntry, ...]
    digest: str = field(init=False, compare=False)  # context_digest(entries), computed once

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", context_digest(self.entries))

    @classmethod
    def build(cls, files: Mapping[str, bytes], extra: Sequence[ContextEntry] = ()) -> ContextFiles:
        found = {
            name: ContextEntry(name, hashlib.sha256(data).hexdigest(), len(data), data=data)
            for name, data in files.items()
        }
        for entry in extra:
            found[entry.path] = entry
        for name in found:
            if name.startswith("/") or ".." in name.split("/"):
                raise ValueError(f"context path {name!r} escapes the context")
        return cls(tuple(found[name] for name in sorted(found)))

    @property
    def size(self) -> int:
        return sum(e.size for e in self.entries)


def entry_from_file(path: Path, arcname: str, sha256: str | None = None) -> ContextEntry:
    """A context entry read lazily from ``path``; the sha256 is computed unless given."""
    return ContextEntry(arcname, sha256 or file_sha256(path), path.stat().st_size, source=path)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def context_digest(entries: Sequence[ContextEntry]) -> str:
    """sha256 over the sorted ``path mode sha256`` lines: the image's content address."""
    lines = "".join(f"{e.path}\t{FILE_MODE:o}\t{e.sha256}\n" for e in sorted(entries, key=lambda e: e.path))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def context_tar(context: ContextFiles) -> bytes:
    """The uncompressed tar the engine receives, byte-stable for the same entries (in memory: the
    whole context; :func:`write_context_tar` streams the same bytes to a file instead)."""
    buffer = io.BytesIO()
    write_context_tar(context, buffer)
    return buffer.getvalue()


def write_context_tar(context: ContextFiles, fileobj: BinaryIO) -> int:
    """Write :func:`context_tar`'s bytes to ``fileobj`` (at its start: tar pads to records from
    offset 0), each host file copied in chunks, so memory is bounded by the largest in-memory
    entry, not the context; the number of bytes written."""
    if fileobj.tell() != 0:
        raise ValueError("write_context_tar writes a whole file: give it one at offset 0")
    with tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT, bufsize=_CHUNK) as tar:
        for directory in _directories(e.path for e in context.entries):
            tar.addfile(tar_info(directory, tarfile.DIRTYPE, 0, DIR_MODE))
        for entry in context.entries:
            info = tar_info(entry.path, tarfile.REGTYPE, entry.size, FILE_MODE)
            if entry.data is not None:
                tar.addfile(info, io.BytesIO(entry.data))
            elif entry.source is not None:
                with entry.source.open("rb") as fh:
                    tar.addfile(info, fh)
    return fileobj.tell()


@contextlib.contextmanager
def spooled_context_tar(context: ContextFiles, directory: Path | None = None) -> Iterator[BinaryIO]:
    """The context's tar (:func:`write_context_tar`) in an anonymous temporary file in ``directory``,
    at offset 0: what an engine streams. It has no name on disk and is gone when the ``with`` ends;
    memory holds a chunk, not the context. An OSError writing it (a full disk) leaves no file."""
    with tempfile.TemporaryFile(dir=directory) as fh:
        write_context_tar(context, fh)
        fh.seek(0)
        yield fh


def _directories(paths: Iterable[str]) -> list[str]:
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            found.add("/".join(parts[:i]))
    return sorted(found)


def tar_info(name: str, kind: bytes, size: int, mode: int) -> tarfile.TarInfo:
    """A reproducible member header: no time, owner or user names (build contexts and packs)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
