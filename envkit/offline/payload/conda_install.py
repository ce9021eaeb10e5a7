"""envkit's offline conda install, run in the builder stage of an offline (packed) build.

Usage: ``python3 conda_install.py EXPLICIT_LOCK PACKAGES_JSON CHANNEL_DIR PREFIX``

Standard library plus py-rattler (unzipped from the pack's pinned wheel onto PYTHONPATH). It reads
the explicit lock (``url#md5`` lines), finds each package in the packed local channel through
``PACKAGES_JSON`` (url -> path, sha256, md5 from conda-lock.yml), checks sha256 and md5 of every
archive (py-rattler does not check ``file://`` packages), indexes the channel with py-rattler,
installs exactly those records into PREFIX, and records in ``conda-meta`` the lock's URL and
channel, as an online install from that channel would. No network is used. Under
``SOURCE_DATE_EPOCH`` (the Dockerfile's ``ARG``) the records' ``indexed_timestamp`` (when
py-rattler indexed the channel, in ms) is that epoch, so the image is reproducible.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path

_CHUNK = 1 << 20


def _fail(message: str) -> None:
    print(f"envkit: {message}", file=sys.stderr)
    raise SystemExit(1)


def _hashes(path: Path) -> tuple[str, str]:
    sha, md5 = hashlib.sha256(), hashlib.md5()  # noqa: S324 - md5 is the explicit file's checksum
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            sha.update(chunk)
            md5.update(chunk)
    return sha.hexdigest(), md5.hexdigest()


def explicit_urls(text: str) -> list[tuple[str, str]]:
    """``(url, md5)`` for each package line of an @EXPLICIT file."""
    found = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line == "@EXPLICIT":
            continue
        url, _, md5 = line.partition("#")
        found.append((url, md5))
    return found


def checked_files(explicit: Path, known: dict[str, object], root: Path) -> list[tuple[str, Path]]:
    """Every locked package's archive, verified; ``(url, path)`` in the explicit file's order."""
    found = []
    for url, md5 in explicit_urls(explicit.read_text("utf-8")):
        entry = known.get(url)
        if entry is None:
            _fail(f"{url} is in {explicit.name} but not in the pack")
            continue
        path = root / entry["path"]
        if not path.is_file():
            _fail(f"{entry['path']} is missing from the build context")
        sha, got_md5 = _hashes(path)
        if sha != entry["sha256"] or (md5 and got_md5 != md5):
            _fail(f"{entry['path']} does not match the lock (sha256 {sha}, the lock has {entry['sha256']})")
        found.append((url, path))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        _fail("usage: conda_install.py EXPLICIT_LOCK PACKAGES_JSON CHANNEL_DIR PREFIX")
    explicit, packages, channel, prefix = (Path(a) for a in argv[1:])
    known = json.loads(packages.read_text("utf-8"))
    files = checked_files(explicit, known, channel.parent)
    import rattler
    import rattler.index

    asyncio.run(rattler.index.index_fs(channel, write_zst=False, write_shards=False, force=True))
    by_file = {}
    for repodata in sorted(channel.glob("*/repodata.json")):
        source = rattler.Channel(channel.resolve().as_uri())
        for record in rattler.RepoData.from_path(repodata).into_repo_data(source):
            by_file[(repodata.parent.name, record.file_name)] = record
    records = [by_file[(path.parent.name, path.name)] for _, path in files]
    cache = channel.parent / "pkgs"
    asyncio.run(rattler.install(records, prefix, cache_dir=cache, show_progress=False))
    origin = {path.name: url for url, path in files}
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    for meta in sorted((prefix / "conda-meta").glob("*.json")):
        data = json.loads(meta.read_text("utf-8"))
        url = origin.get(data.get("fn", ""))
        if url:  # the package's identity: where the lock says it comes from
            data["url"], data["channel"] = url, url.rsplit("/", 2)[0]
            data.pop("extracted_package_dir", None)
        if epoch.isdigit() and "indexed_timestamp" in data:  # when the builder indexed the channel (ms)
            data["indexed_timestamp"] = int(epoch) * 1000
        if url or "indexed_timestamp" in data:
            meta.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", "utf-8")
        meta.chmod(0o644)  # rattler writes 0600; the image's non-root user (and conda list) must read them
    print(f"envkit: installed {len(records)} conda packages into {prefix} (py-rattler {_version()})")
    return 0


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("py-rattler")
    except Exception:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
