"""Two images compared layer by layer and file by file (what ``envkit verify`` reports).

Layers at the same position with the same diff_id are equal; for each other position every
entry of either side is compared by kind, size, sha256, mode, owner, mtime and link target. The
*filesystem* view is compared too, for every path a differing layer touches: the topmost layer
holding the path decides (a whiteout removes it), so a file changed by an extra layer on top
(``docker commit``) is named as changed, with both sizes and hashes.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.engine.store import ImageStore
from envkit.reproduce.layers import LayerEntry, iter_entries
from envkit.reproduce.normalize import read_saved

__all__ = ["FIELDS", "EntryDiff", "ImageDiff", "LayerDiff", "SavedImage", "compare_saved", "saved_image"]

FIELDS = ("kind", "size", "sha256", "mode", "uid", "gid", "mtime", "link")
MAX_LISTED = 200  # entries listed per layer (the count of the others is kept)
_WHITEOUT = ".wh."
_OPAQUE = ".wh..wh..opq"


@dataclass(frozen=True)
class EntryDiff:
    """One file or entry that differs between an image and its rebuild."""

    path: str
    change: str  # added (only in the rebuilt image), removed (only in the image), changed
    fields: tuple[str, ...]  # which of FIELDS differ ("changed")
    image: LayerEntry | None
    rebuilt: LayerEntry | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change, "fields": list(self.fields),
                "image": _entry_json(self.image), "rebuilt": _entry_json(self.rebuilt)}  # fmt: skip


@dataclass(frozen=True)
class LayerDiff:
    """One layer that differs between an image and its rebuild, with its entries."""

    index: int  # 0 = the bottom layer
    image: str | None  # diff_id in the verified image (None: it has no layer here)
    rebuilt: str | None
    entries: tuple[EntryDiff, ...]
    more: int = 0  # differing entries not listed (MAX_LISTED)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "image": self.image, "rebuilt": self.rebuilt,
                "entries": [e.to_json() for e in self.entries], "more": self.more}  # fmt: skip


@dataclass(frozen=True)
class ImageDiff:
    """What differs between an image and its rebuild: config keys, layers, files."""

    layers: tuple[LayerDiff, ...]
    files: tuple[EntryDiff, ...]  # the filesystem view: regular files, links and absences only
    config: tuple[str, ...]  # config keys that differ (labels, env, history, ...)
    more_files: int = 0

    @property
    def equal(self) -> bool:
        return not self.layers and not self.files and not self.config

    def to_json(self) -> dict[str, Any]:
        return {"layers": [x.to_json() for x in self.layers], "files": [f.to_json() for f in self.files],
                "more_files": self.more_files, "config": list(self.config)}  # fmt: skip


def _entry_json(entry: LayerEntry | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {"kind": entry.kind, "size": entry.size, "sha256": entry.sha256, "mode": f"{entry.mode:04o}",
            "uid": entry.uid, "gid": entry.gid, "mtime": entry.mtime, "link": entry.link}  # fmt: skip


@dataclass
class SavedImage:
    """A ``docker save`` archive opened for reading: its layers by position, indexed on demand."""

    tar: tarfile.TarFile
    layer_paths: list[str]
    diff_ids: list[str]
    config: dict[str, Any]
    _index: dict[int, dict[str, LayerEntry]] = field(default_factory=dict)

    def entries(self, position: int, *, hashes: bool) -> dict[str, LayerEntry]:
        if position not in self._index:
            handle = self.tar.extractfile(self.tar.getmember(self.layer_paths[position]))
            found: dict[str, LayerEntry] = {}
            if handle is not None:
                for entry in iter_entries(handle, hashes=hashes):  # type: ignore[arg-type]
                    found[entry.path] = entry
            self._index[position] = found
        return self._index[position]

    def file_bytes(self, position: int, path: str, limit: int) -> bytes | None:
        """The content of ``path`` in the layer at ``position`` (None when larger than ``limit``)."""
        handle = self.tar.extractfile(self.tar.getmember(self.layer_paths[position]))
        if handle is None:
            return None
        with tarfile.open(fileobj=handle, mode="r|", encoding="utf-8", errors="surrogateescape") as layer:
            for member in layer:
                if member.name == path and member.isreg():
                    if member.size > limit:
                        return None
                    data = layer.extractfile(member)
                    return data.read() if data is not None else b""
        return None

    def hashed(self, position: int, entry: LayerEntry) -> LayerEntry:
        """``entry`` with the sha256 of its content (read from the layer when it was indexed without)."""
        if entry.sha256 or entry.kind != "file":
            return entry
        handle = self.tar.extractfile(self.tar.getmember(self.layer_paths[position]))
        if handle is not None:
            for found in iter_entries(handle, hashes=True, only=entry.path):  # type: ignore[arg-type]
                return found
        return entry

    def winner(self, path: str) -> tuple[int, LayerEntry | None]:
        """The topmost layer that has ``path`` (or removes it: entry None), and its entry."""
        parent, _, base = path.rpartition("/")
        whiteout = f"{parent}/{_WHITEOUT}{base}" if parent else f"{_WHITEOUT}{base}"
        for position in range(len(self.layer_paths) - 1, -1, -1):
            entries = self.entries(position, hashes=False) if position in self._index else None
            if entries is None:
                continue
            if path in entries:
                return position, entries[path]
            if whiteout in entries:
                return position, None
        return -1, None


@contextmanager
def saved_image(store: ImageStore, image: str, directory: Path) -> Iterator[SavedImage]:
    path = directory / f"{image.replace('/', '_').replace(':', '_')}.tar"
    store.save(image, path)
    with tarfile.open(path, "r:") as tar:
        _, layers, config = read_saved(tar)
        diff_ids = [str(d) for d in (config.get("rootfs") or {}).get("diff_ids") or ()]
        yield SavedImage(tar, layers, diff_ids, config)


def _diff(path: str, a: LayerEntry | None, b: LayerEntry | None) -> EntryDiff | None:
    if a is None and b is None:
        return None
    if a is None:
        return EntryDiff(path, "added", (), None, b)
    if b is None:
        return EntryDiff(path, "removed", (), a, None)
    fields = tuple(f for f in FIELDS if getattr(a, f) != getattr(b, f))
    return EntryDiff(path, "changed", fields, a, b) if fields else None


def compare_saved(left: SavedImage, right: SavedImage) -> ImageDiff:
    layers: list[LayerDiff] = []
    touched: set[str] = set()
    for position in range(max(len(left.diff_ids), len(right.diff_ids))):
        a_id = left.diff_ids[position] if position < len(left.diff_ids) else None
        b_id = right.diff_ids[position] if position < len(right.diff_ids) else None
        if a_id == b_id:
            continue
        a = left.entries(position, hashes=True) if a_id else {}
        b = right.entries(position, hashes=True) if b_id else {}
        diffs = [d for p in sorted(set(a) | set(b)) if (d := _diff(p, a.get(p), b.get(p))) is not None]
        diffs.sort(key=lambda d: (not _content(d), d.path))
        touched.update(_target(p) for p in (*a, *b))
        layers.append(
            LayerDiff(position, a_id, b_id, tuple(diffs[:MAX_LISTED]), max(0, len(diffs) - MAX_LISTED))
        )
    files: list[EntryDiff] = []
    if touched:
        for image in (
            left,
            right,
        ):  # the filesystem view needs every layer's names (no hashes for shared ones)
            for position in range(len(image.layer_paths)):
                image.entries(position, hashes=False)
        for path in sorted(touched):
            a_pos, mine = left.winner(path)
            b_pos, theirs = right.winner(path)
            same_layer = a_pos >= 0 and a_pos == b_pos and left.diff_ids[a_pos] == right.diff_ids[b_pos]
            if same_layer or "dir" in (mine.kind if mine else "", theirs.kind if theirs else ""):
                continue  # a directory's own metadata shows in the layer list
            if mine is not None and mine.kind == "file":
                mine = left.hashed(a_pos, mine)  # a layer shared by both images was read without hashes
            if theirs is not None and theirs.kind == "file":
                theirs = right.hashed(b_pos, theirs)
            if (d := _diff(path, mine, theirs)) is not None:
                files.append(d)
    files.sort(key=lambda d: (not _content(d), d.path))  # content first: a new epoch re-dates every file
    config = tuple(_config_diff(left.config, right.config))
    return ImageDiff(tuple(layers), tuple(files[:MAX_LISTED]), config, max(0, len(files) - MAX_LISTED))


def _content(diff: EntryDiff) -> bool:
    """Whether the bytes or the kind differ (not only mode, owner or mtime)."""
    return diff.change != "changed" or bool({"kind", "size", "sha256", "link"} & set(diff.fields))


def _target(path: str) -> str:
    parent, _, base = path.rpartition("/")
    if base.startswith(_WHITEOUT) and base != _OPAQUE:
        name = base[len(_WHITEOUT) :]
        return f"{parent}/{name}" if parent else name
    return path


def _config_diff(a: dict[str, Any], b: dict[str, Any]) -> Iterator[str]:
    inner_a, inner_b = a.get("config") or {}, b.get("config") or {}
    for key in sorted(set(inner_a) | set(inner_b)):
        if key == "Labels":
            labels_a, labels_b = inner_a.get(key) or {}, inner_b.get(key) or {}
            for label in sorted(set(labels_a) | set(labels_b)):
                if labels_a.get(label) != labels_b.get(label):
                    yield f"config.Labels.{label}: {labels_a.get(label)!r} != {labels_b.get(label)!r}"
        elif inner_a.get(key) != inner_b.get(key):
            yield f"config.{key}: {json.dumps(inner_a.get(key))} != {json.dumps(inner_b.get(key))}"
    for key in sorted((set(a) | set(b)) - {"config", "rootfs"}):
        if a.get(key) != b.get(key):
            yield (
                f"{key} differs"
                if key == "history"
                else f"{key}: {json.dumps(a.get(key))} != {json.dumps(b.get(key))}"
            )
