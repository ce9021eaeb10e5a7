"""FakeEngine: an in-memory ContainerEngine for unit tests (shipped like httpx's MockTransport).

Images are plain :class:`ImageInfo` values; ``run`` answers through ``handler`` (argv, env, mounts)
and records each call in ``runs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from envkit.build.engine import BuildEvent, ImageInfo, Mount, RunResult

__all__ = ["FakeEngine", "FakeRun"]


@dataclass(frozen=True)
class FakeRun:
    image: str
    argv: tuple[str, ...]
    mounts: tuple[Mount, ...]
    env: Mapping[str, str]
    gpus: bool


Handler = Callable[[FakeRun], RunResult]


def _no_handler(run: FakeRun) -> RunResult:
    return RunResult(127, "", f"FakeEngine: nothing answers {run.argv[0]}")


@dataclass
class FakeEngine:
    images: dict[str, ImageInfo] = field(default_factory=dict)
    handler: Handler = _no_handler
    runs: list[FakeRun] = field(default_factory=list)

    def add_image(self, ref: str, image_id: str = "sha256:fake") -> ImageInfo:
        info = ImageInfo(id=image_id, tags=(ref,), labels={}, user="root", size=0)
        self.images[ref] = info
        return info

    def build(
        self, context: bytes, tag: str, *, labels: Mapping[str, str], nocache: bool = False
    ) -> Iterator[BuildEvent]:
        self.images[tag] = ImageInfo(
            id=f"sha256:{len(context):064x}", tags=(tag,), labels=dict(labels), user="root", size=len(context)
        )
        yield BuildEvent(f"built {tag}", step="fake")

    def inspect(self, image: str) -> ImageInfo | None:
        return self.images.get(image)

    def tag(self, image: str, tag: str) -> None:
        self.images[tag] = self.images[image]

    def remove(self, image: str) -> None:
        self.images.pop(image, None)

    def run(
        self,
        image: str,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
        gpus: bool = False,
        network: bool = False,
    ) -> RunResult:
        call = FakeRun(image, tuple(argv), tuple(mounts), dict(env or {}), gpus)
        self.runs.append(call)
        return self.handler(call)
