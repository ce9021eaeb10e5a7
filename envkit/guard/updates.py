"""The step's size, per parameter group: the learning rate and ``lr · |clipped gradient| / |weight|``.

Both are recorded for every step (the group norms come with the step's one host read). A step whose
ratio is ``factor`` (10) times the largest any earlier healthy step had, after ``warmup`` steps,
is an ``update-spike`` incident, found *before* the optimizer applies it (a learning rate 5000×
too large does not wreck the weights first). A gradual rise (lr warm-up) never trips it: each step
is compared with the largest before it. Standard library only.
"""

from __future__ import annotations

import math
from typing import Any

from envkit.guard.records import StepRecord

__all__ = ["UpdateTracker"]


class UpdateTracker:
    """The largest update ratio and lr per group so far, and the check against them."""

    def __init__(self, factor: float | None, warmup: int) -> None:
        self.factor, self.warmup = factor, warmup
        self.ratios: list[float] = []  # the largest update ratio per group so far (healthy steps)
        self.lrs: list[float] = []
        self.steps = 0

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

    def spike(self, rec: StepRecord) -> str | None:
        """``the update was N× larger than any before …``, else None (and the step joins the history)."""
        ratios, lrs = rec.update_ratios, rec.lrs or []
        if ratios is None or self.factor is None:
            return None
        if len(self.ratios) != len(ratios):  # the first step, or the optimizer's groups changed
            self.ratios, self.lrs, self.steps = [0.0] * len(ratios), [0.0] * len(ratios), 0
        if self.steps >= self.warmup:
            for i, r in enumerate(ratios):
                if math.isfinite(r) and self.ratios[i] > 0 and r > self.factor * self.ratios[i]:
                    return self._message(i, r, lrs)
        for i, r in enumerate(ratios):
            if math.isfinite(r):
                self.ratios[i] = max(self.ratios[i], r)
            if i < len(lrs):
                self.lrs[i] = max(self.lrs[i], lrs[i])
        self.steps += 1
        return None

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


def _times(x: float) -> str:
    """``1,650×`` / ``12.5×``."""
    return f"{x:,.0f}×" if x >= 100 else f"{x:.3g}×"
