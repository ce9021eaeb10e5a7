"""The lr's trend (envkit.guard.trend): a ramp no single step of which is a jump is said; the rises of
real schedules never are, even taken as set by hand (the hardest case: no scheduler to ask).

The schedules are torch's own ``LRScheduler`` classes stepped per step, per epoch and on a plateau, and
the hand-written ones of the corpus scripts (nanoGPT's ``get_lr``; word_language_model's ÷4 after a
bad epoch); the ramps are the corpus's ``lr-ramp`` (1 → 1000× geometric over 30 steps) from several
points of each, a linear ramp, and the ramp with the loop's own annealing in its middle."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from envkit.guard.trend import WINDOW, LrTrend

torch = pytest.importorskip("torch")

Series = list[float]


def said(lrs: Series, factor: float = 10.0) -> list[tuple[int, str]]:
    trend = LrTrend(factor)
    out = []
    for step, lr in enumerate(lrs):
        trend.add(step, lr)
        text = trend.check()
        if text is not None:
            out.append((step, text))
    return out


def _torch(make: Callable[[Any], object], steps: int, per: int = 1, lr: float = 0.1) -> Series:
    """A real torch scheduler's lr, read each step, the scheduler stepped every ``per`` steps."""
    opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=lr, momentum=0.9)
    sched = make(opt)
    out = []
    for i in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        if (i + 1) % per == 0:
            if isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau):
                sched.step(1.0)  # never improves: a fall every patience+1 epochs
            else:
                sched.step()  # type: ignore[attr-defined]
    return out


def _nanogpt(steps: int = 600) -> Series:
    """karpathy/nanoGPT train.py's get_lr (the corpus's settings): warm-up 20, cosine to 500."""
    learning_rate, min_lr, warmup_iters, lr_decay_iters = 1e-3, 1e-4, 20, 500

    def get_lr(it: int) -> float:
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)

    return [get_lr(i) for i in range(steps)]


def _plateau_by_hand(epochs: int = 40, per: int = 14, bad: tuple[int, ...] = (2, 4, 5, 7, 9)) -> Series:
    """pytorch/examples word_language_model: lr 20, ÷4 after each epoch whose validation did not improve."""
    lr, out = 20.0, []
    for epoch in range(epochs):
        out += [lr] * per
        if epoch in bad:
            lr /= 4.0
    return out


def _healthy() -> Iterator[tuple[str, Series]]:
    sch = torch.optim.lr_scheduler
    yield "nanoGPT get_lr", _nanogpt()
    yield "word_language_model plateau", _plateau_by_hand()
    yield "OneCycleLR", _torch(lambda o: sch.OneCycleLR(o, max_lr=0.1, total_steps=600), 600)
    yield "CyclicLR triangular", _torch(lambda o: sch.CyclicLR(o, 0.001, 0.1, step_size_up=20), 600)
    yield (
        "CyclicLR exp_range",
        _torch(lambda o: sch.CyclicLR(o, 0.001, 0.1, step_size_up=15, mode="exp_range", gamma=0.99), 600),
    )
    yield "CosineAnnealingWarmRestarts", _torch(lambda o: sch.CosineAnnealingWarmRestarts(o, T_0=25), 600)
    yield (
        "warm-up then cosine (SequentialLR)",
        _torch(
            lambda o: sch.SequentialLR(
                o, [sch.LinearLR(o, 0.01, total_iters=30), sch.CosineAnnealingLR(o, 570)], milestones=[30]
            ),
            600,
        ),
    )
    yield "LinearLR warm-up per epoch", _torch(lambda o: sch.LinearLR(o, 0.048, total_iters=5), 600, per=25)
    yield "StepLR per epoch", _torch(lambda o: sch.StepLR(o, 1, gamma=0.7), 600, per=50)
    yield "ReduceLROnPlateau", _torch(lambda o: sch.ReduceLROnPlateau(o, patience=1), 600, per=13)
    yield (
        "Noam (LambdaLR)",
        _torch(lambda o: sch.LambdaLR(o, lambda s: min((s + 1) ** -0.5, (s + 1) * 40**-1.5)), 600),
    )


@pytest.mark.parametrize(("name", "lrs"), list(_healthy()), ids=[n for n, _ in _healthy()])
def test_no_real_schedule_is_a_ramp_even_taken_as_set_by_hand(name: str, lrs: Series) -> None:
    assert len(lrs) >= 500
    assert said(lrs) == [], name


def ramp(lrs: Series, at: int, over: int = 30, to: float = 1000.0) -> Series:
    """The corpus's lr-ramp: the lr × 1 → ``to`` geometric over ``over`` steps from ``at``, then × ``to``."""
    return [lr * to ** (min(max(i - at, 0), over) / over) if i >= at else lr for i, lr in enumerate(lrs)]


NO_WARMUP = {
    "word_language_model plateau",
    "StepLR per epoch",
    "ReduceLROnPlateau",
    "CosineAnnealingWarmRestarts",
}


@pytest.mark.parametrize(("name", "lrs"), list(_healthy()), ids=[n for n, _ in _healthy()])
@pytest.mark.parametrize("at", [120, 300, 450])
def test_the_corpus_ramp_is_said_while_it_climbs(name: str, lrs: Series, at: int) -> None:
    """Within 15 steps where the schedule never rose before (10× in 10 rises); where its first ascent
    rose (a warm-up, a cycle) once the ramp is twice as steep, before the ramp's 30 steps end. A ramp
    inside the first ascent (OneCycle's 180-step warm-up at 120) is the schedule's own rise: not said
    (an lr above the declared peak is the runaway check's, envkit.guard.updates)."""
    trend = LrTrend(10.0)
    for i, lr in enumerate(lrs):
        trend.add(i, lr)
    found = said(ramp(lrs, at))
    if trend.fell_at is None or trend.fell_at[0] > at:
        assert found == [] or found[0][0] > at + 30, name
        return
    assert found, name
    step, text = found[0]
    assert at < step <= (at + 15 if name in NO_WARMUP else at + 30), (name, step)
    since = int(text.split("rises since step ")[1].split(" ")[0])  # the ramp's foot, or the cycle's
    assert "the learning rate rose" in text and at - 25 <= since <= at, (name, text)


def test_the_word_language_model_ramp_through_the_loops_own_annealing() -> None:
    """The corpus case: the ramp from the plateau's 0.3125 at step 60; the loop ÷4 at 70 and 84 (the
    ramp ends at 19.5, below the run's first lr 20: no jump, no lr above the declared peak)."""
    lrs = _plateau_by_hand(epochs=8, bad=(1, 2, 3, 4, 5, 6))
    assert lrs[60] == 0.3125 and lrs[70] == 0.078125
    ramped = ramp(lrs, 60)
    assert max(ramped[60:]) < 20.0
    step, text = said(ramped)[0]
    assert 60 < step <= 75
    assert "a single fall between left out" in text and "after it had fallen from 20" in text


def test_a_linear_ramp_and_a_slow_one() -> None:
    """10× linear over 20 steps is said; 10× geometric over 100 steps (under 10× in any 50) is not."""
    flat = _plateau_by_hand(epochs=20)
    linear = [lr * (1 + 9 * min(max(i - 200, 0), 20) / 20) for i, lr in enumerate(flat)]
    assert said(linear) and 200 < said(linear)[0][0] <= 220
    slow = [lr * 10 ** (min(max(i - 200, 0), 100) / 100) for i, lr in enumerate(flat)]
    assert said(slow) == []


def test_hostile_schedules_by_hand() -> None:
    """A cycle repeated (its first ascent is the schedule's own), a warm-up from the first step (a
    first ascent), a restart that jumps in one step, jitter, NaN/0/inf lrs: none said."""
    tri = [0.001 + 0.099 * (1 - abs((i % 40) / 20 - 1)) for i in range(600)]
    assert said(tri) == []
    warm = [1e-3 * min(1.0, (i + 1) / 100) for i in range(600)]
    assert said(warm) == []
    restarts = [0.1 * 0.9 ** (i % 30) for i in range(600)]
    assert said(restarts) == []
    jitter = [0.1 * (1 + 1e-12 * (i % 2)) * 0.999**i for i in range(600)]
    assert said(jitter) == []
    odd = [0.1, math.nan, 0.0, math.inf, -1.0] * 120
    assert said(odd) == []


def test_said_once_a_window_and_a_resumed_loop_starts_over() -> None:
    lrs = ramp(_plateau_by_hand(epochs=20), 100, over=100, to=1e9)
    steps = [s for s, _ in said(lrs)]
    assert len(steps) >= 2 and all(b - a >= WINDOW for a, b in itertools.pairwise(steps))
    trend = LrTrend(10.0)
    for i in range(30):
        trend.add(i, 0.1 * 1.3**i)
    trend.add(5, 0.1)  # the loop restarted from step 5: the window starts over
    assert len(trend.window) == 1


def test_off_without_a_factor() -> None:
    assert said(ramp(_plateau_by_hand(), 100), factor=math.inf) == []
    trend = LrTrend(None)
    for i, lr in enumerate(ramp(_plateau_by_hand(), 100)):
        trend.add(i, lr)
        assert trend.check() is None
