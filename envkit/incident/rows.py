"""Run-folder JSON lines, strict and streamed: ``steps.jsonl``, ``incidents.jsonl``, ``ledger.jsonl``.

A run folder belongs to whoever wrote it: every file is opened as a regular file, never through a link and
never blocking on a FIFO (:func:`envkit._io.open_regular`), read one line at a time (a line at most
:data:`MAX_LINE` bytes, a file at most its ``limit``), and every field used is checked for its type
(:class:`~envkit.errors.ReportError` naming ``file:line: field``, exit 2). A line that is not JSON
is a write cut short (a run killed mid-append, or a resumed run appending after it): it is skipped
and counted, never guessed at. Numbers are finite floats or the markers ``"nan"``, ``"inf"``,
``"-inf"``; an integer too large for a float (``10**4000``) is refused by name.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit._io import NotRegular, open_regular
from envkit.errors import ReportError

__all__ = [
    "MAX_LINE",
    "ReadStats",
    "StepRow",
    "check_bool",
    "check_count",
    "check_float",
    "check_int",
    "check_opt_float",
    "check_text",
    "jsonl_rows",
    "step_row",
]

MAX_LINE = 1 << 20  # a step's record is ~300 bytes; an incident's with its localization some KiB
MARKERS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
MAX_STEP = 1 << 62
HINT = "the run folder was edited or damaged: give the RUN folder a Guard(run=...) wrote"


def _bad(where: str, what: str) -> ReportError:
    return ReportError(f"{where}: {what}", hint=HINT)


def check_int(value: Any, where: str, *, low: int = -MAX_STEP, high: int = MAX_STEP) -> int:
    """``value`` when it is an integer (not a bool) in ``low..high``; ReportError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(where, f"expected an integer from {low} to {high}, found {_shape(value)}")
    return value


def check_count(value: Any, where: str) -> int:
    return check_int(value, where, low=0)


def check_bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(where, f"expected true or false, found {_shape(value)}")
    return value


def check_text(value: Any, where: str, *, optional: bool = False) -> str | None:
    """A string (or None when ``optional``); the caller prints it with :func:`envkit._safe.one_line`."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _bad(where, f"expected a string, found {_shape(value)}")
    return value


def check_float(value: Any, where: str) -> float:
    """A JSON number or a marker (``"nan"``, ``"inf"``, ``"-inf"``) as a float."""
    if isinstance(value, str) and value in MARKERS:
        return MARKERS[value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(where, f"expected a number, found {_shape(value)}")
    try:
        return float(value)
    except OverflowError:
        raise _bad(where, f"a number of {len(str(value))} digits, beyond a float's range") from None


def check_opt_float(value: Any, where: str) -> float | None:
    """:func:`check_float`, or None for a JSON null."""
    return None if value is None else check_float(value, where)


def _floats(value: Any, where: str) -> tuple[float, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > 10_000:
        raise _bad(where, f"expected a list of numbers, found {_shape(value)}")
    return tuple(check_float(v, f"{where}[{i}]") for i, v in enumerate(value))


def _shape(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40])}{'…' if len(value) > 40 else ''}"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return "an integer" if len(str(abs(value))) > 30 else f"the integer {value}"
    return f"a{'n' if type(value).__name__[0] in 'aeiou' else ''} {type(value).__name__}"


@dataclass(frozen=True)
class StepRow:
    """One step as ``steps.jsonl`` (and the report's ``guard.steps``) hold it, every field checked."""

    step: int
    loss: float
    grad_norm: float
    clipped_norm: float | None
    lr: float | None
    loss_scale: float | None
    overflow: bool
    skipped: str | None
    lrs: tuple[float, ...]
    update_ratios: tuple[float, ...]

    @property
    def clipped(self) -> bool:
        return self.clipped_norm is not None and self.clipped_norm < self.grad_norm


def step_row(value: Any, where: str) -> StepRow:
    """A step record checked field by field (``where``: ``file:line``)."""
    if not isinstance(value, dict):
        raise _bad(where, f"expected a step record (an object), found {_shape(value)}")

    def num(key: str) -> float | None:
        return check_opt_float(value.get(key), f"{where}: {key}")

    loss, norm = num("loss"), num("grad_norm")
    if loss is None or norm is None:
        raise _bad(where, "a step record without its loss or grad_norm")
    return StepRow(
        step=check_int(value.get("step"), f"{where}: step"),
        loss=loss,
        grad_norm=norm,
        clipped_norm=num("clipped_norm"),
        lr=num("lr"),
        loss_scale=num("loss_scale"),
        overflow=check_bool(value.get("overflow", False), f"{where}: overflow"),
        skipped=check_text(value.get("skipped"), f"{where}: skipped", optional=True),
        lrs=_floats(value.get("lrs"), f"{where}: lrs"),
        update_ratios=_floats(value.get("update_ratios"), f"{where}: update_ratios"),
    )


@dataclass
class ReadStats:
    """What :func:`jsonl_rows` saw besides the rows: lines cut short (skipped), bytes read."""

    torn: list[int] = field(default_factory=list)
    bytes_read: int = 0


def jsonl_rows(path: Path, limit: int, seen: ReadStats | None = None) -> Iterator[tuple[str, Any]]:
    """``(file:line, value)`` of each JSON line of ``path``, streamed (one line in memory at a time).

    FileNotFoundError passes through (the caller says what a missing file means); a link, a FIFO or
    a device, a line over :data:`MAX_LINE` bytes or a file over ``limit`` bytes is a ReportError.
    ReadStats that are not JSON (a write cut short) go to ``seen.torn``.
    """
    seen = seen if seen is not None else ReadStats()
    try:
        fh = open_regular(path)
    except NotRegular as e:
        raise _bad(str(path), f"not read: {e.strerror} (a run folder's files are regular files)") from e
    except FileNotFoundError:
        raise
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror or e}", hint="check the file") from e
    with fh:
        n = 0
        while line := fh.readline(MAX_LINE + 1):
            n += 1
            seen.bytes_read += len(line)
            if seen.bytes_read > limit:
                raise _bad(str(path), f"more than {limit} bytes: not a file a guarded run writes")
            if len(line) > MAX_LINE:
                raise _bad(f"{path}:{n}", f"a line longer than {MAX_LINE} bytes")
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                seen.torn.append(n)
                continue
            except (ValueError, RecursionError) as e:  # an integer with more digits than Python converts
                raise _bad(f"{path}:{n}", f"not a record ({str(e)[:120]})") from e
            yield f"{path}:{n}", value
