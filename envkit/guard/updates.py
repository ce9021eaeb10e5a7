"""The step's size, per parameter group: the learning rate and ``lr · |clipped gradient| / |weight|``.

Both are recorded for every step (the group norms come with the step's one host read). A step whose
ratio is ``factor`` (10) times the largest any earlier healthy step had, after ``warmup`` steps,
is an ``update-spike`` incident, found *before* the optimizer applies it (a learning rate 5000×
too large does not wreck the weights first). A gradual rise (a per-step warm-up) never trips it:
each step is compared with the largest before it. A jump the lr alone made (a per-epoch warm-up,
the ratio per unit of lr as before) is the run's schedule when the scheduler computed that lr
(``envkit.guard.schedules``: the scheduler's own record of its lr, not a guess); an lr other code set
(by hand, or over a scheduler's) is refused a few steps, then taken as the run's lr. Whoever set it,
an lr ``factor`` × above the peak the optimizer and its schedule declare is a runaway (a schedule
formula bug ramping 1 → 1000): a jump to it is refused, a ramp to it warned at each ``factor``.
A ramp that stays below that peak, in an lr no scheduler computed, is judged by its trend against
the schedule's own rises (``envkit.guard.trend``): warned while it climbs. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envkit.guard.records import StepRecord
from envkit.guard.schedules import LrSetter
from envkit.guard.trend import LrTrend

__all__ = ["UpdateSpike", "UpdateTracker"]


# an lr change the loop made by hand (no scheduler seen) is refused this many steps, then taken as the
# run's lr while the update it makes stays below the weights' own size (``lr·|grad|/|weight|`` < 1)
HAND_SET_STEPS = 3


@dataclass(frozen=True)
class UpdateSpike:
    """An update spike: the message, and whether the lr alone made it (the gradients were as before)."""

    message: str
    lr_only: bool


class UpdateTracker:
    """The largest update ratio, lr and ratio per unit of lr (``|grad|/|weight|``) per group so far,
    and the check against them."""

    def __init__(self, factor: float | None, warmup: int) -> None:
        self.factor, self.warmup = factor, warmup
        self.ratios: list[float] = []  # the largest update ratio per group so far (healthy steps)
        self.lrs: list[float] = []
        self.per_lr: list[float] = []  # the largest update ratio / lr per group (the gradients' part)
        self.steps = 0
        self.refused: tuple[list[float], int] = ([], 0)  # a hand-set lr refused, and for how many steps
        self.accepted: str | None = None  # set by spike(): a warning to record (an lr taken, a runaway)
        self.runaway = 0  # the last power of ``factor`` over the declared peak the lr was warned at
        self.trend = LrTrend(factor)  # the lr's recent past: a ramp no single step of which is a jump

    def record(self, rec: StepRecord, lrs: list[float], groups: list[float], clip: float | None) -> None:
        """``rec.lrs`` and ``rec.update_ratios`` from the group norms ``[g_0…, w_0…]`` read with the step."""
        rec.lrs = lrs or None
        if not lrs or len(groups) != 2 * len(lrs):
            return
        coef = 1.0 if clip is None else min(1.0, clip / (rec.grad_norm + 1e-6))
        rec.update_ratios = [
            lr * coef * gn / wn if wn > 0 else math.inf
            for lr, gn, wn in zip(lrs, groups[: len(lrs)], groups[len(lrs) :], strict=True)
        ]

    def spike(
        self,
        rec: StepRecord,
        setter: Callable[[], LrSetter],
        peak: Callable[[], float | None] = lambda: None,
    ) -> UpdateSpike | None:
        """The update spike this step is, else None (and the step joins the history).

        An update ``factor`` × larger than any before is judged against the lr it was made with: when
        its ratio per unit of lr is within ``factor`` of the largest before, the lr alone made it. An
        lr the optimizer's scheduler computed (``setter()``) is then the run's schedule, not an
        anomaly, unless it is ``factor`` × the declared ``peak()``; one other code set is refused for
        ``HAND_SET_STEPS`` steps, then taken as the run's lr (said once, in ``accepted``) unless its
        update is as large as the weights themselves. A new highest lr ``factor``^k × the peak is
        said in ``accepted`` (once per k): a ramp no single step of which is a spike."""
        ratios, lrs = rec.update_ratios, rec.lrs or []
        self.accepted = None
        if lrs:
            self.trend.add(rec.step, max(lrs))
        if ratios is None or self.factor is None:
            return None
        if len(self.ratios) != len(ratios):  # the first step, or the optimizer's groups changed
            zeros = [0.0] * len(ratios)
            self.ratios, self.lrs, self.per_lr, self.steps = list(zeros), list(zeros), list(zeros), 0
        highest = max(self.lrs, default=0.0)
        top = self._runaway(lrs, peak) if lrs and max(lrs) > highest else None
        if top is not None and self.steps >= self.warmup and max(lrs) > self.factor * highest > 0:
            self.accepted = None  # a jump to a runaway lr, whoever set it: refused
            return UpdateSpike(self._jump(ratios, lrs, highest, top) + _who(setter), lr_only=True)
        if self.steps >= self.warmup:
            found = self._check(ratios, lrs, setter, top)
            if found is not None:
                return found
        self._join(ratios, lrs)
        if self.accepted is None and self.steps > self.warmup:
            self._ramp(setter)
        return None

    def _ramp(self, setter: Callable[[], LrSetter]) -> None:
        """An lr ramp no scheduler computed (``envkit.guard.trend``): said in ``accepted``."""
        text = self.trend.check()
        if text is None:
            return
        if setter() is LrSetter.SCHEDULER:  # the schedule's own rise (a runaway above its peak is not)
            return
        self.accepted = text + _who(setter)

    def _runaway(self, lrs: list[float], peak: Callable[[], float | None]) -> float | None:
        """The declared peak when the lr is ``factor`` × above it (and ``accepted`` said at each new
        power of ``factor``), else None."""
        assert self.factor is not None
        p, lr = peak(), max(lrs)
        if p is None or not p > 0 or not lr > self.factor * p or self.factor <= 1:
            return None
        level = int(math.log(lr / p) / math.log(self.factor))
        if level > self.runaway:
            self.runaway = level
            self.accepted = (
                f"the learning rate is {lr:.6g}, {_times(lr / p)} the largest the optimizer and its "
                f"schedule declare ({p:.6g}): a schedule formula bug?"
            )
        return p

    def _jump(self, ratios: list[float], lrs: list[float], highest: float, peak: float) -> str:
        """A jump to a runaway lr, said with the update it makes where that is a spike too."""
        assert self.factor is not None
        lr = max(lrs)
        declared = f"{_times(lr / peak)} the largest the optimizer and its schedule declare ({peak:.6g})"
        for i, r in enumerate(ratios):
            if math.isfinite(r) and self.ratios[i] > 0 and r > self.factor * self.ratios[i]:
                return f"{self._message(i, r, lrs)}; {declared}"
        return (
            f"the learning rate is {lr:.6g}, {_times(lr / highest)} the largest before ({highest:.6g}) "
            f"and {declared}: a scheduler or lr bug?"
        )

    def _check(
        self,
        ratios: list[float],
        lrs: list[float],
        setter: Callable[[], LrSetter],
        runaway: float | None,
    ) -> UpdateSpike | None:
        assert self.factor is not None
        for i, r in enumerate(ratios):
            if not (math.isfinite(r) and self.ratios[i] > 0 and r > self.factor * self.ratios[i]):
                continue
            lr = lrs[i] if i < len(lrs) else 0.0
            per_lr = r / lr if lr > 0 else math.inf
            if not (self.per_lr[i] > 0 and per_lr <= self.factor * self.per_lr[i]):
                return UpdateSpike(self._message(i, r, lrs), lr_only=False)  # the gradients made it
            who = setter()
            if who is LrSetter.SCHEDULER and runaway is None:
                continue  # the scheduler's lr: the run's schedule
            if who is LrSetter.SCHEDULER:  # the scheduler computed a runaway: refused every step
                self.accepted = None
                return UpdateSpike(self._message(i, r, lrs) + _ABOVE.format(runaway), lr_only=True)
            before, count = self.refused
            count = count + 1 if before == lrs else 1
            if count <= HAND_SET_STEPS or max(ratios) >= 1.0 or runaway is not None:
                self.refused = (list(lrs), count)
                self.accepted = None
                return UpdateSpike(self._message(i, r, lrs) + _who(setter), lr_only=True)
            self.accepted = (
                f"the learning rate {lr:.6g} set without a scheduler stayed for {count} steps: "
                f"taken as the run's lr (its update {_times(r / self.ratios[i])} the largest before)"
            )
        self.refused = ([], 0)
        return None

    def _join(self, ratios: list[float], lrs: list[float]) -> None:
        for i, r in enumerate(ratios):
            if math.isfinite(r):
                self.ratios[i] = max(self.ratios[i], r)
                if i < len(lrs) and lrs[i] > 0:
                    self.per_lr[i] = max(self.per_lr[i], r / lrs[i])
            if i < len(lrs):
                self.lrs[i] = max(self.lrs[i], lrs[i])
        self.steps += 1

    def context(self, rec: StepRecord) -> dict[str, Any]:
        """For an incident: the step's lr and update ratio per group, beside the largest before it."""
        out: dict[str, Any] = {}
        if rec.lrs is not None:
            out["lrs"] = rec.lrs
        if rec.update_ratios is not None:
            out["update_ratios"] = rec.update_ratios
        if self.steps:
            out["largest_before"] = {"update_ratios": list(self.ratios), "lrs": list(self.lrs)}
        return out

    def _message(self, i: int, r: float, lrs: list[float]) -> str:
        before = self.ratios[i]
        group = f" (parameter group {i})" if len(self.ratios) > 1 else ""
        text = (
            f"the update was {_times(r / before)} larger than any before{group}: "
            f"lr·|grad|/|weight| {r:.3g}, the largest before {before:.3g}"
        )
        top = self.lrs[i] if i < len(self.lrs) else 0.0
        if i < len(lrs) and top > 0 and lrs[i] > 2 * top:
            text += (
                f"; the learning rate is {lrs[i]:.6g}, {_times(lrs[i] / top)} the largest before "
                f"({top:.6g}): a scheduler or lr bug?"
            )
        return text


_ABOVE = "; its scheduler computed it, above {:.6g}, the largest the optimizer and schedule declare"


def _who(setter: Callable[[], LrSetter]) -> str:
    """Who set the lr, said: its scheduler, or other code than it (with what the scheduler computed,
    where ``setter`` is an :class:`~envkit.guard.schedules.LrWatch`'s), else '' (no scheduler seen)."""
    who = setter()
    if who is LrSetter.SCHEDULER:
        return "; its scheduler computed it"
    if who is LrSetter.NONE:
        return ""
    differs = getattr(getattr(setter, "__self__", None), "differs", None)
    return f"; set by other code than the scheduler (the learning rate {differs or 'differs'})"


def _times(x: float) -> str:
    """``1,650×`` / ``12.5×``."""
    return f"{x:,.0f}×" if x >= 100 else f"{x:.3g}×"
