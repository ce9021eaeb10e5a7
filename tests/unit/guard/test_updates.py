"""The update check judges an update with the lr it was made with (envkit.guard.updates)."""

from __future__ import annotations

from envkit.guard.records import StepRecord
from envkit.guard.schedules import LrSetter
from envkit.guard.updates import HAND_SET_STEPS, UpdateTracker


def _rec(step: int, lr: float, ratio: float) -> StepRecord:
    return StepRecord(step, 1.0, 1.0, lrs=[lr], update_ratios=[ratio])


def _warm(t: UpdateTracker, lr: float = 1e-3, per_lr: float = 0.3, steps: int = 10) -> None:
    for i in range(steps):
        assert t.spike(_rec(i, lr, lr * per_lr * (1 + 0.1 * (i % 3))), lambda: LrSetter.NONE) is None


def test_a_scheduled_lr_jump_is_the_runs_schedule() -> None:
    """20.8× the lr (a per-epoch warm-up), the gradients as before: no spike while a scheduler set it."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    for i in range(10, 30):
        assert t.spike(_rec(i, 20.8e-3, 20.8e-3 * 0.3), lambda: LrSetter.SCHEDULER) is None


def test_a_gradient_spike_under_a_scheduler_still_trips() -> None:
    """The same lr, gradients 50× larger relative to the weights: the gradients made it."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    found = t.spike(_rec(10, 1e-3, 1e-3 * 15.0), lambda: LrSetter.SCHEDULER)
    assert found is not None and not found.lr_only


def test_an_lr_set_by_hand_is_refused_then_taken_as_the_runs() -> None:
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    for i in range(HAND_SET_STEPS):
        found = t.spike(_rec(10 + i, 0.03, 0.03 * 0.3), lambda: LrSetter.NONE)
        assert found is not None and found.lr_only and "30× the largest before" in found.message
    assert t.spike(_rec(20, 0.03, 0.03 * 0.3), lambda: LrSetter.NONE) is None
    assert t.accepted is not None and "stayed for 4 steps" in t.accepted
    assert t.spike(_rec(21, 0.03, 0.03 * 0.3), lambda: LrSetter.NONE) is None and t.accepted is None


def test_an_lr_that_makes_the_update_as_large_as_the_weights_is_never_taken() -> None:
    """The lr × 10,000 by hand: lr·|grad|/|weight| is 3, not a schedule anyone means; refused on."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    for i in range(10):
        found = t.spike(_rec(10 + i, 10.0, 10.0 * 0.3), lambda: LrSetter.NONE)
        assert found is not None and found.lr_only


def test_a_changed_hand_set_lr_restarts_the_count() -> None:
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    assert t.spike(_rec(10, 0.03, 0.009), lambda: LrSetter.NONE) is not None
    assert t.spike(_rec(11, 0.03, 0.009), lambda: LrSetter.NONE) is not None
    for i in range(HAND_SET_STEPS):  # another lr: three refusals again
        assert t.spike(_rec(12 + i, 0.05, 0.015), lambda: LrSetter.NONE) is not None
    assert t.spike(_rec(20, 0.05, 0.015), lambda: LrSetter.NONE) is None


def test_an_lr_other_code_set_over_a_scheduler_is_refused() -> None:
    """A scheduler is attached, but the group's lr is not the one it computed (lr ×10,000 for a step
    after ``scheduler.step()``): refused, not taken as the schedule (the bug 23fe0dc let through)."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    found = t.spike(_rec(10, 10.0, 10.0 * 0.3), lambda: LrSetter.OTHER)
    assert found is not None and found.lr_only
    assert t.spike(_rec(11, 1e-3, 1e-3 * 0.3), lambda: LrSetter.SCHEDULER) is None  # put back


def test_a_jump_the_scheduler_computed_above_the_declared_peak_is_refused() -> None:
    """The scheduler's own lr, but 10,000× the peak the optimizer declares (a lambda bug)."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    found = t.spike(_rec(10, 10.0, 10.0 * 0.3), lambda: LrSetter.SCHEDULER, lambda: 1e-3)
    assert found is not None and found.lr_only and "scheduler computed it" in found.message
    # a per-epoch warm-up to the declared peak stays the schedule
    t = UpdateTracker(10.0, warmup=5)
    _warm(t, lr=1e-4)
    assert t.spike(_rec(10, 1e-3, 1e-3 * 0.3), lambda: LrSetter.SCHEDULER, lambda: 1e-3) is None


def test_a_ramp_past_the_declared_peak_is_warned_once_per_factor() -> None:
    """1 → 1000× over 30 steps (each step 1.26×: no spike) is said at 10× and at 100× the peak."""
    t = UpdateTracker(10.0, warmup=5)
    _warm(t)
    said = []
    for k in range(31):
        lr = 1e-3 * 1000.0 ** (k / 30)
        assert t.spike(_rec(10 + k, lr, lr * 0.3), lambda: LrSetter.SCHEDULER, lambda: 1e-3) is None
        if t.accepted is not None:
            said.append((k, t.accepted))
    assert [k for k, _ in said] == [11, 21]
    assert "the learning rate is" in said[0][1] and "schedule formula bug" in said[0][1]
