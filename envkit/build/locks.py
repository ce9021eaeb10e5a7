"""Which lock files a build uses, and whether they are fresh: the seam to ``envkit lock``.

Lock files live beside the rendered context, in ``images/<name>/``:
``requirements.lock`` (hashed pip pins) and ``conda-<platform>.lock``. A lock
is fresh when its generated header names the current spec hash
(``spec sha256 <hash>``, the header every generated file carries).

:class:`FileLocks` only reads. Refreshing a stale lock is the job of a
:class:`Locker`; when ``envkit.lock`` provides one, the CLI passes it to the
builder (see :func:`default_locker`), otherwise a stale lock is ignored with a
warning and ``--frozen`` refuses to build.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Protocol

from envkit.spec.load import LoadedSpec

__all__ = ["FileLocks", "LockFiles", "LockState", "Locker", "default_locker"]

PIP_LOCK = "requirements.lock"
_SPEC_HASH = re.compile(r"spec sha256 ([0-9a-f]{64})")


class LockState(str, Enum):
    MISSING = "missing"
    FRESH = "fresh"
    STALE = "stale"


@dataclass(frozen=True)
class LockFiles:
    state: LockState
    pip_lock: Path | None = None
    conda_locks: tuple[Path, ...] = ()
    reason: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # name in the context -> content

    @property
    def sha256(self) -> str | None:
        if not self.files:
            return None
        digest = hashlib.sha256()
        for name in sorted(self.files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        return digest.hexdigest()


class Locker(Protocol):
    def status(self, loaded: LoadedSpec) -> LockFiles:
        """The lock files for ``loaded`` and whether they match the spec."""
        ...

    def lock(self, loaded: LoadedSpec) -> LockFiles:
        """Bring the lock up to date (solve) and return it."""
        ...


class FileLocks:
    """Reads existing locks from ``images/<name>/``; cannot solve (``lock`` returns the status)."""

    can_lock = False

    def __init__(self, root: Path) -> None:
        self.root = root

    def status(self, loaded: LoadedSpec) -> LockFiles:
        folder = self.root / "images" / loaded.spec.name
        pip = folder / PIP_LOCK
        conda = tuple(sorted(folder.glob("conda-*.lock")))
        present = ([pip] if pip.is_file() else []) + list(conda)
        if not present:
            return LockFiles(LockState.MISSING, reason=f"no lock in {folder}")
        files = {p.name: p.read_bytes() for p in present}
        for path in present:
            found = _SPEC_HASH.search(files[path.name][:4096].decode("utf-8", "replace"))
            if found is None or found.group(1) != loaded.sha256:
                return LockFiles(
                    LockState.STALE,
                    pip if pip.is_file() else None,
                    conda,
                    reason=f"{path.name} was made for another version of the spec",
                    files=files,
                )
        return LockFiles(LockState.FRESH, pip if pip.is_file() else None, conda, files=files)

    def lock(self, loaded: LoadedSpec) -> LockFiles:
        # HOOK: a stale or missing lock is refreshed here once envkit.lock exists.
        return self.status(loaded)


def default_locker(root: Path) -> Locker:
    """``envkit.lock``'s locker when that stage is installed, else :class:`FileLocks`.

    The lock stage is expected to expose ``envkit.lock.build_locker(root) -> Locker``.
    """
    try:
        module = importlib.import_module("envkit.lock")
    except ImportError:
        return FileLocks(root)
    factory = getattr(module, "build_locker", None)
    if factory is None:
        return FileLocks(root)
    locker: Locker = factory(root)
    return locker
