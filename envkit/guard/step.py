"""One guarded step: ``with guard.step(step, batch) as g: g.backward(loss); g.optimizer_step()``."""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from envkit.errors import GuardError
from envkit.guard.adapter import Adapter, RngState, Tensors
from envkit.guard.scale import NOTHING, Measured

__all__ = ["GuardStep", "PendingStep", "StepOwner"]


class StepOwner(Protocol):
    """What a step needs of its guard (``envkit.guard.loop.Guard``, which this module never imports)."""

    adapter: Adapter

    def finish_step(self, g: GuardStep) -> bool: ...

    def step_raised(self, g: GuardStep, exc: Exception) -> None: ...


@dataclass
class PendingStep:
    """A step not read yet (check_every > 1): device values plus what its dump would need."""

    step: int
    values: list[Any]  # loss, grad norm, clipped norm (device scalars)
    batch: Any
    rng: RngState
    lr: float | None
    ok: Any
    measured: Measured = NOTHING  # its batch's scale (device scalars), read with ``values``


# a step never entered (no ``with``) read no generator: its dump holds none (this is never written to)
_NOT_READ = RngState()


class GuardStep:
    """``with guard.step(step, batch) as g``: ``g.backward(loss)``, then ``g.optimizer_step()``.

    The generators and buffers are read on entering (a plain class: no per-step defaults made only
    to be replaced)."""

    __slots__ = ("backwards", "batch", "buffers", "done", "guard", "loss", "rng", "step")

    def __init__(self, guard: StepOwner, step: int, batch: Any, rng: RngState = _NOT_READ) -> None:
        self.guard, self.step, self.batch, self.rng = guard, step, batch, rng
        self.buffers: Tensors = {}
        self.loss: Any = None
        self.backwards = 0  # the losses this step saw (more than one: gradient accumulation, or a GAN's)
        self.done = False

    def __enter__(self) -> GuardStep:
        adapter = self.guard.adapter
        self.rng = adapter.rng_state()
        self.buffers = adapter.buffers()
        return self

    def backward(self, loss: Any) -> None:
        """Keep the loss's finite flag (on the device), then backward (through the GradScaler if any).

        Backward runs even for a NaN loss: in a process group every rank must join the all-reduce.
        """
        self.observe(loss)
        self.guard.adapter.backward(loss)

    def observe(self, loss: Any) -> None:
        """Keep the loss when the backward already ran elsewhere (a trainer's own loop). The sum of a
        step's losses (gradient accumulation) is finite iff each is: one check, at the step's end."""
        self.loss = loss.detach() if self.loss is None else self.loss + loss.detach()
        self.backwards += 1

    def optimizer_step(self) -> bool:
        """Check, clip, step (or skip/stop); True when the update was applied."""
        if self.loss is None:
            raise GuardError("g.optimizer_step() before g.backward(loss)", hint="call g.backward(loss) first")
        self.done = True
        return self.guard.finish_step(self)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None and isinstance(exc, Exception) and not isinstance(exc, GuardError):
            self.guard.step_raised(self, exc)
            return
        if exc is None and not self.done:
            raise GuardError(
                f"step {self.step}: the guarded block ended without g.optimizer_step()",
                hint="call g.backward(loss) and g.optimizer_step() inside `with guard.step(...)`",
            )
