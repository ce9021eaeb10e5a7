"""The guard's per-step input-scale check (``envkit/guard/scale.py``), in process, on two corpus scripts'
own models and batches: paddle_vit (a 32×3×16×16 float32 batch and int64 labels, Paddle) and mnist
(64×1×28×28 and int64 labels, torch).

Two figures per script, with the thread's CPU clock:

- **alone**: each step runs the script's forward, loss and backward, then the check (the reductions,
  ``InputScale.measure``; their read, ``adapter.read``; the comparison, ``InputScale.judge``), then the
  optimizer step. The check is the first op after the backward here, and its read is a read of its
  own (the guard appends the values to the step's one read, after its gradient norms): an upper bound;
- **in the guard**: two ``Guard``s on the same model and optimizer, one with the check and one without
  (``SpikeOptions(input_factor=None)``), take the steps in turns (ABBA); the median of the guard's own
  part of a step (entering it, where the check's reductions run, and ``optimizer_step()``: its checks,
  the read, the optimizer's step, ``zero_grad``) with the check minus without.

Printed beside the median whole step (forward to ``zero_grad``) and the share.

``python -m benchmarks guard_input_scale`` (``ENVKIT_BENCH_STEPS=N``: steps per script, default 300).
"""

from __future__ import annotations

import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._goals import knob

SCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "guard_corpus" / "scripts"


Trainer = tuple[Any, Any, Callable[[Any, Any], Any], list[Any]]


def _paddle_vit() -> Trainer:
    paddle, _data, paddle_vit = (importlib.import_module(m) for m in ("paddle", "_data", "paddle_vit"))
    paddle.set_device("cpu")
    model, opt, loss_fn = paddle_vit.build()
    x, y = _data.images(800, (3, 16, 16), paddle_vit.NUM_CLASSES, seed=0)
    xs, ys = paddle.to_tensor(x), paddle.to_tensor(y).astype("int64")
    return model, opt, loss_fn, [[xs[i : i + 32], ys[i : i + 32]] for i in range(0, 800 - 31, 32)]


def _mnist() -> Trainer:
    torch, _data, mnist = (importlib.import_module(m) for m in ("torch", "_data", "mnist"))
    torch.set_num_threads(1)
    model, opt, loss_fn = mnist.build()
    x, y = _data.images(2304, (1, 28, 28), seed=0)
    xs, ys = (torch.from_numpy(x) - 0.1307) / 0.3081, torch.from_numpy(y).long()
    return model, opt, loss_fn, [(xs[i : i + 64], ys[i : i + 64]) for i in range(0, 2304, 64)]


def alone(trainer: Trainer, steps: int) -> tuple[list[int], list[int]]:
    """Per step: the check's CPU ns, and the whole step's."""
    from envkit.guard.adapter import make_adapter
    from envkit.guard.scale import InputScale

    model, opt, loss_fn, batches = trainer
    adapter, scale = make_adapter(model, opt), InputScale()
    checks, whole = [], []
    for step in range(steps):
        batch = batches[step % len(batches)]
        start = time.thread_time_ns()
        loss_fn(model, batch).backward()
        middle = time.thread_time_ns()
        measured = scale.measure(adapter, batch)
        found = scale.judge(step, measured, adapter.read(list(measured.values)))
        end = time.thread_time_ns()
        adapter.optimizer_step()
        adapter.zero_grad()
        whole.append(time.thread_time_ns() - start)
        checks.append(end - middle)
        assert found is None, f"a false alarm at step {step}: {found}"
    return checks, whole


def in_the_guard(trainer: Trainer, steps: int, tmp: Path) -> tuple[list[int], list[int]]:
    """Per step of each guard: its own part's CPU ns (entering the step and ``optimizer_step()``),
    with the check and without."""
    from envkit.guard import Guard
    from envkit.guard.options import SpikeOptions

    model, opt, loss_fn, batches = trainer
    on = Guard(model, opt, run=tmp / "on", loss_fn=loss_fn)
    off = Guard(model, opt, run=tmp / "off", loss_fn=loss_fn, spikes=SpikeOptions(input_factor=None))
    took: dict[int, list[int]] = {id(on): [], id(off): []}
    for step in range(2 * steps):
        guard = on if step % 4 in (0, 3) else off
        batch = batches[(step // 2) % len(batches)]
        start = time.thread_time_ns()
        with guard.step(step, batch) as g:
            entered = time.thread_time_ns()
            g.backward(loss_fn(model, batch))
            middle = time.thread_time_ns()
            g.optimizer_step()
            took[id(guard)].append(time.thread_time_ns() - middle + entered - start)
    for guard in (on, off):
        guard.close()
        assert not guard.incidents, f"a false alarm: {guard.incidents[0].message}"
    return took[id(on)], took[id(off)]


def main() -> None:
    steps = int(knob("ENVKIT_BENCH_STEPS", "300", "10"))
    sys.path.insert(0, str(SCRIPTS))
    median = statistics.median
    for name in ("paddle_vit", "mnist"):
        checks, whole = alone((_paddle_vit if name == "paddle_vit" else _mnist)(), steps)
        with tempfile.TemporaryDirectory() as tmp:
            on, off = in_the_guard((_paddle_vit if name == "paddle_vit" else _mnist)(), steps, Path(tmp))
        step_us, check_us, delta_us = (
            median(whole) / 1e3,
            median(checks) / 1e3,
            (median(on) - median(off)) / 1e3,
        )
        print(
            f"  {name:<11} step {step_us / 1e3:6.2f} ms; the check alone {check_us:6.1f} µs "
            f"({check_us / step_us:.2%}); in the guard {delta_us:+6.1f} µs ({delta_us / step_us:+.2%}: "
            f"the guard's part {median(off) / 1e3:.0f} → {median(on) / 1e3:.0f} µs); medians of {steps} steps"
        )


if __name__ == "__main__":
    main()
