"""The container engine interface: plain values in and out, no SDK objects.

Adapters (``docker_api.py``) translate SDK errors into :mod:`envkit.errors`;
:class:`envkit.engine.testing.FakeEngine` serves the unit tests of the layers above. Image bytes in
and out of the engine (save, load, push, pull) are the :class:`envkit.engine.store.ImageStore`'s.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol, TypeAlias

__all__ = [
    "BUILDER_OF_LABEL",
    "STAGE_LABEL",
    "BuildContext",
    "BuildEvent",
    "ContainerEngine",
    "ImageInfo",
    "Mount",
    "RunResult",
]

# The builder stage's image is left untagged by the legacy builder; these labels (written by
# envkit.render.dockerfile) let `envkit build` find and remove it (a different key than
# io.envkit.name, which marks images).
STAGE_LABEL = "io.envkit.stage"
BUILDER_OF_LABEL = "io.envkit.builder-of"
# a layer stage's group and lock digest, set by the stage's LAST step: only a stage that ran to its end
# carries it (a build stopped inside a stage leaves an image without it), and only such a stage is kept
# as the build cache. (It was `io.envkit.layer`, set first: an interrupted build left a labelled image
# with no /stage, which the next build reused: "COPY failed: stat stage/: file does not exist".)
LAYER_LABEL = "io.envkit.layer-stage"

# A build context tar: its bytes, or a binary file read from its current position to its end (the
# adapter streams it: `envkit build` writes the context to a temporary file, never to memory).
BuildContext: TypeAlias = bytes | BinaryIO


@dataclass(frozen=True)
class BuildEvent:
    """One line of build output; ``step`` is set when a new Dockerfile step starts."""

    message: str
    step: str | None = None
    error: bool = False


@dataclass(frozen=True)
class ImageInfo:
    """An image as the engine describes it: id, tags, labels, user, size, its layers.

    ``history`` (the entries of the config's history, which normalizing needs of the base image) is
    counted only when :meth:`ContainerEngine.inspect` is asked for it (``history=True``), else None.
    """

    id: str
    tags: tuple[str, ...]
    labels: Mapping[str, str]
    user: str
    size: int
    diff_ids: tuple[str, ...] = ()  # RootFS.Layers, bottom first
    history: int | None = None


@dataclass(frozen=True)
class Mount:
    """A host path mounted into a container (read-only by default)."""

    source: str  # host path
    target: str  # container path
    read_only: bool = True


@dataclass(frozen=True)
class RunResult:
    """What a container run printed, and its exit code."""

    exit_code: int
    stdout: str
    stderr: str


class ContainerEngine(Protocol):
    """What envkit needs from Docker (or podman): nine operations (build, inspect, images, tag, remove,
    prune_builder_images, free_bytes, import_image, run). Image bytes (save, load, push, pull) go
    through the :class:`~envkit.engine.store.ImageStore` only."""

    def build(
        self,
        context: BuildContext,
        tag: str,
        *,
        labels: Mapping[str, str],
        nocache: bool = False,
        network: bool = True,
    ) -> Iterator[BuildEvent]:
        """Build from a tar ``context`` (bytes, or a file streamed from where it stands); yield events;
        tag only on success (raise BuildFailed).

        ``network=False`` runs the build steps without any network (air-gapped builds).
        """
        ...

    def inspect(self, image: str, *, history: bool = False) -> ImageInfo | None:
        """The image's metadata, or None when it does not exist; ``history``: count its history too."""
        ...

    def images(self, label: str) -> list[ImageInfo]:
        """Every image carrying ``label`` (a key, or ``key=value``)."""
        ...

    def tag(self, image: str, tag: str) -> None: ...

    def remove(self, image: str) -> None:
        """Remove an image or tag; a missing one is not an error (a CUDA image's layers: minutes)."""
        ...

    def prune_builder_images(self, name: str, keep: Collection[str] = ()) -> int:
        """Remove the untagged builder-stage images of environment ``name``; return bytes freed.

        Those images carry ``io.envkit.stage=builder`` and ``io.envkit.builder-of=NAME``
        (see :mod:`envkit.render.dockerfile`); tagged images are never touched, nor layer stages
        whose ``io.envkit.layer-stage`` label is in ``keep`` (the next build's cache).
        """
        ...

    def free_bytes(self) -> int | None:
        """Free space of the file system that holds the engine's images (None: not known here, e.g. a
        remote engine)."""
        ...

    def import_image(self, rootfs_tar: Path, tag: str, *, changes: Sequence[str] = ()) -> ImageInfo:
        """``docker import``: make an image from a root filesystem tarball (no registry needed)."""
        ...

    def run(
        self,
        image: str,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
        gpus: bool = False,
        network: bool = False,
        timeout_s: float | None = None,
    ) -> RunResult:
        """Run ``argv`` in a fresh container (removed afterwards) and capture its output.

        Bounded (:mod:`envkit.engine.run_bounds`): past ``timeout_s`` seconds (None: the engine's
        default, a few minutes) :class:`~envkit.errors.ContainerTimedOut`; more output than the
        engine reads, :class:`~envkit.errors.ContainerOutputTooLarge`. Either way the container is
        stopped and removed.
        """
        ...
