"""``envkit pack NAME``: one tarball with everything an air-gapped conda build of NAME needs.

From the fresh lock (solved first when missing or stale, as ``envkit build`` does): every conda
package of the lock for the spec's platforms, every wheel of requirements.lock and the installer
wheel the offline builder stage runs, each checked against its sha256 while downloading
(:mod:`envkit.offline.collect`), then one byte-stable tar with a manifest (:mod:`envkit.offline.archive`).
Downloads are cached under ``.envkit/cache``: packing an unchanged lock again downloads nothing
and writes the same bytes. A hash mismatch stops with exit 3 naming the package and URL, and
leaves no tarball.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from envkit import _proc
from envkit._atomic import state_dir
from envkit.lock.fresh import Locker, ensure_fresh_lock
from envkit.offline.collect import PackProgress, collect
from envkit.offline.fetch import Fetcher
from envkit.offline.request import pack_request
from envkit.pack.tarball import write_pack
from envkit.spec.load import LoadedSpec, image_dir

__all__ = ["PackOptions", "PackResult", "default_pack_path", "pack_environment"]


@dataclass(frozen=True)
class PackOptions:
    """How ``envkit pack`` packs: where to write, frozen lock, local wheels."""

    output: Path | None = None  # default: <root>/NAME-<lock12>.envkit-pack.tar
    frozen: bool = False  # refuse a missing or stale lock instead of solving it
    find_links: tuple[str, ...] = ()


@dataclass(frozen=True)
class PackResult:
    """A written pack: its file, sha256, size, what it holds and how long it took."""

    name: str
    path: str
    sha256: str
    size: int
    files: int
    conda_packages: int
    wheels: int
    downloaded: int
    reused: int
    lock_sha256: str
    lock: str  # "fresh", or "locked" when this command solved it
    seconds: float
    platforms: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def default_pack_path(root: Path, name: str, lock_sha256: str) -> Path:
    return root / f"{name}-{lock_sha256[:12]}.envkit-pack.tar"


def pack_environment(
    root: Path,
    loaded: LoadedSpec,
    *,
    locker: Locker,
    fetcher: Fetcher,
    options: PackOptions = PackOptions(),
    pip_runner: _proc.Runner = _proc.run,
    on_progress: Callable[[PackProgress], None] | None = None,
) -> PackResult:
    start = time.monotonic()
    lock, was = ensure_fresh_lock(root, loaded, locker, frozen=options.frozen)
    request = pack_request(loaded, lock, image_dir(root, loaded.spec.name), options.find_links)
    collected = collect(
        request, state_dir(root, "cache"), fetcher, pip_runner=pip_runner, on_progress=on_progress
    )
    out = options.output or default_pack_path(root, request.name, request.lock_sha256)
    sha256 = write_pack(collected, out)
    files = collected.manifest.files
    return PackResult(
        name=request.name,
        path=str(out),
        sha256=sha256,
        size=out.stat().st_size,
        files=len(files),
        conda_packages=sum(f.kind == "conda" for f in files),
        wheels=sum(f.kind == "wheel" for f in files),
        downloaded=collected.downloaded,
        reused=collected.reused,
        lock_sha256=request.lock_sha256,
        lock="locked" if was is not None else "fresh",
        seconds=round(time.monotonic() - start, 3),
        platforms=request.platforms,
    )
