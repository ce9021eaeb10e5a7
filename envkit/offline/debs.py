"""Debian packages fetched for an offline build: the pinned files (:mod:`envkit.lock.debian`), hash-checked.

:func:`download_debs` fetches them with ``apt-get download`` into envkit's apt state (apt checks the
signature chain) and checks every file's sha256 against the pin once more before it enters a build
context.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from envkit import _proc
from envkit.errors import BuildFailed, EnvkitError
from envkit.lock.debian import AptState, DebPin, check_pin
from envkit.render.context import ContextEntry, file_sha256

__all__ = ["download_debs"]


def download_debs(
    state: AptState, pins: Sequence[DebPin], cache: Path, run: _proc.Runner = _proc.run
) -> list[ContextEntry]:
    """The pinned files as context entries ``debs/<file>``: cached by name, every sha256 checked."""
    cache.mkdir(parents=True, exist_ok=True)
    wanted = {p.sha256: p for p in pins}
    have = {p.sha256 for p in pins if _cached(cache / p.filename, p.sha256)}
    todo = [p for p in pins if p.sha256 not in have]
    words = [check_pin(p.name, p.version) for p in todo]  # the lock may be anyone's: never an option
    if todo:
        work = Path(tempfile.mkdtemp(dir=cache, prefix=".download."))
        try:
            argv = [
                "apt-get",
                *state.options(),
                "-o",
                f"Dir::Cache={state.directory}/cache",
                "download",
                "--",
                *words,
            ]
            run(argv, cwd=str(work), timeout=1800, hint=f"is {state.mirror} reachable?")
            _take(work, wanted, cache)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    missing = [f"{p.name}={p.version}" for p in pins if not _cached(cache / p.filename, p.sha256)]
    if missing:
        raise BuildFailed(
            f"apt-get download did not give {', '.join(missing)} with the pinned sha256",
            hint="the mirror serves other files than its index names: retry, or another mirror",
        )
    return [ContextEntry(f"debs/{p.filename}", p.sha256, p.size, source=cache / p.filename) for p in pins]


def _take(work: Path, wanted: Mapping[str, DebPin], cache: Path) -> None:
    """Move each downloaded file whose sha256 is a pin's into the cache under the pin's name."""
    for path in sorted(work.glob("*.deb")):
        digest = file_sha256(path)
        pin = wanted.get(digest)
        if pin is None:
            raise BuildFailed(
                f"apt-get download gave {path.name} (sha256 {digest[:16]}…), which no pin names",
                hint="the mirror serves other files than its signed index: retry, or another mirror",
            )
        path.replace(cache / pin.filename)


def _cached(path: Path, sha256: str) -> bool:
    try:
        return path.is_file() and file_sha256(path) == sha256
    except OSError as e:
        raise EnvkitError(f"cannot read {path}: {e}", hint="check .envkit/debs") from e
