# mypy: disable-error-code="misc, name-defined, no-any-return, no-untyped-call"
"""A small MNIST-style classifier trained under autocast and a GradScaler, as PyTorch's AMP recipe does.

Modelled on pytorch/examples ``mnist/main.py`` (a Conv2d/MaxPool/Linear net, ``StepLR`` stepped once
per epoch, ``F.cross_entropy``) with the AMP loop of PyTorch's "Automatic Mixed Precision" recipe
(``with torch.autocast(...)``, ``scaler.scale(loss).backward()``, ``scaler.step(opt)``,
``scaler.update()``); written here for envkit's guard regression tests (no code copied). Tiny CPU
sizes, generated 14×14 images (a fixed random template per class, shifted, with noise, normalized).
The GradScaler is ``torch.amp.GradScaler("cpu")`` (enabled on the CPU since torch 2.3).

Planted faults at ``fault_step``: ``lr`` (the lr × 10,000 from then on, set by hand), ``nan`` (one
pixel NaN), ``garbage`` (the batch's images replaced by uniform noise × 8 and its labels shuffled),
``loud`` (that batch's images × 300, labels shifted, in every epoch: the same data overflows each
time it comes), ``huge`` (one image of the batch a raw 16-bit one: values up to 2e5), ``ramp`` (the
lr × 1.2 a step for 38 steps: × 1,000, each step within the update check's reach), ``kick`` (one
step at lr × 300, then the lr as it was), ``spike`` (one step at lr × 10,000 set over the scheduler's,
then put back: the guard corpus's ``lr-spike``).
``schedule``: ``step`` (StepLR per epoch, γ 0.5), ``lambda`` (LambdaLR per-epoch linear warm-up from
1/100 of the lr over 3 epochs: 34×, 2× and 1.5× jumps at the boundaries), ``hand`` (the same
warm-up set by hand in the param groups, as ``adjust_learning_rate(optimizer, epoch)`` scripts do),
``runaway`` (a LambdaLR stepped per step whose formula ramps the lr 1 → 1000× over steps 30–60), None.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

CLASSES, SIDE, BATCH, PER_EPOCH = 10, 14, 32, 20


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.fc1 = nn.Linear(8 * 6 * 6, 32)
        self.fc2 = nn.Linear(32, CLASSES)

    def forward(self, x: Any) -> Any:
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def data(n: int, seed: int) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(seed)
    templates = (torch.rand(CLASSES, SIDE, SIDE, generator=g) > 0.7).float()
    labels = torch.randint(0, CLASSES, (n,), generator=g)
    x = templates[labels] + 0.3 * torch.randn(n, SIDE, SIDE, generator=g)
    x = (x - x.mean()) / x.std()
    return x.unsqueeze(1), labels


def loss_fn(model: Any, batch: Any) -> Any:
    return F.cross_entropy(model(batch[0]), batch[1])


def build() -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    model = Net()
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), loss_fn


def scheduler(opt: Any, schedule: str | None) -> Any:
    if schedule == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    if schedule == "lambda":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: min(1.0, (1 + 33 * epoch) / 100))
    if (
        schedule == "runaway"
    ):  # a formula bug in the scheduler itself, stepped per step: 1 → 1000× from step 30
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1000.0 ** (min(30, max(0, s - 30)) / 30))
    return None


def train(
    run: Path | None,
    steps: int,
    *,
    dtype: Any = torch.float16,
    fault: str | None = None,
    fault_step: int = 25,
    schedule: str | None = None,
    growth_interval: int = 2000,
    guard_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train ``steps`` batches: the losses, the scale and growth count before each step, the records."""
    model, opt, _ = build()
    sched = scheduler(opt, schedule)
    if schedule == "hand":
        for group in opt.param_groups:
            group["lr"] = 0.05 / 100
    scaler = torch.amp.GradScaler("cpu", growth_interval=growth_interval)
    xs, ys = data(PER_EPOCH * BATCH, 1)
    guard = None
    if run is not None:
        from envkit.guard import Guard

        options = {"loss_fn": loss_fn, "entry": "amp_torch:build", **(guard_options or {})}
        guard = Guard(model, opt, run=run, scaler=scaler, **options)
    scales: list[float] = []
    trackers: list[int] = []
    losses: list[float] = []
    for step in range(steps):
        i = step % PER_EPOCH
        x, y = xs[i * BATCH : (i + 1) * BATCH].clone(), ys[i * BATCH : (i + 1) * BATCH].clone()
        if fault == "lr" and step == fault_step:
            for group in opt.param_groups:
                group["lr"] *= 10_000
        if fault == "spike" and step in (fault_step, fault_step + 1):  # the corpus's lr-spike: × 10,000, back
            for group in opt.param_groups:
                group["lr"] *= 10_000 if step == fault_step else 1 / 10_000
        if fault == "kick" and step in (fault_step, fault_step + 1):  # one step at × 1,000, then back
            for group in opt.param_groups:
                group["lr"] *= 300 if step == fault_step else 1 / 300
        if fault == "ramp" and fault_step <= step < fault_step + 38:  # a schedule formula bug: 1.2^38 ≈ 1000
            for group in opt.param_groups:
                group["lr"] *= 1.2
        if fault == "nan" and step == fault_step:
            x[0, 0, 3, 3] = float("nan")
        if fault == "loud" and i == fault_step % PER_EPOCH:  # every epoch: the same batch, × 300
            x, y = x * 300, (y + 1) % CLASSES
        if fault == "huge" and step == fault_step:  # one raw 16-bit image in the normalized batch
            x[3] = torch.randint(0, 200_000, x[3].shape, generator=torch.Generator().manual_seed(7)).float()
        if fault == "garbage" and step == fault_step:
            x = 8 * torch.rand(x.shape, generator=torch.Generator().manual_seed(7))
            y = y.flip(0)
        scales.append(scaler.get_scale())
        trackers.append(int(scaler._get_growth_tracker()))  # good steps since the last change
        if guard is None:
            with torch.autocast("cpu", dtype=dtype):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
        else:
            with guard.step(step, (x, y)) as g:
                with torch.autocast("cpu", dtype=dtype):
                    loss = F.cross_entropy(model(x), y)
                g.backward(loss)
                g.optimizer_step()
        losses.append(loss.item())
        if sched is not None and (i == PER_EPOCH - 1 or schedule == "runaway"):
            sched.step()  # once per epoch, as the MNIST example does
        if schedule == "hand" and i == PER_EPOCH - 1:  # the same warm-up, as adjust_learning_rate()
            for group in opt.param_groups:
                group["lr"] = 0.05 * min(1.0, (1 + 33 * (step // PER_EPOCH + 1)) / 100)
    out: dict[str, Any] = {"losses": losses, "scales": scales, "scale": scaler.get_scale()}
    out["trackers"], out["growth_tracker"] = trackers, int(scaler._get_growth_tracker())
    if guard is not None:
        guard.close()
        out["records"], out["incidents"] = guard.records, guard.incidents
    return out
