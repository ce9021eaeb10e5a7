"""The guard's Paddle side: clip_grad_norm_'s arithmetic, paddle.amp.GradScaler, RNG, hooks, safetensors.

Paddle has no fused multi-tensor norm and each op costs 5–20 µs right after a step, so the step's
global norm takes the fewest ops (:meth:`PaddleAdapter.total_norm`: ``squared_l2_norm`` per gradient,
summed on the host on the CPU). Clipping is ``paddle.nn.utils.clip_grad_norm_``'s own arithmetic (one
norm per gradient, stacked, normed), so a clipped guarded run is bitwise that function's. Those norms
call the kernel ``paddle.linalg.norm`` reaches for a real tensor and ``p=2`` (``p_norm`` as a
vector: axis -1, epsilon 1e-12) without its Python argument handling (~15 µs a call).
``paddle.amp.GradScaler`` is inactive on CPU (Paddle disables it there); then it is not used.
"""

from __future__ import annotations

import functools
import math
import os
from contextlib import AbstractContextManager
from typing import Any

import paddle
from paddle import _C_ops
from paddle.base import core

from envkit.errors import DumpError, GuardError
from envkit.guard.adapter import (
    Adapter,
    Hooks,
    RngState,
    Tensors,
    Trace,
    numpy_rng,
    python_rng,
    set_numpy_rng,
    set_python_rng,
    walk,
)

__all__ = ["PaddleAdapter"]

FLOATS = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
EXACT = (paddle.float32, paddle.float64)  # a Python float holds every value of these exactly
_REAL = (*EXACT, paddle.float16, paddle.bfloat16)  # the batch's tensors whose scale is read
_P_NORM = getattr(_C_ops, "p_norm", None)
# ClipGradByGlobalNorm's kernel: Σx² of a float32/float64 tensor, ~30× faster than p_norm on the CPU
# (1.5 ms → 0.05 ms for the 8 gradients of tests/data/guard_scripts/paddle_cnn.py, Paddle 3.3)
_SQUARED_L2: Any = getattr(_C_ops, "squared_l2_norm", None)
_OPS: Any = _C_ops  # add_n, sqrt: untyped in paddle's stubs
_ITEM_AT = getattr(paddle.Tensor, "_getitem_from_offset", None)  # item()'s own first call (_value)
# paddle.no_grad()'s own switch, called without its decorator machinery (~15 µs right after a step);
# where a Paddle lacks it, the public one (set_grad_enabled sets the mode when it is made)
_HAS_GRAD: Any = getattr(core, "_has_grad", None) or paddle.is_grad_enabled
_SET_GRAD: Any = getattr(core, "_set_has_grad", None) or paddle.set_grad_enabled


def _norm2(t: Any) -> Any:
    """``paddle.linalg.norm(t, 2.0)`` of a gradient or weight: the same kernel, called directly for a
    real tensor (what ``vector_norm`` does in dygraph: ``p_norm(x, 2.0, -1, 1e-12, False, True)``)."""
    if _P_NORM is None or t.is_complex():
        return paddle.linalg.norm(t, 2.0)
    return _P_NORM(t, 2.0, -1, 1e-12, False, True)


def _value(t: Any) -> float:
    """A one-element float32/float64 CPU tensor's value: ``item()``'s own first call (~10 µs less than
    ``item()`` right after a step), or ``item()`` where a Paddle lacks it."""
    return float(t._getitem_from_offset() if _ITEM_AT is not None else t.item())


def _scalar64(value: Any) -> Any:
    """A 0-d float64 tensor of a one-element tensor or a host float."""
    if isinstance(value, float):
        return paddle.to_tensor(value, "float64")
    return value.detach().astype("float64").reshape([])


# max(abs(x)) through the eager ops themselves (2–5 µs less a call); off for good if this Paddle refuses
_FAST_MAX_ABS = {"on": True}


def _max_abs(x: Any) -> Any:
    """``max(abs(x))`` as a 0-d tensor: the eager ops themselves, or the public API."""
    if _FAST_MAX_ABS["on"]:
        try:
            return _OPS.max(_OPS.abs(x), [], False)
        except (AttributeError, TypeError, ValueError):
            _FAST_MAX_ABS["on"] = False
    return paddle.max(paddle.abs(x))


def _is_tensor(value: Any) -> bool:
    return isinstance(value, paddle.Tensor)


def _floating(t: Any) -> bool:
    return str(t.dtype).removeprefix("paddle.") in FLOATS


def _finite(t: Any) -> bool:
    return t.size == 0 or bool(paddle.isfinite(t.detach()).all())


def _tensor_ok(t: Any) -> bool:
    """Finite, or not a floating tensor (one check per tensor: replays only)."""
    return not _floating(t) or _finite(t)


def _absmax(value: Any) -> float | None:
    found = [
        float(t.detach().astype("float64").abs().max())
        for _, t in walk(value, _is_tensor)
        if t.size and str(t.dtype) != "paddle.bool"
    ]
    return max(found) if found else None


def _grad_hook(t: Any, fn: Any) -> Any:
    """A hook on ``t``'s gradient (replays only); None when ``t`` takes no part in backward."""
    if t.stop_gradient or not _floating(t):
        return None
    try:
        return t.register_hook(lambda g: fn(g))  # returns None: the gradient is left as it is
    except (RuntimeError, ValueError):  # a tensor paddle does not let us hook: not watched
        return None


class PaddleAdapter(Adapter):
    """The guard's adapter for PaddlePaddle models and optimizers."""

    name = "paddle"
    safetensors = "safetensors.paddle"

    def __init__(self, model: Any, optimizer: Any, scaler: Any = None) -> None:
        if scaler is not None and not scaler.is_enable():
            scaler = None  # Paddle turns the scaler off on CPU: scale() is then the identity
        super().__init__(model, optimizer, scaler)
        self._named = [(n, p) for n, p in model.named_parameters() if not p.stop_gradient]
        self._cuda = bool(paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count())
        self._squares: list[Any] | None = None  # total_norm's Σx² per gradient (floats on the CPU)
        self._host = self.device() == "cpu"
        dtypes = {p.dtype for _, p in self._named}  # (on the host float32 and float64 may mix)
        self._fast_norm = (
            _SQUARED_L2 is not None and dtypes <= set(EXACT) and (self._host or len(dtypes) == 1)
        )
        self._cpu_generator = core.default_cpu_generator()  # one object: paddle.seed reseeds it
        # each layer's own buffer dict (register_buffer adds to it): buffers() reads them
        self._buffer_dicts = [(p, layer._buffers) for p, layer in model.named_sublayers(include_self=True)]
        self._total: Any = None  # the last total_norm (the one group's gradient norm): float or tensor
        # the optimizer's parameter groups (dicts where it was given groups): lr factor, membership
        groups = [g for g in getattr(optimizer, "_param_groups", None) or [] if isinstance(g, dict)]
        self._group_factors = [float(g.get("learning_rate", 1.0)) for g in groups] or [1.0]
        self._group_of = {id(p): i for i, g in enumerate(groups) for p in g.get("params", [])}
        self._layout: tuple[list[str], list[list[int]] | None] | None = None
        self._weights: list[float] | None = None  # the weight norms per group (every 10 steps)
        self._weight_calls = 0

    def finite_flag(self, value: Any) -> Any:
        if isinstance(value, float):  # total_norm's host value (a deferred read on the CPU)
            return paddle.to_tensor(math.isfinite(value))
        return paddle.isfinite(value.detach()).all()

    def backward(self, loss: Any) -> None:
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def total_norm(self, grads: list[Any]) -> Any:
        """``sqrt(Σ squared_l2_norm(g))`` (``ClipGradByGlobalNorm``'s kernel) where the gradients are
        float32 or float64; ``clip_grad_norm_``'s total (its own arithmetic) when the guard clips
        (:attr:`clipping`: :meth:`clip` then scales by this very value, computed once) or for
        another dtype (a clipped run stays bitwise the unguarded loop either way).
        The fewest ops (each costs 5–20 µs right after a step): no per-gradient detach or dtype read;
        on the CPU each Σx² is read at once and summed on the host (a float: ~55 µs less a step than
        ``add_n``, ``sqrt`` and a read), on a device one ``add_n`` (a one-element tensor). A kernel
        Paddle lacks (float16 on the CPU), dtypes that differ on a device or a half-precision sum
        turn the fast path off for the run."""
        self._norms = self._squares = self._total = None
        if not grads:
            return paddle.to_tensor(0.0)
        if self._fast_norm and not self.clipping:
            had = _HAS_GRAD()
            _SET_GRAD(False)
            try:
                squares = [_SQUARED_L2(g) for g in grads]
                if self._host:  # float32/float64: a Python float holds each Σx² exactly
                    self._squares = [_value(s) for s in squares]
                    self._total = math.sqrt(sum(self._squares))
                    return self._total
                total = _OPS.add_n(squares)
                if total.dtype in EXACT:
                    self._squares = squares
                    self._total = _OPS.sqrt(total)
                    return self._total
            except (RuntimeError, ValueError):  # no such kernel for this dtype; dtypes that differ
                pass
            finally:
                _SET_GRAD(had)
            self._fast_norm = False
        self._total = self._exact_norm(grads)
        return self._total

    def _exact_norm(self, grads: list[Any]) -> Any:
        """``paddle.nn.utils.clip_grad_norm_``'s total: the norm of the stacked per-gradient norms."""
        self._norms = [_norm2(g.detach()) for g in grads]
        return _norm2(paddle.stack(self._norms))

    def last_param_norms(self) -> dict[str, float]:
        if self._squares is not None:
            values = [math.sqrt(v) for v in self.read(self._squares)]
        elif self._norms is not None:
            values = self.read(self._norms)
        else:
            return {}
        return dict(zip(self._norm_names or [], values, strict=False))

    def where_ok(self, ok: Any, value: Any) -> Any:
        if isinstance(value, float):  # total_norm's host value
            value = paddle.to_tensor(value)
        return paddle.where(ok, value, paddle.zeros_like(value))

    def clear_grads(self) -> None:
        for _, p in self._named:
            p.clear_gradient(False)

    def grads_now(self) -> list[Any]:
        return [None if p.grad is None else p.grad.detach().clone() for _, p in self._named]

    def set_reduced_grads(self, per_rank: list[list[Any]]) -> None:
        scale = 1.0 / len(per_rank)  # DataParallel's reducer: scale(1/nranks) on the fused bucket
        for i, (_, p) in enumerate(self._named):
            parts = [grads[i] for grads in per_rank]
            like = next((g for g in parts if g is not None), None)
            if like is None:
                p.clear_gradient(False)
                continue
            total = None
            for g in parts:
                part = paddle.scale(paddle.zeros_like(like) if g is None else g, scale)
                total = part if total is None else total + part
            p._set_grad_ivar(total)

    def clip(self, grads: list[Any], total: Any, max_norm: float, *, norm: bool = False) -> Any:
        if self._squares is not None:  # total_norm's sum of squares: clip by clip_grad_norm_'s own total
            total = self._exact_norm(grads)  # (a masked bad step's gradients are zeros by now: 0)
        had = _HAS_GRAD()
        _SET_GRAD(False)  # as paddle.nn.utils.clip_grad_norm_ runs (under no_grad)
        try:
            clip_coef = float(max_norm) / (total + 1e-6)
            clamped = clip_coef.clip_(max=1.0)
            for _, p in self._named:
                if p.grad is not None:
                    p.grad_.multiply_(y=clamped)
            return total * clamped if norm else None
        finally:
            _SET_GRAD(had)

    def gate(self, grads: list[Any], ok: Any) -> None:
        bad = paddle.logical_not(ok)
        with paddle.no_grad():
            for _, p in self._named:
                if p.grad is not None:  # one in-place pass per gradient; healthy values are not written
                    p.grad_.masked_fill_(bad, 0.0)

    def both(self, a: Any, b: Any) -> Any:
        return paddle.logical_and(a, b)

    def optimizer_step(self) -> bool | None:
        if self.scaler is None:
            self.optimizer.step()
            return None
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return not bool(getattr(self.scaler, "_cache_found_inf", False))

    def skip_step(self, overflow: bool) -> None:
        if self.scaler is None:
            return
        if overflow:  # Paddle's own skip: its step sees the found-inf of unscale_ and does not apply
            self.scaler.step(self.optimizer)
            self.scaler.update()
            return
        # the state update() clears (Paddle has no update(new_scale)): the scale and its counts stay
        states = getattr(self.scaler, "_optimizer_states", None)
        if not isinstance(states, dict):
            raise GuardError(
                "this Paddle GradScaler has no _optimizer_states: the guard cannot skip a step under it",
                hint="use policy='warn', or report the Paddle version",
            )
        states.pop(id(self.optimizer), None)

    def zero_grad(self) -> None:
        self.optimizer.clear_grad()

    def read(self, values: list[Any]) -> list[float]:
        """On the CPU, each float32/float64 scalar's own value (:func:`_value`: a Python float holds it
        exactly, as the float64 copy did; no cast and no stack); elsewhere one stacked float64
        transfer. A host float (:meth:`total_norm`'s on the CPU, the weight norms) is its own value."""
        if not values:
            return []
        if self._host or all(isinstance(v, float) or v.place.is_cpu_place() for v in values):
            out: list[float] = []
            last, value = None, 0.0
            for v in values:
                if isinstance(v, float):
                    out.append(v)
                    continue
                if v is not last:  # the one group's gradient norm is the global one: read it once
                    if v.dtype not in EXACT:
                        break  # bfloat16/float16: the stacked float64 read below
                    last, value = v, _value(v)
                out.append(value)
            else:
                return out
        stacked = paddle.stack([_scalar64(v) for v in values])
        host: Any = stacked.cpu().tolist()
        return [float(v) for v in host]

    def group_lrs(self, lr: float | None) -> list[float]:
        """Each parameter group's learning rate: the optimizer's (``lr``), times the group's
        ``learning_rate`` factor where the parameters were given as groups (Paddle's own arithmetic)."""
        return [] if lr is None else [lr * f for f in self._group_factors]

    def group_norms(self) -> list[Any]:
        """Per group, the gradient 2-norm (one group: the global norm itself; else from its gradients'
        :meth:`total_norm` squares) then the weight 2-norm, a host float refreshed every 10 steps
        (the weights move little per step: an update spike is checked before it is applied)."""
        if self._total is None or self._norm_names is None:
            return []
        names = self._norm_names  # grads()' list: the same object while every parameter has a gradient
        if self._layout is None or self._layout[0] != names:
            self._layout, self._weights = (names, self._group_positions(names)), None
        positions = self._layout[1]
        if positions is None:
            return []
        self._weight_calls += 1
        if self._weights is None or self._weight_calls % 10 == 0:
            named = dict(self._named)
            self._weights = [self._weight_norm([named[names[i]] for i in group]) for group in positions]
        if len(positions) == 1:
            return [self._total, *self._weights]
        squares = self._squares
        if squares is None:  # clip_grad_norm_'s arithmetic: its per-gradient norms, read
            squares = [v * v for v in self.read(self._norms or [])]
        if isinstance(squares[0], float):
            return [*(math.sqrt(sum(squares[i] for i in group)) for group in positions), *self._weights]
        return [*(_OPS.sqrt(_OPS.add_n([squares[i] for i in group])) for group in positions), *self._weights]

    def _weight_norm(self, params: list[Any]) -> float:
        """The 2-norm of ``params`` (a host float): ``squared_l2_norm`` per weight where
        :meth:`total_norm` has its fast path (~80 µs for the 8 weights of paddle_cnn.py right after a
        step, ``p_norm`` ~260 µs), else ``p_norm`` per weight."""
        if self._fast_norm:
            had = _HAS_GRAD()
            _SET_GRAD(False)
            try:
                return math.sqrt(sum(self.read([_SQUARED_L2(p) for p in params])))
            except (RuntimeError, ValueError):  # no such kernel for this dtype: p_norm below
                pass
            finally:
                _SET_GRAD(had)
        return math.sqrt(sum(v * v for v in self.read([_norm2(p.detach()) for p in params])))

    def _group_positions(self, names: list[str]) -> list[list[int]] | None:
        """For each parameter group, the positions of its gradients in ``names``; None where a
        parameter is in no group (or a group has no gradient this step)."""
        if len(self._group_factors) == 1:
            return [list(range(len(names)))]
        named = dict(self._named)
        where = [self._group_of.get(id(named[n])) for n in names]
        positions: list[list[int]] = [[] for _ in self._group_factors]
        for i, group in enumerate(where):
            if group is None:
                return None
            positions[group].append(i)
        return positions if all(positions) else None

    def lr(self) -> float | None:
        get_lr = getattr(self.optimizer, "get_lr", None)
        return float(get_lr()) if get_lr is not None else None

    def loss_scale(self) -> float | None:
        """The GradScaler's scale: a float32 tensor of shape [1] (``float()`` of one raises in Paddle 3)."""
        scale = getattr(self.scaler, "_scale", None) if self.scaler is not None else None
        if scale is None:
            return None
        return float(scale) if isinstance(scale, int | float) else float(scale.item())

    # -- state ------------------------------------------------------------------------------
    def rng_state(self) -> RngState:
        """Paddle's generators as snapshots (``get_rng_state`` copies them, ~3 µs); their lists (6,363
        ints each, ~75 µs) are made only when read: a dump is written or a replay restores them."""
        rng = RngState(values={"python": python_rng(self._python_rng)})
        numpy_rng(rng, self._numpy_rng)
        rng.lazy["paddle.cpu"] = functools.partial(_state_lists, [self._cpu_generator.get_state()])
        if self._cuda:
            rng.lazy["paddle.cuda"] = functools.partial(_state_lists, paddle.get_cuda_rng_state())
        return rng

    def set_rng_state(self, rng: RngState) -> None:
        values = rng.json_values()
        set_python_rng(values["python"])
        set_numpy_rng(rng)

        def states(key: str) -> list[Any]:
            out = []
            for value in values.get(key) or []:
                state = core.GeneratorState.__new__(core.GeneratorState)
                state.__setstate__(tuple(value))
                out.append(state)
            return out

        if "paddle.cpu" not in values:
            raise DumpError("rng.json: no paddle generator state", hint="is this a torch dump?")
        paddle.set_rng_state(states("paddle.cpu"), device="cpu")
        if values.get("paddle.cuda") and paddle.device.is_compiled_with_cuda():
            paddle.set_cuda_rng_state(states("paddle.cuda"))

    def buffers(self) -> Tensors:
        """``named_buffers()``'s tensors, copied, from the layers listed once (~20 µs less a step than
        its walk: a buffer registered later on a layer is seen, a layer added after the guard is not)."""
        out: Tensors = {}
        for prefix, own in self._buffer_dicts:
            for n, b in own.items() if own else ():
                if b is not None:
                    out[f"{prefix}.{n}" if prefix else n] = b.detach().clone()
        return out

    def restore_buffers(self, saved: Tensors) -> None:
        with paddle.no_grad():
            for n, b in self.model.named_buffers():
                if n in saved:
                    b.copy_(saved[n], False)

    def model_state(self, buffers: Tensors | None) -> Tensors:
        out: Tensors = {}
        for key, value in self.model.state_dict().items():
            chosen = buffers[key] if buffers and key in buffers else value
            out[key] = chosen.detach().cpu().clone()
        return out

    def load_model_state(self, tensors: Tensors, source: str) -> None:
        expected = self.model.state_dict()
        missing, extra = sorted(set(expected) - set(tensors)), sorted(set(tensors) - set(expected))
        if missing or extra:
            raise DumpError(
                f"{source}: does not match the model's state_dict: "
                f"missing {missing[:5]}, unknown {extra[:5]}",
                hint="replay with the model the dump was written from",
            )
        for key, have in expected.items():
            got = tensors[key]
            if list(got.shape) != list(have.shape) or got.dtype != have.dtype:
                raise DumpError(
                    f"{source}: {key} is {got.dtype} {list(got.shape)}, "
                    f"the model's is {have.dtype} {list(have.shape)}",
                    hint="replay with the model the dump was written from (same code, same sizes)",
                )
        with paddle.no_grad():
            for key, have in expected.items():
                have.copy_(tensors[key].to(have.place), False)

    def _rename(self) -> list[tuple[str, str]]:
        """(framework name, structured name): accumulators are keyed by the generated names."""
        return sorted(((p.name, n) for n, p in self._named), key=lambda t: -len(t[0]))

    def optimizer_state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors: Tensors = {}
        values: dict[str, Any] = {}
        renames = self._rename()
        for key, value in self.optimizer.state_dict().items():
            if _is_tensor(value):
                tensors[_to_structured(key, renames)] = value.detach().cpu().clone()
            elif isinstance(value, dict) and all(_is_tensor(v) for v in value.values()):
                for sub, t in value.items():
                    tensors[f"{key}/{_to_structured(sub, renames)}"] = t.detach().cpu().clone()
            elif value is None or isinstance(value, int | float | str | bool | dict | list):
                values[key] = value
            else:
                raise GuardError(
                    f"the optimizer's state holds a {type(value).__name__} under {key!r}",
                    hint="envkit dumps never pickle: numbers, strings, lists and dicts only",
                )
        return tensors, values

    def load_optimizer_state(self, tensors: Tensors, values: dict[str, Any], source: str) -> None:
        back = [(n, p.name) for n, p in self._named]
        back.sort(key=lambda t: -len(t[0]))
        state: dict[str, Any] = dict(values)
        for key, t in tensors.items():
            if "/" in key:
                top, sub = key.split("/", 1)
                state.setdefault(top, {})[_from_structured(sub, back)] = t
            else:
                state[_from_structured(key, back)] = t
        try:
            self.optimizer.set_state_dict(state)
        except Exception as e:  # Paddle raises ValueError/RuntimeError/AssertionError here
            raise DumpError(
                f"{source}: the optimizer state does not fit this optimizer: {str(e)[:200]}",
                hint="replay with the optimizer the dump was written from",
            ) from e

    def is_tensor(self, value: Any) -> bool:
        return _is_tensor(value)

    def input_scale(self, value: Any) -> list[Any]:
        """``max(abs(x))`` (~10 µs for a 32×3×16×16 batch on the CPU, in a loop); a half-precision
        tensor as float32 first (Paddle has no float16 ``abs`` on the CPU, and the read stays exact)."""
        if value.dtype not in _REAL or 0 in value.shape:  # (``size`` is an op of its own: ~14 µs)
            return []
        x = value if value.stop_gradient else value.detach()
        found = _max_abs(x if x.dtype in EXACT else x.astype("float32"))
        # a host batch of a device model: the value where the step's one read stacks the others
        return [found if self._host or not found.place.is_cpu_place() else found.cuda()]

    def from_numpy(self, value: Any) -> Any:
        return paddle.to_tensor(value.copy())

    def to_model_device(self, value: Any) -> Any:
        first = next((p for _, p in self._named), None)
        return value if first is None or first.place.is_cpu_place() else value.cuda()

    def describe(self, value: Any) -> dict[str, Any]:
        t = value.detach()
        dtype = str(t.dtype).removeprefix("paddle.")
        out: dict[str, Any] = {"dtype": dtype, "shape": list(t.shape)}
        if t.size and dtype != "bool" and not dtype.startswith("complex"):
            out["min"], out["max"] = float(t.min()), float(t.max())
            out["finite"] = _finite(t) if _floating(t) else True
        return out

    def param_norms(self) -> dict[str, float]:
        named = [(n, p.grad) for n, p in self._named if p.grad is not None]
        if not named:
            return {}
        return dict(zip([n for n, _ in named], self.read([_norm2(g) for _, g in named]), strict=True))

    def weight_norms(self) -> dict[str, float]:
        return dict(
            zip(
                [n for n, _ in self._named],
                self.read([_norm2(p) for _, p in self._named]),
                strict=True,
            )
        )

    def param_lrs(self) -> dict[str, float]:
        base = self.lr() or 0.0
        factors: dict[int, float] = {}
        for group in getattr(self.optimizer, "_param_groups", None) or []:
            if isinstance(group, dict):
                for p in group.get("params", []):
                    factors[id(p)] = float(group.get("learning_rate", 1.0))
        out = {}
        for n, p in self._named:
            own = float(getattr(p, "optimize_attr", {}).get("learning_rate", 1.0))
            out[n] = base * factors.get(id(p), 1.0) * own
        return out

    def trace(self) -> AbstractContextManager[Trace]:
        hooks = Hooks(_tensor_ok, _is_tensor, _absmax, _grad_hook)
        handles: list[Any] = []
        for name, layer in [("", self.model), *self.model.named_sublayers()]:
            handles.append(layer.register_forward_pre_hook(lambda m, i, name=name: hooks.enter(name)))
            handles.append(
                layer.register_forward_post_hook(
                    lambda m, i, out, name=name: hooks.leave(
                        name, m, i, out, list(m.named_parameters(include_sublayers=False))
                    )
                )
            )
        for name, param in self._named:
            handles.append(param.register_hook(lambda grad, name=name: hooks.grad(name, grad)))
        return hooks.run(handles)

    def info(self) -> dict[str, Any]:
        cuda = paddle.device.is_compiled_with_cuda()
        gpus = []
        if cuda:
            for i in range(paddle.device.cuda.device_count()):
                major, minor = paddle.device.cuda.get_device_capability(i)
                gpus.append(
                    {"name": paddle.device.cuda.get_device_name(i), "capability": f"sm_{major}{minor}"}
                )
        switches: dict[str, str | int] = {k: v for k, v in os.environ.items() if k.startswith("FLAGS_")}
        omp = os.environ.get("OMP_NUM_THREADS", "")
        if omp.isdecimal():  # an integer, as torch's get_num_threads(): replay reads it as one
            switches["num_threads"] = int(omp)
        return {
            "version": getattr(paddle, "__version__", None),
            "git_version": getattr(paddle.version, "commit", None),
            "cuda_runtime": paddle.version.cuda() if cuda else None,
            "cuda_available": bool(gpus),
            "gpus": gpus,
            "switches": switches,
        }

    def dtype(self) -> str:
        first = next((p for _, p in self._named), None)
        return "float32" if first is None else str(first.dtype).removeprefix("paddle.")

    def device(self) -> str:
        first = next((p for _, p in self._named), None)
        return "cpu" if first is None or first.place.is_cpu_place() else "cuda"

    def world(self) -> tuple[int, int]:
        dist = paddle.distributed
        if dist.is_initialized() and dist.get_world_size() > 1:
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def gather(self, values: list[Any]) -> list[list[float]]:
        _, size = self.world()
        if size == 1:
            return [self.read(values)]
        vec = paddle.stack([_scalar64(v) for v in values])
        out: list[Any] = []
        paddle.distributed.all_gather(out, vec)
        return [[float(x) for x in t.cpu().tolist()] for t in out]


def _state_lists(states: list[Any]) -> list[list[Any]]:
    """Snapshots of paddle generators as rng.json holds them: [device, seed, offset, [state bytes]]."""
    return [list(state.__getstate__()) for state in states]


def _to_structured(key: str, renames: list[tuple[str, str]]) -> str:
    for generated, structured in renames:
        if key.startswith(generated + "_") or key == generated:
            return "param:" + structured + key[len(generated) :]
    return key


def _from_structured(key: str, back: list[tuple[str, str]]) -> str:
    if not key.startswith("param:"):
        return key
    rest = key.removeprefix("param:")
    for structured, generated in back:
        if rest.startswith(structured + "_") or rest == structured:
            return generated + rest[len(structured) :]
    return rest
