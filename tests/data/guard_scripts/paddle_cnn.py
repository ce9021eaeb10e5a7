# mypy: disable-error-code="misc, name-defined, no-any-return"
"""A small convolutional classifier trained as the PaddlePaddle convnet tutorial does.

Modelled on PaddlePaddle/docs ``docs/practices/cv/convnet_image_classification.ipynb`` (a conv
net of ``Conv2D``/``MaxPool2D``/``Linear`` layers, ``paddle.optimizer.Adam`` at lr 0.001,
``F.cross_entropy``, the dygraph loop ``loss.backward(); opt.step(); opt.clear_grad()``) and
written here for envkit's guard regression tests (no code copied). Tiny sizes, one channel,
generated MNIST-like 28×28 images (a fixed random template per class, shifted, with noise,
normalized to [-1, 1] as ``Normalize(127.5, 127.5)`` does). Planted faults: ``inf`` (one pixel of
one image of the batch at ``--fault-step`` is +Inf), ``raw`` (the batch is not normalized: 0–255).

``python paddle_cnn.py --run DIR [--steps N] [--no-guard] [--fault inf --fault-step K]``; prints a
JSON summary. ``build()`` is the replay entry.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import paddle
from paddle import nn
from paddle.nn import functional as F

BATCH, CLASSES = 32, 10


class ConvNet(nn.Layer):
    """conv1 → pool → conv2 → pool → fc1 → fc2 (ReLU between)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2D(1, 8, 3)
        self.pool = nn.MaxPool2D(2, 2)
        self.conv2 = nn.Conv2D(8, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 64)
        self.fc2 = nn.Linear(64, CLASSES)

    def forward(self, x: Any) -> Any:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc2(F.relu(self.fc1(paddle.flatten(x, 1))))


def images(n: int, seed: int) -> tuple[Any, Any]:
    """``n`` uint8-range float images (before normalization) and their labels."""
    rng = np.random.default_rng(seed)
    templates = (rng.random((CLASSES, 28, 28)) > 0.7).astype("float32") * 255.0
    labels = rng.integers(0, CLASSES, n)
    shifts = rng.integers(-2, 3, (n, 2))
    out = np.empty((n, 1, 28, 28), dtype="float32")
    for i in range(n):
        img = np.roll(templates[labels[i]], tuple(shifts[i]), axis=(0, 1))
        out[i, 0] = np.clip(img + rng.normal(0, 40, (28, 28)), 0, 255).round()
    return out, labels.astype("int64")


def loss_fn(model: Any, batch: Any) -> Any:
    x, y = batch
    return F.cross_entropy(model(x), y)


def build() -> tuple[Any, Any, Any]:
    paddle.seed(0)
    model = ConvNet()
    return model, paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters()), loss_fn


def train(
    run: Path | None,
    steps: int,
    *,
    fault: str | None = None,
    fault_step: int = 40,
    seed: int = 0,
    guard_options: dict[str, Any] | None = None,
    interleave: bool = False,
) -> dict[str, Any]:
    """Train ``steps`` batches (guarded when ``run`` is given); a summary with the loop's CPU time.
    ``interleave``: with a guard, every odd step runs unguarded (``step_cpu_s`` beside ``step_guarded``)."""
    model, optimizer, _ = build()
    raw, labels = images(2048, seed)
    normalized = (raw - 127.5) / 127.5
    order = np.random.default_rng(seed + 1)
    guard = None
    if run is not None:
        from envkit.guard import Guard

        options = {"loss_fn": loss_fn, "entry": "paddle_cnn:build", **(guard_options or {})}
        guard = Guard(model, optimizer, run=run, **options)
    losses: list[float] = []
    step_cpu: list[float] = []  # each step's CPU seconds, and whether the guard ran it
    step_guarded: list[bool] = []
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    for step in range(steps):
        step_start = time.process_time()
        idx = order.integers(0, len(labels), BATCH)
        source = raw if fault == "raw" and step == fault_step else normalized
        xs = source[idx].copy()
        if fault == "inf" and step == fault_step:
            xs[3, 0, 14, 9] = np.inf
        x, y = paddle.to_tensor(xs), paddle.to_tensor(labels[idx])
        guarded = guard is not None and not (interleave and step % 2)
        if guard is None or not guarded:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
        else:
            with guard.step(step, (x, y)) as g:
                loss = F.cross_entropy(model(x), y)
                g.backward(loss)
                g.optimizer_step()
        losses.append(float(loss))
        step_cpu.append(time.process_time() - step_start)
        step_guarded.append(guarded)
    cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
    if guard is not None:
        guard.close()
    incidents = [] if guard is None else [i.to_json() for i in guard.incidents]
    return {"steps": steps, "loss": losses[-1] if losses else None, "cpu_s": cpu, "wall_s": wall,
            "step_cpu_s": step_cpu, "step_guarded": step_guarded, "incidents": incidents}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--no-guard", action="store_true")
    parser.add_argument("--fault")
    parser.add_argument("--fault-step", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--guard-options", type=json.loads, default={}, help="Guard(...) keywords, JSON")
    args = parser.parse_args(argv)
    paddle.device.set_device("cpu")
    paddle.set_flags({"FLAGS_use_mkldnn": False})
    run = None if args.no_guard else args.run
    out = train(
        run,
        args.steps,
        fault=args.fault,
        fault_step=args.fault_step,
        seed=args.seed,
        guard_options=args.guard_options,
    )
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
