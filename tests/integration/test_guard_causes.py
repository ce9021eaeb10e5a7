"""A NaN the loss function makes from finite outputs is said as the loss's (real torch, CPU)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from envkit.guard import Guard  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

PAD = -1


def masked_ce(model: Any, batch: Any) -> Any:
    """A hand-written token loss, as custom loops write it: the sum over real tokens / their count
    (a batch of padding only: 0 / 0)."""
    x, y = batch
    logp = torch.log_softmax(model(x), dim=-1)
    mask = y != PAD
    picked = logp.gather(-1, y.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return -(picked * mask).sum() / mask.sum()


def test_a_nan_made_by_the_loss_from_finite_outputs_is_the_losss(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=masked_ce)
    for step in range(40):
        x, y = torch.randn(8, 16, generator=g), torch.randint(0, 5, (8,), generator=g)
        if step == 30:
            y = torch.full_like(y, PAD)  # a batch of padding only
        with guard.step(step, (x, y)) as gs:
            gs.backward(masked_ce(model, (x, y)))
            gs.optimizer_step()
    guard.close()
    [incident] = guard.incidents
    assert (incident.step, str(incident.kind)) == (30, "nonfinite-loss")
    assert (
        "the model's outputs were finite (the step replayed): the loss function made it" in incident.message
    )
    assert incident.localization is not None and incident.localization["loss_made_it"] is True
    assert not math.isfinite(guard.records[30].loss)
    named = {"largest_grad", "largest_update"} & set(incident.localization)
    assert not named and ".weight" not in incident.message  # no parameter blamed: the loss made it


def test_a_nan_made_inside_the_model_is_not_the_losss(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=masked_ce)
    for step in range(40):
        x, y = torch.randn(8, 16, generator=g), torch.randint(0, 5, (8,), generator=g)
        if step == 30:
            with torch.no_grad():
                model[2].bias[1] = math.inf  # inf - inf in the softmax: made by the model's last layer
        with guard.step(step, (x, y)) as gs:
            gs.backward(masked_ce(model, (x, y)))
            gs.optimizer_step()
        if step == 30:
            with torch.no_grad():
                model[2].bias[1] = 0.0
    guard.close()
    incident = guard.incidents[0]
    assert incident.step == 30 and "the loss function made it" not in incident.message


def test_paddle_a_nan_made_by_the_loss_from_finite_outputs_is_the_losss(tmp_path: Path) -> None:
    """Paddle, the corpus's paddle_vit/loss-nan class: a label-smoothing loss written in its KL form
    (Σ t·(log t − log p)) given one-hot labels: 0·log 0 = NaN, every module's output finite. Said as
    the loss's, the step skipped, no parameter named (before: "the loss is nan", a weight named)."""
    paddle = pytest.importorskip("paddle")
    functional = paddle.nn.functional
    paddle.device.set_device("cpu")
    paddle.seed(0)

    def kl_loss(model: Any, batch: Any) -> Any:
        x, t = batch
        if t.ndim == 1:  # class indices: smoothed 0.1 over 5 classes
            t = functional.one_hot(t, 5) * 0.9 + 0.1 / 4 * (1 - functional.one_hot(t, 5))
        return paddle.mean(
            paddle.sum(t * (paddle.log(t) - functional.log_softmax(model(x), axis=-1)), axis=-1)
        )

    model = paddle.nn.Sequential(paddle.nn.Linear(16, 32), paddle.nn.ReLU(), paddle.nn.Linear(32, 5))
    opt = paddle.optimizer.Adam(learning_rate=1e-2, parameters=model.parameters())
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=kl_loss)
    rng = __import__("numpy").random.default_rng(1)
    for step in range(40):
        x = paddle.to_tensor(rng.standard_normal((8, 16)).astype("float32"))
        y = paddle.to_tensor(rng.integers(0, 5, 8))
        if step == 30:
            y = functional.one_hot(y, 5)  # a collate bug: one-hot labels, no smoothing
        with guard.step(step, (x, y)) as gs:
            gs.backward(kl_loss(model, (x, y)))
            gs.optimizer_step()
    guard.close()
    [incident] = guard.incidents
    assert (incident.step, str(incident.kind), incident.action) == (30, "nonfinite-loss", "skipped")
    assert (
        "the model's outputs were finite (the step replayed): the loss function made it" in incident.message
    )
    assert "the gradients were" in incident.message
    assert incident.localization is not None and incident.localization["loss_made_it"] is True
    assert not {"largest_grad", "largest_update"} & set(incident.localization)
