"""Safe file writes: every file envkit writes goes through here.

A write never follows a link someone planted, never truncates a file in place and never lands
outside the directory it was meant for:

- the data goes to a temp file created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (random name) in
  the target's own directory, is flushed and then renamed over the target; the rename replaces a
  planted symlink itself, never the file it points to;
- a target that is a directory (or any non-file that is not a symlink) is refused;
- with ``within=ROOT`` the target's directory, once resolved, must lie inside ``ROOT`` (resolved):
  a symlinked directory leading out of the project or the store is refused before anything is written.

:func:`write_bytes_atomic` / :func:`write_text_atomic` write a whole value; :func:`atomic_writer`
streams (an image tar, a build log) into the temp file and renames it when the block ends.
:func:`make_dir_exclusive` creates a directory that must not exist yet (a fleet run's directory).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from envkit.errors import EnvkitError

__all__ = [
    "atomic_writer",
    "check_within",
    "make_dir_exclusive",
    "state_dir",
    "write_bytes_atomic",
    "write_text_atomic",
]

_COMPARE_LIMIT = 64 << 20  # larger files are rewritten without comparing


def check_within(path: Path, root: Path) -> Path:
    """``path``'s directory resolved; an :class:`EnvkitError` when it leads outside ``root``."""
    parent = path.parent.resolve()
    top = root.resolve()
    if parent != top and not parent.is_relative_to(top):
        raise EnvkitError(
            f"refusing to write {path}: its directory leads to {parent}, outside {top}",
            hint=f"a symlinked directory points out of {top}; remove the link and rerun",
        )
    return parent


def state_dir(root: Path, *parts: str) -> Path:
    """``ROOT/.envkit/PARTS``, envkit's own files in a project (logs, caches, reports, records).

    Refused (:class:`EnvkitError`) when ``.envkit`` or a part is a link leading out of ``ROOT``: a
    cloned repository that carries ``.envkit -> ~`` gets nothing written into the home directory.
    """
    path = root.joinpath(".envkit", *parts)
    check_within(path / "-", root)
    return path


def _target(path: Path) -> os.stat_result | None:
    """``lstat`` of the target (None when absent); a directory, device or FIFO there is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise EnvkitError(
            f"cannot write {path}: it exists and is not a regular file",
            hint="move it away and rerun",
        )
    return st


def _unchanged(path: Path, data: bytes) -> bool:
    """Whether ``path`` is a regular file (not a link: never read through) already holding ``data``."""
    st = _target(path)
    if st is None or stat.S_ISLNK(st.st_mode) or st.st_size != len(data) or st.st_size > _COMPARE_LIMIT:
        return False
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(len(data) + 1) == data


def _temp(path: Path) -> tuple[int, str]:
    import tempfile  # loaded on the first write only

    # mkstemp opens with O_CREAT | O_EXCL | O_NOFOLLOW and a random name: it never reuses a planted file
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")


@contextlib.contextmanager
def atomic_writer(
    path: Path, *, mode: int = 0o644, within: Path | None = None, keep_on_error: bool = False
) -> Iterator[BinaryIO]:
    """Stream into a fresh temp file beside ``path``; renamed over ``path`` when the block ends.

    On an exception the temp file is removed (``keep_on_error``: renamed anyway, for a log that
    must survive the failure it records). OS errors are :class:`EnvkitError` naming ``path``.
    """
    try:
        if within is not None:
            check_within(path, within)  # before mkdir: no directory is made outside either
        path.parent.mkdir(parents=True, exist_ok=True)
        if within is not None:
            check_within(path, within)
        _target(path)
        fd, tmp = _temp(path)
    except OSError as e:
        raise _unwritable(path, e) from e
    committed = False
    fh = os.fdopen(fd, "wb")
    try:
        try:
            yield fh
        except BaseException:
            if keep_on_error:
                _commit(fh, tmp, path, mode)
                committed = True
            raise
        _commit(fh, tmp, path, mode)
        committed = True
    finally:
        fh.close()
        if not committed:
            Path(tmp).unlink(missing_ok=True)


def _commit(fh: BinaryIO, tmp: str, path: Path, mode: int) -> None:
    try:
        fh.flush()
        os.fsync(fh.fileno())
        os.fchmod(fh.fileno(), mode)
        Path(tmp).replace(path)
    except OSError as e:
        raise _unwritable(path, e) from e


def write_bytes_atomic(path: Path, data: bytes, *, mode: int = 0o644, within: Path | None = None) -> bool:
    """Write ``data`` to ``path`` atomically. Return False when it already held ``data``.

    An OS error (a read-only directory, a full disk) is an :class:`EnvkitError` (exit 3) naming the path.
    """
    try:
        if _unchanged(path, data):
            return False
    except OSError as e:
        raise _unwritable(path, e) from e
    with atomic_writer(path, mode=mode, within=within) as fh:
        fh.write(data)
    return True


def write_text_atomic(path: Path, text: str, *, within: Path | None = None) -> bool:
    return write_bytes_atomic(path, text.encode("utf-8"), within=within)


def make_dir_exclusive(path: Path, *, mode: int = 0o755, what: str = "directory") -> Path:
    """Create ``path`` (its parents as needed); an :class:`EnvkitError` when it exists in any form.

    ``mkdir`` never follows a symlink at ``path`` (it fails with EEXIST), and the new directory
    belongs to this user with at most ``mode`` (the umask still applies): nobody else can write in it.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode)  # no exist_ok: EEXIST for a directory, file or link already there
    except FileExistsError as e:
        raise EnvkitError(
            f"{what} {path} exists already (a directory, file or link someone made)",
            hint="pick another name; envkit never reuses a directory it did not create",
        ) from e
    except OSError as e:
        raise _unwritable(path, e) from e
    return path


def _unwritable(path: Path, error: OSError) -> EnvkitError:
    return EnvkitError(
        f"cannot write {path}: {error.strerror or error}",
        hint="check that the directory exists and is writable (permissions, free space), or write elsewhere",
    )
