"""Moving images between machines: push to / pull from a registry, save to / load from a file.

A fleet probe runs the same image on every node, by digest: ``envkit build NAME --push REGISTRY``
pushes it and records the registry's manifest digest; without a registry the image is saved once
into the shared store and loaded on each node, checked by its image id (the sha256 of its config).
:class:`envkit.engine.docker_transport.DockerTransport` is the Engine API adapter; :class:`FakeTransport`
serves unit tests.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from envkit.errors import EngineError

__all__ = ["FakeTransport", "ImageTransport", "Pushed"]


@dataclass(frozen=True)
class Pushed:
    """An image in a registry: ``ref`` (``REGISTRY/REPO@sha256:…``) names exactly these bytes."""

    repository: str  # REGISTRY/REPO
    tag: str
    digest: str  # sha256:… of the manifest, as the registry answered

    @property
    def ref(self) -> str:
        return f"{self.repository}@{self.digest}"


class ImageTransport(Protocol):
    def push(self, image: str, repository: str, tag: str) -> Pushed:
        """Tag ``image`` as ``repository:tag`` and push it; return the digest the registry answered."""
        ...

    def pull(self, ref: str) -> str:
        """Pull ``ref`` (a ``REPO@sha256:…`` reference is checked by the engine); return the image id."""
        ...

    def save(self, image: str, path: Path) -> None:
        """Write ``image`` as a ``docker save`` tar to ``path``."""
        ...

    def load(self, path: Path) -> tuple[str, ...]:
        """Load a ``docker save`` tar; return the ids of the images it held."""
        ...


@dataclass
class FakeTransport:
    """In memory: images are ids; a "registry" maps refs to ids; saved files hold the id."""

    images: dict[str, str] = field(default_factory=dict)  # name or tag -> image id
    registry: dict[str, str] = field(default_factory=dict)  # repo@digest -> image id
    pulls: list[str] = field(default_factory=list)

    def push(self, image: str, repository: str, tag: str) -> Pushed:
        image_id = self.images.get(image)
        if image_id is None:
            raise EngineError(f"no such image: {image}", hint="build it first")
        digest = "sha256:" + hashlib.sha256(f"{repository}:{image_id}".encode()).hexdigest()
        self.registry[f"{repository}@{digest}"] = image_id
        return Pushed(repository, tag, digest)

    def pull(self, ref: str) -> str:
        self.pulls.append(ref)
        image_id = self.registry.get(ref)
        if image_id is None:
            raise EngineError(f"the registry has no {ref}", hint="push it first")
        self.images[ref] = image_id
        return image_id

    def save(self, image: str, path: Path) -> None:
        image_id = self.images.get(image, image)
        path.write_text(image_id)

    def load(self, path: Path) -> tuple[str, ...]:
        image_id = path.read_text().strip()
        self.images[image_id] = image_id
        return (image_id,)
