"""How a fleet run's image reaches every node, by digest.

* A pushed build (``envkit build NAME --push REGISTRY`` records ``.envkit/pushed/NAME.json``) or an
  ``--image REPO@sha256:…`` reference: each node pulls that reference; the engine checks the digest.
* Otherwise the local image is saved once into ``STORE/images/<id>.tar`` (the store every node sees)
  and each node loads it and checks that the loaded image id (the sha256 of the image config) is
  the one recorded in the run's manifest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envkit._atomic import write_text_atomic
from envkit.build.engine import ContainerEngine
from envkit.build.transport import ImageTransport, Pushed
from envkit.errors import ProbeError
from envkit.probe.core import resolve_image
from envkit.probe.report import safe_name

__all__ = ["image_for_fleet", "pushed_path", "read_pushed", "record_pushed"]


def pushed_path(root: Path, name: str) -> Path:
    return root / ".envkit" / "pushed" / f"{safe_name(name)}.json"


def record_pushed(root: Path, name: str, image_id: str, pushed: Pushed) -> Path:
    """Remember where ``envkit build NAME --push`` put the image (read by the fleet probe)."""
    path = pushed_path(root, name)
    data = {"name": name, "image_id": image_id, "repository": pushed.repository, "tag": pushed.tag,
            "digest": pushed.digest, "ref": pushed.ref}  # fmt: skip
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def read_pushed(root: Path, name: str) -> dict[str, Any] | None:
    path = pushed_path(root, name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("ref") else None


def image_for_fleet(
    engine: ContainerEngine, transport: ImageTransport, image: str, store: Path, root: Path
) -> dict[str, Any]:
    """The manifest's ``image``: ``{"ref": REPO@sha256:…}`` or ``{"id": …, "tar": STORE/images/….tar}``."""
    if "@sha256:" in image:
        return {"ref": image, "name": image}
    ref = resolve_image(engine, image)
    info = engine.inspect(ref)
    if info is None:
        raise ProbeError(f"image {image} does not exist here", hint=f"build it first: `envkit build {image}`")
    name = ref.split("/", 1)[-1].split(":", 1)[0] if ref.startswith("envkit/") else image
    pushed = read_pushed(root, name)
    if pushed is not None and pushed.get("image_id") == info.id:
        return {"ref": pushed["ref"], "id": info.id, "name": image}
    tar = (store / "images" / f"{info.id.removeprefix('sha256:')[:24]}.tar").resolve()
    if not tar.is_file():
        tar.parent.mkdir(parents=True, exist_ok=True)
        transport.save(info.id, tar)
    return {"id": info.id, "tar": str(tar), "name": image}
