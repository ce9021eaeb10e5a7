"""Each step's input scale: the largest |x| of every floating-point tensor of the batch, one reduction on
the device read with the step's own numbers, against the median of the batches before it.

A finite input far outside that scale (one raw 16-bit image, values up to 2e5, in a normalized batch)
is an ``input-outlier`` warning even when the step's loss and gradients look normal (a ViT's
LayerNorms absorb it): the step is applied (its numbers did no harm), the input is named. Integer
tensors (token ids, labels) are not read; a non-finite value is the non-finite checks' (never kept).
Standard library only: the adapter does the tensor work.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

from envkit.guard.adapter import Adapter, walk

__all__ = ["FACTOR", "HISTORY", "LEAST", "InputScale", "Measured", "ScaleFinding"]

# the batch's largest |x| over the median of the batches before, as envkit.guard.inputs.FACTOR: the
# guard corpus's healthy runs stay far below it and paddle_vit's 16-bit image is ~2e5× (the evidence:
# docs/performance.md, "The guard's input-scale check")
FACTOR = 50.0
HISTORY = 32  # the batches the median is taken over (per tensor)
LEAST = 4  # batches seen before one is judged: a first batch has nothing to be out of scale with


class Measured(NamedTuple):
    """A step's device scalars: per floating tensor (its place, ``batch[0]``) those whose largest |·|
    is its largest |x| (``widths``: how many of ``values`` each has). A tuple: made every step."""

    places: tuple[str, ...] = ()
    values: tuple[Any, ...] = ()
    widths: tuple[int, ...] = ()


NOTHING = Measured()


@dataclass(frozen=True)
class ScaleFinding:
    """A tensor of the batch out of scale: its largest |x|, the median of the batches before, the ratio."""

    place: str
    max_abs: float
    reference: float
    ratio: float

    @property
    def text(self) -> str:
        return (
            f"{self.place} reaches |x| = {self.max_abs:.4g}, {self.ratio:,.0f}× the batches before "
            f"(the median of their largest |x|: {self.reference:.4g})"
        )


class _Window:
    """The last ``size`` values of one tensor place, in order and sorted (its median in O(1), a new
    value in O(size) inside ``list``'s own C code: a few µs a step, not ``statistics.median``'s sort)."""

    __slots__ = ("order", "sorted")

    def __init__(self, size: int) -> None:
        self.order: deque[float] = deque(maxlen=size)
        self.sorted: list[float] = []

    def __len__(self) -> int:
        return len(self.order)

    def median(self) -> float:
        return self.sorted[len(self.sorted) // 2]  # the upper median of an even count

    def add(self, value: float) -> None:
        if len(self.order) == self.order.maxlen:
            del self.sorted[bisect.bisect_left(self.sorted, self.order[0])]
        self.order.append(value)
        bisect.insort(self.sorted, value)


_INDEX = tuple(f"batch[{i}]" for i in range(16))  # a flat batch's places, made once


def _place(path: str) -> str:
    return "batch" + path if path.startswith("[") or not path else path


class InputScale:
    """The running reference per tensor place and the largest healthy ratio seen (the evidence a
    threshold is read from: ``largest``, ``(ratio, place, step)``)."""

    def __init__(self, factor: float = FACTOR, history: int = HISTORY, least: int = LEAST) -> None:
        self.factor, self.history, self.least = factor, history, least
        self.seen: dict[str, _Window] = {}
        self.largest: tuple[float, str, int] | None = None

    def measure(self, adapter: Adapter, batch: Any) -> Measured:
        """The batch's floating tensors' reductions (on the device; nothing read here). Right after a
        step every Python line runs cold (~3–5× its cost in a loop): most batches, a flat tuple or
        list of tensors, take no generator and no string made per step."""
        places, values, widths = [], [], []
        flat = isinstance(batch, list | tuple) and len(batch) <= len(_INDEX)
        if flat and all(map(adapter.is_tensor, batch)):
            for i, t in enumerate(batch):
                found = adapter.input_scale(t)
                if found:
                    places.append(_INDEX[i])
                    values += found
                    widths.append(len(found))
        else:
            for path, t in walk(batch, adapter.is_tensor):
                found = adapter.input_scale(t)
                if found:
                    places.append(_place(path))
                    values += found
                    widths.append(len(found))
        return Measured(tuple(places), tuple(values), tuple(widths)) if places else NOTHING

    def judge(self, step: int, measured: Measured, floats: list[float]) -> ScaleFinding | None:
        """The first tensor out of scale (not kept in the reference), else None; every finite value
        in scale joins its tensor's reference."""
        found: ScaleFinding | None = None
        at = 0
        for place, width in zip(measured.places, measured.widths, strict=True):
            first = floats[at]
            last = floats[at + width - 1]  # one value (max |x|) or two (min, max)
            at += width
            if not math.isfinite(first + last):
                continue  # NaN/Inf: the non-finite checks' (and never a reference)
            value = max(abs(first), abs(last))
            seen = self.seen.get(place)
            if seen is None:
                seen = self.seen[place] = _Window(self.history)
            reference = seen.median() if len(seen) >= self.least else 0.0
            ratio = value / reference if reference > 0 else 0.0
            if ratio > self.factor:
                found = found or ScaleFinding(place, value, reference, ratio)
                continue
            if self.largest is None or ratio > self.largest[0]:
                self.largest = (ratio, place, step)
            seen.add(value)
        return found

    def summary(self) -> dict[str, Any]:
        """For the run's report: the threshold and the largest ratio judged in scale."""
        ratio, place, step = self.largest or (0.0, None, None)
        return {"factor": self.factor, "largest_ratio": ratio, "place": place, "step": step}
