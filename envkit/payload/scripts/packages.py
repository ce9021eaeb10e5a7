"""Every shared object of an environment and the distribution that installed it. Standard library only.

``envkit check`` reads the GPU code of every ELF file under the site directories, the
environment's ``lib`` (a conda prefix's ``lib``, ``/usr/local/lib`` in an image) and the JIT caches
named with ``--cache`` (``~/.cache/torch_extensions``): "no kernel image" now mostly comes from
third-party extensions, not from the framework. Each file is attributed to the distribution whose
``*.dist-info/RECORD`` lists it, else the conda package whose ``conda-meta/*.json`` lists it, else
(in a cache) to the cache entry it sits in. Bounded: at most ``MAX_FILES`` shared objects, RECORDs
and conda-meta files of at most ``MAX_META`` bytes; links are never followed into directories.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import re
import time

import elfscan

MAX_FILES = 20000  # shared objects scanned per check (a CUDA torch + extensions: ~400)
MAX_META = 16 << 20  # bytes of one RECORD or conda-meta file
MAX_WALK_SECONDS = 300.0  # the whole walk (each file is bounded by elfscan's own per-file budget)
_SO = re.compile(r"\.so(\.[0-9][0-9A-Za-z.]*)?\Z")


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_META + 1)
    except OSError:
        return ""
    return "" if len(data) > MAX_META else data.decode("utf-8", "replace")


SYSTEM_PREFIXES = ("/", "/usr")  # their lib is the system's, not the environment's


def prefix_of(site: str) -> str | None:
    """The environment prefix of ``PREFIX/lib/pythonX.Y/site-packages`` (or ``dist-packages``);
    None for the system's own (``/usr/lib/python3/dist-packages``)."""
    parts = os.path.normpath(site).split(os.sep)
    if len(parts) >= 4 and parts[-1] in ("site-packages", "dist-packages") and parts[-3] == "lib":
        prefix = os.sep.join(parts[:-3]) or os.sep
        return None if prefix in SYSTEM_PREFIXES else prefix
    return None


def _dist_name(info_dir: str) -> tuple[str, str]:
    """(name, version) of a ``name-version.dist-info`` directory (``METADATA``'s Name when present)."""
    base = os.path.basename(info_dir)[: -len(".dist-info")]
    name, _, version = base.rpartition("-")
    meta = _read(os.path.join(info_dir, "METADATA"))[:65536]
    m = re.search(r"^Name: *(\S+) *$", meta, re.M)
    return (m.group(1) if m else name or base), version


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def owners(sites: list[str]) -> dict[str, dict[str, object]]:
    """Real path of each file a distribution installed -> {name, version, via}."""
    out: dict[str, dict[str, object]] = {}
    for site in sites:
        for info in sorted(glob.glob(os.path.join(glob.escape(site), "*.dist-info"))):
            name, version = _dist_name(info)
            owner = {"name": name, "version": version, "via": "RECORD"}
            try:
                rows = list(csv.reader(io.StringIO(_read(os.path.join(info, "RECORD")))))
            except csv.Error:
                continue
            for row in rows:
                if row and _SO.search(row[0]):
                    out.setdefault(_real(os.path.join(site, row[0])), owner)
    for prefix in sorted({p for p in map(prefix_of, sites) if p}):
        for meta in sorted(glob.glob(os.path.join(glob.escape(prefix), "conda-meta", "*.json"))):
            try:
                doc = json.loads(_read(meta) or "{}")
            except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
                continue
            owner = {"name": str(doc.get("name")), "version": str(doc.get("version")), "via": "conda-meta"}
            for rel in doc["files"]:
                if isinstance(rel, str) and _SO.search(rel):
                    out.setdefault(_real(os.path.join(prefix, rel)), owner)
    return out


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def shared_objects(roots: list[str], limit: int | None = None) -> tuple[list[str], bool]:
    """ELF files named ``*.so`` / ``*.so.N`` under ``roots`` (one path per real file), and whether
    ``limit`` (default ``MAX_FILES``) cut the walk short."""
    limit = MAX_FILES if limit is None else limit
    seen: set[str] = set()
    found: list[str] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                if not _SO.search(name):
                    continue
                path = os.path.join(dirpath, name)
                real = _real(path)
                if real in seen or not os.path.isfile(real) or not _is_elf(real):
                    continue
                if len(found) >= limit:
                    return found, True
                seen.add(real)
                found.append(path)
    return found, False


def cache_owner(path: str, caches: list[str]) -> dict[str, object] | None:
    """A file in a JIT cache: the entry it sits in (``torch_extensions/py311_cu128/fused_adam/x.so``
    -> ``fused_adam``)."""
    for cache in caches:
        rel = os.path.relpath(path, cache)
        if rel.startswith(".."):
            continue
        parts = rel.split(os.sep)
        name = parts[-2] if len(parts) >= 2 else parts[0]
        return {"name": name, "version": None, "via": f"cache {cache}"}
    return None


def env_roots(sites: list[str], caches: list[str]) -> list[str]:
    """Where to look: the sites, each environment's ``lib``, the caches (existing directories)."""
    roots = list(sites)
    roots += [os.path.join(p, "lib") for p in sorted({p for p in map(prefix_of, sites) if p})]
    roots += caches
    out: list[str] = []
    for root in roots:
        if os.path.isdir(root) and _real(root) not in {_real(r) for r in out}:
            out.append(root)
    return out


def every_library(
    sites: list[str], caches: list[str], libraries: dict[str, dict[str, object]]
) -> dict[str, object]:
    """Scan every shared object of the environment into ``libraries`` (those with GPU code or an
    ELF problem); the owner of each library with GPU code, and what was walked."""
    roots = env_roots(sites, caches)
    files, cut = shared_objects(roots)
    known = {_real(p): p for p in libraries}
    deadline = time.monotonic() + MAX_WALK_SECONDS
    for path in files:
        if time.monotonic() > deadline:
            cut = True  # reported: the walk read part of the environment only
            break
        if _real(path) in known:
            continue
        info = elfscan.scan(path)
        if info["fatbins"] or info["problem"]:
            info["path"] = path
            libraries[path] = info
            known[_real(path)] = path
    own = owners(sites)
    attributed: dict[str, object] = {}
    for path, info in libraries.items():
        if info.get("fatbins"):
            owner = own.get(_real(path)) or cache_owner(path, caches)
            if owner is not None:
                attributed[path] = owner
    return {
        "owners": dict(sorted(attributed.items())),
        "walk": {"roots": roots, "shared_objects": len(files), "limit": MAX_FILES, "cut": cut},
    }
