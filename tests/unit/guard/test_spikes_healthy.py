"""Spike rules on the guard corpus's real healthy runs (issue 44 "What it must show": <= 1 false alarm
per 1,000 clean steps). ``data/healthy_series.json``: the loss and gradient norm of every step of the
healthy runs of ``mnist`` and ``word_language_model`` at the scripts' own defaults, as the guard
recorded them (``RUN/steps.jsonl``). Before these rules: mnist 1 loss-spike (step 356, a batch loss
3.2x the median late in training), word_language_model 40 grad-spikes (steps 28, 29: the lr-20
transient of its first epochs; then every epoch's last, shorter batch, 5x the median norm).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from envkit.guard.options import SpikeOptions
from envkit.guard.records import IncidentKind
from envkit.guard.spikes import SpikeDetector, Spikes

SERIES = json.loads((Path(__file__).parent / "data" / "healthy_series.json").read_text(encoding="utf-8"))


def spikes() -> Spikes:
    sp = SpikeOptions()
    return Spikes(
        SpikeDetector(sp.window, sp.warmup, sp.threshold, sp.loss_factor, sp.floor),
        SpikeDetector(sp.window, sp.warmup, sp.threshold, sp.factor, sp.floor),
    )


def alarms(loss: list[float], norm: list[float]) -> list[tuple[int, IncidentKind]]:
    s = spikes()
    found = [(i, s.check(a, b)) for i, (a, b) in enumerate(zip(loss, norm, strict=True))]
    return [(i, f[0]) for i, f in found if f is not None]


@pytest.mark.parametrize("name", sorted(SERIES))
def test_the_healthy_runs_at_their_defaults_raise_no_spike(name: str) -> None:
    data = SERIES[name]
    assert len(data["loss"]) >= 500
    assert alarms(data["loss"], data["grad_norm"]) == []


@pytest.mark.parametrize("name", sorted(SERIES))
@pytest.mark.parametrize("at", [25, 60, 90, 223, 300, 356, 420, 490])
def test_a_planted_loss_spike_is_caught_after_the_warmup(name: str, at: int) -> None:
    """The loss 10x its recent median (a bad batch) is a loss spike in the first window and after it
    (3x is not: mnist's healthy batch losses late in training reach 3.2x the median). Not tested:
    mnist's steps ~100-170, where the window still holds the loss's fast descent (2.3 -> 0.2) and a
    jump to 10x the recent level stays inside the window's range (missed before these rules too)."""
    loss, norm = list(SERIES[name]["loss"]), list(SERIES[name]["grad_norm"])
    loss[at] = 10 * sorted(loss[at - 20 : at])[10]
    assert (at, IncidentKind.LOSS_SPIKE) in alarms(loss, norm)


@pytest.mark.parametrize("name", sorted(SERIES))
@pytest.mark.parametrize("at", [150, 223, 356, 420, 490])
def test_a_planted_gradient_spike_alone_is_caught_after_the_first_window(name: str, at: int) -> None:
    """The norm 10x its recent median, the loss unchanged: a grad spike once the window is full."""
    loss, norm = list(SERIES[name]["loss"]), list(SERIES[name]["grad_norm"])
    norm[at] = 10 * sorted(norm[at - 20 : at])[10]
    assert (at, IncidentKind.GRAD_SPIKE) in alarms(loss, norm)


@pytest.mark.parametrize("name", sorted(SERIES))
@pytest.mark.parametrize("at", [30, 45, 70, 90])
def test_in_the_first_window_a_gradient_spike_the_loss_confirms_is_caught(name: str, at: int) -> None:
    """Early in a run a norm jump alone is the start's non-stationarity (word_language_model's lr-20
    transient: 28x the median, the loss 1.2x); with the loss up too (a bad batch, a blow-up) it is
    an incident."""
    loss, norm = list(SERIES[name]["loss"]), list(SERIES[name]["grad_norm"])
    norm[at] = 30 * sorted(norm[at - 20 : at])[10]
    loss[at] = 10 * sorted(loss[at - 20 : at])[10]
    assert at in [i for i, _ in alarms(loss, norm)]


def test_a_value_the_window_already_holds_three_times_is_the_runs_pattern() -> None:
    """Every 14th norm 5x the others (an epoch's last, shorter batch): warned until the window holds
    it three times, never after; a value 20 % above that level and more is still a spike."""
    d = SpikeDetector(100, 20, 6.0, 4.0, 0.01)
    rng = random.Random(0)
    found = []
    for i in range(600):
        value = (0.7 if i % 14 == 13 else 0.14) * (1 + 0.03 * rng.uniform(-1, 1))
        if d.check(value) is not None:
            found.append(i)
    assert found and max(found) < 100  # only the pattern's first occurrences
    assert d.check(0.7 * 1.03 * 1.25) is not None


def test_the_spread_above_the_median_judges_a_right_skewed_loss() -> None:
    """Batch losses late in training are right-skewed (lognormal here): a batch 3x the median is
    within the upper tail, no spike; 6x is one."""
    rng = random.Random(1)
    values = [0.08 * math.exp(rng.gauss(0, 0.45)) for _ in range(2000)]
    d = SpikeDetector(100, 20, 6.0, 1.5, 0.01)
    assert sum(d.check(v) is not None for v in values) <= 2  # <= 1 per 1,000
    assert d.check(0.08 * 6) is not None
