"""Verdicts that do not depend on ``--steps``: judge the band at onset, let rounding noise grow later.

Rounding noise grows with steps (torch bert on CPU, 1 vs 2 threads: max relative difference
2e-7 over 10 steps, 4.9e-6 over 100, 1.6e-5 over 1,000), so fixed edges over the whole run turn a
harmless cause into ``precision-drift`` once the run is long enough. The size of a difference at
its *onset*, before training dynamics amplify it, is what tells the causes apart: fp32 reordering
is ~1e-10…1e-8 in the first steps, bf16 autocast 2e-4…3e-3, TF32 (H200) 1e-5…2e-4, a real
divergence beyond 5e-3 from the first step.

* The **onset window** is the first ``Bands.window`` steps (5): the band is the edges applied to
  the largest difference of the loss and of the global grad norm there. Per-parameter values
  (grad norms, final norms) take their workload's onset band: one bf16 rounding of a small bias
  gradient is already 4e-3 (2^-8), so their spread says little about the cause.
* **Later steps** may grow without changing the band, except that a workload that was identical
  or equivalent at onset and then differs by more than the drift edge is ``diverged``: pure rounding
  noise does not get there (1.6e-5 after 1,000 steps, 300× below 5e-3), a fault that starts late does.

The verdict is therefore the same at 10, 100 and 1,000 steps for the same cause (measured margins
in docs/guides/probe.md and benchmarks/bench_bands.py). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from envkit.probe.model import CompareVerdict

__all__ = ["Bands", "judge", "onset_max"]

Diff = tuple[int, float]  # (step, relative difference)


@dataclass(frozen=True)
class Bands:
    """Upper edges (max relative difference, inclusive) of ``equivalent`` and ``precision-drift``."""

    equivalent: float = 2e-6
    drift: float = 5e-3
    window: int = 5  # onset steps the band is judged on (envkit.comparison.bands)

    def __post_init__(self) -> None:
        if not 0 <= self.equivalent < self.drift:
            raise ValueError("band edges must satisfy 0 <= equivalent < drift")
        if self.window < 1:
            raise ValueError("the onset window must be at least one step")

    def verdict(self, max_rel_diff: float, bitwise_equal: bool) -> CompareVerdict:
        """The band of one difference (fixed edges); see :func:`judge` for a series."""
        if bitwise_equal:
            return CompareVerdict.IDENTICAL
        if max_rel_diff <= self.equivalent:
            return CompareVerdict.EQUIVALENT
        if max_rel_diff <= self.drift:
            return CompareVerdict.PRECISION_DRIFT
        return CompareVerdict.DIVERGED


def onset_max(diffs: Sequence[Diff], window: int) -> float | None:
    """The largest difference within the first ``window`` steps, or None when none is measured there."""
    early = [d for step, d in diffs if step <= window]
    return max(early) if early else None


def judge(
    diffs: Sequence[Diff], *, bitwise: bool, workload_onset: float, edges: Bands, trajectory: bool = True
) -> CompareVerdict:
    """The verdict of one metric: bands at onset, late growth tolerated unless beyond the drift edge.

    ``trajectory``: the metric is the loss or the global grad norm, judged on its own onset; a
    per-parameter metric (grad norms, final norms) takes its workload's onset band instead.
    """
    if bitwise:
        return CompareVerdict.IDENTICAL
    early = onset_max(diffs, edges.window) if trajectory else None
    verdict = edges.verdict(early if early is not None else workload_onset, False)
    late = max((d for step, d in diffs if step > edges.window), default=0.0)
    calm = edges.verdict(workload_onset, False) is CompareVerdict.EQUIVALENT
    if calm and verdict is CompareVerdict.EQUIVALENT and late > edges.drift:
        return CompareVerdict.DIVERGED
    return verdict
