"""Push, pull, save, load and remove images through the Docker Engine API (the SDK's ``APIClient``).

:class:`DockerTransport` is the Docker adapter of both image seams:
:class:`~envkit.engine.transport.ImageTransport` (the fleet: push, pull, save, load) and
:class:`~envkit.engine.protocol.ImageArchive` (normalizing a built image, ``envkit verify``: facts,
save, load, remove); save and load are written here once.
Saving, loading and removing run with a long client timeout (a multi-GB layer is minutes without a
byte on the socket); the client's own timeout is restored after.

Registry errors arrive inside the push/pull stream (``{"error": …}``), not as exceptions: they
become :class:`~envkit.errors.EngineError` with the registry's words and a hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

import docker.errors
import requests.exceptions

from envkit._atomic import atomic_writer
from envkit.engine.docker_api import DockerEngine, image_info, translate_error
from envkit.engine.protocol import ImageInfo
from envkit.engine.transport import Pushed
from envkit.errors import EngineError

__all__ = ["DockerTransport", "push_counts"]

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_REGISTRY_HINT = (
    "is the registry running and reachable from the Docker daemon? a plain-HTTP registry other than "
    "localhost/127.0.0.1 must be listed in the daemon's insecure-registries"
)
_LOAD_HINT = "check `docker info` (disk space) and retry"
_CHUNK = 4 << 20
_TIMEOUT_S = 3 * 3600  # saving, loading or removing a multi-GB image: minutes without a byte on the socket
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
    ``Pushed`` / ``Layer already exists`` per layer id, ``progressDetail.current`` while pushing."""
    done: set[str] = set()
    present: set[str] = set()
    sent: dict[str, int] = {}
    for chunk in chunks:
        layer, status = str(chunk.get("id") or ""), str(chunk.get("status") or "")
        if status == "Pushed":
            done.add(layer)
        elif status == "Layer already exists":
            present.add(layer)
        elif status == "Pushing":
            current = (chunk.get("progressDetail") or {}).get("current")
            if isinstance(current, int):
                sent[layer] = max(sent.get(layer, 0), current)
    return len(done), len(present - done), sum(sent.get(layer, 0) for layer in done)


class DockerTransport:
    """:class:`~envkit.engine.transport.ImageTransport` and :class:`~envkit.engine.protocol.ImageArchive`
    on the engine of a :class:`DockerEngine`."""

    def __init__(self, engine: DockerEngine) -> None:
        self.engine = engine
        self.api = engine.api

    @contextmanager
    def _patient(self) -> Iterator[None]:
        before = self.api.timeout
        self.api.timeout = _TIMEOUT_S
        try:
            yield
        finally:
            self.api.timeout = before

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

    def facts(self, image: str) -> ImageInfo | None:
        try:
            data = self.api.inspect_image(image)
            history = self.api.history(image)
        except docker.errors.NotFound:
            return None
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"inspecting {image}") from e
        return replace(image_info(data), history=len(history or ()))

    def remove(self, image: str) -> None:
        with self._patient():  # a CUDA image's layers (GBs) take minutes to delete on a busy disk
            self.engine.remove(image)

    def save(self, image: str, path: Path) -> None:
        try:  # a fresh temp file (O_EXCL, random name) renamed over ``path``: never through a planted link
            with self._patient(), atomic_writer(path) as out:
                for chunk in self.api.get_image(image, chunk_size=_CHUNK):
                    out.write(chunk)
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"saving {image}") from e

    def load(self, path: Path) -> tuple[str, ...]:
        try:
            with path.open("rb") as data:
                return self.load_from(data, str(path))
        except SDK_ERRORS as e:
            raise translate_error(e, what=f"loading {path}") from e

    def load_from(self, data: BinaryIO, source: str) -> tuple[str, ...]:
        """``docker load`` from an open file (the one that was checked); the loaded image ids."""
        try:
            with self._patient():
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
