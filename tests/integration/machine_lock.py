"""One process at a time does a machine-wide piece of test set-up; the others wait, then find it done.

The Docker engine, the Debian base image, the flagship CUDA image and the CUDA wheel cache belong to
the machine, not to one test session: ``.ci/run`` prepares them in the background while lint and the
first tests run (``tests/integration/prebuild.py``), and two checkouts' sessions may share one
engine. Each piece is made under ``flock`` on ``$TMPDIR/envkit-tests-NAME.lock`` (the same lock as
``flock(1)``); whoever comes second waits and then finds the image or the file there.
"""

from __future__ import annotations

import fcntl
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["WAIT_S", "machine_lock"]

WAIT_S = 3600  # the flagship CUDA image alone takes up to ~35 min on 2 busy cores


class LockTimeout(RuntimeError):
    pass


@contextmanager
def machine_lock(name: str, *, wait_s: float = WAIT_S) -> Iterator[Path]:
    """Hold the machine's lock ``name`` (waiting at most ``wait_s``); its path."""
    path = Path(tempfile.gettempdir()) / f"envkit-tests-{name}.lock"
    with path.open("a") as handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeout(f"{path} was held for more than {wait_s:.0f} s") from None
                time.sleep(2)
        try:
            yield path
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
