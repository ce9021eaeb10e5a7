"""How old the advisory data is: its date, from its source record, and a warning past a set age.

An audit against old data says "no findings" about advisories published since: the report names the
data's date in every format (as ``data_date`` in the provenance), and warns when it is older than
``--max-db-age`` days (trivy and grype warn on a stale database the same way).

Where the date comes from, first found wins:

1. ``SOURCE.json``'s ``data_date`` (written by ``envkit audit --update-db``: the newest record's
   ``modified``);
2. a README that states the snapshot's date, e.g. "commit 3ccb612… (2024-10-10)";
3. the newest ``modified:`` among the records themselves (a plain checkout of the advisory database).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path

from envkit._io import open_regular

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "age_line",
    "age_warning",
    "data_date_of",
    "newest_date",
]

DEFAULT_MAX_AGE_DAYS = 30
_DATE = re.compile(r"(?<!\d)((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?!\d)")
_MODIFIED = re.compile(rb"^\s*\"?modified\"?\s*:\s*[\"']?(\d{4}-\d\d-\d\d)", re.M)
_README_BYTES = 64 * 1024
_RECORD_HEAD = 64 * 1024  # ``modified`` sits near the top; a long ``details`` can push it down


def _as_date(text: str) -> date | None:
    match = _DATE.search(text)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:  # 2024-02-31
        return None


def newest_date(values: Iterable[object]) -> str | None:
    """The newest ISO date (``YYYY-MM-DD``) among ``values`` (records' ``modified``), or None."""
    dates = [d for v in values if isinstance(v, str) and (d := _as_date(v[:40])) is not None]
    return max(dates).isoformat() if dates else None


def _from_readme(root: Path) -> str | None:
    for name in ("README.md", "README.txt", "README"):
        path = root / name
        if path.is_file():
            try:
                with open_regular(path, follow=True) as fh:  # a FIFO is refused, never waited on
                    text = fh.read(_README_BYTES).decode("utf-8", "replace")
            except OSError:
                return None
            for paragraph in re.split(r"\n\s*\n", text):
                # the snapshot's own date: "commit <sha> (2024-10-10)", "snapshot of 2024-10-10"
                if re.search(r"commit|snapshot|as of|taken", paragraph, re.I) and (d := _as_date(paragraph)):
                    return d.isoformat()
    return None


def _from_records(vulns: Path) -> str | None:
    newest: date | None = None
    for folder in vulns.iterdir() if vulns.is_dir() else ():
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
                continue
            try:
                with open_regular(path, follow=True) as fh:
                    head = fh.read(_RECORD_HEAD)
            except OSError:
                continue
            for match in _MODIFIED.finditer(head):
                found = _as_date(match[1].decode("ascii"))
                if found is not None and (newest is None or found > newest):
                    newest = found
    return newest.isoformat() if newest else None


def data_date_of(root: Path, vulns: Path, stamp: Mapping[str, str]) -> tuple[str, str] | None:
    """``(date, where it was read)`` for the database at ``root``, or None when nothing says."""
    stated = stamp.get("data_date")
    if stated and (d := _as_date(stated)):
        return d.isoformat(), "SOURCE.json data_date"
    if readme := _from_readme(root):
        return readme, "README"
    if records := _from_records(vulns):
        return records, "newest record's modified"
    return None


def _online(provenance: Mapping[str, str]) -> bool:
    return provenance.get("service", "").startswith("pip-audit")


def _age(provenance: Mapping[str, str], today: date) -> tuple[date, int] | None:
    stated = _as_date(provenance.get("data_date", ""))
    return (stated, (today - stated).days) if stated else None


def age_line(provenance: Mapping[str, str], today: date) -> str:
    """The line every audit result carries: what the advisory data is and how old."""
    if _online(provenance):
        return f"advisory data: {provenance.get('service')}, queried online now"
    known = _age(provenance, today)
    if known is None:
        return "advisory data: date unknown (no SOURCE.json data_date, README date or record modified)"
    stated, days = known
    where = provenance.get("data_date_source", "")
    return f"advisory data as of {stated.isoformat()} ({days} day(s) old{', from ' + where if where else ''})"


def age_warning(provenance: Mapping[str, str], today: date, max_days: int | None) -> str | None:
    """A warning when the data is older than ``max_days`` (None or negative: never), or undated."""
    if max_days is None or max_days < 0 or _online(provenance):
        return None
    known = _age(provenance, today)
    if known is None:
        return (
            "the advisory data's date is unknown: findings may miss advisories published since; "
            "run envkit audit --update-db"
        )
    stated, days = known
    if days <= max_days:
        return None
    return (
        f"the advisory data is {days} days old (as of {stated.isoformat()}, more than --max-db-age "
        f"{max_days}): advisories published since are not checked; run envkit audit --update-db"
    )
