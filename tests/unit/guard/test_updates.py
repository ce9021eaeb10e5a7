"""The update check judges an update with the lr it was made with (envkit.guard.updates)."""

from __future__ import annotations

from envkit.guard.records import StepRecord
from envkit.guard.updates import HAND_SET_STEPS, UpdateTracker


def _rec(step: int, lr: float, ratio: float) -> StepRecord:
    return StepRecord(step, 1.0, 1.0, lrs=[lr], update_ratios=[ratio])


def _warm(t: UpdateTracker, lr: float = 1e-3, per_lr: float = 0.3, steps: int = 10) -> None:
    for i in range(steps):
        assert t.spike(_rec(i, lr, lr * per_lr * (1 + 0.1 * (i % 3))), lambda: False) is None


def test_a_scheduled_lr_jump_is_the_runs_schedule() -> None:
    """20.8× the lr (a per-epoch warm-up), the gradients as before: no spike while a scheduler set it."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    for i in range(10, 30):
        assert t.spike(_rec(i, 20.8e-3, 20.8e-3 * 0.3), lambda: True) is None


def test_a_gradient_spike_under_a_scheduler_still_trips() -> None:
    """The same lr, gradients 50× larger relative to the weights: the gradients made it."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    found = t.spike(_rec(10, 1e-3, 1e-3 * 15.0), lambda: True)
    assert found is not None and not found.lr_only


def test_an_lr_set_by_hand_is_refused_then_taken_as_the_runs() -> None:
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    for i in range(HAND_SET_STEPS):
        found = t.spike(_rec(10 + i, 0.03, 0.03 * 0.3), lambda: False)
        assert found is not None and found.lr_only and "30× the largest before" in found.message
    assert t.spike(_rec(20, 0.03, 0.03 * 0.3), lambda: False) is None
    assert t.accepted is not None and "stayed for 4 steps" in t.accepted
    assert t.spike(_rec(21, 0.03, 0.03 * 0.3), lambda: False) is None and t.accepted is None


def test_an_lr_that_makes_the_update_as_large_as_the_weights_is_never_taken() -> None:
    """The lr × 10,000 by hand: lr·|grad|/|weight| is 3, not a schedule anyone means; refused on."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    for i in range(10):
        found = t.spike(_rec(10 + i, 10.0, 10.0 * 0.3), lambda: False)
        assert found is not None and found.lr_only


def test_a_changed_hand_set_lr_restarts_the_count() -> None:
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    assert t.spike(_rec(10, 0.03, 0.009), lambda: False) is not None
    assert t.spike(_rec(11, 0.03, 0.009), lambda: False) is not None
    for i in range(HAND_SET_STEPS):  # another lr: three refusals again
        assert t.spike(_rec(12 + i, 0.05, 0.015), lambda: False) is not None
    assert t.spike(_rec(20, 0.05, 0.015), lambda: False) is None
