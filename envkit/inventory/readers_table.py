"""``pip list`` tables: ``Package  Version  [Build]  [Editable project location]`` columns.

pip prints a header row and a rule of dashes, then one row per distribution; pip >= 21.2 adds a
``Build`` column (a wheel build tag) and pip >= 21.3 an ``Editable project location`` column when
one row needs them. Real files carry what was around the table when it was pasted: a shell or
PowerShell prompt line, a ``Pip list:`` title, a sentence, a Markdown backtick; and some lost the
header (the rows only). All of those read as pip, never as ``conda list`` (whose rows always have
a build column): the header and the rule, when present, say where the rows start.
"""

from __future__ import annotations

import itertools
import re

from envkit.inventory._collect import Collector

__all__ = ["is_pip_list", "read_pip_list"]

_HEADER = re.compile(r"^`?\s*Package\s+Version(\s+Build)?(\s+Editable project location)?\s*`?\Z")
_RULE = re.compile(r"^`?-{3,}(\s+-{3,})+\s*`?\Z")
_ROW = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\S+)(?:\s+(.*))?\Z")


def _strip(line: str) -> str:
    return line.strip().strip("`").strip()


def is_pip_list(lines: list[str]) -> bool:
    """A ``pip list`` table: its header and rule, or (headerless) rows of exactly two columns."""
    stripped = [_strip(line) for line in lines[:200]]
    for first, second in itertools.pairwise(stripped):
        if _HEADER.match(first) and _RULE.match(second):
            return True
    rows = [s for s in stripped if s and not s.startswith("#")]
    if len(rows) < 3:
        return False
    two = [s for s in rows if len(s.split()) == 2 and s.split()[1][:1].isdigit() and "==" not in s]
    return len(two) >= 0.9 * len(rows)


def read_pip_list(text: str, c: Collector) -> None:
    """Every row after the header and rule (or every row, when the table has none)."""
    lines = text.splitlines()
    start = 0
    for index, (first, second) in enumerate(itertools.pairwise(lines)):
        if _HEADER.match(_strip(first)) and _RULE.match(_strip(second)):
            start = index + 2
            break
    for number, raw in enumerate(lines[start:], start=start + 1):
        line = _strip(raw)
        if not line or line.startswith("#"):
            continue
        row = _ROW.match(line)
        if row is None or not row[2][:1].isdigit():
            c.skip(number, f"expected 'name version [build] [location]', got {line[:80]!r}")
            continue
        rest = (row[3] or "").strip()
        location = rest.split(None, 1)[-1] if rest and ("/" in rest or "\\" in rest) else None
        c.add(row[1], row[2], "pip", line=number, url=location)
