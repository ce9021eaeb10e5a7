"""Open a pack (the tar :func:`envkit.pack.tarball.write_pack` wrote), checking it against the lock.

``open_pack`` extracts a pack into a cache folder keyed by the tarball's sha256 and verifies, before any
build starts, that it was made from *this* lock (the lock digest, every locked conda package with
the lock's sha256, every wheel hash among requirements.lock's) and that every file still has the
sha256 its manifest records. Anything else is a :class:`~envkit.errors.PackMismatch` (exit 2)
naming the file.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
from pathlib import Path

from envkit.errors import PackMismatch
from envkit.offline.collect import CollectedPack, PackRequest, bootstrap_path, conda_path, requirement_hashes
from envkit.offline.pack_manifest import MANIFEST, PackManifest
from envkit.render.context import file_sha256

__all__ = ["open_pack", "verify_against_lock"]

_CHUNK = 1 << 20


def open_pack(pack: Path, request: PackRequest, cache_root: Path) -> CollectedPack:
    """Extract ``pack`` (once, cached by its sha256) and verify it against ``request``'s lock."""
    if not pack.is_file():
        raise PackMismatch(f"{pack}: no such pack file", hint="make one with `envkit pack NAME -o FILE`")
    # the extraction is keyed by the file's identity (not a hash of its bytes: that would double the
    # hashing of a no-op rebuild); every extracted file is verified below against the manifest and the
    # lock, so whatever extraction is used holds exactly the lock's files
    stat = pack.stat()
    key = f"{pack.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ino}".encode()
    target = cache_root / "packs" / hashlib.sha256(key).hexdigest()[:32]
    if not (target / MANIFEST).is_file():
        _extract(pack, target)
    manifest = PackManifest.from_json((target / MANIFEST).read_text("utf-8"), str(pack))
    verify_against_lock(manifest, request, str(pack))
    sources: dict[str, Path] = {}
    for entry in manifest.files:
        path = target / entry.path
        if not path.is_file() or file_sha256(path) != entry.sha256:
            raise PackMismatch(
                f"{pack}: {entry.path} ({entry.name} {entry.version}) does not match its sha256 "
                f"{entry.sha256} (the file in the pack was changed)",
                hint="make the pack again on the connected machine and carry it unchanged",
            )
        sources[entry.path] = path
    return CollectedPack(manifest, sources, 0, len(sources))


def verify_against_lock(manifest: PackManifest, request: PackRequest, where: str) -> None:
    """The pack must be of this environment and lock, and hold every locked file with its sha256."""
    if manifest.name != request.name:
        raise PackMismatch(f"{where} is a pack of {manifest.name}, not {request.name}",
                           hint=f"use a pack made with `envkit pack {request.name}`")  # fmt: skip
    if manifest.lock_sha256 != request.lock_sha256:
        raise PackMismatch(
            f"{where} was made from another lock of {request.name} (lock {manifest.lock_sha256[:12]}, "
            f"images/{request.name}/ has {request.lock_sha256[:12]})",
            hint=f"make the pack again from the committed lock (`envkit pack {request.name}`), or check out "
            "the lock the pack was made from",
        )
    files = manifest.by_path()
    for platform in request.platforms:
        for package in request.conda.get(platform, ()):
            path = conda_path(package)
            entry = files.get(path)
            if entry is None or entry.sha256 != package.sha256:
                state = "is missing" if entry is None else f"has sha256 {entry.sha256}"
                raise PackMismatch(
                    f"{where}: {path} ({package.name} {package.version}) {state}; "
                    f"the lock has {package.sha256}",
                    hint=f"make the pack again with `envkit pack {request.name}`",
                )
        needed = [(f"installer/{request.installers[platform].filename}", request.installers[platform].sha256)]
        boot = request.bootstraps.get(platform)
        if boot is not None:
            needed.append((bootstrap_path(boot), boot.sha256))
        for path, sha256 in needed:
            entry = files.get(path)
            if entry is None or entry.sha256 != sha256:
                raise PackMismatch(f"{where}: the installer {path} is missing or changed",
                                   hint=f"make the pack again with `envkit pack {request.name}`")  # fmt: skip
    allowed = requirement_hashes(request.requirements or "")
    for entry in manifest.files:
        if entry.kind == "wheel" and entry.sha256 not in allowed:
            raise PackMismatch(
                f"{where}: {entry.path} is not a wheel of requirements.lock (sha256 {entry.sha256})",
                hint=f"make the pack again with `envkit pack {request.name}`",
            )


def _extract(pack: Path, target: Path) -> None:
    """Extract regular files only, each under ``target`` (no links, no absolute or ``..`` paths)."""
    work = Path(tempfile.mkdtemp(dir=target.parent if target.parent.exists() else _mk(target.parent)))
    root = work.resolve()
    try:
        with tarfile.open(pack, mode="r:") as tar:
            for member in tar:
                name = member.name
                if not member.isfile() or name.startswith("/") or ".." in name.split("/"):
                    raise PackMismatch(f"{pack}: unexpected entry {name!r}",
                                       hint="this is not a pack made by `envkit pack`")  # fmt: skip
                dest = (work / name).resolve()
                if not dest.is_relative_to(root) or dest == root or dest.exists():
                    raise PackMismatch(f"{pack}: unexpected entry {name[:200]!r} (outside the pack or twice)",
                                       hint="this is not a pack made by `envkit pack`")  # fmt: skip
                dest.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    continue
                with dest.open("wb") as out:
                    shutil.copyfileobj(source, out, _CHUNK)
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    except (tarfile.TarError, OSError) as e:
        raise PackMismatch(f"{pack}: not a readable pack ({type(e).__name__}: {str(e)[:200]})",
                           hint="carry the file again; make it with `envkit pack NAME`") from e  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
