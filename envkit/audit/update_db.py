"""``envkit audit --update-db``: fetch the OSV PyPI export and write it as an advisory directory.

The export (a zip of ``<ID>.json`` OSV records) is unpacked into
``DIR/vulns/<package>/<ID>.json`` — the layout :class:`~envkit.audit.osv_dir.OsvDirService`
reads — beside ``DIR/SOURCE.json`` (URL, sha256 of the zip, record count). The new
tree is written beside the old one and swapped in at the end, so an interrupted
update leaves the previous database intact. Fetching goes through a ``Fetcher``
callable, so tests use a fake one.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

from envkit.audit.osv_dir import parse_record
from envkit.errors import AuditError

__all__ = ["OSV_PYPI_URL", "Fetcher", "http_fetch", "update_db"]

OSV_PYPI_URL = "https://osv-vulnerabilities.storage.googleapis.com/PyPI/all.zip"
Fetcher = Callable[[str], bytes]


def http_fetch(url: str, *, timeout: float = 60.0) -> bytes:
    import requests

    try:
        response = requests.get(url, timeout=timeout)
        response.raise_for_status()
    except requests.RequestException as e:
        raise AuditError(
            f"cannot download the advisory database from {url}: {type(e).__name__}",
            hint="this needs internet access; offline, copy a checkout of github.com/pypa/advisory-database "
            "and pass --db DIR",
        ) from e
    return response.content


def update_db(directory: Path, fetch: Fetcher, *, url: str = OSV_PYPI_URL) -> dict[str, object]:
    """Download, validate every record, and replace ``directory`` atomically. Returns SOURCE.json's data."""
    data = fetch(url)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise AuditError(
            f"{url}: the download is not a zip file", hint="retry; the mirror may be broken"
        ) from e
    staging = directory.with_name(f".{directory.name}.new")
    shutil.rmtree(staging, ignore_errors=True)
    count = 0
    try:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            if info.is_dir() or not info.filename.endswith(".json"):
                continue
            raw = archive.read(info)
            try:
                record = parse_record(json.loads(raw), f"{url}!{info.filename}")
            except ValueError as e:
                raise AuditError(f"{url}!{info.filename}: not JSON", hint="retry the update") from e
            packages = sorted({a.package for a in record.affected}) or ["unknown"]
            for package in packages:
                target = staging / "vulns" / package / Path(info.filename).name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(raw)
            count += 1
        meta: dict[str, object] = {
            "url": url,
            "zip_sha256": hashlib.sha256(data).hexdigest(),
            "records": count,
        }
        (staging / "SOURCE.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", "utf-8")
        old = directory.with_name(f".{directory.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if directory.exists():
            directory.rename(old)
        staging.rename(directory)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return meta
