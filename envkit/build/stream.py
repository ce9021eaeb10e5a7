"""One build loop for every image envkit builds (the runtime image, the debug image).

:func:`stream_build` streams a build context to the engine and writes its events to the build's log,
keeping the last :data:`TAIL_LINES`; a failed build is rewrapped with that tail and the log's path;
a failed or interrupted one drops the tag it made (never one that named an image before); the
builder stages' untagged images are pruned after every build, except the layer stages kept as cache.
:func:`build_log` opens that log: a fresh file renamed into place, kept when the build fails.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import io
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from envkit._atomic import atomic_writer, state_dir
from envkit.engine.protocol import BuildEvent, ContainerEngine, ImageInfo
from envkit.errors import BuildFailed, EngineError
from envkit.render.context import ContextFiles, spooled_context_tar

__all__ = [
    "TAIL_LINES",
    "BuildJob",
    "EventSink",
    "build_log",
    "context_file",
    "drop_tag",
    "prune_builder",
    "stream_build",
]

TAIL_LINES = 25

EventSink = Callable[[BuildEvent], None]


@contextlib.contextmanager
def context_file(root: Path, context: ContextFiles) -> Iterator[BinaryIO]:
    """The context's tar in an anonymous file under ``ROOT/.envkit/tmp`` (beside the wheelhouse, not a
    tmpfs ``/tmp``), at its start: what the engine streams. A host error writing it (a full disk) is a
    failed build."""
    directory = state_dir(root, "tmp")
    with contextlib.ExitStack() as stack:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            tar = stack.enter_context(spooled_context_tar(context, directory))
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            hint = (
                f"free disk space where {directory} lives (the context, {context.size:,} bytes, is written "
                "there once per build)"
                if e.errno == errno.ENOSPC
                else f"check {e.filename or directory}; a wheelhouse or cache file that changed or went away "
                "is fetched again once `.envkit/wheelhouse` (or `.envkit/cache`) is removed"
            )
            raise BuildFailed(
                f"could not write the build context to {directory}: {where}{e.strerror or e}", hint=hint
            ) from e
        yield tar


@contextlib.contextmanager
def build_log(path: Path, root: Path, header: str) -> Iterator[TextIO]:
    """The build's log at ``path`` (under ``root``), opened with ``header``: a fresh file renamed into
    place, kept when the build fails, never written through a planted link."""
    with atomic_writer(path, within=root, keep_on_error=True) as raw:
        log = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
        try:
            log.write(header)
            yield log
        finally:
            log.detach()


@dataclass(frozen=True)
class BuildJob:
    """One image build: its context, tag and labels, and what a failure or the pruning must keep."""

    context: ContextFiles
    tag: str
    labels: Mapping[str, str]
    name: str  # the spec's name: its builder-stage images are pruned after the build
    nocache: bool = False
    network: bool = False
    existing: ImageInfo | None = None  # what ``tag`` named before: a failed build leaves it in place
    keep: frozenset[str] = frozenset()  # builder stages kept (the layer stages: the next build's cache)


def stream_build(
    engine: ContainerEngine,
    root: Path,
    job: BuildJob,
    log: TextIO,
    log_path: Path,
    on_event: EventSink | None = None,
) -> int:
    """Build ``job`` through ``engine``, its events into ``log`` (and ``on_event``); the bytes pruned."""
    try:
        _stream(engine, root, job, log, log_path, on_event)
    finally:
        pruned = prune_builder(engine, job.name, log, job.keep)
    return pruned


def _stream(
    engine: ContainerEngine,
    root: Path,
    job: BuildJob,
    log: TextIO,
    log_path: Path,
    on_event: EventSink | None,
) -> None:
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    try:
        with context_file(root, job.context) as tar:  # streamed from a file: never the context in memory
            events = engine.build(
                tar, job.tag, labels=dict(job.labels), nocache=job.nocache, network=job.network
            )
            for event in events:
                for line in event.message.splitlines():
                    log.write(line + "\n")
                    tail.append(line)
                if on_event:
                    on_event(event)
    except BuildFailed as e:
        log.write(f"# FAILED: {e.message}\n")
        drop_tag(engine, job.tag, job.existing)
        raise BuildFailed(
            f"building {job.tag} failed: {e.message}\nfull log: {log_path}",
            hint=e.hint or f"read the log: {log_path}",
            log_tail=e.log_tail or tuple(tail),
        ) from e
    except (KeyboardInterrupt, EngineError):
        log.write("# INTERRUPTED or engine error\n")
        drop_tag(engine, job.tag, job.existing)
        raise


def drop_tag(engine: ContainerEngine, tag: str, existing: ImageInfo | None) -> None:
    """Remove ``tag`` unless it still points at the image it named before this build."""
    try:
        now = engine.inspect(tag)
        if now is not None and (existing is None or now.id != existing.id):
            engine.remove(tag)
    except EngineError:
        pass  # best effort: the original error is more useful than this one


def prune_builder(engine: ContainerEngine, name: str, log: TextIO, keep: frozenset[str] = frozenset()) -> int:
    """Remove the builder stages' untagged images (hundreds of MB), except the layer stages in ``keep``;
    best effort."""
    try:
        freed = engine.prune_builder_images(name, keep)
    except EngineError as e:
        log.write(f"# could not remove the builder-stage images: {e.message}\n")
        return 0
    log.write(f"# removed the builder-stage images: {freed} bytes\n")
    return freed
