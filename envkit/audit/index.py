"""The advisory index: an OSV directory's parsed records, built once per database snapshot.

Parsing the PyPA database's YAML costs seconds; the index keeps the parsed
:class:`~envkit.audit.osv_dir.OsvRecord` values of every package folder as JSON in the cache
(``$ENVKIT_ADVISORY_INDEX``, default ``$XDG_CACHE_HOME/envkit/advisory-index``, never in the
project), one file per database directory. It is opened on the first lookup and each package's
records are decoded only when asked for.

When it is rebuilt (it is never trusted otherwise):

* the database changed: the index holds a digest of every package folder's file list with each
  file's size, mtime, ctime and inode (``stat``: what git's index does). A rewritten file has a
  new ctime; files whose timestamps were within :data:`RACY_NS` of the build ("racy": a rewrite
  within the same clock tick keeps them) are also checked by content (sha256);
* envkit's parser changed: the key holds the sha256 of the modules that read records, and the
  versions of envkit, packaging and PyYAML;
* the file is corrupt: a header that does not parse, a body whose sha256 differs, a record of
  the wrong shape. JSON only: nothing in the cache can run code;
* the file is not this user's own: a link, not a regular file, owned by another user (not root),
  writable by its group or by others, or larger than :data:`MAX_INDEX_BYTES` (by its size, before
  any byte is read). A self-consistent
  index planted in a shared ``$ENVKIT_ADVISORY_INDEX`` could otherwise hide an advisory: it is
  treated as the fleet store's files are (ownership and mode checked), so it is rebuilt.

A package whose records cannot be read is kept as its error, so every run stops with the same
:class:`~envkit.errors.AuditError` as reading the file would, until the database is fixed.
A cache that cannot be written is not an error: the run uses what it built.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from envkit._atomic import write_bytes_atomic
from envkit._io import NotRegular, TooLarge, open_regular, read_limited
from envkit.audit.osv_dir import Affected, OsvRecord
from envkit.errors import AuditError, EnvkitError

__all__ = ["AdvisoryIndex", "decode_record", "default_index_dir", "encode_record"]

KIND = "envkit-advisory-index"
FORMAT = 1
RACY_NS = 3_000_000_000  # timestamps this close to the build are checked by content
MAX_INDEX_BYTES = 256 << 20  # the PyPA database snapshot's index is ~3 MB

FolderRead = list[OsvRecord] | AuditError  # what reading one package folder gives
FolderLoaders = Callable[[], Iterable[tuple[str, Callable[[], list[OsvRecord]]]]]


def default_index_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("ENVKIT_ADVISORY_INDEX"):
        return Path(env["ENVKIT_ADVISORY_INDEX"])
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "envkit" / "advisory-index"


class _Corrupt(Exception):
    pass


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise _Corrupt(what)


def _code_key(root: Path) -> str:
    """What the index's content depends on besides the files: the database's path, the parser."""
    import packaging
    import yaml

    from envkit import __version__, _pep503
    from envkit.audit import cvss, osv_dir, service

    h = hashlib.sha256()
    for part in (KIND, str(FORMAT), str(root), str(root.absolute()), __version__,
                 packaging.__version__, yaml.__version__):  # fmt: skip
        h.update(part.encode() + b"\0")
    for module in (osv_dir, cvss, service, _pep503):
        h.update(Path(str(module.__file__)).read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def _scan(vulns: Path) -> tuple[str, dict[str, int]]:
    """(digest of every package folder's files' stat, {file: newest timestamp}) of ``vulns``."""
    h = hashlib.sha256()
    stamps: dict[str, int] = {}
    with os.scandir(vulns) as top:
        folders = sorted((e for e in top if e.is_dir()), key=lambda e: e.name)
    for folder in folders:
        h.update(b"D" + folder.name.encode("utf-8", "surrogateescape") + b"\0")
        with os.scandir(folder.path) as inner:
            files = sorted(inner, key=lambda e: e.name)
        for entry in files:
            try:
                st = entry.stat()
            except OSError:  # a dangling link: reading it fails the same way
                h.update(b"X" + entry.name.encode("utf-8", "surrogateescape") + b"\0")
                continue
            rel = f"{folder.name}/{entry.name}"
            h.update(f"F{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0".encode(
                "utf-8", "surrogateescape"))  # fmt: skip
            stamps[rel] = max(st.st_mtime_ns, st.st_ctime_ns)
    return h.hexdigest(), stamps


def _read_own(path: Path) -> bytes | str:
    """The index file's bytes, or why it is not read (missing, not this user's own, too large)."""
    try:
        with open_regular(path) as fh:  # never through a link; a FIFO never blocks
            st = os.fstat(fh.fileno())
            foreign = _not_own(st)
            if foreign is None and st.st_size > MAX_INDEX_BYTES:  # a sparse file: refused unread
                raise TooLarge(path, MAX_INDEX_BYTES)
            return foreign or read_limited(fh, MAX_INDEX_BYTES, path)
    except FileNotFoundError:
        return "missing"
    except NotRegular as e:
        return f"not trusted: {e.strerror}"
    except TooLarge:
        return f"not trusted: larger than {MAX_INDEX_BYTES} bytes"
    except OSError as e:
        return f"unreadable: {e}"


def _not_own(st: os.stat_result) -> str | None:
    """Why an index file with this ``stat`` is not trusted (None: this user's or root's, not writable
    by others) — the rule the fleet store applies to its files (:func:`envkit.store.reads.check_owned`)."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"not trusted: owned by user id {st.st_uid}, not by you ({os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"not trusted: writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _entry(read: Callable[[], list[OsvRecord]]) -> FolderRead:
    try:
        return read()
    except AuditError as e:
        return e


def _sha256_of(path: Path) -> str:
    """A record's sha256, streamed; a FIFO or device is never waited on (reading it is the error)."""
    try:
        h = hashlib.sha256()
        with open_regular(path, follow=True) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return "unreadable"


class AdvisoryIndex:
    """Records by canonical package name, from the cache when it matches ``vulns``, else rebuilt.

    ``build`` lists ``(name, read)`` for every package folder; ``read()`` returns that package's
    records or raises the :class:`AuditError` reading them gives.
    """

    def __init__(self, root: Path, vulns: Path, directory: Path, build: FolderLoaders) -> None:
        self._root = root
        self._vulns = vulns
        self._build = build
        self.path = directory / f"{hashlib.sha256(str(root.absolute()).encode()).hexdigest()[:24]}.json"
        self.rebuilt: str | None = None  # why this run rebuilt it ("missing", "changed", "corrupt: ...")
        self._names: dict[str, tuple[int, int]] | None = None
        self._body = b""
        self._built: dict[str, FolderRead] = {}

    def records(self, name: str) -> list[OsvRecord]:
        """The records filed under canonical ``name`` ([] when the database has no such folder)."""
        if self._names is None:
            self._open()
        if name in self._built:
            return self._raise_or(self._built[name])
        assert self._names is not None
        span = self._names.get(name)
        if span is None:
            return []
        try:
            entry = self._decode_entry(json.loads(self._body[span[0] : span[1]]))
        except (_Corrupt, ValueError, TypeError, KeyError, InvalidVersion) as e:
            self._rebuild(f"corrupt: {type(e).__name__}: {e}")
            return self.records(name)
        return self._raise_or(entry)

    @staticmethod
    def _raise_or(entry: FolderRead) -> list[OsvRecord]:
        if isinstance(entry, AuditError):
            raise AuditError(entry.message, hint=entry.hint)
        return list(entry)

    def _open(self) -> None:
        key = _code_key(self._root)
        digest, stamps = _scan(self._vulns)
        why = self._load(key, digest)
        if why is None:
            return
        self._rebuild(why, key=key, digest=digest, stamps=stamps)

    def _load(self, key: str, digest: str) -> str | None:
        """None when the cached index is this database's; else why it is not."""
        data = _read_own(self.path)
        if isinstance(data, str):
            return data
        head, sep, body = data.partition(b"\n")
        try:
            header = json.loads(head)
            _need(sep == b"\n" and isinstance(header, dict), "no header line")
            _need(header.get("kind") == KIND and header.get("format") == FORMAT, "not an advisory index")
            if header.get("key") != key:
                return "envkit or the database path changed"
            if header.get("digest") != digest:
                return "the database changed"
            _need(hashlib.sha256(body).hexdigest() == header.get("body_sha256"), "the body's sha256 differs")
            racy = header.get("racy")
            names = header.get("names")
            _need(isinstance(racy, dict) and isinstance(names, dict), "no names")
            for rel, sha in racy.items():
                if _sha256_of(self._vulns / rel) != sha:
                    return "the database changed"
            spans = {}
            for name, span in names.items():
                _need(
                    isinstance(span, list) and len(span) == 2 and all(type(x) is int for x in span),
                    "a bad span",
                )
                _need(0 <= span[0] <= span[1] <= len(body), "a span outside the body")
                spans[str(name)] = (span[0], span[1])
        except (_Corrupt, ValueError) as e:
            return f"corrupt: {e}"
        self._names, self._body = spans, body
        if racy and time.time_ns() > int(header.get("built_ns", 0)) + RACY_NS:
            self._settle(header, body)
        return None

    def _settle(self, header: dict[str, object], body: bytes) -> None:
        """The racy files were verified and are now older than the margin: stat alone will do."""
        self._write({**header, "racy": {}}, body)

    def _rebuild(
        self,
        why: str,
        *,
        key: str | None = None,
        digest: str | None = None,
        stamps: dict[str, int] | None = None,
    ) -> None:
        self.rebuilt = why
        if key is None or digest is None or stamps is None:
            key, (digest, stamps) = _code_key(self._root), _scan(self._vulns)
        started = time.time_ns()
        racy = {
            rel: _sha256_of(self._vulns / rel)
            for rel, at in sorted(stamps.items())
            if at >= started - RACY_NS
        }
        built = {name: _entry(read) for name, read in self._build()}
        parts, names, offset = [], {}, 0
        for name in sorted(built):
            chunk = json.dumps(self._encode_entry(built[name]), separators=(",", ":")).encode()
            names[name] = [offset, offset + len(chunk)]
            parts.append(chunk)
            offset += len(chunk)
        body = b"".join(parts)
        header = {
            "kind": KIND,
            "format": FORMAT,
            "key": key,
            "digest": digest,
            "built_ns": started,
            "racy": racy,
            "database": str(self._root),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "names": names,
        }
        self._built, self._names, self._body = built, {}, b""
        self._write(header, body)

    def _write(self, header: dict[str, object], body: bytes) -> None:
        data = json.dumps(header, separators=(",", ":")).encode() + b"\n" + body
        with contextlib.suppress(EnvkitError):  # a read-only or full cache: this run keeps what it built
            write_bytes_atomic(self.path, data)

    def _encode_entry(self, entry: FolderRead) -> dict[str, object]:
        if isinstance(entry, AuditError):
            return {"error": {"message": entry.message, "hint": entry.hint}}
        return {"records": [encode_record(r) for r in entry]}

    def _decode_entry(self, data: Any) -> FolderRead:
        _need(isinstance(data, dict), "an entry is not a mapping")
        if "error" in data:
            err = data["error"]
            _need(isinstance(err, dict) and isinstance(err.get("message"), str), "a bad error entry")
            _need(err.get("hint") is None or isinstance(err["hint"], str), "a bad error hint")
            return AuditError(err["message"], hint=err.get("hint"))
        _need(isinstance(data.get("records"), list), "an entry without records")
        return [decode_record(r) for r in data["records"]]


def encode_record(r: OsvRecord) -> dict[str, object]:
    return {
        "id": r.id,
        "summary": r.summary,
        "aliases": list(r.aliases),
        "severity": r.severity,
        "withdrawn": r.withdrawn,
        "affected": [
            {
                "package": a.package,
                "ranges": [[[kind, str(v)] for kind, v in events] for events in a.ranges],
                "versions": sorted(a.versions),
            }
            for a in r.affected
        ],
        "references": list(r.references),
        "source": r.source,
    }


_SEVERITIES = ("unknown", "low", "medium", "high", "critical")


def _texts(value: Any, what: str) -> tuple[str, ...]:
    _need(
        isinstance(value, list) and all(map(isinstance, value, repeat(str))), f"{what} is not a list of text"
    )
    return tuple(value)


def _text(value: Any, what: str) -> str:
    _need(isinstance(value, str), f"{what} is not text")
    return str(value)


def _events(value: Any) -> tuple[tuple[str, Version], ...]:
    _need(isinstance(value, list), "a range is not a list")
    out = []
    for event in value:
        _need(isinstance(event, list) and len(event) == 2, "an event is not a pair")
        out.append((_text(event[0], "an event kind"), _version(_text(event[1], "an event version"))))
    return tuple(out)


@functools.lru_cache(maxsize=65536)  # a Version is immutable; a database repeats its versions ("0", fixes)
def _version(text: str) -> Version:
    return Version(text)


def _affected(value: Any) -> Affected:
    _need(isinstance(value, dict), "an affected entry is not a mapping")
    ranges = value.get("ranges")
    _need(isinstance(ranges, list), "ranges is not a list")
    return Affected(
        _text(value.get("package"), "package"),
        tuple(_events(r) for r in ranges),
        frozenset(_texts(value.get("versions"), "versions")),
    )


def decode_record(data: Any) -> OsvRecord:
    """One record as :func:`encode_record` wrote it; a wrong shape raises (the index is then rebuilt)."""
    _need(isinstance(data, dict), "a record is not a mapping")
    severity = data.get("severity")
    _need(severity in _SEVERITIES, "a bad severity")
    _need(isinstance(data.get("withdrawn"), bool), "withdrawn is not a boolean")
    affected = data.get("affected")
    _need(isinstance(affected, list), "affected is not a list")
    return OsvRecord(
        id=_text(data.get("id"), "id"),
        summary=_text(data.get("summary"), "summary"),
        aliases=_texts(data.get("aliases"), "aliases"),
        severity=severity,
        withdrawn=data["withdrawn"],
        affected=tuple(_affected(a) for a in affected),
        references=_texts(data.get("references"), "references"),
        source=_text(data.get("source"), "source"),
    )
