"""The flight recorder: write ``RUN/incidents/step-N/`` from live objects, and load it back into them.

The tensors go through the framework's safetensors front end (``safetensors.torch`` /
``safetensors.paddle``; the random generators' arrays through ``safetensors.numpy``); everything
else is JSON. :func:`envkit.guard.dump.read_dump` checks a dump before anything here loads it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit.errors import DumpError, GuardError
from envkit.guard.adapter import Adapter, RngState, Tensors
from envkit.guard.dump import Dump, write_manifest
from envkit.guard.files import fresh_dir, replace_dir

__all__ = ["LoadedDump", "load_dump", "write_dump"]

MAX_NODES = 100_000


def _encode(adapter: Adapter, value: Any, tensors: Tensors, depth: int = 0) -> dict[str, Any]:
    if depth > 32:
        return {"t": "unsupported", "type": "nested deeper than 32"}
    if adapter.is_tensor(value):
        key = f"b{len(tensors)}"
        tensors[key] = value
        return {"t": "tensor", "key": key}
    np = _numpy()
    if np is not None and isinstance(value, np.ndarray):
        key = f"b{len(tensors)}"
        tensors[key] = adapter.from_numpy(value)
        return {"t": "numpy", "key": key}
    if value is None or isinstance(value, bool | int | float | str):
        return {"t": "value", "v": value}
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, str | int) or isinstance(k, bool):
                return {"t": "unsupported", "type": f"dict key {type(k).__name__}"}
            items.append([k, _encode(adapter, v, tensors, depth + 1)])
        return {"t": "dict", "items": items}
    if isinstance(value, list | tuple):
        kind = "list" if isinstance(value, list) else "tuple"
        return {"t": kind, "items": [_encode(adapter, v, tensors, depth + 1) for v in value]}
    return {"t": "unsupported", "type": type(value).__name__}


def _numpy() -> Any:
    import sys

    return sys.modules.get("numpy")


def _decode(adapter: Adapter, node: Any, tensors: Tensors, source: str, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise DumpError(f"{source}: more than {MAX_NODES} nodes", hint="not a batch envkit.guard wrote")
    if not isinstance(node, dict) or "t" not in node:
        raise DumpError(f"{source}: a node is not an object with 't'", hint="the dump was edited")
    kind = node["t"]
    if kind in ("tensor", "numpy"):
        key = node.get("key")
        if key not in tensors:
            raise DumpError(
                f"{source}: tensor {key!r} is not in batch.safetensors", hint="the dump was edited"
            )
        value = tensors[key]
        return adapter.to_numpy(value) if kind == "numpy" else adapter.to_model_device(value)
    if kind == "value":
        v = node.get("v")
        if not (v is None or isinstance(v, bool | int | float | str)):
            raise DumpError(f"{source}: a value node holds {type(v).__name__}", hint="the dump was edited")
        return v
    if kind in ("list", "tuple"):
        items = [_decode(adapter, n, tensors, source, budget) for n in node.get("items") or []]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        out = {}
        for pair in node.get("items") or []:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str | int)):
                raise DumpError(f"{source}: a dict item is not [key, node]", hint="the dump was edited")
            out[pair[0]] = _decode(adapter, pair[1], tensors, source, budget)
        return out
    if kind == "unsupported":
        raise DumpError(
            f"{source}: the batch held a {node.get('type')!r}, which a dump cannot keep",
            hint="give the guard batches of tensors, numpy arrays, numbers and strings (in dicts/lists)",
        )
    raise DumpError(f"{source}: unknown node kind {kind!r}", hint="the dump was edited")


def write_dump(
    directory: Path,
    adapter: Adapter,
    *,
    batch: Any,
    rng: RngState,
    model_state: Tensors,
    records: list[dict[str, Any]],
    env: dict[str, Any],
    manifest: dict[str, Any],
) -> Path:
    """Write every file, then the manifest with their hashes, in a fresh private folder renamed to
    ``directory`` (whose parent the caller checked: :func:`envkit.guard.files.real_dir`): a run killed
    mid-dump leaves no half dump, a link at ``directory`` is replaced, never written through. The files
    are the owner's only (0600: the training batch and the weights).
    """
    fresh = fresh_dir(directory.parent, directory.name)
    try:
        _write_files(fresh, adapter, batch, rng, model_state, records, env, manifest)
        replace_dir(fresh, directory)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    return directory


def _write_files(
    directory: Path,
    adapter: Adapter,
    batch: Any,
    rng: RngState,
    model_state: Tensors,
    records: list[dict[str, Any]],
    env: dict[str, Any],
    manifest: dict[str, Any],
) -> None:
    tensors: Tensors = {}
    tree = _encode(adapter, batch, tensors)
    adapter.save_tensors(dict(tensors), str(directory / "batch.safetensors"))
    _json(directory / "batch.json", tree)
    from safetensors.numpy import save_file

    save_file(dict(rng.arrays), str(directory / "rng.safetensors"))
    _json(directory / "rng.json", rng.json_values())
    adapter.save_tensors(model_state, str(directory / "model.safetensors"))
    extra: dict[str, Any] = {}
    try:
        opt_tensors, opt_values = adapter.optimizer_state()
    except GuardError as exc:  # an optimizer state JSON cannot hold: the dump still replays the step
        extra["optimizer_missing"] = str(exc)[:300]
    else:
        adapter.save_tensors(opt_tensors, str(directory / "optimizer.safetensors"))
        _json(directory / "optimizer.json", opt_values)
    _json(directory / "records.json", records)
    _json(directory / "env.json", env)
    for path in directory.iterdir():
        path.chmod(0o600)
    write_manifest(directory, {**manifest, **extra, "framework": adapter.name})
    (directory / "manifest.json").chmod(0o600)


def _json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, sort_keys=True, default=str) + "\n")


@dataclass
class LoadedDump:
    """An incident dump's tensors loaded through the framework's adapter: batch, RNG, model and optimizer."""

    batch: Any
    rng: RngState
    model_state: Tensors
    optimizer: tuple[Tensors, dict[str, Any]] | None


def load_dump(dump: Dump, adapter: Adapter) -> LoadedDump:
    """The dump's tensors through ``adapter`` (which must be the dump's framework)."""
    if adapter.name != dump.framework:
        raise DumpError(
            f"{dump.file('manifest.json')}: a {dump.framework} dump, and this model is {adapter.name}",
            hint=f"replay it with the {dump.framework} model it was written from",
        )
    # each batch tensor in its own allocation: safetensors hands back views into one buffer at 8-byte
    # offsets, and a CPU kernel on unaligned memory takes another vector path, 1 ulp off the step's
    # own numbers (every finite fp32 replay on a CPU was "transient: suspect the device")
    batch_tensors = {k: v.clone() for k, v in _tensors(adapter, dump, "batch.safetensors").items()}
    batch = _decode(
        adapter, dump.json_parts["batch.json"], batch_tensors, str(dump.file("batch.json")), [MAX_NODES]
    )
    rng = RngState(values=_obj(dump, "rng.json"))
    if dump.has("rng.safetensors"):
        from safetensors.numpy import load_file

        rng.arrays = dict(
            _safe(lambda: load_file(str(dump.file("rng.safetensors"))), dump, "rng.safetensors")
        )
    if "python" not in rng.values:
        raise DumpError(f"{dump.file('rng.json')}: no python generator state", hint="the dump was edited")
    model_state = _tensors(adapter, dump, "model.safetensors")
    optimizer = None
    if dump.has("optimizer.safetensors") and dump.has("optimizer.json"):
        optimizer = (_tensors(adapter, dump, "optimizer.safetensors"), _obj(dump, "optimizer.json"))
    return LoadedDump(batch, rng, model_state, optimizer)


def _obj(dump: Dump, name: str) -> dict[str, Any]:
    value = dump.json_parts.get(name)
    if not isinstance(value, dict):
        raise DumpError(f"{dump.file(name)}: expected a JSON object", hint="the dump was edited")
    return value


def _tensors(adapter: Adapter, dump: Dump, name: str) -> Tensors:
    tensors: Tensors = _safe(lambda: adapter.load_tensors(str(dump.file(name))), dump, name)
    return tensors


def _safe(load: Callable[[], Any], dump: Dump, name: str) -> Any:
    try:
        return load()
    except Exception as e:
        raise DumpError(
            f"{dump.file(name)}: cannot read the tensors: {str(e)[:200]}", hint="the dump is damaged"
        ) from e
