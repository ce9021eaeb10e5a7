"""Who set the lr, read from real torch and Paddle schedulers (envkit.guard.schedules)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.optim.lr_scheduler import LambdaLR, ReduceLROnPlateau, SequentialLR, StepLR

from envkit.guard.schedules import LrSetter, LrWatch


def _sgd(lr: float = 0.1) -> torch.optim.SGD:
    return torch.optim.SGD(torch.nn.Linear(3, 2).parameters(), lr=lr)


def test_no_scheduler_is_none() -> None:
    assert LrWatch(_sgd()).setter() is LrSetter.NONE


def test_an_attached_scheduler_the_guard_was_not_given_is_found() -> None:
    """mnist's StepLR made after the guard, stepped per epoch: its lr is the schedule; ×10,000 by hand
    for one step is other code's; put back, the scheduler's again."""
    opt = _sgd(1.0)
    watch = LrWatch(opt)
    sched = StepLR(opt, step_size=1, gamma=0.7)
    opt.step()
    sched.step()
    assert watch.setter() is LrSetter.SCHEDULER
    saved = opt.param_groups[0]["lr"]
    opt.param_groups[0]["lr"] = saved * 1e4
    assert watch.setter() is LrSetter.OTHER
    assert watch.differs is not None and "7000" in watch.differs and "0.7" in watch.differs
    opt.param_groups[0]["lr"] = saved
    assert watch.setter() is LrSetter.SCHEDULER


def test_the_scheduler_given_and_a_materialized_dict() -> None:
    """scheduler= given; and an attached one whose __dict__ was materialized (state_dict())."""
    opt = _sgd()
    sched = LambdaLR(opt, lambda s: 1.0 + s)
    sched.state_dict()
    assert LrWatch(opt, sched).setter() is LrSetter.SCHEDULER
    watch = LrWatch(opt)
    opt.step()
    sched.step()
    assert watch.setter() is LrSetter.SCHEDULER
    opt.param_groups[0]["lr"] *= 3
    assert watch.setter() is LrSetter.OTHER


@pytest.mark.parametrize("kind", ["plateau", "sequential"])
def test_plateau_and_sequential(kind: str) -> None:
    opt = _sgd()
    if kind == "plateau":
        plateau = ReduceLROnPlateau(opt, patience=0, factor=0.5)
        for loss in (1.0, 2.0, 3.0):
            opt.step()
            plateau.step(loss)
    else:
        warm = LambdaLR(opt, lambda s: (s + 1) / 5)
        sched = SequentialLR(opt, [warm, StepLR(opt, 2, 0.5)], milestones=[4])
        for _ in range(7):
            opt.step()
            sched.step()
    watch = LrWatch(opt)
    assert watch.setter() is LrSetter.SCHEDULER
    opt.param_groups[0]["lr"] = 5.0
    assert watch.setter() is LrSetter.OTHER


def test_declared_peak() -> None:
    opt = _sgd(1e-3)
    assert LrWatch(opt).peak() == pytest.approx(1e-3)
    torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=100)
    assert LrWatch(opt).peak() == pytest.approx(0.05)


def test_paddle_last_lr_changed_within_an_epoch_is_other_code() -> None:
    """A LinearWarmup stepped per epoch: the lr it set at the epoch is its; ``last_lr`` changed while
    ``last_epoch`` stayed (the corpus plant, or a hand edit) is other code's."""
    with warnings.catch_warnings():  # paddle's import warns (no ccache) under filterwarnings=error
        warnings.simplefilter("ignore")
        import paddle
    layer = paddle.nn.Linear(3, 2)
    sched = paddle.optimizer.lr.LinearWarmup(0.01, warmup_steps=5, start_lr=0.0, end_lr=0.01)
    opt = paddle.optimizer.AdamW(learning_rate=sched, parameters=layer.parameters())
    watch = LrWatch(opt, sched)
    for _ in range(3):
        sched.step()
        watch.step()
        assert watch.setter() is LrSetter.SCHEDULER
        watch.step()
        assert watch.setter() is LrSetter.SCHEDULER
    sched.last_lr = sched.last_lr * 1e4
    watch.step()
    assert watch.setter() is LrSetter.OTHER
    assert watch.peak() == pytest.approx(0.01)
