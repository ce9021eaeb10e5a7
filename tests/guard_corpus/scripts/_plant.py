# mypy: ignore-errors
"""The corpus's fault hook: one planted fault per run, named by ``ENVKIT_GC_FAULT=KIND@STEP[/RANK]``
(``/RANK``: on that rank of a process group only, torchrun's ``RANK``).

Every corpus script calls these few functions at the one place a real fault of that kind enters a
real run, and they do nothing when the variable is unset (the healthy run is the script itself):

- ``batch(step, x)``: the batch as the loader gave it, or for ``nan-batch`` / ``inf-batch`` a copy with one
  value NaN / +Inf (element 7 of the first sample), for ``huge-input`` a copy whose first sample is a
  16-bit image read without normalizing (values up to 2e5 in a normalized batch), for ``garbage-batch``
  a copy whose inputs are random noise ×50 (finite, far out of distribution);
- ``lr_factor(step)``: the factor a scheduler bug puts on the learning rate: ``lr-spike`` ×10,000 at
  STEP only, ``lr-ramp`` 1 → 1000 geometrically over 30 steps from STEP, then 1000;
- ``set_lr(step, optimizer)`` / ``restore_lr(optimizer)``: apply that factor to every parameter group
  (torch ``param_groups`` or a Paddle optimizer's ``set_lr``) for this step, and put it back;
- ``active(kind, step)``: whether this script's own fault of that kind fires at ``step`` (faults made
  by the script's own code, e.g. a hand-written loss given a one-hot target: ``loss-nan``).

``ENVKIT_GC_RUN`` is the guard's run folder (the grader sets it; without it the scripts run unguarded).
"""

from __future__ import annotations

import os

KINDS = ("nan-batch", "inf-batch", "huge-input", "garbage-batch", "lr-spike", "lr-ramp", "loss-nan")


def _parse():
    spec = os.environ.get("ENVKIT_GC_FAULT", "")
    if not spec:
        return None, -1
    kind, _, where = spec.partition("@")
    step, _, rank = where.partition("/")
    if kind not in KINDS or not step.isdigit() or not (rank == "" or rank.isdigit()):
        raise SystemExit(
            f"ENVKIT_GC_FAULT={spec!r}: expected KIND@STEP[/RANK], KIND one of {', '.join(KINDS)}"
        )
    if rank and rank != os.environ.get("RANK", "0"):
        return None, -1  # planted on another rank of the process group only
    return kind, int(step)


KIND, STEP = _parse()
RUN = os.environ.get("ENVKIT_GC_RUN") or None


def active(kind, step):
    return kind == KIND and step == STEP


def batch(step, x):
    """``x`` (a torch or Paddle float tensor), or the planted copy at the fault's step."""
    if KIND not in ("nan-batch", "inf-batch", "huge-input", "garbage-batch") or step != STEP:
        return x
    y = x.clone()
    if KIND in ("nan-batch", "inf-batch"):
        flat = y.reshape([-1])
        flat[7] = float("nan") if KIND == "nan-batch" else float("inf")
        return flat.reshape(x.shape)
    if KIND == "huge-input":
        y[0] = y[0].abs() * 0 + 2.0e5 * _ramp(y[0])
        return y
    return _noise(y) * 50.0


def _ramp(t):
    """Values in [0.5, 1] over the tensor's elements: an image of 16-bit counts, not a constant."""
    n = 1
    for d in t.shape:
        n *= int(d)
    import numpy as np

    values = (0.5 + 0.5 * (np.arange(n) % 97) / 96.0).reshape([int(d) for d in t.shape])
    return _like(t, values)


def _noise(t):
    import numpy as np

    values = np.random.default_rng(1234).standard_normal([int(d) for d in t.shape])
    return _like(t, values)


def _like(t, values):
    if type(t).__module__.startswith("paddle"):
        import paddle

        return paddle.to_tensor(values.astype("float32")).astype(t.dtype)
    import torch

    return torch.as_tensor(values, dtype=t.dtype)


def lr_factor(step):
    if KIND == "lr-spike" and step == STEP:
        return 1.0e4
    if KIND == "lr-ramp" and step >= STEP:
        return 1000.0 ** (min(step - STEP, 30) / 30.0)
    return 1.0


_saved = None


def set_lr(step, optimizer):
    """Multiply each group's lr by ``lr_factor(step)`` for this step (``restore_lr`` puts it back)."""
    global _saved
    factor = lr_factor(step)
    if factor == 1.0:
        return
    if hasattr(optimizer, "param_groups"):
        _saved = [g["lr"] for g in optimizer.param_groups]
        for g in optimizer.param_groups:
            g["lr"] = g["lr"] * factor
    else:  # Paddle: a float lr (set_lr) or an LRScheduler (its last_lr)
        sched = optimizer._learning_rate
        if isinstance(sched, float):
            _saved = sched
            optimizer.set_lr(sched * factor)
        else:
            _saved = sched.last_lr
            sched.last_lr = sched.last_lr * factor


def restore_lr(optimizer):
    global _saved
    if _saved is None:
        return
    if hasattr(optimizer, "param_groups"):
        for g, lr in zip(optimizer.param_groups, _saved, strict=True):
            g["lr"] = lr
    else:
        sched = optimizer._learning_rate
        if isinstance(sched, float):
            optimizer.set_lr(_saved)
        else:
            sched.last_lr = _saved
    _saved = None
