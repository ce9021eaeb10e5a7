"""One image layer (an uncompressed tar) rewritten so that the same files give the same bytes.

What the engine's layer tar carries besides the files, and what becomes of it here:

- entry order (the order the storage driver's directory walk met the files): sorted by path;
- mtimes (the build's wall clock): clamped to ``SOURCE_DATE_EPOCH`` (older times, e.g. from a
  conda archive, are kept: they are part of the package);
- atime / ctime and sub-second times in PAX headers: dropped;
- owner *names* (``root``, ``envkit``): dropped, numeric uid/gid kept;
- hard links: the first path in sorted order carries the data, the others link to it (a tar
  needs the target first, and the walk order decided which one that was);
- PAX records other than extended attributes (``SCHILY.xattr.*``, sorted): dropped;
- ``conda-meta/history``: its ``==> 2024-05-01 10:11:12 <==`` install times become the epoch.

Whiteouts (``.wh.*``) are files like any other: kept, sorted, clamped.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, BinaryIO

__all__ = ["LayerEntry", "LayerPlan", "NormalizedLayer", "iter_entries", "normalize_layer", "normalized_size"]

RECORD = tarfile.RECORDSIZE  # 10240: tarfile pads the archive to a multiple of it
BLOCK = tarfile.BLOCKSIZE
_HISTORY_TIME = re.compile(rb"^==> \d{4}-\d\d-\d\d \d\d:\d\d:\d\d <==$", re.MULTILINE)
_MAX_REWRITE = 16 << 20  # files rewritten in memory (conda-meta/history) are small; larger ones pass
_COPY = 1 << 20


@dataclass(frozen=True)
class LayerEntry:
    """One entry of a layer as ``envkit verify`` compares it."""

    path: str
    kind: str  # file, dir, symlink, hardlink, char, block, fifo
    size: int
    mode: int
    uid: int
    gid: int
    mtime: int
    link: str  # symlink / hardlink target
    sha256: str  # of the content (files); "" otherwise


@dataclass(frozen=True)
class NormalizedLayer:
    """A layer rewritten reproducibly: its diff_id, size and the tar's path."""

    diff_id: str  # "sha256:<hex>" of the normalized tar
    size: int
    entries: int


_KINDS = {
    tarfile.REGTYPE: "file",
    tarfile.AREGTYPE: "file",
    tarfile.CONTTYPE: "file",
    tarfile.DIRTYPE: "dir",
    tarfile.SYMTYPE: "symlink",
    tarfile.LNKTYPE: "hardlink",
    tarfile.CHRTYPE: "char",
    tarfile.BLKTYPE: "block",
    tarfile.FIFOTYPE: "fifo",
}


def _rewrite(name: str, data: bytes, epoch: int) -> bytes:
    """Content fixes for files known to embed the install time."""
    if name.endswith("conda-meta/history"):
        stamp = dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        return _HISTORY_TIME.sub(f"==> {stamp} <==".encode(), data)
    return data


def _needs_rewrite(name: str) -> bool:
    return name.endswith("conda-meta/history")


class LayerPlan:
    """The normalized member list of a source tar: each header (encoded once), where its data comes
    from, and the archive's size before a byte is written (the outer archive's header needs it)."""

    def __init__(self, source: tarfile.TarFile, epoch: int) -> None:
        members = [m for m in source.getmembers() if m.type != tarfile.GNUTYPE_SPARSE]
        by_name = {m.name: m for m in members}
        # hard-link groups: every link's root regular file -> the sorted names sharing it
        groups: dict[str, list[str]] = {}
        for m in members:
            if m.islnk():
                root = _link_root(m, by_name)
                groups.setdefault(root, [root]).append(m.name)
        carrier: dict[str, str] = {}  # name -> first name of its group (carries the data)
        for names in groups.values():
            first = min(names)
            for name in names:
                carrier[name] = first
        self.items: list[tuple[bytes, int, tarfile.TarInfo | None, bytes | None]] = []
        for m in sorted(members, key=lambda m: m.name.encode("utf-8", "surrogateescape")):
            info = tarfile.TarInfo(m.name)
            info.mode = m.mode
            info.uid, info.gid = m.uid, m.gid
            info.uname = info.gname = ""
            info.mtime = min(int(m.mtime), epoch)
            info.devmajor, info.devminor = m.devmajor, m.devminor
            info.pax_headers = {
                k: v for k, v in sorted(m.pax_headers.items()) if k.startswith("SCHILY.xattr.")
            }
            data_from: tarfile.TarInfo | None = None
            data: bytes | None = None
            carrier_name = carrier.get(m.name)
            if carrier_name is not None and carrier_name != m.name:
                info.type, info.linkname, info.size = tarfile.LNKTYPE, carrier_name, 0
            elif carrier_name is not None or m.isreg():
                source_member = by_name[_link_root(m, by_name)] if m.islnk() else m
                info.type, info.size = tarfile.REGTYPE, source_member.size
                data_from = source_member
                if _needs_rewrite(m.name) and source_member.size <= _MAX_REWRITE:
                    data = _rewrite(m.name, _read(source, source_member), epoch)
                    info.size, data_from = len(data), None
            else:
                info.type, info.linkname, info.size = m.type, m.linkname, 0
            header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
            self.items.append((header, info.size, data_from, data))
        total = sum(len(h) + -(-n // BLOCK) * BLOCK for h, n, _, _ in self.items) + 2 * BLOCK
        self.size = -(-total // RECORD) * RECORD  # what tarfile writes: padded to whole records
        self.source = source

    def write(self, out: IO[bytes]) -> NormalizedLayer:
        """Write the normalized tar to ``out``; its diff_id (sha256) and size."""
        writer = _HashingWriter(out)
        for header, size, data_from, data in self.items:
            writer.write(header)
            if data is not None:
                writer.write(data)
            elif data_from is not None:
                _copy(self.source, data_from, writer)
            writer.write(b"\0" * (-size % BLOCK))
        writer.write(b"\0" * (2 * BLOCK))
        writer.write(b"\0" * (-writer.count % RECORD))
        if writer.count != self.size:
            raise RuntimeError(f"normalized layer: wrote {writer.count} bytes, planned {self.size}")
        return NormalizedLayer(f"sha256:{writer.digest.hexdigest()}", writer.count, len(self.items))


def _copy(source: tarfile.TarFile, member: tarfile.TarInfo, writer: _HashingWriter) -> None:
    handle = source.extractfile(member)
    left = member.size
    while left > 0 and handle is not None:
        chunk = handle.read(min(left, _COPY))
        if not chunk:
            raise ValueError(f"{member.name}: the layer ends inside this file")
        writer.write(chunk)
        left -= len(chunk)


def _link_root(member: tarfile.TarInfo, by_name: dict[str, tarfile.TarInfo]) -> str:
    seen = member
    for _ in range(64):  # a link to a link (never written by Docker, but cheap to follow)
        if not seen.islnk():
            return seen.name
        target = by_name.get(seen.linkname)
        if target is None:
            raise ValueError(f"hard link {member.name} -> {seen.linkname}: the target is not in the layer")
        seen = target
    raise ValueError(f"hard link {member.name}: a cycle")


def _read(source: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = source.extractfile(member)
    return handle.read() if handle is not None else b""


class _HashingWriter:
    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.count = 0

    def write(self, data: bytes) -> int:
        self.out.write(data)
        self.digest.update(data)
        self.count += len(data)
        return len(data)


def normalized_size(source: tarfile.TarFile, epoch: int) -> int:
    """The byte size :func:`normalize_layer` writes for ``source``."""
    return LayerPlan(source, epoch).size


def normalize_layer(source: tarfile.TarFile, out: IO[bytes], epoch: int) -> NormalizedLayer:
    """Write ``source`` (opened for random access) to ``out`` normalized; return its diff_id."""
    return LayerPlan(source, epoch).write(out)


def iter_entries(fileobj: BinaryIO, *, hashes: bool = True, only: str | None = None) -> Iterator[LayerEntry]:
    """The entries of a layer tar read as a stream, with the sha256 of each file's content."""
    with tarfile.open(fileobj=fileobj, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:
        for m in tar:
            if only is not None and m.name != only:
                continue
            digest = ""
            if m.isreg() and hashes:
                handle = tar.extractfile(m)
                sha = hashlib.sha256()
                if handle is not None:
                    while chunk := handle.read(_COPY):
                        sha.update(chunk)
                digest = sha.hexdigest()
            yield LayerEntry(m.name, _KINDS.get(m.type, "other"), m.size, m.mode, m.uid, m.gid,
                             int(m.mtime), m.linkname, digest)  # fmt: skip
