"""``envkit audit --update-db``: fetch the OSV PyPI export and write it as an advisory directory.

The export (a zip of ``<ID>.json`` OSV records) is unpacked into
``DIR/vulns/<package>/<ID>.json`` — the layout :class:`~envkit.audit.osv_dir.OsvDirService`
reads — beside ``DIR/SOURCE.json`` (URL, sha256 of the zip, record count). The new
tree is written beside the old one and swapped in at the end, so an interrupted
update leaves the previous database intact. The staging directory (and the one the old
database is moved into) is created exclusively under a fresh random name (``mkdtemp``: never a
``.NAME.new`` someone planted, a link into their folder whose records would become the
database), and each file in it is created ``O_EXCL | O_NOFOLLOW``. Fetching goes through the one
:class:`~envkit.offline.fetch.Fetcher` (``Services`` builds it; tests pass ``FakeFetcher``).

The download is untrusted input that becomes paths (whoever controls its bytes — a
TLS-intercepting proxy, a compromised bucket, a mirror — chooses the names). So the
whole archive is checked before anything is written: every package name must be a
PEP 508 distribution name (ASCII letters, digits, ``.``, ``_``, ``-``; no separators,
no ``..``, no NUL, no look-alike Unicode), every entry name a plain ``<ID>.json``, every
entry within the size bounds, and every target path, resolved, must lie inside the
staging directory. One bad record refuses the whole update with an
:class:`~envkit.errors.AuditError` naming it, and the previous database is left as it was.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from envkit.audit.data_age import newest_date
from envkit.audit.osv_dir import MAX_RECORD_BYTES, OSV_PYPI_URL, parse_record
from envkit.errors import AuditError, EnvkitError

if TYPE_CHECKING:  # urllib.request (http.client, ssl) only when an update runs, not for every audit
    from envkit.offline.fetch import Fetcher

__all__ = ["OSV_PYPI_URL", "update_db", "valid_distribution_name"]

# PEP 508 "names" (packaging.requirements' NAME), ASCII only; 200 is far above the longest name on PyPI.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?", re.ASCII)
# An OSV export entry: ``PYSEC-2021-1.json``, ``GHSA-xxxx-xxxx-xxxx.json`` (no folders, no dot files).
_ENTRY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}\.json", re.ASCII)
MAX_ENTRIES = 200_000  # OSV's PyPI export held ~17,000 records in 2025
MAX_TOTAL_BYTES = 2 * 1024**3  # uncompressed; the real export is ~100 MB
_REFUSED = "the update was refused and the previous database is unchanged"


def valid_distribution_name(name: str) -> bool:
    """Whether ``name`` is a PEP 508 distribution name (and so safe as one path part)."""
    return _NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class _Write:
    target: Path
    raw: bytes


def _shown(text: str, limit: int = 80) -> str:
    """``text`` as a short, escaped literal (NUL, controls and bidi marks are shown as escapes)."""
    if len(text) > limit:
        return f"{text[:limit]!r}… ({len(text)} characters)"
    return repr(text)


def _refuse(url: str, entry: str, problem: str) -> AuditError:
    return AuditError(
        f"{url}!{_shown(entry)}: {problem}; {_REFUSED}",
        hint="the download does not look like OSV's PyPI export (a proxy or mirror may have altered it); "
        "retry, or pass --db DIR with a checkout of github.com/pypa/advisory-database",
    )


def _entry_name(url: str, info: zipfile.ZipInfo) -> str:
    raw = info.filename
    parts = PurePosixPath(raw.replace("\\", "/")).parts
    if "\x00" in raw or "\\" in raw or raw.startswith("/") or ".." in parts or not parts:
        raise _refuse(url, raw, "an archive entry with an unsafe path")
    name = parts[-1]
    if _ENTRY.fullmatch(name) is None:
        raise _refuse(url, raw, "an archive entry that is not a plain <ID>.json name")
    return name


def _pypi_names(data: Any) -> list[str]:
    """The raw ``affected[].package.name`` of every PyPI entry (parse_record has checked the shape)."""
    names = []
    for affected in data.get("affected") or ():
        package = affected.get("package") or {}
        if package.get("ecosystem") == "PyPI":
            names.append(package["name"])
    return names


def _read_record(archive: zipfile.ZipFile, info: zipfile.ZipInfo, url: str) -> tuple[bytes, Any]:
    """One entry's bytes and JSON, bounded; an unreadable entry refuses the update."""
    if info.file_size > MAX_RECORD_BYTES:
        raise _refuse(url, info.filename, f"a record larger than {MAX_RECORD_BYTES} bytes")
    try:
        raw = archive.read(info)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, OSError, zlib.error) as e:
        raise _refuse(url, info.filename, f"an unreadable archive entry ({type(e).__name__}: {e})") from e
    try:
        return raw, json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError, huge integers, deep nesting
        raise AuditError(f"{url}!{info.filename}: not JSON; {_REFUSED}", hint="retry the update") from e


def _targets(info: zipfile.ZipInfo, url: str, data: Any, root: Path) -> list[Path]:
    """Where one record goes: ``vulns/<package>/<entry name>`` for each PyPI package, each confined."""
    name = _entry_name(url, info)
    record = parse_record(data, f"{url}!{info.filename}")
    for raw_name in _pypi_names(data):
        if not valid_distribution_name(raw_name):
            raise _refuse(
                url,
                info.filename,
                f"record {_shown(record.id)} names the package {_shown(raw_name)}, "
                "which is not a PEP 508 distribution name",
            )
    targets = []
    for package in sorted({a.package for a in record.affected}) or ["unknown"]:
        target = (root / "vulns" / package / name).resolve()
        if not target.is_relative_to(root) or target.parent.parent != root / "vulns":
            raise _refuse(url, info.filename, f"package {_shown(package)} leaves the database directory")
        targets.append(target)
    return targets


def _plan(archive: zipfile.ZipFile, url: str, staging: Path) -> tuple[list[_Write], int, str | None]:
    """Every file the update will write, each checked, the record count and the newest record's
    ``modified`` date (the data's date); raises before any write."""
    infos = [i for i in archive.infolist() if not i.is_dir()]
    if len(infos) > MAX_ENTRIES:
        raise _refuse(url, "", f"{len(infos)} archive entries (more than {MAX_ENTRIES})")
    if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
        raise _refuse(url, "", f"more than {MAX_TOTAL_BYTES} bytes uncompressed")
    root = staging.resolve()
    writes: dict[Path, _Write] = {}
    records = 0
    modified: list[object] = []
    for info in sorted(infos, key=lambda i: i.filename):
        if not info.filename.endswith(".json"):
            continue
        raw, data = _read_record(archive, info, url)
        modified.append(data.get("modified") if isinstance(data, dict) else None)
        for target in _targets(info, url, data, root):
            if target in writes and writes[target].raw != raw:
                where = target.relative_to(root)
                raise _refuse(url, info.filename, f"a second, different record for {where}")
            writes[target] = _Write(target, raw)
        records += 1
    return list(writes.values()), records, newest_date(modified)


def _write_new(path: Path, raw: bytes) -> None:
    """Create ``path`` exclusively (never through a link or over a file already there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(raw)


def update_db(directory: Path, fetcher: Fetcher, *, url: str = OSV_PYPI_URL) -> dict[str, object]:
    """Download, validate every record, and replace ``directory`` atomically. Returns SOURCE.json's data."""
    from envkit.offline.fetch import fetch_bytes

    try:
        data = fetch_bytes(fetcher, url)
    except EnvkitError as e:
        raise AuditError(
            f"cannot download the advisory database from {url}: {e.message}",
            hint="this needs internet access; offline, copy a checkout of github.com/pypa/advisory-database "
            "and pass --db DIR",
        ) from e
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise AuditError(
            f"{url}: the download is not a zip file", hint="retry; the mirror may be broken"
        ) from e
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    # Created exclusively (mkdtemp: a fresh random name, O_EXCL, mode 0700): a `.NAME.new` or
    # `.NAME.old` someone planted beside the database (a link into their folder) is never adopted.
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.new-", dir=parent))
    retired = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=parent))
    try:
        writes, count, data_date = _plan(archive, url, staging)
        for write in writes:
            write.target.parent.mkdir(parents=True, exist_ok=True)
            _write_new(write.target, write.raw)
        meta: dict[str, object] = {
            "url": url,
            "zip_sha256": hashlib.sha256(data).hexdigest(),
            "records": count,
        }
        if data_date is not None:
            meta["data_date"] = data_date  # the newest record's modified: how old the data is
        _write_new(staging / "SOURCE.json", (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
        staging.chmod(0o755)  # readable by the users that share the database, as mkdir made it
        if directory.exists() or directory.is_symlink():
            directory.rename(retired / "previous")
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(retired, ignore_errors=True)
    return meta
