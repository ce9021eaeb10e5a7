"""The debug image's locked files fetched on the host: its .deb files and wheels, checked against the lock."""

from __future__ import annotations

from pathlib import Path

from envkit import _proc
from envkit.lock.debian import AptState
from envkit.lock.debug_lock import DebugLock
from envkit.offline.debs import download_debs
from envkit.offline.wheelhouse import WheelhouseRequest, fill_wheelhouse
from envkit.render.context import ContextEntry

__all__ = ["fetch_debug_inputs"]


def fetch_debug_inputs(
    lock: DebugLock, state: AptState, cache: Path, *, run: _proc.Runner = _proc.run
) -> list[ContextEntry]:
    """The lock's .deb files and wheels as context entries, every file checked against its sha256."""
    entries = download_debs(state, lock.debs, cache / "debs", run)
    if lock.wheels:
        request = WheelhouseRequest(lock.requirements(), lock.python)
        house = fill_wheelhouse(request, cache / "wheels", runner=run)
        entries += house.entries("debug-wheels")
    return entries
