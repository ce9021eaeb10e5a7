"""Small decisions of the guard's loop, kept out of it: the dump budget per kind, replicas that disagree.

Standard library only.
"""

from __future__ import annotations

from envkit.guard.records import IncidentKind

__all__ = ["WARNINGS", "DumpBudget", "rank_outliers"]

# incidents that only warn by default: they have their own, smaller dump budget
WARNINGS = (IncidentKind.LOSS_SPIKE, IncidentKind.GRAD_SPIKE, IncidentKind.RANK_MISMATCH)


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
