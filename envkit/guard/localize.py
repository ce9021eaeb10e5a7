"""Name the first bad module and parameter by replaying one step under hooks. Framework-neutral.

A replay loads the model state and the random generators from before the step, runs the user's
``loss_fn(model, batch)`` and backward with a hook on every module and parameter, and reports:
the first module (in the order forward finished them) whose inputs were finite and whose output
was not; the module stack when the step raised; the first parameter whose gradient was non-finite
in backward order; the parameter with the largest gradient norm; facts about the batch (ranges)
and hints for the usual causes (unnormalized 0–255 inputs, indices past an embedding table).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from envkit.guard.adapter import Adapter, RngState, Tensors, Trace, make_adapter, walk
from envkit.guard.records import json_float

__all__ = ["NoOptimizer", "Replay", "batch_facts", "batch_nonfinite", "largest_update", "replay_step"]

LossFn = Callable[[Any, Any], Any]


@dataclass
class Replay:
    """One replay of a dumped step: its loss and grad norm, the first bad module, or the error."""

    loss: float
    grad_norm: float
    localization: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def same_as(self, loss: float, grad_norm: float) -> bool:
        """Bitwise the same loss and grad norm (NaN equals NaN: a reproduced NaN is reproduced)."""
        return _same(self.loss, loss) and _same(self.grad_norm, grad_norm)


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a.hex() == b.hex()


def batch_facts(adapter: Adapter, batch: Any) -> dict[str, dict[str, Any]]:
    return {path or "batch": adapter.describe(t) for path, t in walk(batch, adapter.is_tensor)}


def batch_nonfinite(adapter: Adapter, batch: Any) -> dict[str, Any] | None:
    """The first tensor of the batch holding NaN/Inf: where (path, index), what, how many; else None."""
    import numpy as np

    for path, t in walk(batch, adapter.is_tensor):
        arr = np.asarray(adapter.to_numpy(t))
        if arr.dtype.kind not in "fc":
            continue
        bad = ~np.isfinite(arr)
        count = int(bad.sum())
        if count:
            index = [int(i) for i in np.argwhere(bad)[0]]
            value = float(arr[tuple(index)].real if arr.dtype.kind == "c" else arr[tuple(index)])
            return {
                "tensor": f"batch{path}",
                "index": index,
                "value": str(value),
                "count": count,
                "size": int(arr.size),
                "shape": list(arr.shape),
            }
    return None


def describe_nonfinite(bad: dict[str, Any]) -> str:
    """``the batch holds inf in batch[0] at [3, 0, 14, 9] (1 of 25088 values non-finite) …``."""
    return (
        f"the batch holds {bad['value']} in {bad['tensor']} at [{', '.join(map(str, bad['index']))}] "
        f"({bad['count']} of {bad['size']} values non-finite): the input, not the model"
    )


def _hints(facts: dict[str, dict[str, Any]], trace: Trace, adapter: Adapter, bad_batch: bool) -> list[str]:
    hints = []
    for path, fact in facts.items():
        lo, hi = fact.get("min"), fact.get("max")
        floating = fact["dtype"].startswith(("float", "bfloat"))
        if (
            floating
            and lo is not None
            and hi is not None
            and lo >= 0
            and 2 < hi <= 255
            and hi == math.floor(hi)
        ):
            hints.append(f"{path} holds values {lo:g} … {hi:g}: an unnormalized 0–255 input?")
        if not floating and lo is not None and lo == hi and lo < 0:
            hints.append(
                f"{path} holds only {lo:g}: every target ignored (ignore_index)? "
                "a mean over no elements is NaN"
            )
    back = trace.first_bad_backward
    if back is not None and trace.first_bad_module is None and not bad_batch:
        hints.append(
            f"{back['module']} computed a finite forward and a non-finite gradient: a branch that is "
            "inf/NaN where it is not selected (torch.where/masking over rsqrt, log or sqrt at 0, a "
            "division by 0) still sends NaN through backward; clamp the argument before the op"
        )
    if trace.failing_modules:
        name = trace.failing_modules[-1]
        module = dict(_named_modules(adapter)).get(name)
        rows = getattr(module, "num_embeddings", None) or getattr(module, "_num_embeddings", None)
        if rows is not None:
            hints.append(
                f"{name or '(the model)'} is an embedding table of {rows} rows: an index (a token id, "
                "a position past the table for a longer sequence, a label) is out of range"
            )
    return hints


def _raised_in(trace: Trace, error: str | None) -> str | None:
    if trace.failing_modules:
        return trace.failing_modules[-1] or "(the model)"
    return "(loss_fn, outside the model's modules)" if error else None


MAX_LAYOUT = 5000  # leaf modules recorded in a dump's manifest (a larger model records none)


def module_layout(adapter: Adapter) -> list[str] | None:
    """The model's leaf modules as ``name:Class`` (``fc1:Linear``, ``1:ReLU``), what a replay's entry
    must build (the state dict does not say ``ReLU`` from ``Tanh``); None past ``MAX_LAYOUT``."""
    leaves = []
    for name, module in _named_modules(adapter):
        children = module.children() if hasattr(module, "children") else iter(())
        if next(iter(children), None) is None:
            leaves.append(f"{name}:{type(module).__name__}")
            if len(leaves) > MAX_LAYOUT:
                return None
    return leaves


def _named_modules(adapter: Adapter) -> list[tuple[str, Any]]:
    model = adapter.model
    if hasattr(model, "named_modules"):
        return list(model.named_modules())
    return [("", model), *model.named_sublayers()]


def replay_step(
    adapter: Adapter,
    loss_fn: LossFn,
    batch: Any,
    rng: RngState,
    *,
    training: bool,
    model_state: Tensors | None = None,
    source: str = "the dump",
    autocast: Callable[[], AbstractContextManager[Any]] | None = None,
    micro_batches: bool = False,
    after_backward: Callable[[], None] | None = None,
) -> Replay:
    """Run one step again under hooks (no optimizer step); the gradients are left for the caller.

    ``autocast`` (a context factory) wraps ``loss_fn`` as the training step's forward ran; an
    ``adapter`` made with a GradScaler runs backward scaled and unscales, as the step did. With
    ``micro_batches`` the batch is the step's list of micro-batches (gradient accumulation): ``loss_fn``
    and backward run on each in turn, the gradients accumulate, and the loss is their sum as the guard
    summed it. ``after_backward`` runs after the last backward, before the unscale (a DDP replay takes
    each rank's gradients there, as the all-reduce saw them)."""
    if model_state is not None:
        adapter.load_model_state(model_state, source)
    adapter.set_training(training)
    adapter.set_rng_state(rng)
    adapter.clear_grads()
    facts = batch_facts(adapter, batch)
    loss_value = grad_norm = math.nan
    error = None
    trace = Trace()
    try:
        with adapter.trace() as trace:
            total = None
            for part in batch if micro_batches else [batch]:
                with autocast() if autocast is not None else nullcontext():
                    loss = loss_fn(adapter.model, part)
                total = loss.detach() if total is None else total + loss.detach()  # as GuardStep sums
                loss_value = adapter.read([total])[0]
                adapter.backward(loss)  # scaled when the adapter has a GradScaler
        if after_backward is not None:
            after_backward()
        adapter.unscale()
        grad_norm = adapter.read([adapter.total_norm(adapter.grads())])[0]
    except Exception as exc:  # noqa: BLE001 the user's step raised: where is the localization
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ''}"
    norms = adapter.param_norms()
    bad = batch_nonfinite(adapter, batch)
    finite = [(n, v) for n, v in norms.items() if math.isfinite(v)]
    largest = max(finite, key=lambda kv: kv[1], default=None)  # None when every norm is NaN/Inf
    localization = {
        "nonfinite_batch": bad,
        "first_nonfinite_module": trace.first_bad_module,
        "first_nonfinite_backward": trace.first_bad_backward,
        "first_nonfinite_grad": trace.first_bad_grad(),
        "largest_grad": None
        if largest is None
        else {"parameter": largest[0], "norm": json_float(largest[1])},
        "raised_in": _raised_in(trace, error),
        "module_stack": trace.failing_modules,
        "error": error,
        "batch": facts,
        "hints": _hints(facts, trace, adapter, bad is not None),
        "replayed": {"loss": json_float(loss_value), "grad_norm": json_float(grad_norm)},
    }
    return Replay(loss_value, grad_norm, localization, error)


def localize_on_twin(
    adapter: Adapter, loss_fn: LossFn, batch: Any, rng: RngState, buffers: Any
) -> dict[str, Any]:
    """Replay a step on a copy of ``adapter``'s model, its ``buffers`` as the step began (the live model,
    its gradients and generators untouched): the localization, ``loss_made_it`` when every module's
    output was finite and the loss was not (the loss function), or why it failed."""
    now = adapter.rng_state()
    try:
        twin = copy.deepcopy(adapter.model)  # the module itself (a torch.compile wrapper unwrapped)
        twin_adapter = make_adapter(twin, NoOptimizer())
        twin_adapter.restore_buffers(buffers)
        result = replay_step(twin_adapter, loss_fn, batch, rng, training=adapter.training())
        loc = result.localization
        if not (math.isfinite(result.loss) or result.error or loc["first_nonfinite_module"]):
            loc["loss_made_it"] = True  # every module's output finite, the loss not: the loss function
        return loc
    except Exception as exc:  # noqa: BLE001 localization is best effort: the incident and its dump stand
        return {"error": f"localization failed: {type(exc).__name__}: {str(exc)[:300]}"}
    finally:
        adapter.set_rng_state(now)


class NoOptimizer:
    """The replay twin's optimizer: only zero_grad is ever called."""

    param_groups: tuple[Any, ...] = ()

    def zero_grad(self, set_to_none: bool = True) -> None:
        pass

    def clear_grad(self, set_to_zero: bool = True) -> None:
        pass


def largest_update(
    grads: dict[str, float], weights: dict[str, float], lrs: dict[str, float]
) -> dict[str, Any] | None:
    """The parameter the step would move most, relative to its size: lr · |grad| / |weight|."""
    best: tuple[float, str] | None = None
    for name, g in grads.items():
        if not math.isfinite(g) or name not in lrs:
            continue
        rel = lrs[name] * g / max(weights.get(name, 0.0), 1e-12)
        if math.isfinite(rel) and (best is None or rel > best[0]):
            best = (rel, name)
    if best is None:
        return None
    return {"parameter": best[1], "relative": best[0], "lr": lrs[best[1]]}
