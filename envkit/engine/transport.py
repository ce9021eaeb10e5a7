"""Moving images between machines: push to / pull from a registry, save to / load from a file.

A fleet probe runs the same image on every node, by digest: ``envkit build NAME --push REGISTRY``
pushes it and records the registry's manifest digest; without a registry the image is saved once
into the shared store and loaded on each node, checked by its image id (the sha256 of its config).
:class:`envkit.engine.docker_transport.DockerTransport` is the Engine API adapter;
:class:`envkit.engine.testing.FakeTransport` serves unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["ImageTransport", "Pushed"]


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


class ImageTransport(Protocol):
    """Moving images between machines: registry push and pull, save and load."""

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
