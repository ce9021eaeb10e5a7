"""``docker save`` / ``docker load`` and the image facts normalization needs, on the Engine API.

:class:`~envkit.engine.protocol.ImageArchive` is the seam (the build's
:class:`~envkit.engine.protocol.ContainerEngine` has no save or load); :class:`DockerArchive` is its
Docker adapter. Errors become
:class:`~envkit.errors.EngineError` at this edge, through the engine adapter's ``translate_error``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from envkit.engine.protocol import ImageFacts
from envkit.errors import EngineError

__all__ = ["DockerArchive"]

_TIMEOUT_S = 3 * 3600  # saving or loading a multi-GB image: minutes without a byte on the socket
_CHUNK = 4 << 20


class DockerArchive:
    """:class:`~envkit.engine.protocol.ImageArchive` on the Docker Engine API: the engine adapter's
    client, long timeouts while saving or loading (a multi-GB layer is minutes without a byte on the
    socket)."""

    def __init__(self, client: Any) -> None:
        from envkit.engine.docker_api import translate_error

        self._translate = translate_error
        self._errors = _sdk_errors()
        self.api = client

    @contextmanager
    def _patient(self) -> Iterator[None]:
        before = self.api.timeout
        self.api.timeout = _TIMEOUT_S
        try:
            yield
        finally:
            self.api.timeout = before

    def facts(self, image: str) -> ImageFacts | None:
        import docker.errors

        try:
            data = self.api.inspect_image(image)
            history = self.api.history(image)
        except docker.errors.NotFound:
            return None
        except self._errors as e:
            raise self._translate(e, what=f"inspecting {image}") from e
        config = data.get("Config") or {}
        return ImageFacts(
            id=str(data.get("Id", "")),
            diff_ids=tuple(str(d) for d in (data.get("RootFS") or {}).get("Layers") or ()),
            history=len(history or ()),
            labels=dict(config.get("Labels") or {}),
            tags=tuple(sorted(data.get("RepoTags") or ())),
        )

    def save(self, image: str, dest: Path) -> None:
        try:
            with self._patient(), dest.open("wb") as out:
                for chunk in self.api.get_image(image, chunk_size=_CHUNK):
                    out.write(chunk)
        except self._errors as e:
            raise self._translate(e, what=f"saving {image}") from e

    def load(self, archive: Path) -> tuple[str, ...]:
        messages: list[str] = []
        try:
            with self._patient(), archive.open("rb") as fh:
                for chunk in _chunks(self.api.load_image(fh)):
                    if "error" in chunk:
                        detail = chunk.get("errorDetail") or {}
                        message = detail.get("message") or chunk["error"]
                        raise EngineError(f"docker load of {archive.name}: {message}",
                                          hint="check `docker info` (disk space) and retry")  # fmt: skip
                    text = str(chunk.get("stream") or chunk.get("status") or "").strip()
                    if text:
                        messages.append(text)
        except self._errors as e:
            raise self._translate(e, what=f"loading {archive.name}") from e
        return tuple(messages)

    def remove(self, image: str) -> None:
        import docker.errors

        try:
            with self._patient():  # a CUDA image's layers (GBs) take minutes to delete on a busy disk
                self.api.remove_image(image, noprune=False)
        except docker.errors.NotFound:
            return
        except self._errors as e:
            raise self._translate(e, what=f"removing {image}") from e


def _chunks(stream: Any) -> Iterator[dict[str, Any]]:
    for chunk in stream or ():
        if isinstance(chunk, dict):
            yield chunk


def _sdk_errors() -> tuple[type[BaseException], ...]:
    import docker.errors
    import requests.exceptions

    return (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
