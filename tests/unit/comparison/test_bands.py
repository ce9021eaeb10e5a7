"""Bands that hold at any --steps: the verdict is judged at onset; later growth of noise is tolerated."""

from __future__ import annotations

import pytest

from envkit.comparison.bands import Bands, judge, onset_max
from envkit.comparison.pairwise import compare_reports
from tests.unit.probe.conftest import make_report, parsed


def grow(start: float, factor_per_step: float, steps: int, cap: float = 1.0) -> list[tuple[int, float]]:
    return [(s, min(start * factor_per_step ** (s - 1), cap)) for s in range(1, steps + 1)]


@pytest.mark.parametrize("steps", [10, 100, 1000])
@pytest.mark.parametrize(
    ("start", "factor", "cap", "expected"),
    [
        (4e-9, 1.03, 2e-5, "equivalent"),  # fp32 reordering (threads), as measured: 2e-7 … 1.6e-5
        (1.5e-3, 1.02, 0.4, "precision-drift"),  # bf16 autocast, as measured on CPU: onset 1.8e-3
        (6e-5, 1.05, 0.3, "precision-drift"),  # TF32-sized onset
        (0.05, 1.01, 1.0, "diverged"),  # a real divergence shows from the first step
    ],
)
def test_the_verdict_does_not_depend_on_the_length(
    steps: int, start: float, factor: float, cap: float, expected: str
) -> None:
    diffs = grow(start, factor, steps, cap)
    onset = onset_max(diffs, Bands().window) or 0.0
    assert judge(diffs, bitwise=False, workload_onset=onset, edges=Bands()) == expected


def test_a_fault_that_starts_late_is_diverged() -> None:
    diffs = [(s, 0.0 if s < 500 else 0.1) for s in range(1, 1001)]
    assert judge(diffs, bitwise=False, workload_onset=0.0, edges=Bands()) == "diverged"


def test_per_parameter_values_take_the_workload_band() -> None:
    per_param = [(1, 7e-3), (1000, 0.06)]  # one bf16 rounding of a small bias gradient
    assert judge(per_param, bitwise=False, workload_onset=1.8e-3, edges=Bands(), trajectory=False) == (
        "precision-drift"
    )
    assert judge(per_param, bitwise=True, workload_onset=0.0, edges=Bands()) == "identical"


def test_compare_judges_at_onset() -> None:
    losses = [1.0 - 0.001 * i for i in range(40)]
    a = make_report(losses=losses)
    b = make_report(host="b", losses=losses)
    for wl in ("bert", "rnn"):
        for i, step in enumerate(b["frameworks"]["torch"]["workloads"][wl]["steps"]):
            step["loss"] *= 1 + 1e-8 * 1.2**i  # noise that grows to ~1e-5 by step 40
    verdicts = {c.metric: c.verdict for c in compare_reports(parsed(a), parsed(b)).comparisons}
    assert verdicts["loss"] == "equivalent"
    with pytest.raises(ValueError, match="window"):
        Bands(window=0)
