"""Who set the optimizer's learning rate: the scheduler, or other code; and the schedule's declared peak.

Read from the objects themselves, not guessed from the lr's shape:

- torch: every ``LRScheduler`` (``ReduceLROnPlateau`` included) records the lrs it set in ``_last_lr``
  (``get_last_lr()``). The group's lr equal to it: the scheduler set it; different: other code did
  (``group["lr"] = …`` after ``scheduler.step()``). The scheduler is the guard's ``scheduler=``, else
  the ones attached to the optimizer (found once asked, by what refers to the optimizer: an
  ``LRScheduler`` holds it as ``.optimizer``; the optimizer holds no reference back).
- Paddle: the ``LRScheduler`` is the optimizer's learning rate; ``step()`` moves ``last_epoch`` and
  sets ``last_lr``. An lr that changed while ``last_epoch`` did not was set by other code (one set at
  the same step as the scheduler's ``step()`` is taken as the scheduler's).

The peak a schedule declares (torch ``initial_lr`` / ``max_lr`` per group, the optimizer's own
``lr``, a scheduler's ``base_lrs``; Paddle ``base_lr`` / ``end_lr`` / ``max_lr``) bounds a healthy
schedule: an lr ``update_factor`` × above it is a runaway whoever computed it. Duck-typed: stdlib only.
"""

from __future__ import annotations

import enum
import gc
import math
from typing import Any

__all__ = ["LrSetter", "LrWatch"]


class LrSetter(enum.Enum):
    """Who set the lr the step was made with."""

    SCHEDULER = "scheduler"  # the lr a visible scheduler last computed
    OTHER = "other"  # a scheduler is visible, the lr is not the one it computed
    NONE = "none"  # no scheduler visible: the loop sets the lr itself


class LrWatch:
    """The optimizer's lr against its scheduler's (the guard's ``scheduler=``, or found)."""

    def __init__(self, optimizer: Any, scheduler: Any = None) -> None:
        self.optimizer, self.scheduler = optimizer, scheduler
        self._epoch: tuple[int, int, float] | None = None  # Paddle: (scheduler id, last_epoch, its lr)
        self.differs: str | None = None  # set by setter(): the lr and what the scheduler computed

    def step(self) -> None:
        """Each step: remember the lr a Paddle scheduler had when its ``last_epoch`` moved."""
        sched = _paddle_scheduler(self.optimizer)
        if sched is None:
            return
        key, epoch = id(sched), int(sched.last_epoch)
        if self._epoch is None or self._epoch[:2] != (key, epoch):
            self._epoch = (key, epoch, _float(sched.last_lr))

    def setter(self) -> LrSetter:
        """Who set the lr now in the optimizer (``differs`` says how, for OTHER)."""
        self.differs = None
        sched = _paddle_scheduler(self.optimizer)
        if sched is not None:
            lr, before = _float(sched.last_lr), self._epoch
            if before is not None and before[:2] == (id(sched), int(sched.last_epoch)) and lr != before[2]:
                self.differs = f"{lr:.6g}, its scheduler's {before[2]:.6g} (last_epoch {before[1]})"
                return LrSetter.OTHER
            return LrSetter.SCHEDULER
        groups = getattr(self.optimizer, "param_groups", None)
        if groups is None:
            return LrSetter.SCHEDULER if self.scheduler is not None else LrSetter.NONE
        lrs = [_float(g.get("lr")) for g in groups]
        scheds = self._torch_schedulers()
        if not scheds:
            return LrSetter.NONE
        computed = [s for s in scheds if getattr(s, "_last_lr", None) is not None]
        if len(computed) < len(scheds):
            return LrSetter.SCHEDULER  # a scheduler that keeps no record of its lr: trusted
        for s in computed:
            if [_float(v) for v in s._last_lr] == lrs:
                return LrSetter.SCHEDULER
        last = [_float(v) for v in computed[0]._last_lr]
        self.differs = f"{_list(lrs)}, its scheduler's {_list(last)}"
        return LrSetter.OTHER

    def peak(self) -> float | None:
        """The largest lr the optimizer and its schedule declare (None: none declared)."""
        values: list[float] = []
        sched = _paddle_scheduler(self.optimizer)
        for s in [sched, self.scheduler]:
            if s is not None:
                values += [_float(getattr(s, n, None)) for n in ("base_lr", "end_lr", "max_lr")]
                values += [_float(v) for v in getattr(s, "base_lrs", None) or []]
        groups = getattr(self.optimizer, "param_groups", None) or []
        for g in groups:
            values += [_float(g.get(n)) for n in ("initial_lr", "max_lr")]
        defaults = getattr(self.optimizer, "defaults", None)
        if isinstance(defaults, dict):
            values.append(_float(defaults.get("lr")))
        finite = [v for v in values if math.isfinite(v) and v > 0]
        return max(finite) if finite else None

    def _torch_schedulers(self) -> list[Any]:
        opt = self.optimizer
        found = [self.scheduler] if self.scheduler is not None else []
        # not gated on a group's "initial_lr": ReduceLROnPlateau sets none. Asked only on an lr jump
        for ref in gc.get_referrers(opt):
            owners = [ref]
            if isinstance(ref, dict):  # an instance's materialized __dict__: its owner
                owners = [o for o in gc.get_referrers(ref) if getattr(o, "__dict__", None) is ref]
            for o in owners:
                if getattr(o, "optimizer", None) is opt and hasattr(o, "_last_lr") and o not in found:
                    found.append(o)
        return found


def _paddle_scheduler(optimizer: Any) -> Any:
    """A Paddle optimizer's LRScheduler (its ``_learning_rate``), else None."""
    sched = getattr(optimizer, "_learning_rate", None)
    return sched if hasattr(sched, "last_epoch") and hasattr(sched, "last_lr") else None


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _list(values: list[float]) -> str:
    return ", ".join(f"{v:.6g}" for v in values)
