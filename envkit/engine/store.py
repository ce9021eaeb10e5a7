"""The image store, the one door for image bytes: push to / pull from a registry, save to / load from a file.

A fleet probe runs the same image on every node, by digest: ``envkit build NAME --push REGISTRY``
pushes it and records the registry's manifest digest; without a registry the image is saved once
into the shared store and loaded on each node, checked by its image id (the sha256 of its config).
Normalizing a built image saves it (or, after a rebuild that changed only its top layers, describes
it and saves one-layer images of those) and loads it back; ``envkit verify`` saves two images.
:class:`envkit.engine.docker_store.DockerImageStore` is the Engine API adapter;
:class:`envkit.engine.testing.FakeImageStore` serves unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

__all__ = ["ImageConfig", "ImageStore", "Pushed"]

# an image's config as JSON (the object whose sha256 is the image ID): what ``docker save`` holds, and
# what :meth:`ImageStore.describe` gives the parts of that normalizing keeps
ImageConfig = dict[str, Any]


@dataclass(frozen=True)
class Pushed:
    """An image in a registry: ``ref`` (``REGISTRY/REPO@sha256:…``) names exactly these bytes."""

    repository: str  # REGISTRY/REPO
    tag: str
    digest: str  # sha256:… of the manifest, as the registry answered
    layers_sent: int = 0  # layers the registry lacked: uploaded
    layers_present: int = 0  # layers the registry had ("Layer already exists"): not uploaded
    bytes_sent: int = 0  # the uploaded layers' bytes as the engine counted them (uncompressed)

    @property
    def ref(self) -> str:
        return f"{self.repository}@{self.digest}"


class ImageStore(Protocol):
    """Image bytes in and out of the engine: five operations (push, pull, save, load, describe)."""

    def push(self, image: str, repository: str, tag: str) -> Pushed:
        """Tag ``image`` as ``repository:tag`` and push it; return the digest the registry answered."""
        ...

    def pull(self, ref: str) -> str:
        """Pull ``ref`` (a ``REPO@sha256:…`` reference is checked by the engine); return the image id."""
        ...

    def save(self, image: str, path: Path) -> None:
        """Write ``image`` as a ``docker save`` tar to ``path``."""
        ...

    def load(self, archive: Path | BinaryIO) -> tuple[str, ...]:
        """Load a ``docker save`` tar (a path, or an open file read from where it stands: the one that
        was checked); return the ids of the images it held."""
        ...

    def describe(self, image: str) -> ImageConfig | None:
        """The parts of ``image``'s config that normalizing keeps, without saving it (None: not
        described here, or not an image of a builder whose history says which steps made layers):
        ``architecture``, ``os`` (and ``variant``, ``os.version``, ``os.features`` when set),
        ``config``, ``rootfs``, and ``history`` with each entry's ``created_by`` and ``empty_layer``
        only (no dates: those of the base's entries come from the base's own config)."""
        ...
