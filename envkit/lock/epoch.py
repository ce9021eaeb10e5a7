"""``SOURCE_DATE_EPOCH`` of an image: a date derived from the lock digest, never from the clock.

The Reproducible Builds convention (https://reproducible-builds.org/specs/source-date-epoch/):
one timestamp every tool of the build uses instead of "now". envkit's lock has no date of its
own (``envkit lock`` writes no timestamps, so relocking gives identical bytes), so the date is
*derived* from the lock's digest: the same lock always gives the same second, another lock
another one. It lies between 2020-01-01 and 2025-01-01, before any build. It dates the image
(its config's ``created`` and history).

The files of the image's layers carry :data:`LAYER_EPOCH` instead, one date for every lock: the
tools of the build see it as ``SOURCE_DATE_EPOCH`` and normalizing clamps every file time to it.
A layer's bytes then follow its content alone (issue 47: the same packages give the same layer
digest, whichever lock they came from); with the lock's date they changed with every pin.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = [
    "EPOCH_LABEL",
    "EPOCH_START",
    "EPOCH_WINDOW_S",
    "LAYER_EPOCH",
    "epoch_rfc3339",
    "source_date_epoch",
]

EPOCH_LABEL = "io.envkit.source-date-epoch"
EPOCH_START = 1_577_836_800  # 2020-01-01T00:00:00Z
EPOCH_WINDOW_S = 5 * 365 * 86_400  # up to 2024-12-30
LAYER_EPOCH = EPOCH_START  # every layer file's time: at or before every image's date
_HEX = re.compile(r"^[0-9a-f]{16,}\Z")


def source_date_epoch(digest: str) -> int:
    """The epoch of the lock (or, unlocked, the spec) with hex ``digest``: stable, no clock."""
    if not _HEX.match(digest):
        raise ValueError(f"not a hex digest: {digest!r}")
    return EPOCH_START + int(digest[:12], 16) % EPOCH_WINDOW_S


def epoch_rfc3339(epoch: int) -> str:
    """``epoch`` as the image config writes ``created``: ``2023-04-05T06:07:08Z``."""
    return dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
