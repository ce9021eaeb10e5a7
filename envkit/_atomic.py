"""Atomic file writes: write a temp file beside the target, then rename."""

from __future__ import annotations

import os
from pathlib import Path

from envkit.errors import EnvkitError

__all__ = ["write_bytes_atomic", "write_text_atomic"]


def write_bytes_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> bool:
    """Write ``data`` to ``path`` atomically. Return False when it already held ``data``.

    An OS error (a read-only directory, a full disk) is an :class:`EnvkitError` (exit 3) naming the path.
    """
    try:
        if path.is_file() and path.read_bytes() == data:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # with shutil, random, bz2 and lzma: loaded on the first write only

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _unwritable(path, e) from e
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise _unwritable(path, e) from e
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def _unwritable(path: Path, error: OSError) -> EnvkitError:
    return EnvkitError(
        f"cannot write {path}: {error.strerror or error}",
        hint="check that the directory exists and is writable (permissions, free space), or write elsewhere",
    )


def write_text_atomic(path: Path, text: str) -> bool:
    return write_bytes_atomic(path, text.encode("utf-8"))
