"""The guard's Paddle side: clip_grad_norm_'s arithmetic, paddle.amp.GradScaler, RNG, hooks, safetensors.

Paddle has no public fused multi-tensor norm: the global norm is ``paddle.nn.utils.clip_grad_norm_``'s
own (one norm per gradient, stacked, normed), so a guarded run clips bitwise like that function. The
norms call the kernel ``paddle.linalg.norm`` reaches for a real tensor and ``p=2`` (``p_norm`` as a
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
_P_NORM = getattr(_C_ops, "p_norm", None)
# ClipGradByGlobalNorm's kernel: Σx² of a float32/float64 tensor, ~30× faster than p_norm on the CPU
# (1.5 ms → 0.05 ms for the 8 gradients of tests/data/guard_scripts/paddle_cnn.py, Paddle 3.3)
_SQUARED_L2 = getattr(_C_ops, "squared_l2_norm", None)


def _norm2(t: Any) -> Any:
    """``paddle.linalg.norm(t, 2.0)`` of a gradient or weight: the same kernel, called directly for a
    real tensor (what ``vector_norm`` does in dygraph: ``p_norm(x, 2.0, -1, 1e-12, False, True)``)."""
    if _P_NORM is None or t.is_complex():
        return paddle.linalg.norm(t, 2.0)
    return _P_NORM(t, 2.0, -1, 1e-12, False, True)


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
        self._squares: Any = None  # total_norm's Σx² per gradient (one tensor), on the device

    def finite_flag(self, value: Any) -> Any:
        return paddle.isfinite(value.detach()).all()

    def backward(self, loss: Any) -> None:
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def total_norm(self, grads: list[Any]) -> Any:
        """``sqrt(Σ squared_l2_norm(g))`` (``ClipGradByGlobalNorm``'s arithmetic) where every gradient is
        float32 or float64 of one dtype, else ``clip_grad_norm_``'s; :meth:`clip` scales by
        ``clip_grad_norm_``'s own total either way (a clipped run stays bitwise the unguarded loop)."""
        self._norms = self._squares = None
        if not grads:
            return paddle.to_tensor(0.0)
        if _SQUARED_L2 is not None and len({g.dtype for g in grads}) == 1 and grads[0].dtype in EXACT:
            with paddle.no_grad():  # one context, not a detach() per gradient (each op costs ~10 µs)
                self._squares = paddle.concat([_SQUARED_L2(g) for g in grads])
                return paddle.sqrt(self._squares.sum())
        return self._exact_norm(grads)

    def _exact_norm(self, grads: list[Any]) -> Any:
        """``paddle.nn.utils.clip_grad_norm_``'s total: the norm of the stacked per-gradient norms."""
        self._norms = [_norm2(g.detach()) for g in grads]
        return _norm2(paddle.stack(self._norms))

    def last_param_norms(self) -> dict[str, float]:
        if self._squares is not None:
            values = [math.sqrt(v) for v in self._squares.astype("float64").numpy().tolist()]
        elif self._norms is not None:
            values = self.read(self._norms)
        else:
            return {}
        return dict(zip(self._norm_names or [], values, strict=False))

    def where_ok(self, ok: Any, value: Any) -> Any:
        return paddle.where(ok, value, paddle.zeros_like(value))

    def clear_grads(self) -> None:
        for _, p in self._named:
            p.clear_gradient(False)

    def clip(self, grads: list[Any], total: Any, max_norm: float) -> Any:
        if self._squares is not None:  # total_norm's sum of squares: clip by clip_grad_norm_'s own total
            total = self._exact_norm(grads)  # (a masked bad step's gradients are zeros by now: 0)
        with paddle.no_grad():  # as paddle.nn.utils.clip_grad_norm_ runs
            clip_coef = float(max_norm) / (total + 1e-6)
            clamped = clip_coef.clip_(max=1.0)
            for _, p in self._named:
                if p.grad is not None:
                    p.grad_.multiply_(y=clamped)
            return total * clamped

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

    def zero_grad(self) -> None:
        self.optimizer.clear_grad()

    def read(self, values: list[Any]) -> list[float]:
        """On the CPU, each float32/float64 scalar's own value (a Python float holds it exactly, as the
        float64 copy did; ~1 µs instead of a cast and a stack); elsewhere one stacked float64 transfer."""
        if not values:
            return []
        if all(v.dtype in EXACT and v.place.is_cpu_place() for v in values):
            return [float(v.item()) for v in values]
        stacked = paddle.stack([v.detach().astype("float64").reshape([]) for v in values])
        host: Any = stacked.cpu().tolist()
        return [float(v) for v in host]

    def lr(self) -> float | None:
        get_lr = getattr(self.optimizer, "get_lr", None)
        return float(get_lr()) if get_lr is not None else None

    def loss_scale(self) -> float | None:
        scale = getattr(self.scaler, "_scale", None) if self.scaler is not None else None
        return None if scale is None else float(scale)

    # -- state ------------------------------------------------------------------------------
    def rng_state(self) -> RngState:
        """Paddle's generators as snapshots (``get_rng_state`` copies them, ~3 µs); their lists (6,363
        ints each, ~75 µs) are made only when read: a dump is written or a replay restores them."""
        rng = RngState(values={"python": python_rng(self._python_rng)})
        numpy_rng(rng, self._numpy_rng)
        rng.lazy["paddle.cpu"] = functools.partial(_state_lists, paddle.get_rng_state(device="cpu"))
        if self._cuda:
            rng.lazy["paddle.cuda"] = functools.partial(_state_lists, paddle.get_cuda_rng_state())
        return rng

    def set_rng_state(self, rng: RngState) -> None:
        from paddle.base import core

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
        return {n: b.detach().clone() for n, b in self.model.named_buffers()}

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
        switches = {k: v for k, v in os.environ.items() if k.startswith("FLAGS_")}
        if os.environ.get("OMP_NUM_THREADS"):
            switches["num_threads"] = os.environ["OMP_NUM_THREADS"]
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
        vec = paddle.stack([v.detach().astype("float64").reshape([]) for v in values])
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
