"""Paddle's high-level API: ``paddle.Model.fit(..., callbacks=[GuardCallback("runs/exp1")])``.

hapi runs forward, backward and ``optimizer.minimize`` itself, so the callback wraps the two
places it needs for the run (restored at the end): ``Model.train_batch`` (to keep the batch and
the random generators before the step) and the optimizer's ``minimize`` (where the guard checks,
clips and steps or skips, as ``g.optimizer_step()`` does in a hand-written loop). Batches with
``update=False`` (gradient accumulation) pass through unguarded. The loss for localization is
the model's own: ``add_n(loss(*(outputs + labels)))``. Needs Paddle (hapi ships with it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import paddle
from paddle.callbacks import Callback

from envkit.guard.callbacks import CallbackState
from envkit.guard.loop import Guard

__all__ = ["GuardCallback"]


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


class GuardCallback(Callback, CallbackState):
    """Guard a ``paddle.Model.fit`` run; ``options`` are :class:`~envkit.guard.Guard`'s."""

    def __init__(self, run: str | Path, **options: Any) -> None:
        Callback.__init__(self)
        CallbackState.__init__(self, run, options)
        self._saved: dict[str, Any] = {}

    def on_train_begin(self, logs: Any = None) -> None:
        hapi: Any = self.model  # a paddle.Model; its private parts are not typed
        network, optimizer = hapi.network, hapi._optimizer

        def loss_fn(net: Any, batch: Any) -> Any:
            inputs, labels = batch
            outputs = _list(net(*[paddle.to_tensor(x) for x in inputs]))
            return paddle.add_n(_list(hapi._loss(*(outputs + list(labels)))))

        self.guard = Guard(network, optimizer, run=self.run_dir, loss_fn=loss_fn, **self.options)
        train_batch, minimize = hapi.train_batch, optimizer.minimize
        self._saved = {"train_batch": train_batch, "minimize": minimize}

        def guarded_train_batch(inputs: Any, labels: Any = None, update: bool = True) -> Any:
            if not update or self.guard is None:
                return train_batch(inputs, labels, update)
            step = self.open_step((_list(inputs), _list(labels) if labels is not None else []))
            assert step is not None  # the guard is made
            try:
                result = train_batch(inputs, labels, update)
            except Exception as exc:
                step.__exit__(type(exc), exc, exc.__traceback__)
                raise
            finally:
                self._step = None
            step.__exit__(None, None, None)
            return result

        def guarded_minimize(loss: Any, *args: Any, **kwargs: Any) -> Any:
            if self._step is None:
                return minimize(loss, *args, **kwargs)
            self._step.observe(loss)
            self._step.optimizer_step()
            return None

        hapi.train_batch = guarded_train_batch
        optimizer.minimize = guarded_minimize

    def on_train_end(self, logs: Any = None) -> None:
        hapi: Any = self.model  # a paddle.Model; its private parts are not typed
        if self._saved:  # drop the wrappers: the class's methods show through again
            vars(hapi).pop("train_batch", None)
            vars(hapi._optimizer).pop("minimize", None)
            self._saved = {}
        if self.guard is not None:
            self.guard.close()
