"""The real-world corpus: one file as found plus its hand-written record (``<file>.yaml``).

Layout: ``tests/corpus/<surface>/<kind>/<name>`` holds a file byte for byte as it was found in a
public repository or issue thread; ``<name>.yaml`` beside it is its record:

.. code-block:: yaml

    source: {repo: owner/name, path: where/in/repo, commit: <40 hex or null>,
             url: <issue or comment address, or null>, licence: <SPDX id or null>}
    kind: conda-list            # what the file is, in envkit's reader/source names
    klass: "9"                  # the issue-34 class(es) it exercises, or "-" for none
    expected: {...}             # the facts a careful engineer reads in it, written BEFORE running envkit
    level: exact                # envkit's level now: exact | minor | wrong | refused (a test keeps it)
    disagreement: "..."         # where envkit and ``expected`` differ, and which of them is wrong

``surface`` is ``inventory`` (the readers behind ``envkit diff``/``snapshot``) or ``init``
(``envkit init --from``). Each surface has its own grader module beside this one
(``grade_inventory.py``, ``grade_init.py``) exposing ``grade_all(root) -> list[Graded]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml

Level = Literal["exact", "minor", "wrong", "refused", "crash"]
LEVELS: tuple[Level, ...] = ("exact", "minor", "refused", "wrong", "crash")
"""Best first: a file may move left of its recorded level, never right."""

ROOT = Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Record:
    path: Path
    kind: str
    klass: str
    source: Mapping[str, Any]
    expected: Mapping[str, Any]
    level: Level
    disagreement: str


@dataclasses.dataclass(frozen=True)
class Graded:
    record: Record
    level: Level
    detail: str

    @property
    def regressed(self) -> bool:
        return LEVELS.index(self.level) > LEVELS.index(self.record.level)


def records(surface: str, root: Path = ROOT) -> Iterator[Record]:
    """Every record of one surface, sorted by path."""
    for meta in sorted((root / surface).rglob("*.yaml")):
        target = meta.with_suffix("")
        if not target.is_file():
            continue  # a .yaml that is itself a corpus file has its record at NAME.yaml.yaml
        doc = yaml.safe_load(meta.read_text(encoding="utf-8"))
        yield Record(
            path=target,
            kind=str(doc["kind"]),
            klass=str(doc.get("klass", "-")),
            source=doc["source"],
            expected=doc.get("expected") or {},
            level=doc["level"],
            disagreement=str(doc.get("disagreement", "")),
        )
