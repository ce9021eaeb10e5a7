"""Spike detection that non-finite values never enter: median and a one-sided MAD over a window.

A value is a spike when it exceeds ``median + threshold · 1.4826 · MAD⁺`` of the last ``window``
finite values, once ``warmup`` finite values have been seen. ``MAD⁺`` is the spread *above* the
median (the median of ``v - m`` over the upper half of the window's recent half, ``m`` that half's
median): a spike is one-sided, and batch losses and gradient norms are right-skewed (mnist late in
training: a healthy batch loss 3.2× the median, 6.1 σ above it by the MAD, 5.7 by MAD⁺); the recent half,
because a loss that fell in the window's first half leaves its old level there. 1.4826 · MAD
estimates σ for normal data. A spike is also above ``factor × median`` (gradient norms of healthy
runs are heavy-tailed: in the regression scripts' clean runs a norm reached 8.3 σ above the median,
yet never 2.5× it; the guard's defaults, 4× for the gradient norm and 1.5× for the loss, come from
those runs, see ``docs/guides/guard.md``), and also ``floor ×`` the largest value of the warm-up (a loss
memorized down to ~0 has a median and MAD so small that dropout noise clears both), and also
``factor ×`` the median of the last 10 values (a trend that rises over the window is no spike:
word_language_model at its default sizes grows its gradient norm 10× in its first 100 steps), and
it is not a value the window already holds ``RECUR`` (3) times within ``RECUR_MARGIN`` (20 %): a
pattern the run repeats is the run's (word_language_model's last, shorter batch of every epoch has a
gradient norm 5× the median, every 14 steps). NaN/Inf are never added, so one NaN cannot distort the
statistics of the next steps (the OLMo-core gap in ``../shared/research/guard-anchors.md``).

:class:`Spikes` adds one rule across the two series: in the run's first ``window`` steps a gradient
norm spike is reported only when the loss is up too (above ``loss_factor ×`` its median): the start of
a run is not stationary (norms grow out of the initialization; a large lr makes early transients that
the run recovers from: word_language_model at lr 20, a norm 28× the median with the loss 1.2× its
median), so its statistics describe only the start; a bad batch or a blow-up moves the loss as well.
The loss spike and every check after the first window are unchanged. Standard library only."""

from __future__ import annotations

import bisect
import math
import statistics
from collections import deque
from dataclasses import dataclass

from envkit.guard.records import IncidentKind

__all__ = ["SpikeDetector", "Spikes"]

MAD_TO_SIGMA = 1.4826
RECENT = 10  # a spike is also factor × the median of the last RECENT values (Lightning's window: 10)
# a value the window already holds RECUR times (within RECUR_MARGIN of it) is the run's own pattern
RECUR, RECUR_MARGIN = 3, 1.2


@dataclass(frozen=True)
class Spike:
    value: float
    median: float
    limit: float


class SpikeDetector:
    """Flags a value above the window's median + threshold × σ (from the MAD), NaN/Inf never counted."""

    def __init__(
        self,
        window: int = 100,
        warmup: int = 20,
        threshold: float = 6.0,
        factor: float = 1.0,
        floor: float = 0.0,
    ) -> None:
        if window < 3 or warmup < 3 or warmup > window or threshold <= 0 or not factor >= 1.0:
            raise ValueError("spike detector: need 3 <= warmup <= window, threshold > 0 and factor >= 1")
        if not 0.0 <= floor <= 1.0:
            raise ValueError("spike detector: need 0 <= floor <= 1")
        self.window: deque[float] = deque(maxlen=window)
        self._sorted: list[float] = []  # the window, sorted: its median costs nothing per step
        self.warmup = warmup
        self.threshold = threshold
        self.factor = factor
        # the run's own scale: the largest value of the warm-up; a spike is at least floor × it
        self.floor, self.scale, self.seen = floor, 0.0, 0

    def check(self, value: float) -> Spike | None:
        """The spike ``value`` is, if any; then ``value`` joins the window when finite."""
        if not math.isfinite(value):
            return None
        spike = None
        ordered = self._sorted
        n = len(ordered)
        median = self.median()
        # the limit is at least max(median, factor × median, floor × scale): below that, no MAD needed
        least = max(median, self.factor * median, self.floor * self.scale)
        if n >= self.warmup and value > least:
            # and factor × the last RECENT values' median: a rising trend (a norm that grows for a
            # hundred steps as the model leaves its plateau) is no spike; a jump above it is
            least = max(least, self.factor * statistics.median(list(self.window)[-RECENT:]))
        if n >= self.warmup and value > least:
            # the spread above the median (a spike is one-sided; losses and norms are right-skewed) of
            # the window's recent half (a loss that fell in its first half leaves the old level there)
            recent = sorted(list(self.window)[-(n // 2) :])
            level = statistics.median(recent)
            mad = statistics.median(v - level for v in recent[len(recent) // 2 :])
            # an all-equal window has MAD 0: fall back to a relative margin so that noise is no spike
            spread = MAD_TO_SIGMA * mad if mad > 0 else abs(median) * 1e-3 + 1e-12
            limit = max(median + self.threshold * spread, least)
            if value > limit and not self._recurs(value):
                spike = Spike(value, median, limit)
        if self.seen < self.warmup:
            self.seen += 1
            self.scale = max(self.scale, abs(value))
        if len(self.window) == self.window.maxlen:
            del ordered[bisect.bisect_left(ordered, self.window[0])]
        bisect.insort(ordered, value)
        self.window.append(value)
        return spike

    def median(self) -> float:
        """The window's median (0 when empty)."""
        ordered, n = self._sorted, len(self._sorted)
        return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else 0.0

    def full(self) -> bool:
        """The window holds ``window`` values (the run is past its first window)."""
        return len(self.window) == self.window.maxlen

    def _recurs(self, value: float) -> bool:
        """The window already holds ``RECUR`` values within ``RECUR_MARGIN`` of ``value``."""
        ordered = self._sorted
        return len(ordered) >= RECUR and ordered[-RECUR] * RECUR_MARGIN >= value


@dataclass
class Spikes:
    """The loss's and the gradient norm's detectors: which one a step trips, with the message (in
    the gradient norm's first window, a norm spike counts only with the loss above its factor)."""

    loss: SpikeDetector
    grad: SpikeDetector

    def check(self, loss: float, grad_norm: float) -> tuple[IncidentKind, str] | None:
        young = not self.grad.full()  # its first window: the statistics describe only the run's start
        loss_up = math.isfinite(loss) and loss > self.loss.factor * self.loss.median()
        found_loss = self.loss.check(loss)
        found_grad = self.grad.check(grad_norm)
        if found_loss is not None:
            limit, median = found_loss.limit, found_loss.median
            return IncidentKind.LOSS_SPIKE, f"loss {loss:.6g} above {limit:.6g} (median {median:.6g})"
        if found_grad is not None and (loss_up or not young):
            limit, median = found_grad.limit, found_grad.median
            return (
                IncidentKind.GRAD_SPIKE,
                f"grad norm {grad_norm:.6g} above {limit:.6g} (median {median:.6g})",
            )
        return None
