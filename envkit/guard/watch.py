"""What the loop remembers across steps to tell a cause: batches that overflowed, a blow-up that left
the run dead, and the causes said with an incident (the input, the lr's trend). Framework-neutral.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from envkit.guard.adapter import Adapter
from envkit.guard.checks import dead_run, lr_trend
from envkit.guard.records import IncidentKind, StepRecord
from envkit.guard.spikes import Spike

__all__ = ["DeadRunWatch", "OverflowMemory", "causes", "overflow_cause"]

_NONFINITE = (IncidentKind.NONFINITE_LOSS, IncidentKind.NONFINITE_GRAD, IncidentKind.ERROR)


class OverflowMemory:
    """The batches whose gradients overflowed under a GradScaler (digest → step, scale), bounded."""

    def __init__(self, most: int = 10_000) -> None:
        self.most = most
        self.seen: dict[str, tuple[int, float]] = {}

    def again(self, digest: str, step: int, scale: float) -> tuple[int, float] | None:
        """The earlier overflow of this batch when it came at a larger scale (the back-off since did
        not help: the data, not the scale), else None; this one is remembered."""
        first = self.seen.pop(digest, None)
        self.seen[digest] = (step, scale)
        if len(self.seen) > self.most:  # the oldest goes (overflows are rare: a bound, not a cache)
            del self.seen[next(iter(self.seen))]
        return first if first is not None and scale < first[1] else None


class DeadRunWatch:
    """After a blow-up (its first and latest bad step), one ``dead-run`` warning at most a run."""

    def __init__(self) -> None:
        self.blow_up: tuple[int, int] | None = None
        self.said = False

    def bad_step(self, step: int) -> None:
        if not self.said:
            self.blow_up = (step if self.blow_up is None else self.blow_up[0], step)

    def check(self, records: Sequence[StepRecord]) -> str | None:
        """The warning's text, once (looked at every 25th step)."""
        if self.blow_up is None or len(records) % 25 != 0:
            return None
        text = dead_run(records, *self.blow_up)
        if text is not None:
            self.blow_up, self.said = None, True
        return text


def causes(
    adapter: Adapter,
    records: Sequence[StepRecord],
    rec: StepRecord,
    kind: IncidentKind,
    batch: Any,
    before: Any,
) -> dict[str, Any]:
    """The incident's causes beside its numbers: a non-finite batch, a batch out of scale (``before``:
    the last step's batch, or None), the lr's trend. A batch the checks cannot read is said, never raised."""
    from envkit.guard.inputs import input_outlier  # an incident's: not imported by a healthy run
    from envkit.guard.localize import batch_nonfinite

    out: dict[str, Any] = {}
    if kind in _NONFINITE:
        try:
            out["nonfinite_batch"] = batch_nonfinite(adapter, batch)
        except Exception as exc:  # noqa: BLE001 a batch the check cannot read: the incident stands
            out["nonfinite_batch_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    if kind is IncidentKind.RANK_MISMATCH:
        return out
    trend = lr_trend(records, rec)
    if trend is not None:
        out["lr_trend"] = trend
    if not out.get("nonfinite_batch"):
        try:  # a finite batch out of scale: the input, said before any parameter
            found = input_outlier(adapter, batch, before)
        except Exception as exc:  # noqa: BLE001 a batch the check cannot read: the incident stands
            found = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        if found is not None:
            out["input_outlier"] = found
    return out


def overflow_cause(
    rec: StepRecord, spike: Spike | None, digest: Callable[[], str | None], memory: OverflowMemory
) -> tuple[IncidentKind, str] | None:
    """Why an overflow is not the scaler's routine: its finite loss a ``spike`` against the losses
    before (a bad batch or a blow-up), or the same batch (``digest()``) overflowing again after the
    scale backed off (the data). None: the routine."""
    scale = f"its gradients overflowed the loss scale {rec.loss_scale:g}" if rec.loss_scale else ""
    if spike is not None:
        text = f"loss {rec.loss:.6g} above {spike.limit:.6g} (median {spike.median:.6g}) and {scale}"
        return IncidentKind.LOSS_SPIKE, text + ": a bad batch or a blow-up, not the scale"
    key = digest()
    first = None if key is None else memory.again(key, rec.step, rec.loss_scale or 0.0)
    if first is None:
        return None
    text = f"{scale} again on the batch that overflowed at step {first[0]} at scale {first[1]:g}"
    return IncidentKind.NONFINITE_GRAD, text + ": the data, not the scale"
