"""Probe reports: the versioned JSON schema, loading with validation, writing back.

A report is the payload's JSON (``schema`` 1) plus what the host adds (envkit version, label,
image), parsed once into :class:`~envkit.probe.model.ProbeReport`. A truncated or corrupted file
is a :class:`ReportError` naming the file (exit 2). Where reports are filed, and reading a file
bounded, is the store's (:mod:`envkit.store.layout`, :mod:`envkit.store.reads`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envkit._io import too_deep
from envkit.errors import ReportError
from envkit.probe.model import KIND, SCHEMA, ProbeReport, parse_report
from envkit.store.reads import MAX_BYTES, read_report_text

__all__ = [
    "KIND",
    "SCHEMA",
    "check_depth",
    "dump_report",
    "load_report",
    "read_report",
    "report_from_json",
]

MAX_DEPTH = 32  # the payload's reports nest 6 deep


def report_from_json(data: Any, source: str) -> ProbeReport:
    """A loaded JSON document as :class:`ProbeReport`: bounded depth, parsed strictly once."""
    check_depth(data, source)
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


def check_depth(data: Any, source: str) -> None:
    """Refuse a document nested deeper than :data:`MAX_DEPTH` (before any field of it is read)."""
    if too_deep(data, MAX_DEPTH):
        raise ReportError(
            f"{source}: not a valid probe report: nested deeper than {MAX_DEPTH} levels",
            hint="give a report written by `envkit probe`",
        )


def load_report(path: Path) -> ProbeReport:
    return read_report(read_report_text(path), str(path))


def dump_report(report: ProbeReport) -> str:
    return json.dumps(report.to_json(), indent=1, sort_keys=True, allow_nan=False) + "\n"
