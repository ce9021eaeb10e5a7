"""The build's seam to ``envkit lock``: freshness from :func:`envkit.lock.current_lock`, solving
through a :class:`Locker`.

A build always installs from a fresh lock: when ``images/NAME/`` holds none (or a stale one),
the builder asks its :class:`Locker` to solve first (``--frozen`` refuses instead). The CLI's
composition root (:class:`envkit.cli.Services`) passes py-rattler + uv; unit tests pass an
:class:`EnvLocker` over ``envkit.lock.testing``'s fake solvers, so no test needs the network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from envkit.errors import LockError, SolverFailed, UsageError
from envkit.lock.locker import current_lock, lock_environment
from envkit.lock.lockset import LockState
from envkit.lock.solver import CondaSolver, PipResolver
from envkit.spec.load import LoadedSpec, image_dir

__all__ = ["EnvLocker", "Locker", "ensure_fresh_lock", "lock_state"]


def lock_state(root: Path, loaded: LoadedSpec) -> LockState:
    return current_lock(loaded, image_dir(root, loaded.spec.name))


class Locker(Protocol):
    """Solves a spec and writes its lock set (``envkit lock``); what the builder and pack call."""

    def lock(self, loaded: LoadedSpec, directory: Path) -> LockState:
        """Solve ``loaded``, write its lock set into ``directory``, return it verified (raises LockError)."""
        ...


@dataclass(frozen=True)
class EnvLocker:
    """``envkit lock NAME`` with the given solvers."""

    conda_solver: CondaSolver
    pip_resolver: PipResolver

    def lock(self, loaded: LoadedSpec, directory: Path) -> LockState:
        return lock_environment(loaded, directory, self.conda_solver, self.pip_resolver).state


def ensure_fresh_lock(
    root: Path,
    loaded: LoadedSpec,
    locker: Locker,
    *,
    frozen: bool = False,
    verb: str = "pack",
    on_solve: Callable[[LockState], None] | None = None,
) -> tuple[LockState, LockState | None]:
    """The fresh lock of ``loaded``, solving it first when missing or stale: ``(fresh, was)``.

    ``was`` is the missing or stale state that was solved (None when the lock was fresh);
    ``on_solve`` hears of it before the solver starts. ``frozen`` refuses instead of solving
    (what ``envkit build --frozen`` and ``envkit pack --frozen`` do); ``verb`` names the command in
    messages. Errors: :class:`UsageError` (frozen), the locker's :class:`SolverFailed` (with what
    to do instead) and :class:`LockError`.
    """
    state = lock_state(root, loaded)
    if state.fresh:
        return state, None
    name = loaded.spec.name
    if frozen:
        raise UsageError(
            f"--frozen: {name} has no fresh lock ({state.status}: {state.reason})",
            hint=f"run `envkit lock {name}` and commit images/{name}/, or {verb} without --frozen",
        )
    if on_solve is not None:
        on_solve(state)
    try:
        locked = locker.lock(loaded, image_dir(root, name))  # verified as written: no second read
    except SolverFailed as e:
        raise SolverFailed(
            f"cannot {verb} {name}: the lock is {state.status} and locking failed: {e.message}",
            hint=f"{e.hint}; or run `envkit lock {name}` where the channels are reachable, commit "
            f"images/{name}/ and {verb} with --frozen",
        ) from e
    if not locked.fresh:
        raise LockError(f"locking {name} did not give a fresh lock ({locked.reason})",
                        hint=f"run `envkit lock {name}` and read its output")  # fmt: skip
    return locked, state
