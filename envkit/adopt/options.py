"""What the user chose for ``envkit init --from``, as one typed value read by the reading and the plan."""

from __future__ import annotations

from dataclasses import dataclass

from envkit.adopt.sources.read import ImageReader

__all__ = ["AdoptOptions"]


@dataclass(frozen=True)
class AdoptOptions:
    """What the user chose: ``--name``, ``--cuda``, ``--python``, ``--keep-defaults``; and how an
    ``image:REF`` source is read (the CLI passes the Docker engine's reader)."""

    name: str | None = None
    cuda: str | None = None
    python: str | None = None
    keep_defaults: bool = False
    image_reader: ImageReader | None = None
    environment: str | None = None  # which environment of a multi-environment source (pixi)
