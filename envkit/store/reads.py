"""Every store file read bounded: a report's text, a run's JSON files, and who may have written them.

The store (NFS, Lustre) is written by many users and every node, so its files are hostile input:

- every store file is read bounded (size, JSON depth), must be a regular file (no link, FIFO) and,
  for a run's files, a JSON object; anything else is an error naming the file, never a traceback;
- a task runs nothing that another user could have written: the run directory and ``run.json`` must
  belong to this user (or root) and be writable by nobody else (:func:`check_owned`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from envkit._io import NotRegular, TooLarge, load_json_bounded, open_regular
from envkit.errors import FleetError, ReportError

__all__ = [
    "MAX_BYTES",
    "MAX_MANIFEST_BYTES",
    "MAX_RECORD_BYTES",
    "STORE_HINT",
    "check_owned",
    "read_report_text",
    "read_store_json",
]

MAX_BYTES = 64 * 1024 * 1024  # a report of 1,000 steps x 2 frameworks is < 1 MB
MAX_MANIFEST_BYTES = 4 << 20  # a manifest with a 1,000-task result is ~200 KB
MAX_RECORD_BYTES = 256 << 10  # a task record: a few hundred bytes, an error of a few KB
MAX_JSON_DEPTH = 16  # run.json nests 4 deep
STORE_HINT = "the run directory is damaged or was written by someone else: rerun `envkit probe --slurm`"


def read_report_text(path: Path) -> str:
    """A report file's text (bounded: one byte over :data:`MAX_BYTES` tells it is too large)."""
    try:
        with open_regular(path, follow=True) as fh:  # a FIFO or device is refused, never waited on
            data = _read_at_most(fh, MAX_BYTES + 1)
    except FileNotFoundError as e:
        raise ReportError(
            f"{path}: no such report", hint="give a report file or a host name in the store"
        ) from e
    except OSError as e:
        raise ReportError(f"{path}: cannot read the report: {e}", hint="check the file") from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ReportError(f"{path}: not UTF-8 text (byte {e.start})", hint="is this a probe report?") from e
    return text


def _read_at_most(fh: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fh``, in a buffer the file's size (not ``limit``) for the first read."""
    size = os.fstat(fh.fileno()).st_size
    data = fh.read(min(size + 1, limit))
    if len(data) == size + 1 and len(data) < limit:  # it grew since: the rest, still bounded
        data += fh.read(limit - len(data))
    return data


def read_store_json(path: Path, *, limit: int, what: str) -> dict[str, object]:
    """A store file's JSON object, read bounded; :class:`FleetError` naming ``path`` otherwise.

    ``FileNotFoundError`` passes through (callers say what a missing file means).
    """
    try:
        with open_regular(path) as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise
    except NotRegular as e:
        raise FleetError(f"{path}: not a {what}: {e.strerror}", hint=STORE_HINT) from e
    except OSError as e:
        raise FleetError(f"{path}: cannot read the {what}: {e.strerror or e}", hint=STORE_HINT) from e
    if len(data) > limit:
        raise FleetError(f"{path}: larger than {limit} bytes, not a {what}", hint=STORE_HINT) from TooLarge(
            path, limit
        )
    try:
        value = load_json_bounded(data, MAX_JSON_DEPTH)
    except ValueError as e:
        raise FleetError(f"{path}: not a {what}: {e}", hint=STORE_HINT) from e
    if not isinstance(value, dict):
        raise FleetError(
            f"{path}: not a {what}: a JSON {type(value).__name__}, not an object", hint=STORE_HINT
        )
    return value


def check_owned(path: Path, what: str, *, fd: int | None = None) -> None:
    """Refuse ``path`` (or the open ``fd``) unless this user or root owns it and nobody else can write it.

    A symbolic link is refused too: it is not followed.
    """
    try:
        st = os.lstat(path) if fd is None else os.fstat(fd)
    except OSError as e:
        raise FleetError(f"{path}: cannot check the {what}: {e.strerror or e}", hint=STORE_HINT) from e
    if stat.S_ISLNK(st.st_mode):
        raise FleetError(f"{path}: the {what} is a symbolic link; envkit does not follow it", hint=STORE_HINT)
    if st.st_uid not in (os.geteuid(), 0):
        raise FleetError(
            f"{path}: the {what} belongs to user id {st.st_uid}, not to you ({os.geteuid()}): "
            "envkit runs nothing another user could have written",
            hint="submit the run yourself (`envkit probe --slurm`) into a store directory you own",
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise FleetError(
            f"{path}: the {what} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
            "envkit runs nothing another user could have written",
            hint=f"chmod go-w {path}, or rerun the probe into a fresh run",
        )
