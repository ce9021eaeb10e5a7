"""Spike detection (stdlib): median/MAD, warm-up, and NaN/Inf never entering the statistics."""

from __future__ import annotations

import math

import pytest

from envkit.guard.records import StepRecord, json_clean, json_float
from envkit.guard.spikes import SpikeDetector


def noisy(n: int) -> list[float]:
    return [1.0 + 0.01 * math.sin(i) for i in range(n)]


def test_no_spike_during_the_warmup_then_a_jump_is_one() -> None:
    d = SpikeDetector(window=50, warmup=10, threshold=6.0)
    assert all(d.check(v) is None for v in [1.0, 50.0, 1.0, 1.0])  # the warm-up never reports
    d = SpikeDetector(window=50, warmup=10, threshold=6.0)
    assert all(d.check(v) is None for v in noisy(30))
    spike = d.check(5.0)
    assert spike is not None and spike.value == 5.0 and spike.limit < 5.0
    assert d.check(1.005) is None


def test_non_finite_values_never_enter_the_window() -> None:
    """OLMo-core's gap: one NaN in the history must not blind the detector for the next steps."""
    d = SpikeDetector(window=20, warmup=5, threshold=6.0)
    for v in noisy(20):
        d.check(v)
    before = list(d.window)
    for bad in (math.nan, math.inf, -math.inf):
        assert d.check(bad) is None
    assert list(d.window) == before
    assert d.check(3.0) is not None  # still sees the next spike


def test_a_flat_window_uses_a_relative_margin() -> None:
    d = SpikeDetector(window=10, warmup=5, threshold=6.0)
    for _ in range(10):
        d.check(2.0)
    assert d.check(2.0 + 1e-9) is None
    assert d.check(2.5) is not None


@pytest.mark.parametrize(("window", "warmup", "threshold"), [(2, 2, 1.0), (10, 20, 1.0), (10, 5, 0.0)])
def test_bad_settings_are_refused(window: int, warmup: int, threshold: float) -> None:
    with pytest.raises(ValueError, match="warmup"):
        SpikeDetector(window, warmup, threshold)


def test_records_keep_exact_floats_and_markers() -> None:
    rec = StepRecord(3, 0.1 + 0.2, math.nan, clipped_norm=math.inf, lr=1e-3)
    data = rec.to_json()
    assert data["loss_hex"] == (0.1 + 0.2).hex() and data["grad_norm"] == "nan"
    back = StepRecord.from_json(data)
    assert back.loss == rec.loss and math.isnan(back.grad_norm) and back.clipped_norm == math.inf
    assert json_float(-math.inf) == "-inf"
    assert json_clean({"a": [1.0, math.nan, {"b": math.inf}]}) == {"a": [1.0, "nan", {"b": "inf"}]}


def memorized(n: int, seed: int = 0) -> list[float]:
    """A loss that fell from ~0.9 to ~4e-5 on a fixed batch, with dropout's multiplicative jitter
    (the shape of Paddle's tiny BERT in bench_guard: early max 0.928, late median 3.7e-5, its false
    alarms at 1.1e-3, 4.1e-4 and 6.9e-4)."""
    import random

    rng = random.Random(seed)
    out = [0.93 * 0.85**i for i in range(60)]  # the warm-up and the descent
    out += [4e-5 * math.exp(rng.gauss(0, 0.3)) * (30 if rng.random() < 0.01 else 1) for _ in range(n)]
    return out


def test_jitter_on_a_loss_near_zero_is_no_spike_with_the_floor() -> None:
    """Paddle's bench models (issue 33): the median and MAD of a memorized loss are so small that a
    dropout step 30× the median clears 6 σ and 1.5× the median; it stays far below the run's scale."""
    values = memorized(2000)
    without = SpikeDetector(100, 20, 6.0, 1.5, floor=0.0)
    assert sum(without.check(v) is not None for v in values) > 5  # the false alarms seen on Paddle
    floored = SpikeDetector(100, 20, 6.0, 1.5, floor=0.01)
    assert sum(floored.check(v) is not None for v in values) == 0


@pytest.mark.parametrize("jump", [0.02, 1.0, 50.0])
def test_the_floor_keeps_real_spikes(jump: float) -> None:
    """A jump to a sizable fraction of the run's early scale (0.7) is still a spike near zero, and a
    healthy run's ordinary spikes (its median far above the floor) are unchanged."""
    d = SpikeDetector(100, 20, 6.0, 1.5, floor=0.01)
    for v in memorized(300):
        d.check(v)
    assert d.check(jump) is not None
    plain, floored = SpikeDetector(50, 10, 6.0, 1.5), SpikeDetector(50, 10, 6.0, 1.5, floor=0.01)
    series = [*noisy(40), 5.0, *noisy(10), 1.6, 3.0]
    assert [plain.check(v) is not None for v in series] == [floored.check(v) is not None for v in series]


@pytest.mark.parametrize("floor", [-0.1, 1.5, math.nan])
def test_a_floor_outside_0_1_is_refused(floor: float) -> None:
    with pytest.raises(ValueError, match="floor"):
        SpikeDetector(floor=floor)


def test_a_norm_rising_over_a_hundred_steps_is_no_spike_and_a_jump_above_it_is() -> None:
    """word_language_model at its default sizes (emsize/nhid 200, bptt 35, batch 20, lr 20, a 2,000-word
    vocabulary): its clean gradient norm grows from ~0.1 to ~1.2 over its first 110 steps, 4× the
    window's median; six grad-spike warnings in 130 steps before the recent-median rule."""
    d = SpikeDetector(100, 20, 6.0, 4.0, 0.01)
    found = []
    for i in range(130):
        base = 0.1 * 1.02**i  # 0.1 → 1.3, ±15 % step to step
        value = base * (1 + 0.15 * math.sin(7.3 * i))
        if d.check(value) is not None:
            found.append(i)
    assert found == []
    assert d.check(1.3 * 1.02**130 * 5) is not None  # a real jump over the recent level
