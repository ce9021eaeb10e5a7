"""The pack's manifest: which lock it was made from and every file with its sha256.

A pack is one uncompressed tar: ``manifest.json`` first, then the files in path order
(``channel/<subdir>/<archive>`` conda packages, ``wheels/<wheel>`` for requirements.lock,
``installer/<file>`` for what the offline builder stage runs). Byte-stable: sorted entries,
mtime 0, uid/gid 0, no timestamps in the manifest, so packing an unchanged lock twice gives the
same bytes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

from envkit.errors import PackMismatch

__all__ = ["FORMAT", "MANIFEST", "PackFile", "PackManifest"]

FORMAT = 1
MANIFEST = "manifest.json"
Kind = Literal["conda", "wheel", "installer"]
_KINDS = ("conda", "wheel", "installer")


@dataclass(frozen=True)
class PackFile:
    """One file of a pack: where it lies in the pack, what it is, where it came from, its hash."""

    path: str  # "channel/noarch/tinylib-1.2.0-pyh0_0.conda", "wheels/six-1.16.0-py2.py3-none-any.whl"
    kind: Kind
    name: str
    version: str
    platform: str  # the lock's platform ("linux-64"); wheels and installers: the platforms they serve
    url: str  # where it was downloaded from ("" when pip chose the index URL)
    sha256: str
    size: int
    md5: str = ""

    @property
    def filename(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PackManifest:
    """A pack's ``manifest.json``: the lock it was made from and every file with its hashes."""

    name: str
    platforms: tuple[str, ...]
    lock_sha256: str  # the lock the pack was made from
    envkit: str  # envkit's version
    files: tuple[PackFile, ...]
    format: int = FORMAT

    def to_json(self) -> str:
        data = {
            "format": self.format,
            "name": self.name,
            "platforms": list(self.platforms),
            "lock_sha256": self.lock_sha256,
            "envkit": self.envkit,
            "files": [asdict(f) for f in sorted(self.files, key=lambda f: f.path)],
        }
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str) -> PackManifest:
        """Parse a manifest; anything malformed is a :class:`PackMismatch` naming ``where``."""
        try:
            data = json.loads(text)
            if data["format"] != FORMAT:
                raise PackMismatch(
                    f"{where}: pack format {data['format']} is not supported (this envkit reads {FORMAT})",
                    hint="make the pack with the same envkit version as the build",
                )
            files = tuple(_file(f) for f in data["files"])
            return cls(
                name=str(data["name"]),
                platforms=tuple(str(p) for p in data["platforms"]),
                lock_sha256=str(data["lock_sha256"]),
                envkit=str(data["envkit"]),
                files=files,
            )
        except (ValueError, KeyError, TypeError) as e:
            raise PackMismatch(
                f"{where}: {MANIFEST} is not a valid envkit pack manifest ({type(e).__name__}: {e})",
                hint="make the pack again with `envkit pack NAME` on the connected machine",
            ) from e

    def by_path(self) -> dict[str, PackFile]:
        return {f.path: f for f in self.files}


def _file(data: dict[str, object]) -> PackFile:
    kind = data["kind"]
    if kind not in _KINDS:
        raise ValueError(f"unknown file kind {kind!r}")
    path = str(data["path"])
    if path.startswith("/") or ".." in path.split("/") or path == MANIFEST:
        raise ValueError(f"file path {path!r} escapes the pack")
    size = data["size"]
    if not isinstance(size, int):
        raise TypeError(f"size of {path} is not an integer")
    return PackFile(
        path=path,
        kind=kind,  # type: ignore[arg-type]  # checked against _KINDS above
        name=str(data["name"]),
        version=str(data["version"]),
        platform=str(data["platform"]),
        url=str(data["url"]),
        sha256=str(data["sha256"]),
        size=size,
        md5=str(data.get("md5", "")),
    )
