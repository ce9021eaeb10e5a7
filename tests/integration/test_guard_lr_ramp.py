"""An lr ramp no single step of which is a jump, in real guarded torch loops (envkit.guard.trend): the
corpus's word_language_model/lr-ramp in small — the loop sets its own lr (÷4 after a bad "epoch"), a
formula bug ramps it 1 → 1000× over 30 steps from 0.3125 and it never passes the run's first lr. Before:
no update was 10× the largest before and no lr above the declared peak, so nothing was said. Now the
trend is warned while it climbs (the run goes on); the same loop without the bug, a real CyclicLR
(its later cycles as steep as its first) and a hand-set warm-up say nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from envkit.guard import Guard  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore:envkit.guard")]

STEPS = 120


def mse(model: Any, batch: Any) -> Any:
    return torch.nn.functional.mse_loss(model(batch[0]), batch[1])


def anneal(step: int, lr: float) -> float:
    """The loop's own lr: 20, ÷4 every 16 steps (word_language_model after each bad epoch)."""
    return lr * 0.25 ** (step // 16)


def ramp_at(at: int) -> Callable[[int], float]:
    return lambda step: 1000.0 ** (min(step - at, 30) / 30) if step >= at else 1.0


def train(run: Path, lr_of: Callable[[int], float], *, scheduler: Any = None, clip: float = 0.25) -> Guard:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=20.0)
    sched = scheduler(opt) if scheduler is not None else None
    guard = Guard(model, opt, run=run, clip=clip, loss_fn=mse)
    gen = torch.Generator().manual_seed(1)
    for i in range(STEPS):
        x = torch.randn(32, 8, generator=gen)
        batch = (x, x.sum(dim=1, keepdim=True))
        saved = [g["lr"] for g in opt.param_groups]
        for g in opt.param_groups:
            g["lr"] = lr_of(i) if sched is None else g["lr"] * lr_of(i)
        with guard.step(i, batch) as step:
            step.backward(mse(model, batch))
            step.optimizer_step()
        if sched is not None:
            for g, lr in zip(opt.param_groups, saved, strict=True):
                g["lr"] = lr
            sched.step()
    guard.close()
    return guard


def test_the_ramp_from_an_annealed_lr_is_warned_while_it_climbs(tmp_path: Path) -> None:
    guard = train(tmp_path / "run", lambda s: anneal(s, 20.0) * ramp_at(60)(s))
    assert anneal(60, 20.0) == 0.3125 and max(anneal(s, 20.0) * ramp_at(60)(s) for s in range(60, STEPS)) < 20
    first = guard.incidents[0]
    assert first.kind == "update-spike" and first.action == "warned"
    assert 60 < first.step <= 75
    assert "the learning rate rose step after step" in first.message and "since step 60" in first.message
    assert "after it had fallen from 20" in first.message
    assert len(guard.records) == STEPS and not any(r.skipped for r in guard.records)  # the run went on


def test_the_same_loop_without_the_bug_says_nothing(tmp_path: Path) -> None:
    guard = train(tmp_path / "run", lambda s: anneal(s, 20.0))
    assert guard.incidents == []


def test_a_hand_set_warm_up_and_cycles_say_nothing(tmp_path: Path) -> None:
    """A linear warm-up from lr/40 set by hand each step; cycles 0.02 ↔ 2 (triangular, 30 steps up, 30
    down) set by hand: the later cycles rise as steeply as the first ascent."""

    def cyclic(step: int) -> float:
        phase = step % 60
        return 0.02 + 1.98 * (phase / 30 if phase < 30 else (60 - phase) / 30)

    assert train(tmp_path / "warm", lambda s: 2.0 * min(1.0, (s + 1) / 40), clip=0.25).incidents == []
    assert train(tmp_path / "cyc", cyclic).incidents == []


def test_a_ramp_over_a_real_scheduler_names_who_set_it(tmp_path: Path) -> None:
    """StepLR (÷4 every 16 steps, the scheduler's): the ramp multiplies the group's lr over it."""
    step_lr = lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=16, gamma=0.25)  # noqa: E731
    guard = train(tmp_path / "run", ramp_at(60), scheduler=step_lr)
    first = guard.incidents[0]
    assert first.kind == "update-spike" and 60 < first.step <= 75, first
    assert "set by other code than the scheduler" in first.message
    healthy = train(tmp_path / "healthy", lambda s: 1.0, scheduler=step_lr)
    assert healthy.incidents == []


def test_paddle_the_ramp_set_by_hand_is_warned_and_the_plain_anneal_is_not(tmp_path: Path) -> None:
    """The same loop in Paddle (``opt.set_lr`` each step, no scheduler): the ramp from the annealed lr
    is warned while it climbs; without it, nothing."""
    paddle = pytest.importorskip("paddle")
    paddle.device.set_device("cpu")

    def run(name: str, lr_of: Callable[[int], float]) -> Guard:
        paddle.seed(0)
        model = paddle.nn.Sequential(paddle.nn.Linear(8, 16), paddle.nn.Tanh(), paddle.nn.Linear(16, 1))
        opt = paddle.optimizer.SGD(learning_rate=20.0, parameters=model.parameters())
        guard = Guard(model, opt, run=tmp_path / name, clip=0.25)
        rng = __import__("numpy").random.default_rng(1)
        for i in range(STEPS):
            x = paddle.to_tensor(rng.standard_normal((32, 8)).astype("float32"))
            y = x.sum(axis=1, keepdim=True)
            opt.set_lr(lr_of(i))
            with guard.step(i, (x, y)) as step:
                step.backward(paddle.nn.functional.mse_loss(model(x), y))
                step.optimizer_step()
        guard.close()
        return guard

    ramped = run("ramp", lambda s: anneal(s, 20.0) * ramp_at(60)(s))
    first = ramped.incidents[0]
    assert first.kind == "update-spike" and first.action == "warned" and 60 < first.step <= 75, first
    assert "the learning rate rose step after step" in first.message
    assert run("plain", lambda s: anneal(s, 20.0)).incidents == []
