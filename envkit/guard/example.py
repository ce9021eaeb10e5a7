"""A tiny guarded training (torch, CPU) for ``make demo`` and ``docs/guides/guard.md``.

The model's head takes ``log(softmax(x))`` in two steps, which is fine for ordinary inputs; the
batch of step ``bad_at`` is an unnormalized outlier (×1000), the softmax underflows to 0 and the
log gives -inf: the guard skips the step, dumps it and names ``head``. ``build`` is the replay
entry: ``envkit guard replay RUN/incidents/step-3 --entry envkit.guard.example:build``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envkit.guard.loop import Guard

__all__ = ["build", "train"]


def build() -> tuple[Any, Any, Any]:
    import torch
    from torch import nn

    class NaiveLogSoftmax(nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.log(torch.softmax(x, dim=-1))  # F.log_softmax would not underflow

    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("enc", nn.Linear(8, 32))
    model.add_module("act", nn.ReLU())
    model.add_module("proj", nn.Linear(32, 4))
    model.add_module("head", NaiveLogSoftmax())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def loss_fn(m: Any, batch: Any) -> Any:
        return torch.nn.functional.nll_loss(m(batch["x"]), batch["y"])

    return model, optimizer, loss_fn


def _batches(steps: int, bad_at: int | None) -> list[dict[str, Any]]:
    import torch

    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(steps):
        x = torch.randn(16, 8, generator=g)
        out.append({"x": x * 1000.0 if i == bad_at else x, "y": torch.randint(0, 4, (16,), generator=g)})
    return out


def train(run: Path, *, steps: int = 8, bad_at: int | None = None, threads: int | None = None) -> Guard:
    """Train ``steps`` guarded steps (``threads`` intra-op threads, restored after); the guard."""
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        model, optimizer, loss_fn = build()
        guard = Guard(
            model, optimizer, run=run, clip=1.0, loss_fn=loss_fn, entry="envkit.guard.example:build"
        )
        for step, batch in enumerate(_batches(steps, bad_at)):
            with guard.step(step, batch) as g:
                g.backward(loss_fn(model, batch))
                g.optimizer_step()
        guard.close()
        return guard
    finally:
        torch.set_num_threads(before)
