"""How a fleet run's image reaches every node, by digest.

* A pushed build (``envkit build NAME --push REGISTRY`` records ``.envkit/pushed/NAME.json``) or an
  ``--image REPO@sha256:…`` reference: each node pulls that reference; the engine checks the digest.
* Otherwise the local image is saved once into ``STORE/images/<id>.tar`` (the store every node sees)
  and each node checks the tar (one image, the recorded config digest, no tags:
  :mod:`envkit.fleet.image_tar`) before loading it. A tar already there is reused only when this
  user saved it; a link or another user's file is replaced (renamed over), never written through.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from envkit._atomic import check_within
from envkit.engine.protocol import ContainerEngine
from envkit.engine.push import read_pushed
from envkit.engine.store import ImageStore
from envkit.errors import ProbeError
from envkit.fleet.run_plan import image_tar_path
from envkit.probe.run import resolve_image

__all__ = ["image_for_fleet", "pushed_ref"]


def pushed_ref(root: Path, image: str) -> str | None:
    """The ``REPO@sha256:…`` that ``envkit build NAME --push`` recorded for ``image``, or None."""
    pushed = read_pushed(root, image.removeprefix("envkit/").split(":", 1)[0])
    return pushed.ref if pushed is not None else None


def image_for_fleet(
    engine: ContainerEngine, image_store: ImageStore, image: str, store: Path, root: Path
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
    if pushed is not None and pushed.image_id == info.id:
        return {"ref": pushed.ref, "id": info.id, "name": image}
    root = store.resolve()
    tar = image_tar_path(root, info.id)  # never resolved: a planted link there is replaced, not followed
    if not _ours(tar):
        tar.parent.mkdir(parents=True, exist_ok=True)
        check_within(tar, root)
        image_store.save(info.id, tar)
    return {"id": info.id, "tar": str(tar), "name": image}


def _ours(tar: Path) -> bool:
    """Whether ``tar`` is a regular file this user saved (owned, writable by nobody else): reuse it."""
    try:
        st = os.lstat(tar)
    except FileNotFoundError:
        return False
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_uid == os.geteuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )
