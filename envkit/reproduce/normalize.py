"""Normalize what the engine built: the image's own layers, a deterministic config, loaded back.

``docker save`` gives the image as the engine stored it; the layers of the base image (the
runtime stage's ``FROM``) are kept byte for byte (their diff_ids are the base's), every layer
after them is rewritten by :func:`envkit.reproduce.layers.normalize_layer`, and the config is
rebuilt without the build's noise:

- ``created`` and each own history entry's ``created``: the image's date (the image label
  ``io.envkit.source-date-epoch``, which the Dockerfile took from the lock digest); every file
  time of an own layer is clamped to :data:`~envkit.lock.epoch.LAYER_EPOCH`, one date for every
  lock, so a layer's digest follows its content alone;
- ``container``, ``container_config``, ``docker_version`` (the builder's container id and its
  config, the engine's version): dropped; ``config.Image`` (the id of the intermediate parent
  image, itself dated) and ``config.Hostname``: emptied;
- content hashes in ``created_by`` (``COPY dir:<sha256 of the files before normalization>``):
  the normalized layer's diff_id;
- JSON keys sorted, no whitespace: the image ID (the config's sha256) depends on content only.

The load archive holds only the rewritten layers (the engine has the base's: ``docker load``
does not read a layer whose chain it has) plus config and manifest, entries in a fixed order
and dated 0. ``docker load`` moves the tag to the normalized image; the engine's original is
removed.

A rebuild mostly repeats layers the engine built before (its cache: the unchanged groups' ``COPY``
steps give the same layer, the same raw diff_id). A normalized layer is a function of the raw
layer's bytes alone, so :class:`~envkit.reproduce.layer_memo.LayerMemo` remembers raw diff_id ->
(normalized diff_id, size): such a layer is not rewritten, and when the engine already holds its
normalized chain (``present``) it is not put in the load archive either (issue 47: the flagship's
unchanged 6.5 GB were rewritten and loaded again for a one-pin change).
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from envkit._atomic import write_bytes_atomic
from envkit._io import read_bytes_bounded
from envkit.engine.protocol import ContainerEngine, ImageInfo
from envkit.engine.store import ImageConfig, ImageStore
from envkit.errors import EngineError, EnvkitError
from envkit.lock.epoch import EPOCH_LABEL, LAYER_EPOCH, epoch_rfc3339
from envkit.reproduce.layer_memo import LayerMemo, chain_ids
from envkit.reproduce.layers import BLOCK, RECORD, LayerPlan

__all__ = ["NormalizeResult", "TopLayer", "normalize_image", "normalized_config", "read_saved"]

_KEEP = ("architecture", "os", "os.version", "os.features", "variant", "config")
_CONTENT_HASH = re.compile(r"\b(file|dir|multi):[0-9a-f]{64}\b")
_MAX_JSON = 64 << 20
TopLayer = Callable[[Path], None]  # writes a `docker save` tar of a one-layer image of one top layer


@dataclass(frozen=True)
class NormalizeResult:
    """A normalized image: its new id, the engine's original id, how long it took."""

    image_id: str  # the normalized image (sha256 of its config)
    original_id: str  # what the engine built (removed)
    epoch: int
    diff_ids: tuple[str, ...]
    own_layers: int
    bytes_rewritten: int
    seconds: float
    stages: dict[str, float]  # save, rewrite, load, remove: where the seconds went
    layer_sizes: tuple[int, ...] = ()  # the normalized size of each own layer (diff_ids[-own_layers:])
    layers_reused: int = 0  # own layers not rewritten (LayerMemo knew them)
    bytes_loaded: int = 0  # the layer bytes put in the load archive (the others' chains were present)

    def to_json(self) -> dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def read_saved(saved: tarfile.TarFile) -> tuple[dict[str, Any], list[str], ImageConfig]:
    """``(manifest entry, layer paths, config)`` of a ``docker save`` archive of one image."""
    manifest = json.loads(_member_bytes(saved, "manifest.json"))
    if not isinstance(manifest, list) or len(manifest) != 1 or not isinstance(manifest[0], dict):
        raise EngineError("docker save: manifest.json does not describe one image", hint="retry the build")
    entry = manifest[0]
    layers = [str(p) for p in entry.get("Layers") or ()]
    config = json.loads(_member_bytes(saved, str(entry.get("Config"))))
    if not isinstance(config, dict):
        raise EngineError("docker save: the image config is not a JSON object", hint="retry the build")
    return entry, layers, config


def _member_bytes(tar: tarfile.TarFile, name: str) -> bytes:
    try:
        member = tar.getmember(name)
    except KeyError:
        raise EngineError(
            f"docker save: {name} is missing from the archive", hint="retry the build"
        ) from None
    if member.size > _MAX_JSON:
        raise EngineError(f"docker save: {name} is {member.size} bytes", hint="is this an image archive?")
    handle = tar.extractfile(member)
    return handle.read() if handle is not None else b""


def normalized_config(
    config: ImageConfig, *, base_history: int, base_layers: int, diff_ids: list[str], epoch: int
) -> bytes:
    """The config bytes of the normalized image (its ID is their sha256)."""
    created = epoch_rfc3339(epoch)
    out: ImageConfig = {k: config[k] for k in _KEEP if k in config}
    inner = dict(out.get("config") or {})
    for key in ("Image", "Hostname"):
        if key in inner:
            inner[key] = ""
    out["config"] = inner
    out["created"] = created
    history = list(config.get("history") or [])
    own_ids = iter(diff_ids[base_layers:])
    rewritten: list[dict[str, Any]] = list(history[:base_history])
    for item in history[base_history:]:
        entry: dict[str, Any] = {"created": created}
        by = str(item.get("created_by", ""))
        if item.get("empty_layer"):
            entry["empty_layer"] = True
        else:
            layer = next(own_ids, "sha256:" + "0" * 64).split(":", 1)[1]
            by = _CONTENT_HASH.sub(rf"\1:{layer}", by)
        entry["created_by"] = by
        rewritten.append(entry)
    out["history"] = rewritten
    out["rootfs"] = {"type": "layers", "diff_ids": diff_ids}
    return json.dumps(out, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def normalize_image(
    engine: ContainerEngine,
    store: ImageStore,
    image: str,
    base: str,
    *,
    tag: str,
    workdir: Path | None = None,
    memo: LayerMemo | None = None,
    present: frozenset[str] = frozenset(),
    keep_original: bool = False,
    tops: Sequence[TopLayer] = (),
) -> NormalizeResult:
    """Normalize ``image`` (built ``FROM base``) (saved and loaded back as ``tag``
    through ``store``); remove the original from ``engine``.

    With ``memo``, a layer it knows is not rewritten; such a layer whose normalized chain ID is in
    ``present`` (the chains of the engine's images) is left out of the load archive. With
    ``keep_original`` the engine's image is left (untagged): its chain is the next build's cache.
    ``tops``: one per top own layer of the image (bottom first), each writing a one-layer image of
    that layer to a path; when every layer below them is known and present, the image is not saved: it
    is described, and only those layers are made again (:func:`_assemble`)."""
    start = time.monotonic()
    facts = engine.inspect(image)
    base_facts = engine.inspect(base, history=True)
    if facts is None or base_facts is None:
        missing = image if facts is None else base
        raise EngineError(f"cannot normalize {image}: {missing} is not in the engine", hint="rebuild it")
    try:
        epoch = int(facts.labels[EPOCH_LABEL])
    except (KeyError, ValueError):
        raise EngineError(
            f"{image} has no {EPOCH_LABEL} label: not built from an envkit Dockerfile",
            hint="rebuild it with this envkit (`envkit build NAME --no-cache`)",
        ) from None
    if base_facts.history is None:
        raise EngineError(f"cannot normalize {image}: the engine did not count the history of {base}",
                          hint="normalize on an engine that counts an image's history (Docker)")  # fmt: skip
    k = len(base_facts.diff_ids)
    if facts.diff_ids[:k] != base_facts.diff_ids:
        raise EngineError(f"{image} does not start with the layers of {base}",
                          hint="was the base image replaced during the build? rebuild")  # fmt: skip
    base_chain = chain_ids(base_facts.diff_ids)[-1] if k else ""
    with tempfile.TemporaryDirectory(prefix="envkit-normalize-", dir=workdir) as tmp:
        load_path = Path(tmp) / "load.tar"
        with load_path.open("wb") as out:
            writer = _ArchiveWriter(out)
            built = _Built(image, facts, base, base_facts, base_chain)
            stages: dict[str, float] = {}
            parts = None
            if memo is not None and tops:
                parts = _assemble(store, built, writer, memo, present, tops, Path(tmp))
                stages["assemble"] = time.monotonic() - start
            if parts is None:
                parts = _from_save(store, built, writer, memo, present, Path(tmp), stages)
            config, own, sizes, counts = parts
            rewritten, reused, loaded_bytes = counts
            diff_ids = [*base_facts.diff_ids, *own]
            config_bytes = normalized_config(
                config, base_history=base_facts.history, base_layers=k, diff_ids=diff_ids, epoch=epoch
            )
            config_name = hashlib.sha256(config_bytes).hexdigest()
            writer.add(f"{config_name}.json", config_bytes)
            manifest = [{"Config": f"{config_name}.json", "RepoTags": [tag],
                         "Layers": [f"{d.split(':', 1)[1]}/layer.tar" for d in diff_ids]}]  # fmt: skip
            writer.add("manifest.json", json.dumps(manifest, separators=(",", ":")).encode())
            writer.close()
        stages["rewrite"] = time.monotonic() - start - sum(stages.values())
        new_id = f"sha256:{config_name}"
        if new_id != facts.id:
            store.load(load_path)
            stages["load"] = time.monotonic() - start - sum(stages.values())
            loaded = engine.inspect(tag)
            if loaded is None or loaded.id != new_id:
                got = loaded.id if loaded else None
                raise EngineError(
                    f"docker load gave {tag} the id {got}, not {new_id}", hint="retry the build"
                )
            if not keep_original:
                engine.remove(facts.id)
            stages["remove"] = time.monotonic() - start - sum(stages.values())
    seconds = round(time.monotonic() - start, 3)
    spent = {k: round(v, 3) for k, v in stages.items()}
    if memo is not None:
        memo.save()
    return NormalizeResult(
        new_id, facts.id, epoch, tuple(diff_ids), len(own), rewritten, seconds, spent, tuple(sizes),
        reused, loaded_bytes,
    )  # fmt: skip


@dataclass(frozen=True)
class _Built:
    """The image to normalize and the base it was built on, as the engine described them."""

    image: str
    facts: ImageInfo
    base: str
    base_facts: ImageInfo
    base_chain: str  # the chain ID of the base's top layer ("" for none)


_Parts = tuple[ImageConfig, list[str], list[int], tuple[int, int, int]]


def _from_save(
    store: ImageStore,
    built: _Built,
    writer: _ArchiveWriter,
    memo: LayerMemo | None,
    present: frozenset[str],
    tmp: Path,
    stages: dict[str, float],
) -> _Parts:
    """The whole image saved: its config, and each own layer normalized into ``writer`` (or not)."""
    saved_path = tmp / "saved.tar"
    began = time.monotonic()
    store.save(built.image, saved_path)
    stages["save"] = time.monotonic() - began
    k = len(built.base_facts.diff_ids)
    with tarfile.open(saved_path, "r:") as saved:
        _, layers, config = read_saved(saved)
        if len(layers) != len(built.facts.diff_ids):
            raise EngineError(f"docker save of {built.image}: {len(layers)} layers, inspect says "
                              f"{len(built.facts.diff_ids)}", hint="retry the build")  # fmt: skip
        own, sizes, counts = _own_layers(
            saved,
            list(zip(built.facts.diff_ids[k:], layers[k:], strict=True)),
            built.base_chain,
            writer,
            memo,
            present,
        )
    saved_path.unlink()
    return config, own, sizes, counts


def _assemble(
    store: ImageStore,
    built: _Built,
    writer: _ArchiveWriter,
    memo: LayerMemo,
    present: frozenset[str],
    tops: Sequence[TopLayer],
    tmp: Path,
) -> _Parts | None:
    """The image without saving it, or None when that cannot be done here (nothing written then).

    The own layers from the bottom that ``memo`` knows and whose normalized chain the engine holds
    need no bytes; every layer above them must be one of ``tops``: each gives a one-layer image of its
    layer (the builder's: ``FROM scratch``, the step's ``COPY``), saved (that layer alone: kilobytes to
    a few hundred MB, not the whole image) and normalized into ``writer``; a layer ``memo`` knew must
    come out as it remembered (else an error: the caller normalizes again without the memo)."""
    own_raw = list(built.facts.diff_ids[len(built.base_facts.diff_ids) :])
    chain, known = built.base_chain, []
    for raw in own_raw:
        hit = memo.get(raw)
        above = chain_ids([hit[0]], chain)[-1] if hit is not None else ""
        if hit is None or above not in present:
            break
        chain = above
        known.append(hit)
    need = len(own_raw) - len(known)
    config = _described(store, built, memo.path.parent / "image-configs", tmp) if need <= len(tops) else None
    if config is None:
        return None
    own = [diff_id for diff_id, _ in known]
    sizes = [size for _, size in known]
    rewritten = 0
    for raw, top in zip(own_raw[len(known) :], tops[len(tops) - need :], strict=True):
        diff_id, size, read = _top_layer(top, tmp / "top.tar", writer)
        remembered = memo.get(raw)
        if remembered is not None and remembered != (diff_id, size):
            raise EngineError(
                f"the one-layer image of {built.image}'s layer {raw} gave {diff_id}, the memo says "
                f"{remembered[0]}",
                hint="normalizing again from the whole image",
            )
        own.append(diff_id)
        sizes.append(size)
        rewritten += read
    return config, own, sizes, (rewritten, len(known), sum(sizes[len(known) :]))


def _top_layer(top: TopLayer, path: Path, writer: _ArchiveWriter) -> tuple[str, int, int]:
    """The one layer of ``top``'s image normalized into ``writer``: (diff_id, size, bytes read)."""
    top(path)
    with tarfile.open(path, "r:") as saved:
        _, layers, _ = read_saved(saved)
        if len(layers) != 1:
            raise EngineError(f"a one-layer image of a top layer had {len(layers)} layers",
                              hint="retry the build")  # fmt: skip
        diff_id, size = _normalize_member(saved, layers[0], LAYER_EPOCH, writer)
        read = saved.getmember(layers[0]).size
    path.unlink()
    return diff_id, size, read


def _described(store: ImageStore, built: _Built, cache: Path, tmp: Path) -> ImageConfig | None:
    """The config of ``built.image`` as the engine describes it (``ImageStore.describe``), its base's
    history entries as the base's own config has them (:func:`_base_config`); None if not described."""
    config = store.describe(built.image)
    if config is None or config["rootfs"]["diff_ids"] != list(built.facts.diff_ids):
        return None
    base_config = _base_config(store, built, cache, tmp)
    count = built.base_facts.history or 0
    base_history = list(base_config.get("history") or []) if base_config else []
    steps = [h.get("created_by", "") for h in base_history]
    if len(base_history) != count or steps != [h["created_by"] for h in config["history"][:count]]:
        return None
    config["history"][:count] = base_history
    return config


def _base_config(store: ImageStore, built: _Built, cache: Path, tmp: Path) -> ImageConfig | None:
    """The base image's own config (its ID is the sha256 of these bytes): kept in ``cache``, else
    saved from the engine once; None when neither gives those bytes."""
    hexid = built.base_facts.id.split(":", 1)[-1]
    kept = cache / f"{hexid}.json"
    try:
        data = read_bytes_bounded(kept, _MAX_JSON)
    except (OSError, EnvkitError):
        data = b""
    if hashlib.sha256(data).hexdigest() != hexid:
        saved_path = tmp / "base.tar"
        store.save(built.base, saved_path)
        with tarfile.open(saved_path, "r:") as saved:
            entry, _, _ = read_saved(saved)
            data = _member_bytes(saved, str(entry.get("Config")))
        saved_path.unlink()
        if hashlib.sha256(data).hexdigest() != hexid:
            return None
        try:
            cache.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(kept, data)
        except (OSError, EnvkitError):
            pass  # kept next time, or saved again
    config = json.loads(data)
    return config if isinstance(config, dict) else None


def _normalize_member(
    saved: tarfile.TarFile, path: str, epoch: int, writer: _ArchiveWriter
) -> tuple[str, int]:
    """The layer at ``path`` normalized into ``writer``: its diff_id and size."""
    handle = saved.extractfile(saved.getmember(path))
    if handle is None:
        raise EngineError(f"docker save: {path} is not a file", hint="retry the build")
    with tarfile.open(fileobj=handle, mode="r:", encoding="utf-8", errors="surrogateescape") as layer:
        plan = LayerPlan(layer, epoch)
        size = plan.size
        # the name needs the diff_id, known only after writing: a fixed-width placeholder, patched after
        offset = writer.begin("0" * 64 + "/layer.tar", size)
        result = plan.write(writer.out)
        writer.end(size)
    hexid = result.diff_id.split(":", 1)[1]
    writer.patch_name(offset, hexid + "/layer.tar", size)
    return result.diff_id, size


def _own_layers(
    saved: tarfile.TarFile,
    layers: list[tuple[str, str]],
    chain: str,
    writer: _ArchiveWriter,
    memo: LayerMemo | None,
    present: frozenset[str],
) -> tuple[list[str], list[int], tuple[int, int, int]]:
    """Each own layer ``(raw diff_id, path in the save)`` normalized into ``writer`` unless ``memo``
    knows it and the engine has its chain: (diff_ids, sizes, (bytes rewritten, known, bytes loaded))."""
    own: list[str] = []
    sizes: list[int] = []
    rewritten = reused = loaded = 0
    for raw, path in layers:
        known = memo.get(raw) if memo is not None else None
        if known is not None:
            diff_id, size = known
            reused += 1
            chain = chain_ids([diff_id], chain)[-1]
            if chain not in present:
                _copy_layer(saved, path, diff_id, size, writer)
                loaded += size
        else:
            diff_id, size = _normalize_member(saved, path, LAYER_EPOCH, writer)
            rewritten += saved.getmember(path).size
            loaded += size
            chain = chain_ids([diff_id], chain)[-1]
            if memo is not None:
                memo.put(raw, diff_id, size)
        own.append(diff_id)
        sizes.append(size)
    return own, sizes, (rewritten, reused, loaded)


def _copy_layer(saved: tarfile.TarFile, path: str, diff_id: str, size: int, writer: _ArchiveWriter) -> None:
    """A known layer whose chain the engine lacks: normalized again into ``writer``; its diff_id must
    be the remembered one (a stale or edited memo is an error, never a wrong image)."""
    got, got_size = _normalize_member(saved, path, LAYER_EPOCH, writer)
    if (got, got_size) != (diff_id, size):
        raise EngineError(
            f"normalizing {path}: it gave {got}, the layer memo says {diff_id}",
            hint="remove ~/.cache/envkit/normalized-layers.json (or under $XDG_CACHE_HOME) and rebuild",
        )


class _ArchiveWriter:
    """A plain ustar archive written by hand: members with known sizes, streamed content."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.offset = 0

    def _header(self, name: str, size: int) -> bytes:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode, info.uname, info.gname = size, 0, 0o644, "", ""
        return info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "strict")

    def begin(self, name: str, size: int) -> int:
        header = self._header(name, size)
        at = self.out.tell()
        self.out.write(header)
        return at

    def end(self, size: int) -> None:
        pad = -size % BLOCK
        self.out.write(b"\0" * pad)

    def patch_name(self, at: int, name: str, size: int) -> None:
        here = self.out.tell()
        self.out.seek(at)
        self.out.write(self._header(name, size))
        self.out.seek(here)

    def add(self, name: str, data: bytes) -> None:
        self.begin(name, len(data))
        self.out.write(data)
        self.end(len(data))

    def close(self) -> None:
        self.out.write(b"\0" * (2 * BLOCK))
        self.out.write(b"\0" * (-self.out.tell() % RECORD))
        self.out.flush()
