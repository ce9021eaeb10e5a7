"""Lightning: ``Trainer(callbacks=[GuardCallback("runs/exp1")])``; ``lightning`` or ``pytorch_lightning``.

Lightning's automatic optimization runs ``optimizer.step(closure)``, the closure being
``training_step`` → ``zero_grad`` → ``backward``, then the ``on_before_optimizer_step`` hooks and
Lightning's own gradient clipping (``Precision._wrap_closure``), then the optimizer's update. The
callback:

* ``on_train_batch_start``: opens the guarded step (the batch, the random generators and the
  buffers from before the forward);
* ``on_before_backward``: keeps the loss's finite flag;
* ``on_before_optimizer_step``: the guard checks the loss and the global gradient norm, records the
  step, and on a bad step (policy ``skip``) drops every gradient (``p.grad = None``). That is the
  state Lightning's own skip leaves (``training_step`` returning ``None``: gradients zeroed with
  ``set_to_none``, no backward), and torch's optimizers skip a parameter whose gradient is None
  altogether (``Optimizer.zero_grad`` docs): no update, no weight decay, no moment changes.
  Lightning steps, zeroes and schedules itself (the adapter's ``trainer_steps``);
* ``on_exception``: a step that raised is recorded and dumped; ``on_train_end`` writes ``RUN``.

Policy ``stop`` raises :class:`~envkit.errors.GuardStopped` out of ``Trainer.fit``. Lightning still
steps its learning-rate schedulers on a skipped step, as it does for its own skip. Supported: one
optimizer, automatic optimization, ``accumulate_grad_batches=1``, no GradScaler (fp32 or bf16
precision); ``precision="bf16-mixed"`` is declared as the run's autocast (``RunlogOptions(autocast=
"bf16")``, unless the options name one) so that ``envkit guard replay`` runs the forward under it as
Lightning did; anything else is a clear :class:`~envkit.errors.GuardError`. The loss for localization
is the module's own ``training_step`` (its ``"loss"`` when it returns a dict) unless ``loss_fn=`` is
given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.errors import GuardError
from envkit.guard.callbacks import CallbackState
from envkit.guard.loop import Guard
from envkit.guard.options import RunlogOptions

if TYPE_CHECKING:
    from lightning.pytorch.callbacks import Callback
else:
    try:
        from lightning.pytorch.callbacks import Callback
    except ImportError:  # the older package name
        from pytorch_lightning.callbacks import Callback

__all__ = ["GuardCallback", "trainer_autocast", "training_step_loss"]

# Lightning's precision names whose training_step runs under torch.autocast(bfloat16): 2.x's
# "bf16-mixed", 1.x's "bf16" (the model's own weights stay fp32; "bf16-true" casts them: no autocast)
_BF16_AUTOCAST = ("bf16-mixed", "bf16")


def trainer_autocast(precision: Any) -> str | None:
    """The autocast Lightning runs ``training_step`` under for a ``Trainer(precision=…)``: ``"bf16"``
    for bf16-mixed, else None. The run declares it (``RunlogOptions.autocast``) so that a replay runs the
    forward as the step did: without it a deterministic fault replays in fp32, its loss differs in the
    5th digit and the verdict is ``transient``."""
    return "bf16" if str(precision) in _BF16_AUTOCAST else None


def training_step_loss(module: Any, batch: Any) -> Any:
    """The module's own loss of ``batch``: ``training_step``'s tensor, or its dict's ``"loss"``."""
    out = module.training_step(batch, 0)
    return out["loss"] if isinstance(out, Mapping) else out


class GuardCallback(Callback, CallbackState):
    """Guard a Lightning ``Trainer.fit`` run; ``options`` are :class:`~envkit.guard.Guard`'s."""

    def __init__(self, run: str | Path, **options: Any) -> None:
        Callback.__init__(self)
        CallbackState.__init__(self, run, options)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        problems = []
        if len(trainer.optimizers) != 1:
            problems.append(f"{len(trainer.optimizers)} optimizers (one is supported)")
        if not pl_module.automatic_optimization:
            problems.append("manual optimization (guard the loop yourself with Guard.step)")
        if trainer.accumulate_grad_batches != 1:
            problems.append(f"accumulate_grad_batches={trainer.accumulate_grad_batches} (1 is supported)")
        if "scaler" in self.options or getattr(trainer.precision_plugin, "scaler", None) is not None:
            problems.append("a GradScaler (16-mixed precision): use 32 or bf16")
        if problems:
            raise GuardError(
                "envkit.guard.lightning: cannot guard this run: " + "; ".join(problems),
                hint="see docs/guides/guard.md (Lightning)",
            )
        options = {"loss_fn": training_step_loss, **self.options}
        declared = trainer_autocast(getattr(trainer, "precision", None))
        log = options.get("log", RunlogOptions())
        # the user's own autocast (RunlogOptions or the old keyword) wins over the trainer's
        own = "autocast" in options or not isinstance(log, RunlogOptions) or log.autocast is not None
        if declared is not None and not own:
            options["log"] = replace(log, autocast=declared)
        self.guard = Guard(pl_module, trainer.optimizers[0], run=self.run_dir, **options)
        self.guard.adapter.trainer_steps = True

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self.open_step(batch)

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        if self._step is not None:
            self._step.observe(loss)

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        step = self._step
        if step is None or self.guard is None:
            return
        if step.loss is None:  # training_step returned None: Lightning skips this step itself
            step.done = True
            return
        if not step.optimizer_step():
            self.guard.adapter.clear_grads()  # Lightning's optimizer.step then updates nothing

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        step, self._step = self._step, None
        if step is not None:
            step.__exit__(None, None, None)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        step, self._step = self._step, None
        if step is not None and not step.done:
            step.__exit__(type(exception), exception, exception.__traceback__)
        if self.guard is not None:
            self.guard.close()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.guard is not None:
            self.guard.close()
