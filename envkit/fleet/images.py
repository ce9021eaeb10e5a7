"""How a fleet run's image reaches every node, by digest.

* A pushed build (``envkit build NAME --push REGISTRY`` records ``.envkit/pushed/NAME.json``) or an
  ``--image REPO@sha256:…`` reference: each node pulls that reference; the engine checks the digest.
* Otherwise the local image is saved once into ``STORE/images/<id>.tar`` (the store every node sees)
  and each node loads it and checks that the loaded image id (the sha256 of the image config) is
  the one recorded in the run's manifest.
"""

from __future__ import annotations

from pathlib import Path

from envkit.engine.protocol import ContainerEngine
from envkit.engine.push import read_pushed
from envkit.engine.transport import ImageTransport
from envkit.errors import ProbeError
from envkit.probe.core import resolve_image

__all__ = ["image_for_fleet", "pushed_ref"]


def pushed_ref(root: Path, image: str) -> str | None:
    """The ``REPO@sha256:…`` that ``envkit build NAME --push`` recorded for ``image``, or None."""
    pushed = read_pushed(root, image.removeprefix("envkit/").split(":", 1)[0])
    return str(pushed["ref"]) if pushed is not None else None


def image_for_fleet(
    engine: ContainerEngine, transport: ImageTransport, image: str, store: Path, root: Path
) -> dict[str, str]:
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
        return {"ref": str(pushed["ref"]), "id": info.id, "name": image}
    tar = (store / "images" / f"{info.id.removeprefix('sha256:')[:24]}.tar").resolve()
    if not tar.is_file():
        tar.parent.mkdir(parents=True, exist_ok=True)
        transport.save(info.id, tar)
    return {"id": info.id, "tar": str(tar), "name": image}
