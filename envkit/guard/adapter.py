"""What the guard needs from a framework, and which framework a model belongs to.

:class:`Adapter` is implemented once per framework (``torch_adapter``, ``paddle_adapter``); the
loop (:mod:`envkit.guard.loop`), the flight recorder and the replay only talk to it. Importing
this module imports no framework: the model's class says which one to load.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import functools
import hashlib
import importlib
import random
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from envkit.errors import GuardError

__all__ = ["FRAMEWORKS", "Adapter", "Hooks", "RngState", "Trace", "detect_framework", "make_adapter"]

FRAMEWORKS = ("torch", "paddle")
Tensors = dict[str, Any]  # name -> a framework tensor (what safetensors' front end writes)


@dataclass
class RngState:
    """The random generators before a step: arrays (as numpy) and JSON-able parts. Never reseeded."""

    arrays: dict[str, Any] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    # parts of ``values`` held as the framework's own snapshot until they are read (a dump is
    # written, a replay restores them): key -> the function that turns the snapshot into JSON-able
    # values. Taking the snapshot is what must happen before the step; converting it is not.
    lazy: dict[str, Callable[[], Any]] = field(default_factory=dict, repr=False)

    def json_values(self) -> dict[str, Any]:
        """``values`` with every lazy part converted (once, in the order they were taken)."""
        for key, convert in list(self.lazy.items()):
            self.values[key] = convert()
            del self.lazy[key]
        return self.values


def python_rng(cache: PythonRngCache | None = None) -> list[Any]:
    """[version, the 625 words (a tuple: JSON writes it as a list), gauss]; through ``cache`` when given."""
    return list(random.getstate()) if cache is None else cache.read()


def _mt_words(address: int) -> memoryview:
    """A Mersenne Twister's 625 native uint32 at ``address`` (its 624 words and its position, in the
    order its owner keeps them), as a view made once per generator."""
    return memoryview((ctypes.c_uint32 * 625).from_address(address)).cast("B").cast("I")


def _mt_mark(words: memoryview) -> bytes:
    """What tells whether a Mersenne Twister moved: all of it, its 624 words and its position (2,500
    bytes, one copy and one ``memcmp``). Equal bytes are the same generator, so a snapshot kept for
    them can never be stale (a state set by hand that differs in any one word is read anew)."""
    return words.tobytes()


def _python_bytes(words: Sequence[int]) -> bytes:
    """``getstate()``'s 624 words and position as ``_random.Random`` holds them: the int, the words."""
    return struct.pack("=i", words[624]) + array.array("I", words[:624]).tobytes()


class PythonRngCache:
    """Python's global generator read with ``random.getstate()`` whenever it changed: the last state
    is given again only when all its C words are bytewise those of the last read (:func:`_mt_mark`).
    ``getstate()`` builds 625 ints (~20-100 µs); the generator's C words (``_random.Random``:
    ``PyObject_HEAD; int index; uint32_t state[624]``) are read through a view of them made once
    (``random.seed`` reseeds the same object; another ``random._inst`` gets a new view, and the view
    holds its object, so the address is never reused). The layout is checked against ``getstate()``
    when the view is made and again at every full read; where it does not match (another
    interpreter), every read is ``getstate()``."""

    OFFSET = 2 * ctypes.sizeof(ctypes.c_void_p)  # after PyObject_HEAD: refcount, type

    def __init__(self) -> None:
        self.mark: bytes | None = None
        self.state: list[Any] | None = None
        self.owner: Any = None  # the random.Random the view reads
        self.words: memoryview | None = None  # its index and C words
        self.usable = self._layout_matches()

    def _view(self) -> memoryview:
        if random._inst is not self.owner or self.words is None:
            self.owner = random._inst
            self.words = _mt_words(id(self.owner) + self.OFFSET)
        return self.words

    def _layout_matches(self) -> bool:
        try:
            view, (_, words, _) = self._view(), random.getstate()
            return len(words) == 625 and _python_bytes(words) == view.tobytes()
        except (AttributeError, TypeError, ValueError, OSError, struct.error):
            return False

    def read(self) -> list[Any]:
        if not self.usable:
            return list(random.getstate())
        view = self._view()
        mark, gauss = _mt_mark(view), getattr(self.owner, "gauss_next", None)
        if self.state is None or mark != self.mark or gauss != self.state[2]:
            self.state, self.mark = list(random.getstate()), mark
            if _python_bytes(self.state[1]) != mark:  # the self-check: the view is the state read
                self.usable, self.state = False, None
                return list(random.getstate())
        return self.state


def set_python_rng(value: Sequence[Any]) -> None:
    version, state, gauss = value
    random.setstate((int(version), tuple(int(v) for v in state), gauss))


class NumpyRngCache:
    """numpy's global generator read with ``np.random.get_state()`` whenever it changed: the last
    state is given again only when its MT19937 words and position are bytewise those of the last read
    (:func:`_mt_mark`): ``get_state`` costs ~60 µs; the words are read through a view made once per
    bit generator (``np.random.seed`` reseeds the same one; the view holds its owner), checked against
    ``get_state()`` when made and at every full read. A cached Gaussian (``has_gauss``) can be used
    up without a new draw, so a state holding one is always read in full."""

    def __init__(self) -> None:
        self.mark: bytes | None = None
        self.state: Any = None
        self.owner: Any = None  # the legacy global RandomState's bit generator the view reads
        self.words: memoryview | None = None  # uint32 key[624]; int pos (numpy's mt19937_state)
        self.values: tuple[Any, list[Any]] | None = None  # numpy_rng's JSON part of ``state``
        self.off = False  # a full read disagreed with the view: get_state() always

    def read(self, np: Any) -> Any:
        mark = self._mark(np)
        if mark is None or mark != self.mark or self.state is None or self.state[3]:
            self.state, self.mark = np.random.get_state(), mark
            if mark is not None and _numpy_bytes(self.state) != mark:  # the view is not the state
                self.words, self.mark, self.off = None, None, True  # read: full reads from now on
        return self.state

    def _mark(self, np: Any) -> bytes | None:
        if self.off:
            return None
        try:
            bits = np.random.mtrand._rand._bit_generator
            if bits is not self.owner:
                self.owner, self.words = bits, _mt_words(bits.ctypes.state_address)
                if _numpy_bytes(np.random.get_state()) != self.words.tobytes():
                    self.words = None  # another layout: read in full
            return None if self.words is None else _mt_mark(self.words)
        except (AttributeError, TypeError, ValueError, OSError):  # another numpy: read in full
            return None


def _numpy_bytes(state: Any) -> bytes:
    """``get_state()``'s MT19937 words and position as numpy's ``mt19937_state`` holds them."""
    _, keys, pos, _, _ = state
    return bytes(keys.astype("=u4").tobytes()) + struct.pack("=i", int(pos))


def numpy_rng(rng: RngState, cache: NumpyRngCache | None = None) -> None:
    """numpy's legacy global generator, when numpy is loaded (a guard never imports it for this)."""
    np = sys.modules.get("numpy")
    if np is None:
        return
    state = np.random.get_state() if cache is None else cache.read(np)
    name, keys, pos, has_gauss, cached = state
    rng.arrays["numpy.keys"] = keys
    if cache is not None and cache.values is not None and cache.values[0] is state:
        rng.values["numpy"] = cache.values[1]  # the same state as the last step's: its list again
        return
    rng.values["numpy"] = values = [str(name), int(pos), int(has_gauss), float(cached)]
    if cache is not None:
        cache.values = (state, values)


def set_numpy_rng(rng: RngState) -> None:
    if "numpy" not in rng.values:
        return
    import numpy as np

    name, pos, has_gauss, cached = rng.values["numpy"]
    np.random.set_state((name, rng.arrays["numpy.keys"], pos, has_gauss, cached))


@dataclass
class Trace:
    """What a replay under hooks saw (filled by the adapter's ``trace``)."""

    first_bad_module: dict[str, Any] | None = None
    failing_modules: list[str] = field(default_factory=list)  # module stack when the step raised
    grad_order: list[tuple[str, bool]] = field(default_factory=list)  # (param, finite) in backward order
    # backward as forward: the first module whose gradients in (w.r.t. its outputs) were finite and
    # whose gradient out (w.r.t. an input, or one of its own parameters) was not
    first_bad_backward: dict[str, Any] | None = None

    def first_bad_grad(self) -> str | None:
        return next((name for name, ok in self.grad_order if not ok), None)


# register a gradient hook on a tensor that takes part in backward (None: it does not)
GradHook = Callable[[Any, Callable[[Any], None]], Any]


class Hooks:
    """The framework-neutral part of a replay under hooks: the module stack, the first module whose
    inputs were finite and whose output was not, and the order in which gradients arrived."""

    def __init__(
        self,
        tensor_ok: Callable[[Any], bool],
        is_tensor: Callable[[Any], bool],
        absmax: Callable[[Any], float | None],
        grad_hook: GradHook | None = None,
    ) -> None:
        self.trace = Trace()
        self.stack: list[str] = []
        self.tensor_ok, self.is_tensor, self.absmax = tensor_ok, is_tensor, absmax
        self.grad_hook = grad_hook
        self.handles: list[Any] = []  # the tensor hooks of this replay's backward
        self.types: dict[str, str] = {}
        self.outs_ok: dict[str, bool] = {}  # module -> every gradient w.r.t. its outputs so far finite

    def _bad_part(self, value: Any) -> str | None:
        return next(
            (p or "the output" for p, t in walk(value, self.is_tensor) if not self.tensor_ok(t)), None
        )

    def enter(self, name: str) -> None:
        self.stack.append(name)

    def leave(self, name: str, module: Any, inputs: Any, output: Any, own: list[tuple[str, Any]]) -> None:
        if self.stack and self.stack[-1] == name:
            self.stack.pop()
        self._watch_backward(name, module, inputs, output)
        if self.trace.first_bad_module is not None:
            return
        bad_output = self._bad_part(output)
        if bad_output is None or self._bad_part(inputs) is not None:
            return  # finite, or it only passed on what it was given
        bad_param = next((n for n, p in own if not self.tensor_ok(p)), None)
        self.trace.first_bad_module = {
            "module": name or "(the model)",
            "type": type(module).__name__,
            "output": bad_output,
            "inputs_absmax": self.absmax(inputs),
            "nonfinite_parameter": f"{name}.{bad_param}" if bad_param else None,
        }

    def grad(self, name: str, grad: Any) -> None:
        ok = grad is None or self.tensor_ok(grad)
        self.trace.grad_order.append((name, ok))
        owner, _, param = name.rpartition(".")
        self._grad_out(owner, f"its parameter {param}", ok)

    def _watch_backward(self, name: str, module: Any, inputs: Any, output: Any) -> None:
        """Hooks on the module's output and input tensors: what its backward received and gave."""
        if self.grad_hook is None:
            return
        self.types[name] = type(module).__name__
        for _, t in walk(output, self.is_tensor):
            self._hook(t, functools.partial(self._grad_in, name))
        tensors = list(walk(inputs, self.is_tensor))
        for i, (_, t) in enumerate(tensors):
            what = "the gradient of its input" + (f" {i}" if len(tensors) > 1 else "")
            self._hook(t, functools.partial(self._grad_out_of, name, what))

    def _hook(self, tensor: Any, fn: Callable[[Any], None]) -> None:
        handle = self.grad_hook(tensor, fn) if self.grad_hook is not None else None
        if handle is not None:
            self.handles.append(handle)

    def _grad_out_of(self, name: str, what: str, grad: Any) -> None:
        self._grad_out(name, what, self.tensor_ok(grad))

    def _grad_in(self, name: str, grad: Any) -> None:
        self.outs_ok[name] = self.outs_ok.get(name, True) and self.tensor_ok(grad)

    def _grad_out(self, name: str, what: str, ok: bool) -> None:
        if ok or self.trace.first_bad_backward is not None or not self.outs_ok.get(name, False):
            return  # finite, found already, or it only passed on a non-finite gradient it was given
        self.trace.first_bad_backward = {
            "module": name or "(the model)",
            "type": self.types.get(name, "?"),
            "gradient": what,
        }

    @contextlib.contextmanager
    def run(self, handles: list[Any]) -> Iterator[Trace]:
        try:
            yield self.trace
        except Exception:
            self.trace.failing_modules = list(self.stack)
            raise
        finally:
            for h in [*handles, *self.handles]:
                h.remove()


class Adapter:
    """The tensor operations of one framework (all methods work on that framework's objects)."""

    name = ""
    safetensors = ""  # the safetensors front end: safetensors.torch, safetensors.paddle
    # a trainer steps and zeroes the optimizer itself (Lightning: envkit.guard.lightning); the guard
    # only checks, clips and decides, and a skipped step's gradients are dropped by the caller
    trainer_steps = False
    # the guard clips (clip=...): total_norm is then the framework's clip_grad_norm_ total itself,
    # what clip() scales by (one norm a step where the framework's fast norm is another arithmetic)
    clipping = False

    def __init__(self, model: Any, optimizer: Any, scaler: Any = None) -> None:
        self.model = model
        self.optimizer = optimizer
        self.scaler = scaler
        self._named: list[tuple[str, Any]] = []  # (name, parameter) of the trainable parameters
        self._norms: Any = None  # the per-parameter norms of the last total_norm, on the device
        self._norm_names: list[str] | None = None  # the names grads() returned gradients for
        self._numpy_rng = NumpyRngCache()
        self._python_rng = PythonRngCache()

    # -- the step ----------------------------------------------------------------------------
    def params(self) -> list[tuple[str, Any]]:
        return self._named

    @functools.cached_property
    def _names(self) -> list[str]:
        """The trainable parameters' names (``_named`` is set once, by the framework's adapter)."""
        return [n for n, _ in self._named]

    def finite_flag(self, value: Any) -> Any:
        """A 0-d boolean on the device: ``value`` (a loss) is finite. No host sync."""
        raise NotImplementedError

    def backward(self, loss: Any) -> None:
        raise NotImplementedError

    def unscale(self) -> None:
        """Unscale the gradients (GradScaler) so that norms and clipping see the true values."""
        if self.scaler is not None:  # torch.amp and paddle.amp GradScaler: the same call
            self.scaler.unscale_(self.optimizer)

    def grads(self) -> list[Any]:
        """The gradients of the trainable parameters that have one (their names kept for the norms).
        Each ``.grad`` is read once (in Paddle a read makes a new Python tensor, ~1 µs)."""
        grads = [p.grad for _, p in self._named]
        if all(g is not None for g in grads):
            self._norm_names = self._names
            return grads
        self._norm_names = [n for (n, _), g in zip(self._named, grads, strict=True) if g is not None]
        return [g for g in grads if g is not None]

    def total_norm(self, grads: list[Any]) -> Any:
        """The global 2-norm of ``grads``: one device scalar, fused where the framework can (a host
        float where reading the parts at once is cheaper: Paddle on the CPU)."""
        raise NotImplementedError

    def last_param_norms(self) -> dict[str, float]:
        """The per-parameter gradient norms the last :meth:`total_norm` computed (read now)."""
        return {}

    def group_lrs(self, lr: float | None) -> list[float]:
        """The learning rate of each of the optimizer's parameter groups (host floats, no device work),
        given the step's :meth:`lr` (read once a step)."""
        return [] if lr is None else [lr]

    def group_norms(self) -> list[Any]:
        """Device values to read with the step: per parameter group, the gradient 2-norm then the weight
        2-norm (``[g_0, …, g_G-1, w_0, …, w_G-1]``), from the norms the last :meth:`total_norm` kept;
        [] where the framework cannot say."""
        return []

    def where_ok(self, ok: Any, value: Any) -> Any:
        """``value`` where ``ok``, else 0 (on the device)."""
        raise NotImplementedError

    def clear_grads(self) -> None:
        """Drop the model's gradients without the optimizer (a replay's twin has none)."""
        raise NotImplementedError

    def grads_now(self) -> list[Any]:
        """A copy of each trainable parameter's gradient as it is now (None where it has none)."""
        raise NotImplementedError

    def set_reduced_grads(self, per_rank: list[list[Any]]) -> None:
        """Each gradient as a data-parallel all-reduce leaves it, from every rank's (:meth:`grads_now`
        of each, in rank order): each rank's × 1/W (DDP's reducer and Paddle's scale the bucket by it),
        summed in rank order (two ranks sum the same in any order; for more, the collective's order is
        not known). A parameter with no gradient on a rank adds zeros, as an unused one does."""
        raise NotImplementedError

    def clip(self, grads: list[Any], total: Any, max_norm: float, *, norm: bool = False) -> Any:
        """Clip in place exactly as the framework's clip_grad_norm_ does; with ``norm``, the norm after
        (on the device; a step read now has it from the norm already read: one op less)."""
        raise NotImplementedError

    def gate(self, grads: list[Any], ok: Any) -> None:
        """Zero every gradient when ``ok`` is false, on the device (healthy gradients stay bitwise)."""
        raise NotImplementedError

    def both(self, a: Any, b: Any) -> Any:
        return a & b

    def optimizer_step(self) -> bool | None:
        """Step (through the scaler when there is one); False when the scaler skipped it (overflow)."""
        raise NotImplementedError

    def skip_step(self, overflow: bool) -> None:
        """The guard skips this step itself: the optimizer does not step, and a GradScaler is left as
        its own skip would leave it (ready for the next ``unscale_``). ``overflow`` (the gradients are
        not finite): the scaler backs off as it does on its own overflow; otherwise its scale and
        growth count stay as they are (a step that did not overflow never lowers the scale)."""

    def zero_grad(self) -> None:
        raise NotImplementedError

    def read(self, values: list[Any]) -> list[float]:
        """Device scalars to host floats in one transfer (Paddle's passes a host float through)."""
        raise NotImplementedError

    def lr(self) -> float | None:
        raise NotImplementedError

    def loss_scale(self) -> float | None:
        return None

    # -- state for the flight recorder -------------------------------------------------------
    def rng_state(self) -> RngState:
        raise NotImplementedError

    def set_rng_state(self, rng: RngState) -> None:
        raise NotImplementedError

    def buffers(self) -> Tensors:
        """A copy of the model's buffers (a forward may change them: batch-norm statistics)."""
        return {}

    def restore_buffers(self, saved: Tensors) -> None:
        """Put copied buffers back (in place)."""

    def model_state(self, buffers: Tensors | None) -> Tensors:
        raise NotImplementedError

    def load_model_state(self, tensors: Tensors, source: str) -> None:
        raise NotImplementedError

    def optimizer_state(self) -> tuple[Tensors, dict[str, Any]]:
        raise NotImplementedError

    def load_optimizer_state(self, tensors: Tensors, values: dict[str, Any], source: str) -> None:
        raise NotImplementedError

    def save_tensors(self, tensors: Tensors, path: str) -> None:
        """Through the framework's safetensors front end (never pickle)."""
        front = importlib.import_module(self.safetensors)
        front.save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, path)

    def load_tensors(self, path: str) -> Tensors:
        front = importlib.import_module(self.safetensors)
        return dict(front.load_file(path, device="cpu"))

    def is_tensor(self, value: Any) -> bool:
        raise NotImplementedError

    def input_scale(self, value: Any) -> list[Any]:
        """One or two device scalars (max |x|, or min and max) whose largest |·| is the largest |x| of
        ``value``, a tensor of the batch: one reduction, no host copy; empty for an integer or boolean
        tensor (token ids, labels) or an empty one."""
        raise NotImplementedError

    def to_numpy(self, value: Any) -> Any:
        return value.detach().cpu().numpy()

    def from_numpy(self, value: Any) -> Any:
        raise NotImplementedError

    def to_model_device(self, value: Any) -> Any:
        """A tensor loaded from a dump (on the CPU) moved to where the model's parameters are."""
        raise NotImplementedError

    def describe(self, value: Any) -> dict[str, Any]:
        """dtype, shape, min, max and finiteness of a tensor (for the batch facts)."""
        raise NotImplementedError

    def param_norms(self) -> dict[str, float]:
        """Every parameter's gradient 2-norm (host floats): at the first and last step and at incidents."""
        raise NotImplementedError

    def weight_norms(self) -> dict[str, float]:
        raise NotImplementedError

    def weights_sha256(self) -> str:
        """sha256 over every parameter's name and float32 bytes (C order): equal weights, equal digest."""
        digest = hashlib.sha256()
        for name, p in self.params():
            digest.update(name.encode() + b"\0")
            digest.update(self.to_numpy(p).astype("<f4").tobytes())
        return digest.hexdigest()

    def param_lrs(self) -> dict[str, float]:
        """Each parameter's learning rate (from the optimizer's parameter groups)."""
        raise NotImplementedError

    def training(self) -> bool:
        return bool(getattr(self.model, "training", True))

    def set_training(self, mode: bool) -> None:
        self.model.train() if mode else self.model.eval()

    def trace(self) -> AbstractContextManager[Trace]:
        """Hooks on every module and parameter for one replayed step (removed on exit)."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """Versions and switches, as the probe report's ``frameworks.NAME.info``."""
        raise NotImplementedError

    def dtype(self) -> str:
        raise NotImplementedError

    def device(self) -> str:
        raise NotImplementedError

    # -- data parallel -----------------------------------------------------------------------
    def world(self) -> tuple[int, int]:
        """(rank, world size); (0, 1) outside a process group."""
        return 0, 1

    def gather(self, values: list[Any]) -> list[list[float]]:
        """Every rank's ``values`` (device scalars), one collective: ``out[rank][i]``."""
        return [self.read(values)]


def walk(value: Any, is_leaf: Callable[[Any], bool], path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) of a nested tuple/list/dict: what forward hooks and batches hold."""
    if is_leaf(value):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, is_leaf, f"{path}[{key!r}]")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from walk(item, is_leaf, f"{path}[{i}]")


def detect_framework(model: Any) -> str:
    """``torch`` or ``paddle``, from the module path of the model's class and its bases."""
    for cls in type(model).__mro__:
        top = (cls.__module__ or "").split(".")[0]
        if top in FRAMEWORKS:
            return top
    raise GuardError(
        f"envkit.guard: cannot tell the framework of a {type(model).__name__} model",
        hint="pass a torch.nn.Module or a paddle.nn.Layer",
    )


def make_adapter(model: Any, optimizer: Any, scaler: Any = None) -> Adapter:
    framework = detect_framework(model)
    if framework == "torch":
        from envkit.guard.torch_adapter import TorchAdapter

        return TorchAdapter(model, optimizer, scaler)
    from envkit.guard.paddle_adapter import PaddleAdapter

    return PaddleAdapter(model, optimizer, scaler)
