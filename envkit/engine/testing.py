"""An in-memory :class:`~envkit.engine.protocol.ContainerEngine` and
:class:`~envkit.engine.store.ImageStore` for unit tests (like httpx's MockTransport).

It records every call, keeps an ``images`` dict (tag -> ImageInfo), can be told
to fail a build (``build_error``) or to be unreachable (``unavailable``), and
answers ``run`` from ``run_results`` (keyed by image, by the argv joined with
spaces, or by a callable), else ``default_run``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO

from envkit.engine.protocol import (
    BUILDER_OF_LABEL,
    LAYER_LABEL,
    STAGE_LABEL,
    BuildContext,
    BuildEvent,
    ImageInfo,
    Mount,
    RunResult,
)
from envkit.engine.store import ImageConfig, Pushed
from envkit.errors import BuildFailed, EngineError, EngineUnavailable

__all__ = ["FakeBuild", "FakeEngine", "FakeImageStore", "FakeRun", "failing"]

RunAnswer = RunResult | Callable[[str, Sequence[str]], RunResult]


@dataclass(frozen=True)
class FakeBuild:
    """A build the fake engine was asked for: the context tar it read (``b""`` when the engine keeps
    no contexts), with the sha256 and size of what it read either way."""

    context: bytes
    tag: str
    labels: Mapping[str, str]
    nocache: bool
    network: bool = True
    context_sha256: str = ""
    context_size: int = 0


@dataclass(frozen=True)
class FakeRun:
    """A container run the fake engine was asked for."""

    image: str
    argv: tuple[str, ...]
    mounts: tuple[Mount, ...]
    env: Mapping[str, str] | None
    gpus: bool
    network: bool
    timeout_s: float | None = None


@dataclass
class FakeEngine:
    """An in-memory :class:`~envkit.engine.protocol.ContainerEngine` that records every call."""

    images_by_tag: dict[str, ImageInfo] = field(default_factory=dict)
    run_results: dict[str, RunAnswer] = field(default_factory=dict)
    default_run: RunResult = field(default_factory=lambda: RunResult(0, "", ""))
    handler: Callable[[FakeRun], RunResult] | None = None  # answers every run() when set
    build_events: Sequence[BuildEvent] = (
        BuildEvent("Step 1/2 : FROM base", step="1/2 FROM base"),
        BuildEvent("Step 2/2 : RUN pip install", step="2/2 RUN pip install"),
        BuildEvent("Successfully built"),
    )
    build_error: EngineError | None = None
    fail_after_events: int = 0  # with build_error: how many events come out before it is raised
    interrupt_build: bool = False  # raise KeyboardInterrupt mid-build (after tagging, as a race would)
    unavailable: bool = False
    user: str = "envkit"
    size: int = 123_456_789
    builds: list[FakeBuild] = field(default_factory=list)
    runs: list[FakeRun] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    tagged: list[tuple[str, str]] = field(default_factory=list)
    imports: list[tuple[bytes, str, tuple[str, ...]]] = field(default_factory=list)
    dangling: dict[str, ImageInfo] = field(default_factory=dict)  # id -> untagged image (builder stages)
    pruned: list[str] = field(default_factory=list)  # names given to prune_builder_images
    free: int | None = None  # free_bytes(): the engine's disk (None: unknown)
    keep_contexts: bool = True  # False: a build records only its context's sha256 and size (big contexts)

    def add_image(
        self, ref: str, image_id: str = "sha256:fake", labels: Mapping[str, str] | None = None
    ) -> ImageInfo:
        info = ImageInfo(image_id, (ref,), dict(labels or {}), self.user, self.size)
        self.images_by_tag[ref] = info
        return info

    def _check(self) -> None:
        if self.unavailable:
            raise EngineUnavailable("cannot reach the Docker daemon (fake)", hint="start dockerd")

    def build(
        self,
        context: BuildContext,
        tag: str,
        *,
        labels: Mapping[str, str],
        nocache: bool = False,
        network: bool = True,
    ) -> Iterator[BuildEvent]:
        self._check()
        read = _read_context(context, tag, keep=self.keep_contexts)  # as a daemon does: all, first
        self.builds.append(FakeBuild(read.data, tag, dict(labels), nocache, network, read.sha256, read.size))
        events = list(self.build_events)
        if self.build_error is not None:
            yield from events[: self.fail_after_events]
            raise self.build_error
        yield from events[: len(events) // 2]
        if self.interrupt_build:
            self._store(tag, read, labels)
            raise KeyboardInterrupt
        yield from events[len(events) // 2 :]
        self._store(tag, read, labels)

    def _store(self, tag: str, read: _ReadContext, labels: Mapping[str, str]) -> None:
        # like the legacy builder, leave the builder stage behind as an untagged image
        stage = {STAGE_LABEL: "builder", BUILDER_OF_LABEL: tag.split("/", 1)[-1].split(":")[0]}
        self.dangling[read.stage_id] = ImageInfo(read.stage_id, (), stage, self.user, self.size // 2)
        self.images_by_tag[tag] = ImageInfo(read.image_id, (tag,), dict(labels), self.user, self.size)

    def inspect(self, image: str, *, history: bool = False) -> ImageInfo | None:
        self._check()
        found = self.images_by_tag.get(image)
        if found is None:
            found = next((i for i in self.images_by_tag.values() if i.id == image), None)
        if found is None:
            return None
        tags = tuple(sorted(t for t, i in self.images_by_tag.items() if i.id == found.id))
        return replace(found, tags=tags)

    def images(self, label: str) -> list[ImageInfo]:
        self._check()
        key, _, value = label.partition("=")
        seen: dict[str, ImageInfo] = {}
        for info in self.images_by_tag.values():
            if key in info.labels and (not value or info.labels[key] == value):
                seen[info.id] = info
        stages = [
            i for i in self.dangling.values() if key in i.labels and (not value or i.labels[key] == value)
        ]
        return [i for i in (self.inspect(i.id) for i in seen.values()) if i is not None] + stages

    def tag(self, image: str, tag: str) -> None:
        self._check()
        found = self.inspect(image)
        if found is None:
            raise EngineError(f"no such image: {image}")
        self.tagged.append((image, tag))
        self.images_by_tag[tag] = found

    def remove(self, image: str) -> None:
        self._check()
        self.removed.append(image)
        self.images_by_tag.pop(image, None)

    def prune_builder_images(self, name: str, keep: Collection[str] = ()) -> int:
        self._check()
        self.pruned.append(name)
        gone = [
            i for i in self.dangling.values()
            if i.labels.get(STAGE_LABEL) == "builder" and i.labels.get(BUILDER_OF_LABEL) == name
            and i.labels.get(LAYER_LABEL) not in keep
        ]  # fmt: skip
        for info in gone:
            del self.dangling[info.id]
        return sum(i.size for i in gone)

    def free_bytes(self) -> int | None:
        self._check()
        return self.free

    def import_image(self, rootfs_tar: Path, tag: str, *, changes: Sequence[str] = ()) -> ImageInfo:
        self._check()
        self.imports.append((rootfs_tar.read_bytes(), tag, tuple(changes)))
        labels = dict(c.removeprefix("LABEL ").split("=", 1) for c in changes if c.startswith("LABEL "))
        return self.add_image(tag, "sha256:" + hashlib.sha256(rootfs_tar.read_bytes()).hexdigest(), labels)

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
        self._check()
        record = FakeRun(image, tuple(argv), tuple(mounts), env, gpus, network, timeout_s)
        self.runs.append(record)
        if self.handler is not None:
            return self.handler(record)
        if self.inspect(image) is None and image not in self.run_results:
            raise EngineError(f"no such image: {image}", hint="build it first")
        answer = self.run_results.get(" ".join(argv), self.run_results.get(image, self.default_run))
        return answer(image, argv) if callable(answer) else answer


def failing(message: str = "step 2 failed", tail: Sequence[str] = ("ERROR: boom",)) -> BuildFailed:
    """A ready-made build error for ``FakeEngine(build_error=failing())``."""
    return BuildFailed(message, hint="see the log", log_tail=tail)


@dataclass
class FakeImageStore:
    """An in-memory :class:`~envkit.engine.store.ImageStore`: images are ids; a "registry" maps refs
    to ids; saved files hold the id."""

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

    def load(self, archive: Path | BinaryIO) -> tuple[str, ...]:
        data = archive.read_bytes() if isinstance(archive, Path) else archive.read()
        image_id = data.decode().strip()
        self.images[image_id] = image_id
        return (image_id,)

    def describe(self, image: str) -> ImageConfig | None:
        return None  # normalizing then saves the whole image


@dataclass(frozen=True)
class _ReadContext:
    data: bytes  # b"" unless kept
    sha256: str
    size: int
    stage_id: str  # sha256 of b"builder" + the tar: the builder stage's image id
    image_id: str  # sha256 of the tar + the tag


_CHUNK = 1 << 20


def _read_context(context: BuildContext, tag: str, *, keep: bool) -> _ReadContext:
    """Read a build context (bytes, or a file from where it stands) in chunks, hashing as it goes."""
    whole, stage, image = hashlib.sha256(), hashlib.sha256(b"builder"), hashlib.sha256()
    kept: list[bytes] = []
    size = 0
    chunks: Iterable[bytes] = (
        [context] if isinstance(context, bytes) else iter(lambda: context.read(_CHUNK), b"")
    )
    for chunk in chunks:
        for digest in (whole, stage, image):
            digest.update(chunk)
        size += len(chunk)
        if keep:
            kept.append(chunk)
    image.update(tag.encode())
    return _ReadContext(
        b"".join(kept), whole.hexdigest(), size, "sha256:" + stage.hexdigest(), "sha256:" + image.hexdigest()
    )
