"""``envkit catalog refresh``: rebuild the framework part of the catalog from the real indexes.

:func:`refresh` reads pages through a :class:`PageSource` (the network, or a recorded
snapshot) and returns the new ``frameworks.yaml`` text; :func:`recording_trim` trims pages
kept by ``--record`` to what the readers use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from packaging.version import InvalidVersion, Version

from envkit._atomic import write_bytes_atomic
from envkit._io import load_json_bounded
from envkit.catalog.refresh.fallback import FamilySpec, load_fallback
from envkit.catalog.refresh.generate import Refreshed, build_frameworks, pypi_url
from envkit.catalog.refresh.pages import HttpPages, Page, PageSource, PageUnreachable, RecordedPages, Recorder
from envkit.catalog.refresh.readers import trim_page

__all__ = [
    "HttpPages",
    "Page",
    "PageSource",
    "PageUnreachable",
    "RecordedPages",
    "Recorder",
    "RefreshOutcome",
    "Refreshed",
    "recording_trim",
    "refresh",
    "refresh_outcome",
]


def refresh(source: PageSource, families: dict[str, FamilySpec] | None = None) -> Refreshed:
    """The new frameworks.yaml from ``source``; raises PageUnreachable when PyPI cannot be read."""
    return build_frameworks(source, families if families is not None else load_fallback())


def recording_trim(families: dict[str, FamilySpec] | None = None) -> Callable[[str, bytes], bytes]:
    """A trim function for :class:`Recorder`: PyPI pages keep the covered final releases only."""
    families = families if families is not None else load_fallback()
    floors = {pypi_url(p): Version(f.floor) for f in families.values() for p in f.projects}

    def trim(url: str, body: bytes) -> bytes:
        floor = floors.get(url)
        if floor is None:
            return trim_page(url, body)
        keep = _covered(body, floor)
        return trim_page(url, body, keep=keep)

    return trim


def _covered(body: bytes, floor: Version) -> set[Version]:
    found = set()
    data = load_json_bounded(body, 16)
    for text in data.get("releases", {}) if isinstance(data, dict) else ():
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if v >= floor and not (v.is_prerelease or v.is_devrelease or v.is_postrelease):
            found.add(v)
    return found


@dataclass(frozen=True)
class RefreshOutcome:
    """What a refresh did: the file, whether it changed, what was added and what fell back."""

    output: Path
    changed: bool
    releases: dict[str, list[str]]
    added: dict[str, list[str]]
    removed: dict[str, list[str]]
    fallback: dict[str, list[str]]
    unreachable_hosts: dict[str, str]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "output": str(self.output),
            "changed": self.changed,
            "releases": self.releases,
            "added": self.added,
            "removed": self.removed,
            "fallback": self.fallback,
            "unreachable_hosts": self.unreachable_hosts,
        }

    def summary(self) -> str:
        lines = []
        for family, versions in self.releases.items():
            added = self.added.get(family, [])
            lines.append(
                f"{family}: {len(versions)} releases" + (f", added {', '.join(added)}" if added else "")
            )
            if self.removed.get(family):
                lines.append(f"{family}: removed {', '.join(self.removed[family])}")
        state = "changed" if self.changed else "unchanged"
        lines.append(f"{self.output} {state}")
        return "\n".join(lines)


def refresh_outcome(
    source: PageSource, target: Path, *, check: bool = False, strict: bool = False
) -> RefreshOutcome:
    """Refresh into ``target`` (unless ``check``); ``strict`` fails when an index could not be read."""
    result = refresh(source)
    hosts: dict[str, str] = {}
    for url, reason in sorted(result.unreachable.items()):
        host = urlsplit(url).netloc
        if host != "pypi.org":
            hosts.setdefault(host, reason)
    if strict and hosts:
        first = next(iter(hosts))
        raise PageUnreachable(f"https://{first}/", f"{hosts[first]} (and {len(hosts) - 1} more hosts)")
    before = _versions(target)
    data = result.text.encode("utf-8")
    changed = not target.is_file() or target.read_bytes() != data
    if changed and not check:
        write_bytes_atomic(target, data)
    warnings = list(result.warnings)
    for host, reason in hosts.items():
        count = sum(len(v) for v in result.fallback.values())
        warnings.append(
            f"cannot read {host} ({reason}): CUDA flavours of {count} releases come from the "
            "hand-checked fallback (marked `flavours: fallback`)"
        )
    return RefreshOutcome(
        output=target,
        changed=changed,
        releases=result.releases,
        added={k: [v for v in vs if v not in before.get(k, set())] for k, vs in result.releases.items()},
        removed={
            k: sorted(before[k] - set(vs), key=Version) for k, vs in result.releases.items() if k in before
        },
        fallback=result.fallback,
        unreachable_hosts=hosts,
        warnings=warnings,
    )


def _versions(path: Path) -> dict[str, set[str]]:
    try:
        data = yaml.safe_load(path.read_text("utf-8")) or {}
        return {k: {str(r["version"]) for r in v.get("releases", [])} for k, v in data.items()}
    except (OSError, yaml.YAMLError, AttributeError, KeyError, TypeError):
        return {}
