"""Bounded reads: an endless input (``/dev/zero``, a FIFO) or a huge file is refused, not read forever."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from envkit.errors import UsageError

__all__ = [
    "NotRegular",
    "TooLarge",
    "load_json_bounded",
    "open_regular",
    "read_bytes_bounded",
    "read_limited",
    "read_text_bounded",
    "too_deep",
]


class TooLarge(UsageError):
    """The file holds more than the limit allows (exit 2 if it reaches the CLI; callers name its role)."""

    def __init__(self, path: Path, limit: int) -> None:
        super().__init__(f"{path}: larger than {limit} bytes")
        self.path = path
        self.limit = limit


def read_bytes_bounded(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (a link to one is followed).

    :class:`TooLarge` when there are more (said from its size, before any byte is read);
    :class:`NotRegular` for a FIFO, a device, a socket or a directory, which is never waited on
    (opened ``O_NONBLOCK``, then checked); other OS errors as usual.
    """
    with open_regular(path, follow=True) as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            raise TooLarge(path, limit)
        return read_limited(fh, limit, path)


def read_limited(fh: BinaryIO, limit: int, path: Path) -> bytes:
    """The rest of the open ``fh``, at most ``limit`` bytes; :class:`TooLarge` (naming ``path``) beyond."""
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(path, limit)
    return data


def read_text_bounded(path: Path, limit: int) -> str:
    """UTF-8 text of ``path`` (a leading BOM dropped), bounded like :func:`read_bytes_bounded`."""
    return read_bytes_bounded(path, limit).decode("utf-8").removeprefix("\ufeff")


class NotRegular(UsageError, OSError):
    """The path is a link, a directory, a FIFO or a device where a regular file was expected.

    Still an :class:`OSError` (``errno``, ``strerror``, ``filename`` and its ``str`` unchanged).
    """

    def __init__(self, code: int, strerror: str, filename: str) -> None:
        OSError.__init__(self, code, strerror, filename)
        self.message = f"{filename}: {strerror}"
        self.hint = None


def open_regular(path: Path, *, follow: bool = False) -> BinaryIO:
    """``path`` opened for reading, refused unless it is a regular file.

    Never blocks on a FIFO (opened ``O_NONBLOCK``, then checked); a symlink is refused unless
    ``follow`` (``O_NOFOLLOW``). :class:`NotRegular` says which; other OS errors as usual.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, "a symbolic link, not a file", str(path)) from e
        if e.errno == errno.ENXIO:  # a unix socket (or a FIFO nobody writes to, on some systems)
            mode = Path(path).stat().st_mode
            raise NotRegular(errno.ENXIO, f"{_kind(mode)}, not a regular file", str(path)) from e
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, f"{_kind(st.st_mode)}, not a regular file", str(path))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _kind(mode: int) -> str:
    kinds = [
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ]
    return next((name for test, name in kinds if test(mode)), "a special file")


def load_json_bounded(data: bytes | str, max_depth: int) -> Any:
    """Parse JSON text; ``ValueError`` (a short reason) when invalid or nested deeper than ``max_depth``."""
    try:
        value = json.loads(data)
    except RecursionError as e:
        raise ValueError(f"nested deeper than {max_depth} levels") from e
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text (byte {e.start})") from e
    except ValueError as e:
        raise ValueError(f"invalid JSON: {str(e)[:200]}") from e
    if too_deep(value, max_depth):
        raise ValueError(f"nested deeper than {max_depth} levels")
    return value


def too_deep(value: Any, max_depth: int) -> bool:
    """Whether a value of a loaded JSON document lies deeper than ``max_depth`` (the top is 1).

    Walks the containers level by level (the scalars are never visited one by one): a non-empty
    container at ``max_depth`` holds a value below the limit.
    """
    level = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            if depth >= max_depth and children:
                return True
            below += [c for c in children if isinstance(c, dict | list)]
        level, depth = below, depth + 1
    return False
