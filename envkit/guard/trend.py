"""The learning rate's trend: a ramp no single step of which is a jump (a schedule formula bug that
takes the lr 1 → 1000× over tens of steps) told apart from the rises of the run's own schedule.

Each step's lr (the largest of its parameter groups) joins a window of the last ``WINDOW`` steps.
The window's *rise* is how far the lr now is above its lowest there, a single fall between steady
or rising steps left out (a loop that anneals its lr ÷4 after a bad epoch in the middle of a ramp
does not hide the ramp), a descent kept (falls in a row: the next ascent starts at its bottom). The
rise is judged against the schedule's own:

- the run's first ascent (the lr has not fallen yet: a warm-up, a cyclic schedule's first half-cycle, or
  a constant lr) is the schedule's: its steepest windowed rise is remembered, never an anomaly;
- once the lr has fallen, a window that rose ``factor``× or more, over ``RISES`` rises or more, and
  ``STEEPER``× more than the schedule's steepest rise before is the trend, said once a window.

The caller asks only of an lr no scheduler computed (set by the loop itself, or over a scheduler's):
an lr the scheduler computed is the schedule (a runaway above its declared peak is found elsewhere).
A repeated cycle rises as steeply as its first; a one-step jump is one rise (the update check's).
Standard library only.
"""

from __future__ import annotations

from collections import deque

__all__ = ["RISES", "STEEPER", "WINDOW", "LrTrend"]

WINDOW = 50  # steps: "tens of steps"
RISES = 3  # increases in the window at least: a trend, not a jump
STEEPER = 2.0  # × the steepest rise the schedule's first ascent made
_EPS = 1e-9  # a rise smaller than this (relative) is the same lr computed again
_MAY_RISE = {(-1, 1), (0, 1), (1, 1), (-1, 0)}  # (the move before, this step's move)


class LrTrend:
    """The lr's recent past and the schedule's steepest rise; :meth:`check` says a runaway trend."""

    def __init__(self, factor: float | None) -> None:
        self.factor = factor
        self.window: deque[tuple[int, float]] = deque()
        self.fell_at: tuple[int, float] | None = None  # the first fall: (step, the lr it fell from)
        self.steepest = 1.0  # the largest windowed rise of the first ascent
        self.quiet_until = -1  # said: not again within the window
        self.moves = (0, 0)  # the lr's last two moves (-1 fell, 0 stayed, 1 rose): what may raise the rise

    def add(self, step: int, lr: float) -> None:
        """One step's lr (the largest of its groups)."""
        if not lr > 0 or lr != lr or lr == float("inf"):
            return
        if self.window and step <= self.window[-1][0]:  # a step again (a resumed loop): start over
            self.window.clear()
        if self.fell_at is None and self.window and lr < self.window[-1][1] * (1 - _EPS):
            self.fell_at = (step, self.window[-1][1])
        before = self.window[-1][1] if self.window else lr
        move = 1 if lr > before * (1 + _EPS) else -1 if lr < before * (1 - _EPS) else 0
        self.moves = (self.moves[1], move)
        self.window.append((step, lr))
        while self.window[0][0] <= step - WINDOW:
            self.window.popleft()
        if self.fell_at is None:  # no fall yet: the rise is the lr over the window's first (O(1))
            self.steepest = max(self.steepest, lr / self.window[0][1])

    def rise(self) -> tuple[float, int, tuple[int, float]]:
        """How far the lr rose from its lowest in the window, the rises since, and where (step, lr).

        A single fall between steady or rising steps (a loop's own step anneal: ÷4 after a bad epoch)
        is left out, as if it had not happened: it does not hide a ramp around it. A descent (falls
        in a row: a schedule decaying step after step, a cycle's way down) is kept: the next ascent
        is measured from its bottom, not added to the ascent before it."""
        items = list(self.window)
        if not items:
            return 1.0, 0, (0, 0.0)
        undo, adjusted = 1.0, [items[0][1]]
        for i in range(1, len(items)):
            ratio = items[i][1] / items[i - 1][1]
            fell_before = i >= 2 and items[i - 1][1] < items[i - 2][1] * (1 - _EPS)
            falls_next = i + 1 >= len(items) or items[i + 1][1] < items[i][1] * (1 - _EPS)
            if ratio < 1 - _EPS and not fell_before and not falls_next:
                undo /= ratio
            adjusted.append(items[i][1] * undo)
        low = min(range(len(items)), key=lambda i: (adjusted[i], -i))  # the last at the lowest
        rises = sum(1 for i in range(low + 1, len(items)) if adjusted[i] > adjusted[i - 1] * (1 + _EPS))
        return adjusted[-1] / adjusted[low], rises, items[low]

    def check(self) -> str | None:
        """The trend, said (once a window), when the lr now runs away from the schedule; else None."""
        if self.factor is None or self.fell_at is None or not self.window or self.moves not in _MAY_RISE:
            return None  # only a rise, or a fall found isolated one step later, raises the window's rise:
            # a constant or decaying lr costs no walk of the window
        step, lr = self.window[-1]
        if step < self.quiet_until:
            return None
        product, count, (start_step, start_lr) = self.rise()
        if count < RISES or product < self.factor or product < STEEPER * self.steepest:
            return None
        self.quiet_until = step + WINDOW
        fell_step, fell_from = self.fell_at
        return (
            f"the learning rate rose step after step: {_times(product)} in {count} rises since step "
            f"{start_step} ({start_lr:.4g} → {lr:.4g} now, a single fall between left out), after it had "
            f"fallen from {fell_from:.4g} at step {fell_step}; the steepest rise of the schedule before "
            f"was {_times(self.steepest)} in {WINDOW} steps: an lr ramp (a schedule formula bug?)"
        )


def _times(x: float) -> str:
    return f"{x:,.0f}×" if x >= 100 else f"{x:.3g}×"
