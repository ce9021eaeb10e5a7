"""Offline advisories from an OSV-format directory (``vulns/<package>/<ID>.yaml|json``).

The layout is the PyPA advisory database's; ``envkit audit --update-db`` writes the
OSV PyPI export in the same layout (as JSON). Package folders are indexed once and
read lazily, only for the packages asked about, then kept for the run.

Matching follows the OSV schema: ``ECOSYSTEM`` ranges are evaluated with PEP 440
ordering (``introduced`` / ``fixed`` / ``last_affected`` events, several per range
allowed), and explicit ``versions`` lists are compared as versions. Local version
labels (``+cu121``) are dropped before matching: advisories name public releases.
``GIT`` ranges carry commits and are not used. Withdrawn records are ignored.
A record that cannot be read or does not have the OSV shape stops the audit with
an :class:`~envkit.errors.AuditError` naming the file: a security tool does not
skip data silently.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from packaging.version import InvalidVersion, Version

from envkit._io import TooLarge, load_json_bounded, read_bytes_bounded
from envkit._pep503 import canonicalize_name
from envkit._yaml import ALIAS_OR_DEEP, C_SAFE_LOADER, YamlProblem, load_bounded
from envkit.audit.cvss import cvss3_score, severity_of_score
from envkit.audit.data_age import data_date_of
from envkit.audit.service import AuditSeverity, Dep, Vuln, VulnService, short_summary
from envkit.errors import AuditError, UsageError

if TYPE_CHECKING:
    from envkit.audit.index import AdvisoryIndex

_RESTORE = (
    "restore the advisory database (git checkout / envkit audit --update-db); records are never skipped"
)

__all__ = ["OSV_PYPI_URL", "OsvDirService", "OsvRecord", "affects", "parse_record"]

_SUFFIXES = (".yaml", ".yml", ".json")
_MAX_VERSION_CHARS = 256  # as inventories (a longer one is not a version: ints past 4,300 digits fail)
# OSV's export of every PyPI record (envkit audit --update-db downloads it; the help names it)
OSV_PYPI_URL = "https://osv-vulnerabilities.storage.googleapis.com/PyPI/all.zip"
MAX_RECORD_BYTES = 4 * 1024 * 1024  # the largest PyPA record is ~60 KB; OSV's largest PyPI ones ~1 MB
_GHSA_SEVERITY: dict[str, AuditSeverity] = {
    "LOW": "low",
    "MODERATE": "medium",
    "MEDIUM": "medium",
    "HIGH": "high",
    "CRITICAL": "critical",
}


@dataclass(frozen=True)
class Affected:
    """The part of a record about one package."""

    package: str  # canonical PyPI name
    ranges: tuple[tuple[tuple[str, Version], ...], ...]  # ECOSYSTEM ranges: ((kind, version), ...)
    versions: frozenset[str]  # normalized strings of the explicit list


@dataclass(frozen=True)
class OsvRecord:
    """One OSV advisory, parsed strictly: ids, severity, the affected versions, references."""

    id: str
    summary: str
    aliases: tuple[str, ...]
    severity: AuditSeverity
    withdrawn: bool
    affected: tuple[Affected, ...]
    references: tuple[str, ...]
    source: str

    def fixed_in(self, package: str) -> tuple[str, ...]:
        fixed = {
            str(v)
            for a in self.affected
            if a.package == package
            for r in a.ranges
            for k, v in r
            if k == "fixed"
        }
        return tuple(sorted(fixed, key=Version))

    def to_vuln(self, package: str) -> Vuln:
        return Vuln(
            id=self.id,
            summary=self.summary,
            aliases=self.aliases,
            fixed_in=self.fixed_in(package),
            severity=self.severity,
            source=self.source,
            references=self.references,
        )


class _Corrupt(Exception):
    pass


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise _Corrupt(what)


def _severity(data: dict[str, Any]) -> AuditSeverity:
    specific = data.get("database_specific")
    if isinstance(specific, dict) and isinstance(specific.get("severity"), str):
        mapped = _GHSA_SEVERITY.get(specific["severity"].upper())
        if mapped:
            return mapped
    best: AuditSeverity = "unknown"
    for entry in data.get("severity") or ():
        if isinstance(entry, dict) and isinstance(entry.get("score"), str):
            score = cvss3_score(entry["score"])
            if score is not None:
                best = severity_of_score(score)
    return best


def _version_key(text: str) -> str:
    _need(len(text) <= _MAX_VERSION_CHARS, f"a listed version of {len(text)} characters")
    try:
        return str(Version(text))
    except InvalidVersion:
        return text


def _parse_range(raw: Any) -> tuple[tuple[str, Version], ...] | None:
    _need(isinstance(raw, dict), "a range is not a mapping")
    if raw.get("type") != "ECOSYSTEM":
        return None
    events = raw.get("events")
    _need(isinstance(events, list) and bool(events), "an ECOSYSTEM range has no events")
    parsed: list[tuple[str, Version]] = []
    for event in events:
        _need(isinstance(event, dict) and len(event) >= 1, "an event is not a mapping")
        for kind, value in event.items():
            if kind not in ("introduced", "fixed", "last_affected", "limit"):
                continue
            _need(len(str(value)) <= _MAX_VERSION_CHARS, f"a {kind} version of {len(str(value))} characters")
            try:
                parsed.append((kind, Version(str(value))))
            except InvalidVersion:
                # Real records carry a few non-PEP 440 versions ('0.2.0-n653'). Err on the side of
                # reporting: an unreadable start opens the range at 0, an unreadable end is dropped.
                if kind == "introduced":
                    parsed.append((kind, Version("0")))
    return tuple(parsed)


def _parse_affected(raw: Any) -> Affected | None:
    _need(isinstance(raw, dict), "an affected entry is not a mapping")
    package = raw.get("package")
    _need(
        isinstance(package, dict) and isinstance(package.get("name"), str),
        "affected[].package.name is missing",
    )
    if package.get("ecosystem") != "PyPI":
        return None
    ranges_raw = raw.get("ranges") or []
    versions_raw = raw.get("versions") or []
    _need(isinstance(ranges_raw, list), "affected[].ranges is not a list")
    _need(isinstance(versions_raw, list), "affected[].versions is not a list")
    _need(
        all(isinstance(v, str | int | float) for v in versions_raw), "affected[].versions has a non-version"
    )
    ranges = tuple(r for r in (_parse_range(x) for x in ranges_raw) if r is not None)
    versions = frozenset(_version_key(str(v)) for v in versions_raw)
    return Affected(canonicalize_name(package["name"]), ranges, versions)


def _withdrawn(value: Any) -> bool:
    """OSV ``withdrawn`` is an RFC 3339 time; anything else would silently drop the advisory."""
    if value is None:
        return False
    if isinstance(value, datetime.date):  # YAML reads an unquoted timestamp as a date/datetime
        return True
    _need(isinstance(value, str), f"withdrawn is {type(value).__name__}, not an RFC 3339 time")
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise _Corrupt(f"withdrawn {value[:40]!r} is not an RFC 3339 time") from None
    return True


def _strings(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key) or []
    _need(
        isinstance(value, list) and all(isinstance(v, str) for v in value), f"{key} is not a list of strings"
    )
    return value


def _check_fields(data: dict[str, Any]) -> None:
    """Types of the fields envkit reads (OSV schema 1.6); a wrong type is corruption, never a skip."""
    _need(isinstance(data.get("id"), str) and 0 < len(data["id"]) <= 200, "the record has no id")
    for key in ("summary", "details", "modified", "published"):
        _need(data.get(key) is None or isinstance(data[key], str | datetime.date), f"{key} is not text")
    for key in ("severity", "references"):
        value = data.get(key) or []
        _need(isinstance(value, list) and all(isinstance(v, dict) for v in value), f"{key} is not a list")
    specific = data.get("database_specific")
    _need(specific is None or isinstance(specific, dict), "database_specific is not a mapping")


def parse_record(data: Any, source: str) -> OsvRecord:
    """Validate one OSV record's shape; raise AuditError naming ``source`` when it is broken."""
    try:
        _need(isinstance(data, dict), "the file is not an OSV record (no mapping)")
        _check_fields(data)
        affected = data.get("affected")
        _need(isinstance(affected, list), "the record has no affected list")
        aliases = _strings(data, "aliases")
        refs = [r.get("url") for r in data.get("references") or [] if isinstance(r, dict)]
        parsed = tuple(a for a in (_parse_affected(x) for x in affected) if a is not None)
        withdrawn = _withdrawn(data.get("withdrawn"))
    except _Corrupt as e:
        raise AuditError(
            f"corrupted advisory record {source}: {e}",
            hint=_RESTORE,
        ) from e
    summary = short_summary(str(data.get("summary") or data.get("details") or ""))
    return OsvRecord(
        id=data["id"],
        summary=summary,
        aliases=tuple(sorted(str(a) for a in aliases)),
        severity=_severity(data),
        withdrawn=withdrawn,
        affected=parsed,
        references=tuple(str(u) for u in refs if u),
        source=source,
    )


def _in_range(version: Version, events: tuple[tuple[str, Version], ...]) -> bool:
    # OSV: sort events by version; "introduced" opens, "fixed"/"limit" close at, "last_affected" closes after.
    affected = False
    for kind, at in sorted(events, key=lambda e: (e[1], e[0] != "introduced")):
        if kind == "introduced" and version >= at:
            affected = True
        elif (kind in ("fixed", "limit") and version >= at) or (kind == "last_affected" and version > at):
            affected = False
    return affected


def affects(record: OsvRecord, package: str, version: Version) -> bool:
    """Whether ``record`` affects ``package`` at ``version`` (its local label ignored)."""
    if record.withdrawn:
        return False
    public = Version(version.public)
    for entry in record.affected:
        if entry.package != package:
            continue
        if str(public) in entry.versions or any(_in_range(public, r) for r in entry.ranges):
            return True
    return False


def _load_file(path: Path, display: str) -> Any:
    """One record, bounded: at most :data:`MAX_RECORD_BYTES`, no YAML aliases, bounded nesting."""
    try:
        text = read_bytes_bounded(path, MAX_RECORD_BYTES).decode("utf-8")
        if path.suffix == ".json":
            return json.loads(text)
        if ALIAS_OR_DEEP.search(text):  # the bounded pure-Python loader refuses them with a line
            return load_bounded(text, max_bytes=MAX_RECORD_BYTES)
        return yaml.load(text, Loader=C_SAFE_LOADER)  # noqa: S506 - a SafeLoader (C or Python)
    except YamlProblem as e:
        where = f"{display}:{e.line}" if e.line else display
        raise AuditError(f"corrupted advisory record {where}: {e.message}", hint=_RESTORE) from e
    except TooLarge as e:
        raise AuditError(
            f"corrupted advisory record {display}: larger than {e.limit} bytes", hint=_RESTORE
        ) from e
    except RecursionError as e:
        raise AuditError(f"corrupted advisory record {display}: nested too deeply", hint=_RESTORE) from e
    except (OSError, UnicodeDecodeError, ValueError, TypeError, yaml.YAMLError) as e:
        raise AuditError(
            f"corrupted advisory record {display}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}",
            hint=_RESTORE,
        ) from e


MAX_STAMP_BYTES = 1 << 20  # envkit's own SOURCE.json is ~200 bytes


def _source_stamp(stamp: Path) -> dict[str, str]:
    """``SOURCE.json`` (from ``--update-db``) as provenance: a bounded JSON object whose scalar values
    are kept (each at most 500 characters). It only says where the data came from, so a file that is
    not envkit's does not stop the audit: ``source_note`` names the file and what is wrong with it."""
    try:
        meta = load_json_bounded(read_bytes_bounded(stamp, MAX_STAMP_BYTES), 4)
    except TooLarge as e:
        return {"source_note": f"{stamp}: larger than {e.limit} bytes: not envkit's SOURCE.json; ignored"}
    except (OSError, ValueError) as e:  # load_json_bounded: invalid, not UTF-8, too deep
        return {"source_note": f"{stamp}: unreadable ({str(e)[:120]}): not envkit's SOURCE.json; ignored"}
    if not isinstance(meta, dict):
        kind = type(meta).__name__
        return {"source_note": f"{stamp}: a JSON {kind}, not an object: not envkit's SOURCE.json; ignored"}
    info = {str(k)[:80]: str(v)[:500] for k, v in meta.items() if isinstance(v, str | int | float)}
    dropped = sorted(str(k)[:80] for k, v in meta.items() if not isinstance(v, str | int | float))
    if dropped:
        info["source_note"] = f"{stamp}: {', '.join(dropped[:5])}: not a string or number; left out"
    return info


class OsvDirService(VulnService):
    """Advisories from ``ROOT/vulns/<package>/*.yaml|json`` (or ``ROOT/<package>/...``)."""

    name = "osv-dir"

    def __init__(self, root: Path, index_dir: Path | None = None) -> None:
        """``index_dir``: keep the parsed records there (:mod:`envkit.audit.index`); None reads the files."""
        vulns = root / "vulns"
        if not vulns.is_dir():
            if not root.is_dir():
                raise UsageError(
                    f"{root}: no advisory database there",
                    hint="pass --db DIR (a checkout of github.com/pypa/advisory-database) "
                    "or run envkit audit --update-db",
                )
            vulns = root
        self.root = root
        self._vulns = vulns
        self._index: dict[str, list[Path]] | None = None
        self._records: dict[str, list[OsvRecord]] = {}
        self._answers: dict[tuple[str, str, str | None], tuple[Dep, list[Vuln]]] = {}
        self._advisory_index: AdvisoryIndex | None = None
        self._dated: tuple[tuple[str, str] | None] | None = None
        if index_dir is not None:
            from envkit.audit.index import AdvisoryIndex

            self._advisory_index = AdvisoryIndex(root, vulns, index_dir, self._readers)

    def _package_index(self) -> dict[str, list[Path]]:
        if self._index is None:
            index: dict[str, list[Path]] = {}
            for folder in sorted(p for p in self._vulns.iterdir() if p.is_dir()):
                index.setdefault(canonicalize_name(folder.name), []).append(folder)
            if not index:
                raise AuditError(
                    f"{self._vulns}: the advisory database is empty", hint="run envkit audit --update-db"
                )
            self._index = index
        return self._index

    def records(self, package: str) -> list[OsvRecord]:
        """Every record filed under ``package`` (parsed once per run, or once per database: the index)."""
        name = canonicalize_name(package)
        if name not in self._records:
            index = self._advisory_index
            self._records[name] = index.records(name) if index else self._read_package(name)
        return self._records[name]

    def _readers(self) -> list[tuple[str, Callable[[], list[OsvRecord]]]]:
        """What the advisory index is built from: every package folder's reader."""
        return [(name, partial(self._read_package, name)) for name in self._package_index()]

    def _read_package(self, name: str) -> list[OsvRecord]:
        found = []
        for folder in self._package_index().get(name, []):
            for path in sorted(folder.iterdir()):
                if path.suffix in _SUFFIXES and not path.is_dir():  # a FIFO or device: an error naming it
                    display = (
                        str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)
                    )
                    found.append(parse_record(_load_file(path, str(path)), display))
        return found

    def query(self, dep: Dep) -> tuple[Dep, list[Vuln]]:
        """The advisories affecting ``dep`` (once per name and version in a run: a fleet repeats them)."""
        key = (dep.name, dep.version, dep.skip_reason)
        if key not in self._answers:
            self._answers[key] = self._query(dep)
        answered, hits = self._answers[key]
        return answered, list(hits)

    def _query(self, dep: Dep) -> tuple[Dep, list[Vuln]]:
        try:
            version = Version(dep.version)
        except ValueError:  # InvalidVersion, or a component beyond Python's 4,300-digit int limit
            return dep.skipped(f"{dep.version!r} is not a PEP 440 version"), []
        hits = [r.to_vuln(dep.name) for r in self.records(dep.name) if affects(r, dep.name, version)]
        return dep, sorted(hits, key=lambda v: v.id)

    def provenance(self) -> dict[str, str]:
        info = {"service": self.name, "database": str(self.root)}
        stamp = self.root / "SOURCE.json"
        if stamp.is_file():
            info.update(_source_stamp(stamp))
        else:
            readme = self.root / "README.md"
            if readme.is_file():
                digest = hashlib.sha256()
                with readme.open("rb") as fh:  # streamed: a README is not bounded like the records
                    while chunk := fh.read(1 << 20):
                        digest.update(chunk)
                info["readme_sha256"] = digest.hexdigest()
        if self._dated is None:  # a fleet asks once per target: the records are scanned once
            self._dated = (data_date_of(self.root, self._vulns, info),)
        dated = self._dated[0]
        if dated is not None:
            info["data_date"], info["data_date_source"] = dated
        return info
