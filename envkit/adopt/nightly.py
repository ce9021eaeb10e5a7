"""Nightly framework builds (the ``pytorch-nightly`` conda channel, ``download.pytorch.org/whl/nightly``,
Paddle's ``packages/nightly`` index, a ``torch==2.5.0.dev20240912`` pin): refused, never read as the
newest release. envkit builds released framework versions; a nightly is a different build every day."""

from __future__ import annotations

import re

from envkit.adopt.evidence import AdoptError, Collected, CondaPin, PipPin, shown_item

__all__ = ["nightly_evidence", "refuse_nightly"]

_FRAMEWORKS = {"torch", "pytorch", "pytorch-gpu", "paddlepaddle", "paddlepaddle-gpu"}
_NIGHTLY_INDEX = re.compile(
    r"download\.pytorch\.org/whl/nightly|paddlepaddle\.org\.cn/packages/nightly", re.I
)
_DEV = re.compile(r"^\d+(?:\.\d+)*\.dev\d{6,}(?:\+[\w.]+)?\Z|^0\.0\.0(?:\.post\d+)?\Z")


def nightly_evidence(found: Collected) -> list[str]:
    """What says the framework is a nightly build, each with where it was read."""
    every: list[PipPin | CondaPin] = [*found.pip, *found.conda]
    pins = [p for p in every if p.name in _FRAMEWORKS]
    if not pins:
        return []
    said = [f"{shown_item(p.spec)} ({p.where})" for p in pins if _DEV.match(p.version)]
    if any(not p.version or _DEV.match(p.version) for p in pins):  # a released pin is not a nightly's
        urls = [*found.index_urls, *found.extra_urls]
        said += [f"{shown_item(u)} ({w})" for u, w in urls if _NIGHTLY_INDEX.search(u)]
    if any(c.lower().rstrip("/").endswith("pytorch-nightly") for c in found.channels) and any(
        isinstance(p, CondaPin) for p in pins
    ):
        said.append(f"the conda channel pytorch-nightly ({found.origin})")
    return said


def refuse_nightly(found: Collected) -> None:
    said = nightly_evidence(found)
    if said:
        raise AdoptError(
            f"{found.origin}: the framework is a nightly build ({'; '.join(said[:4])}): envkit builds "
            "released framework versions, and a nightly is another build every day; nothing was written",
            hint="pin the release the project needs (e.g. torch==2.5.1) in the source, then rerun",
        )
