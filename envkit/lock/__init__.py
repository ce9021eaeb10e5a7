"""Locking: a fully pinned, hashed, multi-platform lock for the conda part and the pip part.

``lock_environment`` solves (py-rattler for conda, uv for pip) and writes ``images/NAME/``:
``conda-lock.yml``, ``conda-<platform>.lock``, ``requirements.lock`` and a pinned
``environment.yml``. ``current_lock`` says whether that lock is fresh for the spec.
The debug image's lock (``images/NAME/debug.lock.json``) is resolved here too:
:mod:`~envkit.lock.debian` (Debian pins, the closure an image needs), :mod:`~envkit.lock.debug_lock`
(the lock file) and :mod:`~envkit.lock.debug_tools` (the request and its resolver).
"""

from __future__ import annotations

from envkit.lock.locker import LockResult, current_lock, expected_files, lock_environment
from envkit.lock.lockset import Lock, LockState
from envkit.lock.solver import (
    CondaPackage,
    CondaRequest,
    CondaSolution,
    CondaSolver,
    PipPackage,
    PipRequest,
    PipResolver,
    VirtualPackage,
)

__all__ = [
    "CondaPackage",
    "CondaRequest",
    "CondaSolution",
    "CondaSolver",
    "Lock",
    "LockResult",
    "LockState",
    "PipPackage",
    "PipRequest",
    "PipResolver",
    "VirtualPackage",
    "current_lock",
    "expected_files",
    "lock_environment",
]
