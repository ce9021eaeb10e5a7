"""An lr set by hand past an attached torch scheduler (the corpus's mnist/lr-spike: StepLR attached, the
lr x10,000 for one step) is an update spike skipped before it is applied; the scheduler's own lr
changes are not (a StepLR decay, a LinearLR warm-up stepped per epoch: 20x at once). Before: any lr
change with a scheduler attached was "the run's schedule", the x10,000 step was applied and the run
was wrecked (10 skips, stopped)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from envkit.guard import Guard  # noqa: E402

pytestmark = pytest.mark.frameworks


def mse(model: Any, batch: Any) -> Any:
    return torch.nn.functional.mse_loss(model(batch[0]), batch[1])


def train(run: Path, make_scheduler: Any, hand_lr_at: int | None) -> Guard:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = make_scheduler(opt)
    guard = Guard(model, opt, run=run, loss_fn=mse)
    gen = torch.Generator().manual_seed(1)
    for i in range(60):
        x = torch.randn(32, 8, generator=gen)
        batch = (x, x.sum(dim=1, keepdim=True))
        before = [g["lr"] for g in opt.param_groups]
        if i == hand_lr_at:
            for g in opt.param_groups:
                g["lr"] = g["lr"] * 10_000
        with guard.step(i, batch) as step:
            step.backward(mse(model, batch))
            step.optimizer_step()
        if i == hand_lr_at:
            for g, lr in zip(opt.param_groups, before, strict=True):
                g["lr"] = lr
        if i % 10 == 9:  # per "epoch" of 10 steps
            scheduler.step()
    guard.close()
    return guard


SCHEDULERS = {
    "step": lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7),
    "warmup-per-epoch": lambda opt: torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.048, total_iters=2),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_an_lr_set_by_hand_past_the_scheduler_is_skipped_at_its_step(tmp_path: Path, name: str) -> None:
    guard = train(tmp_path / "run", SCHEDULERS[name], hand_lr_at=35)
    first = guard.incidents[0]
    assert (first.step, str(first.kind), first.action) == (35, "update-spike", "skipped")
    assert all(i.action != "stopped" for i in guard.incidents)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_the_schedulers_own_lr_changes_are_no_incident(tmp_path: Path, name: str) -> None:
    guard = train(tmp_path / "run", SCHEDULERS[name], hand_lr_at=None)
    assert [(i.step, str(i.kind)) for i in guard.incidents] == []
