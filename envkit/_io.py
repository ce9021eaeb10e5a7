"""Bounded reads: an endless input (``/dev/zero``, a FIFO) or a huge file is refused, not read forever."""

from __future__ import annotations

from pathlib import Path

__all__ = ["TooLarge", "read_bytes_bounded", "read_text_bounded"]


class TooLarge(Exception):
    """The file holds more than the limit allows."""

    def __init__(self, path: Path, limit: int) -> None:
        super().__init__(f"{path}: larger than {limit} bytes")
        self.path = path
        self.limit = limit


def read_bytes_bounded(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path``; :class:`TooLarge` when there are more (OSError as usual)."""
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(path, limit)
    return data


def read_text_bounded(path: Path, limit: int) -> str:
    """UTF-8 text of ``path`` (a leading BOM dropped), bounded like :func:`read_bytes_bounded`."""
    return read_bytes_bounded(path, limit).decode("utf-8").removeprefix("\ufeff")
