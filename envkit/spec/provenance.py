"""The provenance header of an adopted spec, read back by ``envkit validate``.

``envkit init --from`` writes, in the spec's leading comment, what the source named::

    # The source named (envkit validate warns when this spec no longer has it):
    #   source framework: torch 2.1.2 (requirements.txt:2)
    #   source cuda: 12.1 (torch==2.1.2+cu121 (requirements.txt:2))
    #   source python: 3.10 (requirements.txt:1)

:func:`lost_from_source` compares those facts with the spec as it is now: a framework the source
installed that the spec no longer has (or has at another release), a CUDA or a Python the spec does
not have. Each is a warning (the spec may have been changed on purpose); a spec without the header
(not adopted, or the header removed) has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from envkit.spec.models import Spec

__all__ = ["HEADER", "SourceFact", "lost_from_source", "source_facts", "source_lines"]

HEADER = "# The source named (envkit validate warns when this spec no longer has it):"
_LINE = re.compile(
    r"^#\s+source (?P<fact>framework|cuda|python): (?P<value>\S+)(?: (?P<version>[^\s(]\S*))?"
    r" \((?P<where>.*)\)[ \t]*\Z"
)


@dataclass(frozen=True)
class SourceFact:
    """One fact the source named: ``framework`` (value torch, version 2.1.2), ``cuda`` or ``python``."""

    fact: str
    value: str
    where: str
    version: str | None = None

    def line(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"#   source {self.fact}: {self.value}{version} ({self.where})"


def source_lines(facts: list[SourceFact]) -> list[str]:
    """The header lines for ``facts`` (none when there are none)."""
    return [HEADER, *(f.line() for f in facts)] if facts else []


def source_facts(text: str) -> list[SourceFact]:
    """The facts in the leading comment block of a spec's text."""
    facts: list[SourceFact] = []
    inside = False
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if line.strip() == HEADER:
            inside = True
            continue
        match = _LINE.match(line) if inside else None
        if match:
            facts.append(SourceFact(match["fact"], match["value"], match["where"], match["version"]))
    return facts


def lost_from_source(spec: Spec, facts: list[SourceFact]) -> list[str]:
    """A warning for each fact of the source the spec no longer has."""
    warnings = []
    for fact in facts:
        named = f"the source named {fact.value}{' ' + fact.version if fact.version else ''} ({fact.where})"
        if fact.fact == "framework":
            have = dict(spec.frameworks.items()).get(fact.value)
            if have is None:
                warnings.append(f"{named}; the spec has no {fact.value}")
            elif fact.version and not _same(str(have), fact.version):
                warnings.append(f"{named}; the spec has {fact.value} {have}")
        elif fact.fact == "cuda" and spec.cuda != fact.value:
            warnings.append(
                f"the source named CUDA {fact.value} ({fact.where}); the spec has cuda {spec.cuda}"
            )
        elif fact.fact == "python" and spec.python != fact.value:
            warnings.append(
                f"the source named Python {fact.value} ({fact.where}); the spec has python {spec.python}"
            )
    return warnings


def _same(a: str, b: str) -> bool:
    try:
        return Version(Version(a).public) == Version(Version(b).public)
    except InvalidVersion:
        return a == b
