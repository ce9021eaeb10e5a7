"""Step positions (1..N, what the comparison computes) shown as the runs' own step numbers. Pure.

A probe report numbers its steps 1..N; a guarded run's ``report.json`` (:mod:`envkit.guard.runlog`)
also writes ``config.first_step``, the step its first record had (often 0, or a resumed run's
step). The comparison stays on positions (its JSON fields too); the renderers show
``first_step − 1 + position``. A report without ``first_step`` counts from 1, as before. When the
reports count from different first steps, each run's own number is shown (``4/1004``, in the
order of the reports) and the text says so (:meth:`StepNumbers.note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from envkit.probe.model import ProbeReport

__all__ = ["POSITIONS", "StepNumbers"]

MAX_NAMED = 6


@dataclass(frozen=True)
class StepNumbers:
    """The first step of each compared report, by name (None: its steps are numbered from 1)."""

    firsts: tuple[tuple[str, int | None], ...] = ()

    @classmethod
    def of(cls, named: Sequence[tuple[str, ProbeReport]]) -> StepNumbers:
        return cls(tuple((name, report.config.first_step) for name, report in named))

    @property
    def known(self) -> bool:
        """Some report carries its own numbering (else every label is the position, as always)."""
        return any(f is not None for _, f in self.firsts)

    @property
    def _starts(self) -> list[int]:
        return [1 if f is None else f for _, f in self.firsts] or [1]

    @property
    def differ(self) -> bool:
        return len(set(self._starts)) > 1

    def label(self, position: int | None, *, grouped: bool = False) -> str:
        """Position ``position`` (1-based) as the runs' step: one number, or one per run when they differ."""
        if position is None:
            return "-"
        steps = self._starts if self.differ else self._starts[:1]
        return "/".join(f"{s - 1 + position:,}" if grouped else str(s - 1 + position) for s in steps)

    def axis(self, position: int) -> str:
        """A plot axis's label of ``position`` (thousands grouped)."""
        return self.label(position, grouped=True)

    def note(self) -> str | None:
        """What the text says when the reports count from different steps; None when they agree."""
        if not self.differ:
            return None
        shown = ", ".join(f"{name}: {1 if f is None else f}" for name, f in self.firsts[:MAX_NAMED])
        more = f" … (+{len(self.firsts) - MAX_NAMED})" if len(self.firsts) > MAX_NAMED else ""
        return (
            f"the runs count steps from different first steps ({shown}{more}); "
            "a step is shown as each run's own number, in that order"
        )

    def to_json(self) -> dict[str, int | None]:
        return dict(self.firsts)


POSITIONS = StepNumbers()  # positions as they are: reports numbered 1..N
