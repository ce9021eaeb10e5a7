"""The guard's PyTorch side: fused norms, exact clipping, GradScaler, RNG, hooks, safetensors."""

from __future__ import annotations

import json
import warnings
from contextlib import AbstractContextManager
from typing import Any

import torch

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

__all__ = ["TorchAdapter"]


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _tensor_ok(t: Any) -> bool:
    """Finite, or not a floating tensor (one check per tensor: replays only)."""
    return not (t.is_floating_point() or t.is_complex()) or bool(torch.isfinite(t.detach()).all())


def _absmax(value: Any) -> float | None:
    found = [
        float(t.detach().abs().max())
        for _, t in walk(value, _is_tensor)
        if t.numel() and (t.is_floating_point() or not t.is_complex()) and t.dtype != torch.bool
    ]
    return max(found) if found else None


def _grad_hook(t: Any, fn: Any) -> Any:
    """A hook on ``t``'s gradient (replays only); None when ``t`` takes no part in backward."""
    if not (t.requires_grad and (t.is_floating_point() or t.is_complex())):
        return None
    try:
        return t.register_hook(lambda g: fn(g))  # returns None: the gradient is left as it is
    except RuntimeError:  # a tensor autograd does not let us hook: that module is not watched
        return None


def _host_floats(v: Any) -> list[float]:
    """A CPU tensor's values as floats (0-d: one; any other shape: flattened)."""
    t = v.detach() if v.requires_grad else v
    t = t.reshape(-1) if t.dim() > 1 else t
    host = (t if t.is_floating_point() else t.double()).tolist()
    return host if isinstance(host, list) else [host]


def _read_each(values: list[Any]) -> list[float]:
    """:meth:`TorchAdapter.read` on the CPU: each value's own floats (no transfer to batch), a value
    that is the same object as the one before it read once (the one group's gradient norm, which
    ``group_norms`` gives as the global norm itself, right after it)."""
    out: list[float] = []
    last: Any = None
    host: list[float] = []
    for v in values:
        if v is not last:
            last, host = v, _host_floats(v)
        out.extend(host)
    return out


class TorchAdapter(Adapter):
    """The guard's adapter for PyTorch models and optimizers."""

    name = "torch"
    safetensors = "safetensors.torch"

    def __init__(self, model: Any, optimizer: Any, scaler: Any = None) -> None:
        # a torch.compile'd model: the guard works on the module it wraps (names, state, hooks, copies)
        model = getattr(model, "_orig_mod", model)
        super().__init__(model, optimizer, scaler)
        self._named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self._scale_before: float | None = None
        self._stacked: Any = None  # the per-parameter gradient norms of the last total_norm, stacked
        self._total: Any = None  # their global norm (a device scalar)
        self._groups: tuple[tuple[str, ...], Any, Any] | None = None  # names, their params, one-hot
        self._weights: Any = None  # the weights' norms per group (refreshed every 10 steps)
        self._weight_calls = 0
        self._buffer_owners: list[tuple[str, Any, str]] | None = None
        self._buffer_calls = 0
        # a gradient has its parameter's device and dtype (autograd enforces it): one check, here
        self._uniform = len({(p.device, p.dtype) for _, p in self._named}) <= 1
        self._cpu = all(p.device.type == "cpu" for _, p in self._named)

    def finite_flag(self, value: Any) -> Any:
        return torch.isfinite(value.detach()).all()

    def backward(self, loss: Any) -> None:
        if self.scaler is not None:
            self._scale_before = float(self.scaler.get_scale())
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def total_norm(self, grads: list[Any]) -> Any:
        """clip_grad_norm_'s own arithmetic (``get_total_norm``): one ``_foreach_norm``, then the norm
        of the stacked norms. With one device and dtype the per-parameter norms are kept (no read)."""
        self._norms = self._stacked = self._total = None
        if not grads:
            return torch.zeros(())
        first = grads[0]
        if self._uniform:
            norms = torch._foreach_norm(grads, 2.0)
            self._norms = norms
            self._stacked = torch.stack(list(norms))
            self._total = torch.linalg.vector_norm(self._stacked, 2.0)
            return self._total
        get_total_norm = getattr(torch.nn.utils, "get_total_norm", None)
        if get_total_norm is not None:  # torch 2.6+: what clip_grad_norm_ itself calls
            return get_total_norm(grads, 2.0)
        norms = torch._foreach_norm(grads, 2.0)
        return torch.linalg.vector_norm(torch.stack([n.to(first.device) for n in norms]), 2.0)

    def last_param_norms(self) -> dict[str, float]:
        if self._norms is None:
            return {}
        names = (
            [n for n, p in self._named if p.grad is not None]
            if self._norm_names is None
            else self._norm_names
        )
        return dict(zip(names, self.read(list(self._norms)), strict=False))

    def group_lrs(self, lr: float | None) -> list[float]:
        groups = getattr(self.optimizer, "param_groups", None) or []
        return [float(g["lr"]) for g in groups if isinstance(g.get("lr"), int | float)]

    def group_norms(self) -> list[Any]:
        """Per group, the gradient and weight norms: one ``_foreach_norm`` of the weights and one
        matrix product with a cached group one-hot (a handful of device ops per step)."""
        if self._stacked is None or self._norm_names is None:
            return []
        names = tuple(self._norm_names)
        if self._groups is None or self._groups[0] != names:
            self._groups, self._weights = self._group_matrix(names), None
        _, params, onehot = self._groups
        if onehot is None:
            return []
        self._weight_calls += 1
        if self._weights is None or self._weight_calls % 10 == 0:
            # the weights move little per step (an update spike is checked before it is applied)
            squares = torch.stack(list(torch._foreach_norm(params, 2.0))).to(self._stacked.dtype)
            self._weights = ((squares * squares) @ onehot).sqrt()
        if onehot.shape[1] == 1 and self._total is not None:  # one group: its norm is the global one
            return [self._total, self._weights]
        return [((self._stacked * self._stacked) @ onehot).sqrt(), self._weights]

    def _group_matrix(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], Any, Any]:
        named = dict(self._named)
        params = [named[n].detach() for n in names]
        groups = getattr(self.optimizer, "param_groups", None) or []
        where = {id(p): i for i, g in enumerate(groups) for p in g.get("params", [])}
        index = [where.get(id(named[n])) for n in names]
        if not params or None in index or len({p.device for p in params}) > 1:
            return names, params, None
        onehot = torch.zeros(len(names), len(groups), dtype=self._stacked.dtype, device=params[0].device)
        onehot[torch.arange(len(names)), torch.tensor(index)] = 1.0
        return names, params, onehot

    def where_ok(self, ok: Any, value: Any) -> Any:
        return torch.where(ok, value, torch.zeros_like(value))

    def clear_grads(self) -> None:
        for _, p in self._named:
            p.grad = None

    def grads_now(self) -> list[Any]:
        return [None if p.grad is None else p.grad.detach().clone() for _, p in self._named]

    def set_reduced_grads(self, per_rank: list[list[Any]]) -> None:
        scale = 1.0 / len(per_rank)  # a wrapped scalar, as DDP's at::mul_out(bucket, grad, 1/W)
        for i, (_, p) in enumerate(self._named):
            parts = [grads[i] for grads in per_rank]
            like: Any = next((g for g in parts if g is not None), None)
            total = None
            for g in parts if like is not None else ():
                part = torch.mul(torch.zeros_like(like) if g is None else g, scale)
                total = part if total is None else total + part
            p.grad = total

    def clip(self, grads: list[Any], total: Any, max_norm: float, *, norm: bool = False) -> Any:
        """``clip_grads_with_norm_``'s arithmetic (coef = clamp(max / (norm + 1e-6), max=1), one
        ``_foreach_mul_``); with ``norm``, the clipped norm (``total · coef``) as a device scalar."""
        coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        if self._uniform and grads:
            torch._foreach_mul_(grads, coef if self._cpu else coef.to(grads[0].device))
        else:  # several devices or dtypes: one multiply per gradient
            with torch.no_grad():
                for g in grads:
                    g.mul_(coef.to(g.device))
        return total * coef if norm else None

    def gate(self, grads: list[Any], ok: Any) -> None:
        bad = torch.logical_not(ok)
        with torch.no_grad():
            for g in grads:  # one in-place pass per gradient; healthy values are not written
                g.masked_fill_(bad, 0.0)

    def optimizer_step(self) -> bool | None:
        if self.trainer_steps:
            return None
        if self.scaler is None:
            self.optimizer.step()
            return None
        self.scaler.step(self.optimizer)
        self.scaler.update()
        # GradScaler does not say whether it skipped (pytorch#152279): the scale backs off iff it did
        after = float(self.scaler.get_scale())
        return not (self._scale_before is not None and after < self._scale_before)

    def skip_step(self, overflow: bool) -> None:
        if self.scaler is None or self.trainer_steps or not self.scaler.is_enabled():
            return
        if overflow:  # the found-inf unscale_ recorded: the scaler's own back-off (no step: not applied)
            self.scaler.update()
        else:  # update(new_scale) clears the per-optimizer state and sets the scale it already has
            self.scaler.update(float(self.scaler.get_scale()))

    def zero_grad(self) -> None:
        if not self.trainer_steps:
            self.optimizer.zero_grad(set_to_none=True)

    def read(self, values: list[Any]) -> list[float]:
        if not values:
            return []
        if self._cpu:  # no transfer to batch: each value's own floats (float32 → float is exact)
            return _read_each(values)
        stacked = torch.cat([v.detach().to(torch.float64).reshape(-1) for v in values])
        return [float(v) for v in stacked.cpu().tolist()]

    def lr(self) -> float | None:
        groups = getattr(self.optimizer, "param_groups", None)
        if not groups:
            return None
        lr = groups[0].get("lr")
        return float(lr) if isinstance(lr, int | float) or _is_tensor(lr) else None

    def loss_scale(self) -> float | None:
        return None if self.scaler is None else float(self.scaler.get_scale())

    # -- state ------------------------------------------------------------------------------
    def rng_state(self) -> RngState:
        rng = RngState(values={"python": python_rng(self._python_rng)})
        numpy_rng(rng, self._numpy_rng)
        rng.arrays["torch.cpu"] = torch.get_rng_state().numpy()  # a fresh copy already
        # initialized implies available; the flag is read first (is_available asks the driver: ~20 µs
        # a step on a CPU-only run, right after the step's kernels)
        if torch.cuda.is_initialized() and torch.cuda.is_available():  # type: ignore[no-untyped-call]
            for i, state in enumerate(torch.cuda.get_rng_state_all()):
                rng.arrays[f"torch.cuda.{i}"] = state.cpu().numpy().copy()
        return rng

    def set_rng_state(self, rng: RngState) -> None:
        set_python_rng(rng.values["python"])
        set_numpy_rng(rng)
        torch.set_rng_state(torch.from_numpy(rng.arrays["torch.cpu"].copy()))
        cuda = sorted(k for k in rng.arrays if k.startswith("torch.cuda."))
        if cuda and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([torch.from_numpy(rng.arrays[k].copy()) for k in cuda])

    def buffers(self) -> Tensors:
        """A copy of every buffer. Where they live (module, local name) is found once per 100 calls:
        walking every module costs more than copying a model's few buffers."""
        self._buffer_calls += 1
        if self._buffer_owners is None or self._buffer_calls % 100 == 0:
            self._buffer_owners = [
                (f"{prefix}.{local}" if prefix else local, module, local)
                for prefix, module in self.model.named_modules()
                for local, b in module.named_buffers(recurse=False)
                if b is not None
            ]
        out: Tensors = {}
        for name, module, local in self._buffer_owners:
            b = module._buffers.get(local)  # read now: a module may have replaced the tensor
            if b is not None:
                out[name] = b.detach().clone()
        return out

    def restore_buffers(self, saved: Tensors) -> None:
        with torch.no_grad():
            for n, b in self.model.named_buffers():
                if n in saved:
                    b.copy_(saved[n])

    def model_state(self, buffers: Tensors | None) -> Tensors:
        out: Tensors = {}
        for key, value in self.model.state_dict(keep_vars=False).items():
            chosen = buffers[key] if buffers and key in buffers else value
            out[key] = chosen.detach().cpu().contiguous().clone()
        return out

    def load_model_state(self, tensors: Tensors, source: str) -> None:
        expected = self.model.state_dict()
        _check_names(set(expected), set(tensors), source, "the model's state_dict")
        for key, have in expected.items():
            got = tensors[key]
            if tuple(got.shape) != tuple(have.shape) or got.dtype != have.dtype:
                raise DumpError(
                    f"{source}: {key} is {got.dtype} {list(got.shape)}, "
                    f"the model's is {have.dtype} {list(have.shape)}",
                    hint="replay with the model the dump was written from (same code, same sizes)",
                )
        with torch.no_grad():
            for key, have in expected.items():
                have.copy_(tensors[key])

    def optimizer_state(self) -> tuple[Tensors, dict[str, Any]]:
        sd = self.optimizer.state_dict()
        tensors: Tensors = {}
        state: dict[str, dict[str, Any]] = {}
        for idx, entry in sd["state"].items():
            state[str(idx)] = {}
            for key, value in entry.items():
                if _is_tensor(value):
                    tensors[f"state.{idx}.{key}"] = value.detach().cpu().contiguous().clone()
                else:
                    state[str(idx)][key] = value
        values = {"state": state, "param_groups": sd["param_groups"]}
        try:
            json.dumps(values, allow_nan=True)
        except (TypeError, ValueError) as e:
            raise GuardError(
                f"the optimizer's state holds a value JSON cannot keep ({e})",
                hint="envkit dumps never pickle: keep param_groups to numbers, strings, lists and dicts",
            ) from e
        return tensors, values

    def load_optimizer_state(self, tensors: Tensors, values: dict[str, Any], source: str) -> None:
        state: dict[int, dict[str, Any]] = {}
        for idx, entry in (values.get("state") or {}).items():
            state[int(idx)] = dict(entry)
        for key, value in tensors.items():
            _, idx, name = key.split(".", 2)
            state.setdefault(int(idx), {})[name] = value
        groups = values.get("param_groups") or []
        try:
            self.optimizer.load_state_dict({"state": state, "param_groups": groups})
        except (ValueError, KeyError, RuntimeError, TypeError) as e:
            raise DumpError(
                f"{source}: the optimizer state does not fit this optimizer: {e}",
                hint="replay with the optimizer the dump was written from (same parameter groups)",
            ) from e

    def save_tensors(self, tensors: Tensors, path: str) -> None:
        """safetensors refuses tensors that share memory (a batch of overlapping views of one tensor,
        the same tensor twice): each such tensor after the first of its storage is saved as a copy."""
        from safetensors.torch import save_file

        seen: set[int] = set()
        out: Tensors = {}
        for key, value in tensors.items():
            t = value.detach().cpu()
            storage = t.untyped_storage().data_ptr() if t.numel() else None
            if not t.is_contiguous() or (storage is not None and storage in seen):
                t = t.clone(memory_format=torch.contiguous_format)
            elif storage is not None:
                seen.add(storage)
            out[key] = t
        save_file(out, path)

    def is_tensor(self, value: Any) -> bool:
        return _is_tensor(value)

    def input_scale(self, value: Any) -> list[Any]:
        """``aminmax``: one pass, no |x| copy; on the parameters' device (a CPU batch of a CUDA model:
        the two 0-d results copied there, so that the step's one read stacks them)."""
        if not value.is_floating_point() or value.numel() == 0:
            return []
        found = list(torch.aminmax(value.detach()))
        if value.device.type == "cpu" and not self._cpu:
            device = next(p.device for _, p in self._named)
            return [v.to(device, non_blocking=True) for v in found]
        return found

    def from_numpy(self, value: Any) -> Any:
        return torch.from_numpy(value.copy())

    def to_numpy(self, value: Any) -> Any:
        t = value.detach().cpu()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()

    def describe(self, value: Any) -> dict[str, Any]:
        t = value.detach()
        out: dict[str, Any] = {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
        if t.numel() and t.dtype != torch.bool and not t.is_complex():
            out["min"], out["max"] = float(t.min()), float(t.max())
            out["finite"] = bool(torch.isfinite(t).all()) if t.is_floating_point() else True
        return out

    def to_model_device(self, value: Any) -> Any:
        first = next(iter(self.model.parameters()), None)
        return value.to(first.device) if first is not None else value

    def param_norms(self) -> dict[str, float]:
        named = [(n, p.grad) for n, p in self._named if p.grad is not None]
        if not named:
            return {}
        norms = torch._foreach_norm([g.detach() for _, g in named], 2.0)
        return dict(zip([n for n, _ in named], self.read(list(norms)), strict=True))

    def weight_norms(self) -> dict[str, float]:
        norms = torch._foreach_norm([p.detach() for _, p in self._named], 2.0)
        return dict(zip([n for n, _ in self._named], self.read(list(norms)), strict=True))

    def param_lrs(self) -> dict[str, float]:
        lrs: dict[int, float] = {}
        for group in getattr(self.optimizer, "param_groups", None) or []:
            for p in group.get("params", []):
                lrs[id(p)] = float(group.get("lr", 0.0))
        return {n: lrs[id(p)] for n, p in self._named if id(p) in lrs}

    def trace(self) -> AbstractContextManager[Trace]:
        hooks = Hooks(_tensor_ok, _is_tensor, _absmax, _grad_hook)
        handles: list[Any] = []
        for name, module in self.model.named_modules():
            handles.append(
                module.register_forward_pre_hook(
                    lambda m, a, k, name=name: hooks.enter(name), with_kwargs=True
                )
            )
            handles.append(
                module.register_forward_hook(
                    lambda m, a, k, out, name=name: hooks.leave(
                        name, m, (a, k), out, list(m.named_parameters(recurse=False))
                    ),
                    with_kwargs=True,
                )
            )
        for name, param in self._named:
            handles.append(
                param.register_post_accumulate_grad_hook(lambda p, name=name: hooks.grad(name, p.grad))
            )
        return hooks.run(handles)

    def info(self) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            switches = {
                "num_threads": torch.get_num_threads(),
                "num_interop_threads": torch.get_num_interop_threads(),
                "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
                "float32_matmul_precision": torch.get_float32_matmul_precision(),
                "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
                "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
                "cudnn.deterministic": bool(torch.backends.cudnn.deterministic),
                "cudnn.benchmark": bool(torch.backends.cudnn.benchmark),
            }
        gpus = []
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                major, minor = torch.cuda.get_device_capability(i)
                gpus.append({"name": torch.cuda.get_device_name(i), "capability": f"sm_{major}{minor}"})
        return {
            "version": torch.__version__,
            "git_version": getattr(torch.version, "git_version", None),
            "cuda_runtime": torch.version.cuda,
            "cuda_available": torch.cuda.is_available(),
            "gpus": gpus,
            "switches": switches,
        }

    def dtype(self) -> str:
        first = next((p for _, p in self._named), None)
        return "float32" if first is None else str(first.dtype).removeprefix("torch.")

    def device(self) -> str:
        first = next((p for _, p in self._named), None)
        return "cpu" if first is None else first.device.type

    def world(self) -> tuple[int, int]:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def gather(self, values: list[Any]) -> list[list[float]]:
        _, size = self.world()
        if size == 1:
            return [self.read(values)]
        vec = torch.stack([v.detach().to(torch.float64).reshape(()) for v in values])
        if torch.distributed.get_backend() == "gloo":
            vec = vec.cpu()
        out = [torch.empty_like(vec) for _ in range(size)]
        torch.distributed.all_gather(out, vec)
        return [[float(x) for x in t.cpu().tolist()] for t in out]


def _check_names(expected: set[str], got: set[str], source: str, what: str) -> None:
    missing, extra = sorted(expected - got), sorted(got - expected)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing[:5])}")
        if extra:
            parts.append(f"unknown {', '.join(extra[:5])}")
        raise DumpError(
            f"{source}: does not match {what}: {'; '.join(parts)}",
            hint="replay with the model the dump was written from",
        )
