"""Small decisions of the guard's loop, kept out of it: the dump budget per kind, replicas that disagree.

Standard library only.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence

from envkit.guard.records import IncidentKind, StepRecord

__all__ = ["WARNINGS", "DumpBudget", "dead_run", "lr_trend", "rank_outliers"]

DEAD_STEPS = 100  # finite steps after a blow-up with the loss not moving: a dead run

# incidents that only warn by default: they have their own, smaller dump budget
WARNINGS = (
    IncidentKind.LOSS_SPIKE, IncidentKind.GRAD_SPIKE, IncidentKind.RANK_MISMATCH, IncidentKind.DEAD_RUN,
    IncidentKind.INPUT_OUTLIER,
)  # fmt: skip


class DumpBudget:
    """A dump budget per kind of incident: warnings (spikes) never spend what a non-finite step needs.

    Each kind of bad step (non-finite loss, non-finite gradients, an error, an update spike) gets
    ``per_kind`` dumps; each warning kind ``per_warning``.
    """

    def __init__(self, per_kind: int, per_warning: int) -> None:
        self.per_kind, self.per_warning = per_kind, per_warning
        self.used: dict[IncidentKind, int] = {}

    def take(self, kind: IncidentKind) -> bool:
        """One dump for an incident of ``kind``, if its budget has one left."""
        used = self.used.get(kind, 0)
        if used >= (self.per_warning if kind in WARNINGS else self.per_kind):
            return False
        self.used[kind] = used + 1
        return True

    @property
    def total(self) -> int:
        return sum(self.used.values())


def rank_outliers(norms: list[float]) -> str | None:
    """fairseq's check: after the all-reduce every replica holds the same gradient norm.

    The ranks outside the majority (within 1e-6, relative) are named; without a majority
    (two replicas that disagree) every rank is. None when they agree.
    """
    if len(norms) < 2:
        return None

    def near(a: float, b: float) -> bool:
        return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)

    groups = [[i for i, n in enumerate(norms) if near(n, ref)] for ref in norms]
    largest = max(groups, key=len)
    if len(largest) == len(norms):
        return None
    off = (
        [i for i in range(len(norms)) if i not in largest]
        if 2 * len(largest) > len(norms)
        else list(range(len(norms)))
    )
    return ",".join(map(str, off))


def lr_trend(records: Sequence[StepRecord], rec: StepRecord, window: int = 200) -> str | None:
    """The lr at its highest of the last ``window`` steps and 10× or more its lowest there, reached
    over 3 or more rises (each small enough for the update check): the trend is a cause. None else."""
    lr = rec.lr
    if lr is None or not lr > 0:
        return None
    recent = [r for r in records[-window:] if r.lr is not None and r.lr > 0]
    if len(recent) < 3 or lr < max(r.lr or 0.0 for r in recent):
        return None
    low = min(reversed(recent), key=lambda r: r.lr or 0.0)  # the last at the lowest: where the rise began
    assert low.lr is not None
    rises = sum(1 for a, b in itertools.pairwise(recent) if (b.lr or 0.0) > (a.lr or 0.0))
    if lr < 10 * low.lr or rises < 3:
        return None
    return (
        f"the learning rate rose {lr / low.lr:,.0f}× over the last {rec.step - low.step} steps "
        f"({low.lr:.4g} at step {low.step} → {lr:.4g}, {rises} rises): a schedule bug?"
    )


def dead_run(records: Sequence[StepRecord], blow_up: int, latest: int) -> str | None:
    """After a blow-up (its first bad step ``blow_up``, its latest ``latest``): the last
    ``DEAD_STEPS`` steps all after it, finite and applied, their loss not falling (the median of the
    later half ≥ 99 % of the earlier half's) and above 1.5× the median of the 50 steps before the
    blow-up. A message, else None."""
    last = records[-DEAD_STEPS:]
    if len(last) < DEAD_STEPS or last[0].step <= latest:
        return None
    losses = [r.loss for r in last]
    if any(r.skipped or not math.isfinite(r.loss) for r in last):
        return None
    half = DEAD_STEPS // 2
    early, late = statistics.median(losses[:half]), statistics.median(losses[half:])
    before = [r.loss for r in records if r.step < blow_up and math.isfinite(r.loss) and not r.skipped][-50:]
    if late < 0.99 * early or len(before) < 10 or not late > 1.5 * statistics.median(before):
        return None
    return (
        f"the run looks dead: since the blow-up at step {blow_up} the loss has not fallen in the last "
        f"{DEAD_STEPS} steps (median {late:.6g}, {late / statistics.median(before):.3g}× the "
        f"{statistics.median(before):.6g} before it): restart from a checkpoint before step {blow_up}?"
    )
