"""An image tar from the shared store, checked before ``docker load`` ever sees it.

``docker load`` applies every image and every tag a tar carries: a tar with a second image tagged
like a node's own application image would re-point that tag on every node. So before loading,
the tar's own index is read (``manifest.json``, as ``docker save`` writes it):

- an uncompressed tar, at most :data:`MAX_MEMBERS` entries, no absolute, ``..`` or duplicate names;
- ``manifest.json`` lists exactly one image, with no ``RepoTags``; no legacy ``repositories`` file
  and no image names in an OCI ``index.json``: loading it creates no tag at all;
- that image's config hashes (sha256) to the expected image id, so the loaded image is the one
  the run recorded (``docker load`` itself checks the layers against the config's ``diff_ids``);
- the file is a regular file (not a link) owned by this user (or root) and writable by nobody else,
  and the same open file that was checked is the one streamed to the engine.
"""

from __future__ import annotations

import hashlib
import posixpath
import tarfile
from pathlib import Path
from typing import Any, BinaryIO

from envkit._io import NotRegular, load_json_bounded, open_regular
from envkit.engine.store import ImageStore
from envkit.errors import EngineError, FleetError

__all__ = ["MAX_MEMBERS", "check_image_tar", "load_checked_tar"]

MAX_MEMBERS = 20_000  # docker save: 3-4 entries per layer
MAX_INDEX_BYTES = 1 << 20
MAX_CONFIG_BYTES = 16 << 20
_HINT = "the store's copy is damaged or was replaced: rerun `envkit probe --slurm --image` to save it again"
_NAME_KEYS = ("io.containerd.image.name", "org.opencontainers.image.ref.name")


def _refuse(source: str, why: str) -> FleetError:
    return FleetError(f"{source}: refusing to load this image tar: {why}", hint=_HINT)


def _members(tar: tarfile.TarFile, source: str) -> dict[str, tarfile.TarInfo]:
    out: dict[str, tarfile.TarInfo] = {}
    for count, member in enumerate(tar, 1):
        if count > MAX_MEMBERS:
            raise _refuse(source, f"more than {MAX_MEMBERS} entries")
        name = posixpath.normpath(member.name)
        if name.startswith("/") or name == ".." or name.startswith("../"):
            raise _refuse(source, f"the entry {member.name!r:.100} points outside the tar")
        if name in out:
            raise _refuse(source, f"the entry {name!r:.100} appears twice")
        out[name] = member
    return out


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo | None, name: str, limit: int, source: str) -> bytes:
    if member is None or not member.isfile():
        raise _refuse(source, f"no regular file {name!r:.100} in it")
    if member.size > limit:
        raise _refuse(source, f"{name!r:.100} is larger than {limit} bytes")
    fh = tar.extractfile(member)
    if fh is None:
        raise _refuse(source, f"{name!r:.100} cannot be read")
    return fh.read(limit + 1)


def _json(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str, source: str) -> Any:
    try:
        return load_json_bounded(_read(tar, members.get(name), name, MAX_INDEX_BYTES, source), 16)
    except ValueError as e:
        raise _refuse(source, f"{name}: {e}") from e


def check_image_tar(fh: BinaryIO, source: str, image_id: str) -> None:
    """Refuse the tar in ``fh`` unless loading it creates exactly ``image_id`` and no tag."""
    try:
        with tarfile.open(fileobj=fh, mode="r:") as tar:
            members = _members(tar, source)
            manifest = _json(tar, members, "manifest.json", source)
            if not (isinstance(manifest, list) and len(manifest) == 1 and isinstance(manifest[0], dict)):
                count = len(manifest) if isinstance(manifest, list) else "no list of"
                raise _refuse(source, f"manifest.json lists {count} images, not exactly one")
            entry = manifest[0]
            if entry.get("RepoTags"):
                tags = ", ".join(map(str, entry["RepoTags"]))[:200]
                raise _refuse(source, f"it would tag images on this node ({tags})")
            if "repositories" in members:
                raise _refuse(source, "it carries a legacy `repositories` file (image tags)")
            if "index.json" in members:
                _check_index(_json(tar, members, "index.json", source), source)
            config = entry.get("Config")
            if not isinstance(config, str):
                raise _refuse(source, "manifest.json names no image config")
            data = _read(tar, members.get(posixpath.normpath(config)), config, MAX_CONFIG_BYTES, source)
    except tarfile.TarError as e:
        raise _refuse(source, f"not an uncompressed `docker save` tar ({e})") from e
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != image_id:
        raise _refuse(source, f"it holds image {digest[:19]}…, not the run's {image_id[:19]}…")


def _check_index(index: Any, source: str) -> None:
    """An OCI ``index.json`` (Docker 25+) may name images too: refuse any name or more than one image."""
    entries = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], dict):
        raise _refuse(source, "index.json does not list exactly one image")
    annotations = entries[0].get("annotations") or {}
    if not isinstance(annotations, dict) or any(key in annotations for key in _NAME_KEYS):
        raise _refuse(source, "index.json names the image (it would tag it on this node)")


def load_checked_tar(image_store: ImageStore, path: Path, image_id: str) -> None:
    """Check the store's tar at ``path`` (:func:`check_image_tar`, owner), then load that same open file
    through the :class:`~envkit.engine.store.ImageStore`."""
    from envkit.store.reads import check_owned

    try:
        fh = open_regular(path)
    except NotRegular as e:
        raise _refuse(str(path), e.strerror or "not a regular file") from e
    except OSError as e:
        raise FleetError(f"{path}: cannot read the image tar: {e.strerror or e}", hint=_HINT) from e
    with fh:
        check_owned(path, "image tar", fd=fh.fileno())
        check_image_tar(fh, str(path), image_id)
        fh.seek(0)
        try:
            loaded = image_store.load(fh)
        except EngineError as e:  # the store names no path for an open file: this one does
            raise FleetError(f"{path}: {e.message}", hint=e.hint) from e
    if loaded != (image_id,):
        raise FleetError(
            f"the image tar {path} loaded {', '.join(loaded) or 'nothing'}, not {image_id}", hint=_HINT
        )
