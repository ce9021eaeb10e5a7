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
