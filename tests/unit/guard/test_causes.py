"""The lr's trend as a cause, and a dead run after a blow-up (envkit.guard.checks)."""

from __future__ import annotations

import math

from envkit.guard.checks import DEAD_STEPS, dead_run, lr_trend
from envkit.guard.records import StepRecord


def _recs(lrs: list[float], losses: list[float] | None = None) -> list[StepRecord]:
    losses = losses or [1.0] * len(lrs)
    return [StepRecord(i, loss, 1.0, lr=lr) for i, (lr, loss) in enumerate(zip(lrs, losses, strict=True))]


def test_a_ramp_of_1000x_is_a_trend() -> None:
    recs = _recs([1.0] * 10 + [1.2**k for k in range(1, 39)])
    text = lr_trend(recs[:-1], recs[-1])
    assert text is not None and text.startswith(
        "the learning rate rose 1,021× over the last 38 steps (1 at step 9"
    )


def test_a_warm_up_long_over_or_a_decay_is_no_trend() -> None:
    warm = _recs([0.001 * (k + 1) for k in range(10)] + [0.01] * 300)
    assert lr_trend(warm[:-1], warm[-1]) is None  # the rise is older than the window
    decay = _recs([0.1 * 0.99**k for k in range(100)])
    assert lr_trend(decay[:-1], decay[-1]) is None


def test_one_jump_is_the_update_checks_not_a_trend() -> None:
    recs = _recs([0.01] * 30 + [10.0])
    assert lr_trend(recs[:-1], recs[-1]) is None


def test_chance_loss_for_100_steps_after_a_blow_up_is_a_dead_run() -> None:
    losses = (
        [2.3 - 0.04 * k for k in range(50)] + [math.nan] * 5 + [2.3026 + 0.01 * (k % 3) for k in range(120)]
    )
    recs = _recs([0.1] * len(losses), losses)
    for r in recs[50:55]:
        r.skipped = "nonfinite-loss"
    assert dead_run(recs[: 55 + DEAD_STEPS - 1], 50, 54) is None  # not 100 steps yet
    text = dead_run(recs, 50, 54)
    assert text is not None and text.startswith("the run looks dead: since the blow-up at step 50")


def test_a_run_that_learns_again_or_sits_below_its_old_loss_is_not_dead() -> None:
    before = [2.3 - 0.04 * k for k in range(50)]
    learning = before + [2.3 - 0.005 * k for k in range(120)]
    assert dead_run(_recs([0.1] * 170, learning), 50, 50) is None
    settled = before + [0.35 + 0.001 * (k % 5) for k in range(120)]
    assert dead_run(_recs([0.1] * 170, settled), 50, 50) is None
