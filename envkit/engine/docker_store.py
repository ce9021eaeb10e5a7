"""Save, load, push and pull images through the Docker Engine API (the SDK's ``APIClient``).

:class:`DockerImageStore` is the Docker adapter of :class:`~envkit.engine.store.ImageStore`, the one
door for image bytes (normalizing a built image, ``envkit verify``, the fleet's image tars, pushes).
Saving and loading run with a long client timeout (a multi-GB layer is minutes without a byte on
the socket; :func:`envkit.engine.docker_api.patient`); the client's own timeout is restored after.

Registry errors arrive inside the push/pull stream (``{"error": …}``), not as exceptions: they
become :class:`~envkit.errors.EngineError` with the registry's words and a hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import docker.errors
import requests.exceptions

from envkit._atomic import atomic_writer
from envkit.engine.docker_api import DockerEngine, patient, translate_error
from envkit.engine.store import ImageConfig, Pushed
from envkit.errors import EngineError

__all__ = ["DockerImageStore", "push_counts"]

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_REGISTRY_HINT = (
    "is the registry running and reachable from the Docker daemon? a plain-HTTP registry other than "
    "localhost/127.0.0.1 must be listed in the daemon's insecure-registries"
)
_LOAD_HINT = "check `docker info` (disk space) and retry"
_CHUNK = 4 << 20
SDK_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


def _errors(stream: Iterable[Any], what: str, hint: str = _REGISTRY_HINT) -> list[dict[str, Any]]:
    chunks = []
    for chunk in stream or ():
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            detail = chunk.get("errorDetail") or {}
            raise EngineError(f"{what}: {detail.get('message') or chunk['error']}", hint=hint)
        chunks.append(chunk)
    return chunks


def push_counts(chunks: Iterable[dict[str, Any]]) -> tuple[int, int, int]:
    """(layers uploaded, layers the registry had, bytes uploaded) from a push's progress stream:
    ``Pushed`` / ``Layer already exists`` / ``Mounted from REPO`` (a cross-repository mount: the registry
    had the blob under another name) per layer id, ``progressDetail.current`` while pushing."""
    done: set[str] = set()
    present: set[str] = set()
    sent: dict[str, int] = {}
    for chunk in chunks:
        layer, status = str(chunk.get("id") or ""), str(chunk.get("status") or "")
        if status == "Pushed":
            done.add(layer)
        elif status == "Layer already exists" or status.startswith("Mounted from "):
            present.add(layer)
        elif status == "Pushing":
            current = (chunk.get("progressDetail") or {}).get("current")
            if isinstance(current, int):
                sent[layer] = max(sent.get(layer, 0), current)
    return len(done), len(present - done), sum(sent.get(layer, 0) for layer in done)


class DockerImageStore:
    """:class:`~envkit.engine.store.ImageStore` on the engine of a :class:`DockerEngine`."""

    def __init__(self, engine: DockerEngine) -> None:
        self.api = engine.api

    def push(self, image: str, repository: str, tag: str) -> Pushed:
        try:
            self.api.tag(image, repository, tag, force=True)
            chunks = _errors(self.api.push(repository, tag=tag, stream=True, decode=True), f"pushing {image}")
        except EngineError:
            raise
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"pushing {repository}:{tag}") from e
        digests = [str((c.get("aux") or {}).get("Digest") or "") for c in chunks]
        digest = next((d for d in reversed(digests) if _DIGEST.fullmatch(d)), None)
        if digest is None:
            raise EngineError(f"the registry answered no digest for {repository}:{tag}", hint=_REGISTRY_HINT)
        sent, present, sent_bytes = push_counts(chunks)
        return Pushed(repository, tag, digest, sent, present, sent_bytes)

    def pull(self, ref: str) -> str:
        repository, _, digest = ref.partition("@")
        try:
            _errors(self.api.pull(repository, tag=digest or None, stream=True, decode=True), f"pulling {ref}")
            return str(self.api.inspect_image(ref)["Id"])
        except EngineError:
            raise
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"pulling {ref}") from e

    def save(self, image: str, path: Path) -> None:
        try:  # a fresh temp file (O_EXCL, random name) renamed over ``path``: never through a planted link
            with patient(self.api), atomic_writer(path) as out:
                for chunk in self.api.get_image(image, chunk_size=_CHUNK):
                    out.write(chunk)
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"saving {image}") from e

    def describe(self, image: str) -> ImageConfig | None:
        """From the engine's inspect and history: its ``Config`` is the config's ``config`` (one Go
        struct, marshalled alike). The history API does not say which entries made a layer: a
        ``#(nop)`` step of Docker's classic builder makes none but ``COPY`` and ``ADD``, a step with
        bytes makes one, and a ``RUN`` that changed nothing (0 bytes) makes none; a ``RUN`` of 0 bytes
        may also have made a layer of directories only, so such steps are told apart by the layer count,
        and the image is not described (None: normalizing then saves it whole) when that leaves a doubt,
        or for an image of another builder (BuildKit's history reads otherwise)."""
        try:
            data = self.api.inspect_image(image)
            entries = list(reversed(self.api.history(image) or ()))  # the API lists the newest first
        except docker.errors.NotFound:
            return None
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"describing {image}") from e
        diff_ids = [str(d) for d in ((data.get("RootFS") or {}).get("Layers") or ())]
        steps = [(str(e.get("CreatedBy") or ""), _step_layer(e)) for e in entries]
        layers, doubts = sum(m is True for _, m in steps), sum(m is None for _, m in steps)
        if layers == len(diff_ids):  # every 0-byte RUN changed nothing
            empty = [m is not True for _, m in steps]
        elif layers + doubts == len(diff_ids):  # every one made a layer (of directories)
            empty = [m is False for _, m in steps]
        else:
            return None
        if not isinstance(data.get("Config"), dict):
            return None
        history = [{"created_by": by, "empty_layer": e} for (by, _), e in zip(steps, empty, strict=True)]
        described: ImageConfig = {"architecture": data.get("Architecture"), "os": data.get("Os"),
                                     "config": data["Config"], "history": history,
                                     "rootfs": {"type": "layers", "diff_ids": diff_ids}}  # fmt: skip
        for key, field in (("variant", "Variant"), ("os.version", "OsVersion")):
            if data.get(field):
                described[key] = data[field]
        return described

    def load(self, archive: Path | BinaryIO) -> tuple[str, ...]:
        if not isinstance(archive, Path):  # an open file: the one that was checked, streamed as it is
            name = getattr(archive, "name", None)  # an int for a file opened from its descriptor
            return self._load(archive, name if isinstance(name, str) else "the image tar")
        try:
            with archive.open("rb") as data:
                return self._load(data, str(archive))
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"loading {archive}") from e

    def _load(self, data: BinaryIO, source: str) -> tuple[str, ...]:
        try:
            with patient(self.api):
                chunks = _errors(self.api.load_image(data), f"loading {source}", _LOAD_HINT)
            ids = []
            for chunk in chunks:
                text = str(chunk.get("stream") or "")
                if "Loaded image ID:" in text:
                    ids.append(text.split("Loaded image ID:", 1)[1].strip())
                elif "Loaded image:" in text:
                    name = text.split("Loaded image:", 1)[1].strip()
                    ids.append(str(self.api.inspect_image(name)["Id"]))
            return tuple(ids)
        except EngineError:
            raise
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"loading {source}") from e


def _step_layer(entry: Mapping[str, object]) -> bool | None:
    """Whether a classic-builder history entry made a layer: not a ``#(nop)`` step but a copy; a step
    with bytes did; a ``RUN`` of 0 bytes is in doubt (None): an empty change makes no layer, a change of
    directories only makes one."""
    by = str(entry.get("CreatedBy") or "")
    _, nop, step = by.partition("#(nop) ")
    if nop and not step.lstrip().startswith(("COPY ", "ADD ")):
        return False
    return True if entry.get("Size") != 0 or not by else None
