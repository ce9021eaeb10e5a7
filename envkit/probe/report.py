"""Probe reports: the versioned JSON schema, loading with validation, and the report store.

A report is the payload's JSON (``schema`` 1) plus what the host adds (envkit version, label,
image), parsed once into :class:`~envkit.probe.model.ProbeReport`. A truncated or corrupted file
is a :class:`ReportError` naming the file (exit 2).
The store keeps ``<store>/<host>/<label>.json``; ``--store DIR`` or ``$ENVKIT_STORE`` choose it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from envkit._atomic import state_dir, write_text_atomic
from envkit._io import open_regular, too_deep
from envkit.errors import ReportError
from envkit.probe.model import KIND, SCHEMA, ProbeReport, parse_report

__all__ = [
    "KIND",
    "SCHEMA",
    "default_store",
    "dump_report",
    "load_report",
    "read_report",
    "read_report_text",
    "report_from_json",
    "resolve_report",
    "save_to_store",
    "store_path",
]

DEFAULT_LABEL = "latest"
MAX_BYTES = 64 * 1024 * 1024  # a report of 1,000 steps x 2 frameworks is < 1 MB
MAX_DEPTH = 32  # the payload's reports nest 6 deep
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def report_from_json(data: Any, source: str) -> ProbeReport:
    """A loaded JSON document as :class:`ProbeReport`: bounded depth, parsed strictly once."""
    _check_depth(data, source)
    return parse_report(data, source)


def read_report(text: str | bytes, source: str) -> ProbeReport:
    """Parse a report's JSON text once into :class:`ProbeReport` (bounded size, depth and numbers)."""
    if len(text) > MAX_BYTES:
        raise ReportError(
            f"{source}: {len(text)} bytes is too large for a probe report (at most {MAX_BYTES})",
            hint="give a report written by `envkit probe`",
        )
    try:
        data = json.loads(text)
    except RecursionError as e:
        raise ReportError(
            f"{source}: the JSON nests too deeply", hint="give a report written by `envkit probe`"
        ) from e
    except ValueError as e:  # also: an integer with more digits than Python converts
        raise ReportError(
            f"{source}: truncated or corrupted report ({str(e)[:200]})",
            hint="rerun `envkit probe` to write it again",
        ) from e
    return report_from_json(data, source)


def _check_depth(data: Any, source: str) -> None:
    if too_deep(data, MAX_DEPTH):
        raise ReportError(
            f"{source}: not a valid probe report: nested deeper than {MAX_DEPTH} levels",
            hint="give a report written by `envkit probe`",
        )


def load_report(path: Path) -> ProbeReport:
    return read_report(read_report_text(path), str(path))


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


def dump_report(report: ProbeReport) -> str:
    return json.dumps(report.to_json(), indent=1, sort_keys=True, allow_nan=False) + "\n"


def default_store(root: Path, environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env["ENVKIT_STORE"]) if env.get("ENVKIT_STORE") else state_dir(root, "reports")


def safe_name(text: str) -> str:
    return _SAFE.sub("_", text).strip("._") or "unnamed"


def store_path(store: Path, host: str, label: str) -> Path:
    return store / safe_name(host) / f"{safe_name(label)}.json"


def save_to_store(report: ProbeReport, store: Path, label: str) -> Path:
    path = store_path(store, report.host or "unknown", label)
    write_text_atomic(path, dump_report(report), within=store)
    return path


def resolve_report(ref: str, store: Path, label: str | None = None) -> Path:
    """A report file, ``HOST`` or ``HOST/LABEL`` in the store."""
    path = Path(ref)
    if path.is_file() or ref.endswith(".json"):
        return path
    host, _, given = ref.partition("/")
    directory = store / safe_name(host)
    if not directory.is_dir():
        raise ReportError(
            f"{ref}: neither a report file nor a host in the store {store}",
            hint="run `envkit probe` on that host with a shared --store / ENVKIT_STORE, or give a file",
        )
    wanted = given or label
    if wanted:
        return store_path(store, host, wanted)
    candidates = sorted(directory.glob("*.json"))
    default = directory / f"{DEFAULT_LABEL}.json"
    if default.is_file():
        return default
    if len(candidates) == 1:
        return candidates[0]
    labels = ", ".join(p.stem for p in candidates) or "none"
    raise ReportError(f"{ref}: several reports in the store ({labels})", hint=f"name one: {host}/LABEL")
