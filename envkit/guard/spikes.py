"""Spike detection that non-finite values never enter: median and MAD over a window, after a warm-up.

A value is a spike when it exceeds ``median + threshold · 1.4826 · MAD`` of the last ``window``
finite values, once ``warmup`` finite values have been seen (1.4826 · MAD estimates σ for normal
data), and also ``factor × median`` (gradient norms of healthy runs are heavy-tailed: in the
regression scripts' clean runs a norm reached 8.3 σ above the median, yet never 2.5× it; the
guard's defaults, 4× for the gradient norm and 1.5× for the loss, come from those runs, see
``docs/guard.md``), and also ``floor ×`` the largest value of the warm-up (a loss memorized down
to ~0 has a median and MAD so small that dropout noise clears both), and also ``factor ×`` the
median of the last 10 values (a trend that rises over the window is no spike: word_language_model
at its default sizes grows its gradient norm 10× in its first 100 steps). NaN/Inf are never added, so
one NaN cannot distort the statistics of the next steps (the OLMo-core gap in
``../shared/research/guard-anchors.md``). Standard library only.
"""

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
        median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else 0.0
        # the limit is at least max(median, factor × median, floor × scale): below that, no MAD needed
        least = max(median, self.factor * median, self.floor * self.scale)
        if n >= self.warmup and value > least:
            # and factor × the last RECENT values' median: a rising trend (a norm that grows for a
            # hundred steps as the model leaves its plateau) is no spike; a jump above it is
            least = max(least, self.factor * statistics.median(list(self.window)[-RECENT:]))
        if n >= self.warmup and value > least:
            mad = statistics.median(abs(v - median) for v in self.window)
            # an all-equal window has MAD 0: fall back to a relative margin so that noise is no spike
            spread = MAD_TO_SIGMA * mad if mad > 0 else abs(median) * 1e-3 + 1e-12
            limit = max(median + self.threshold * spread, least)
            if value > limit:
                spike = Spike(value, median, limit)
        if self.seen < self.warmup:
            self.seen += 1
            self.scale = max(self.scale, abs(value))
        if len(self.window) == self.window.maxlen:
            del ordered[bisect.bisect_left(ordered, self.window[0])]
        bisect.insort(ordered, value)
        self.window.append(value)
        return spike


@dataclass
class Spikes:
    """The loss's and the gradient norm's detectors: which one a step trips, with the message."""

    loss: SpikeDetector
    grad: SpikeDetector

    def check(self, loss: float, grad_norm: float) -> tuple[IncidentKind, str] | None:
        found_loss = self.loss.check(loss)
        found_grad = self.grad.check(grad_norm)
        if found_loss is not None:
            limit, median = found_loss.limit, found_loss.median
            return IncidentKind.LOSS_SPIKE, f"loss {loss:.6g} above {limit:.6g} (median {median:.6g})"
        if found_grad is not None:
            limit, median = found_grad.limit, found_grad.median
            return (
                IncidentKind.GRAD_SPIKE,
                f"grad norm {grad_norm:.6g} above {limit:.6g} (median {median:.6g})",
            )
        return None
