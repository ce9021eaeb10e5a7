"""What a trainer's guard callback keeps between its hooks (Paddle hapi, Lightning): one shape for both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envkit.guard.loop import Guard
from envkit.guard.step import GuardStep

__all__ = ["CallbackState"]


class CallbackState:
    """The run, the :class:`~envkit.guard.Guard`'s options, the guard once made, the open step."""

    def __init__(self, run: str | Path, options: dict[str, Any]) -> None:
        self.run_dir, self.options = Path(run), options
        self.guard: Guard | None = None
        self._step: GuardStep | None = None
        self._count = 0

    def open_step(self, batch: Any) -> GuardStep | None:
        """Enter the guarded step of the next batch (the random generators and buffers from before it)."""
        if self.guard is None:
            return None
        self._step = self.guard.step(self._count, batch).__enter__()
        self._count += 1
        return self._step
