"""``envkit build NAME --push REGISTRY``: push the built image and record the registry's digest.

The record (``.envkit/pushed/NAME.json``: image id, repository, tag, digest, ``REPO@sha256:…``
reference) is what a fleet probe reads to run exactly this image on every node, by digest.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from envkit._atomic import state_dir, write_text_atomic
from envkit.engine.store import ImageStore, Pushed
from envkit.errors import UsageError

__all__ = ["PushRecord", "check_registry", "push_image", "pushed_path", "read_pushed"]

_REGISTRY = re.compile(
    r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._/-][a-z0-9]+)*)?\Z"
)


@dataclass(frozen=True)
class PushRecord:
    """``.envkit/pushed/NAME.json``: what ``envkit build NAME --push`` pushed, and the registry's digest."""

    ref: str  # REPO@sha256:…, what a fleet runs
    image_id: str | None  # the local image pushed (None: a record that does not say)
    name: str = ""
    image: str = ""  # envkit/NAME:<hash12>
    repository: str = ""
    tag: str = ""
    digest: str = ""

    def to_json(self) -> dict[str, str | None]:
        return asdict(self)

    @staticmethod
    def from_json(data: object) -> PushRecord | None:
        """The record in ``data``, or None unless it is an object with a ``ref`` (a string)."""
        if not isinstance(data, dict) or not isinstance(data.get("ref"), str) or not data["ref"]:
            return None

        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        image_id = data.get("image_id")
        return PushRecord(
            data["ref"], image_id if isinstance(image_id, str) else None, text("name"), text("image"),
            text("repository"), text("tag"), text("digest"),
        )  # fmt: skip


def check_registry(registry: str) -> str:
    value = registry.strip().removeprefix("http://").removeprefix("https://").rstrip("/")
    if not _REGISTRY.match(value):
        raise UsageError(
            f"invalid registry {registry!r}",
            hint="give HOST[:PORT][/PREFIX], e.g. 127.0.0.1:5000 or registry.example.org/team",
        )
    return value


def pushed_path(root: Path, name: str) -> Path:
    return state_dir(root, "pushed") / f"{name}.json"


def push_image(
    store: ImageStore, root: Path, name: str, image: str, image_id: str, registry: str
) -> tuple[Pushed, Path]:
    """Push ``image`` (envkit/NAME:<hash12>) as REGISTRY/envkit/NAME:<hash12>; record the digest."""
    repository = f"{check_registry(registry)}/envkit/{name}"
    tag = image.rsplit(":", 1)[-1]
    pushed = store.push(image, repository, tag)
    path = pushed_path(root, name)
    record = PushRecord(pushed.ref, image_id, name, image, repository, tag, pushed.digest)
    write_text_atomic(path, json.dumps(record.to_json(), indent=1, sort_keys=True) + "\n", within=root)
    return pushed, path


def read_pushed(root: Path, name: str) -> PushRecord | None:
    """The push record of NAME, or None."""
    try:
        data = json.loads(pushed_path(root, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return PushRecord.from_json(data)
