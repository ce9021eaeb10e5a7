"""The run folder's own writes: never through a link someone planted (steps.jsonl, tensorboard/, incidents/).

The run folder (``Guard(run=...)``) is the user's; what the guard makes below it — ``rank-N/``,
``incidents/``, ``tensorboard/``, ``incidents/step-N/`` — must be a real directory, never a link
(:func:`real_dir` refuses one with a :class:`~envkit.errors.GuardError`). ``steps.jsonl`` is appended
``O_NOFOLLOW`` (:func:`append_text`); a dump is written into a fresh private directory and renamed into
place (:func:`replace_dir`), so a link at ``step-N`` is replaced, never followed, and a run killed
mid-dump leaves a hidden ``.step-N.*.tmp`` folder, never a half dump.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

from envkit.errors import GuardError

__all__ = ["append_text", "fresh_dir", "real_dir", "replace_dir"]

_HINT = "the run folder holds only what envkit.guard wrote: remove the link, or give Guard another run="


def real_dir(base: Path, *parts: str, mode: int = 0o755) -> Path:
    """``base/parts…``, each part made if missing and refused if it is a link or not a directory.

    ``base`` (the run folder the user named) is made with its parents and may be reached through links.
    """
    base.mkdir(parents=True, exist_ok=True)
    path = base
    for part in parts:
        path = path / part
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode)
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise GuardError(f"{path} is a symbolic link: envkit.guard writes nothing through it", hint=_HINT)
        if not stat.S_ISDIR(st.st_mode):
            raise GuardError(f"{path} exists and is not a directory", hint=_HINT)
    return path


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to the regular file ``path`` (made 0644 if missing); a link there is refused."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise GuardError(
                f"{path} is a symbolic link: envkit.guard appends nothing through it", hint=_HINT
            ) from e
        raise
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GuardError(f"{path} exists and is not a regular file", hint=_HINT)
        fh.write(text)


def fresh_dir(parent: Path, name: str) -> Path:
    """A new private (0700) directory beside ``parent/name``, to fill and then :func:`replace_dir`."""
    return Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent))


def replace_dir(fresh: Path, target: Path) -> None:
    """Rename the filled ``fresh`` directory to ``target``: what was there is removed, a link unlinked."""
    try:
        st: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        target.rename(old / "d")  # then removed: rmtree never follows the links inside it
        shutil.rmtree(old)
    elif st is not None:
        target.unlink()  # a link (or a file): removed itself, its target untouched
    fresh.rename(target)
