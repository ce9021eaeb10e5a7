# mypy: disable-error-code="misc, name-defined, no-any-return, no-untyped-call"
"""A tiny vision transformer trained as PaddlePaddle's ViT tutorial does: a per-epoch warm-up.

Modelled on PaddlePaddle/docs' image-classification ViT practice (patch embedding with a
``Conv2D``, ``nn.TransformerEncoder``, a class token, ``paddle.optimizer.lr.LinearWarmup`` stepped
once per epoch, a hand-written label-smoothing cross-entropy, ``AdamW``); written here for envkit's
guard regression tests (no code copied). Tiny CPU sizes, generated 16×16 one-channel images (a
random template per class, shifted, with noise, normalized). The warm-up goes from 1e-4 to 1e-2 over
5 epochs: the lr is 20.8× larger in epoch 1 than in epoch 0, then 1.96×, 1.49×, 1.33×, 1.25×.

Planted faults at ``fault_step``: ``huge`` (one image of the batch is a raw 16-bit image: values up
to 2e5, the rest normalized), ``zerolog`` (the loss is written ``-(q · log p)`` with a one-hot ``q``
and ``p`` = softmax in float16-like precision: a probability that underflows to 0 gives 0 · log 0 = NaN
from finite outputs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import paddle
from paddle import nn
from paddle.nn import functional as F

CLASSES, SIDE, PATCH, DIM, BATCH, PER_EPOCH = 10, 16, 4, 32, 32, 25


class TinyViT(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2D(1, DIM, PATCH, stride=PATCH)
        self.cls = self.create_parameter([1, 1, DIM], default_initializer=nn.initializer.Constant(0.0))
        self.pos = self.create_parameter(
            [1, (SIDE // PATCH) ** 2 + 1, DIM], default_initializer=nn.initializer.TruncatedNormal(std=0.02)
        )
        layer = nn.TransformerEncoderLayer(DIM, 4, 2 * DIM, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, 1)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, x: Any) -> Any:
        x = self.patch(x).flatten(2).transpose([0, 2, 1])
        x = paddle.concat([self.cls.expand([x.shape[0], 1, DIM]), x], axis=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


def smoothed_ce(logits: Any, labels: Any, eps: float = 0.1) -> Any:
    """The tutorial's label-smoothing loss, by hand: -Σ q·log_softmax."""
    q = F.one_hot(labels, CLASSES) * (1 - eps) + eps / CLASSES
    return -(q * F.log_softmax(logits, axis=-1)).sum(axis=-1).mean()


def zerolog_ce(logits: Any, labels: Any) -> Any:
    """The planted loss bug: -Σ q·log(softmax) with q one-hot; a probability of 0 gives 0·log 0."""
    q = F.one_hot(labels, CLASSES)
    return -(q * paddle.log(F.softmax(logits * 50, axis=-1))).sum(axis=-1).mean()


def loss_fn(model: Any, batch: Any) -> Any:
    return smoothed_ce(model(batch[0]), batch[1])


def build() -> tuple[Any, Any, Any]:
    paddle.seed(0)
    model = TinyViT()
    sched = paddle.optimizer.lr.LinearWarmup(learning_rate=1e-2, warmup_steps=5, start_lr=1e-4, end_lr=1e-2)
    opt = paddle.optimizer.AdamW(learning_rate=sched, parameters=model.parameters(), weight_decay=0.05)
    return model, opt, loss_fn


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    templates = (rng.random((CLASSES, SIDE, SIDE)) > 0.7).astype("float32")
    labels = rng.integers(0, CLASSES, n)
    x = np.stack([np.roll(templates[c], tuple(rng.integers(-1, 2, 2)), axis=(0, 1)) for c in labels])
    x = x + rng.normal(0, 0.5, x.shape).astype("float32")
    x = (x - x.mean()) / x.std()
    return x[:, None].astype("float32"), labels.astype("int64")


def train(run: Path | None, steps: int, *, fault: str | None = None, fault_step: int = 60) -> dict[str, Any]:
    """Train ``steps`` batches (the warm-up stepped at each epoch's end); the guard's records."""
    paddle.device.set_device("cpu")
    model, opt, _ = build()
    xs, ys = data(PER_EPOCH * BATCH, 1)
    guard = None
    if run is not None:
        from envkit.guard import Guard

        guard = Guard(model, opt, run=run, loss_fn=loss_fn, entry="paddle_warmup:build")
    losses: list[float] = []
    for step in range(steps):
        i = step % PER_EPOCH
        x, y = xs[i * BATCH : (i + 1) * BATCH].copy(), ys[i * BATCH : (i + 1) * BATCH]
        if fault == "huge" and step == fault_step:
            x[3] = np.random.default_rng(5).integers(0, 200_000, x[3].shape)  # a raw 16-bit image
        batch = (paddle.to_tensor(x), paddle.to_tensor(y))
        lossf = zerolog_ce if fault == "zerolog" and step == fault_step else smoothed_ce
        if guard is None:
            loss = lossf(model(batch[0]), batch[1])
            loss.backward()
            opt.step()
            opt.clear_grad()
        else:
            with guard.step(step, batch) as g:
                loss = lossf(model(batch[0]), batch[1])
                g.backward(loss)
                g.optimizer_step()
        losses.append(float(loss.item()))
        if i == PER_EPOCH - 1:
            opt._learning_rate.step()  # once per epoch, as the tutorial's loop does
    out: dict[str, Any] = {"losses": losses}
    if guard is not None:
        guard.close()
        out["records"], out["incidents"] = guard.records, guard.incidents
    return out
