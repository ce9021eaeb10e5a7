"""A safetensors reader for images without the library: stdlib + torch (or numpy), never pickle.

The format (https://github.com/huggingface/safetensors#format): an 8-byte little-endian header
length, a JSON header of ``name -> {dtype, shape, data_offsets}``, then the raw bytes.
The file is read once; :func:`envkit.guard.dump.parse_safetensors` checks the header's length, JSON,
dtypes, shapes and offsets (they must tile the data, as the library requires) against those bytes;
only then is each tensor made from its own slice. Every refusal is a DumpError naming the file.
``install`` registers it as ``safetensors.torch`` / ``safetensors.numpy`` (``load_file`` only) for
``envkit guard replay --image`` when the image lacks safetensors.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

from envkit.errors import DumpError
from envkit.guard.dump import HINT, parse_safetensors

__all__ = ["install", "load_numpy", "load_torch"]

_TORCH = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
    "U16": "uint16", "U32": "uint32", "U64": "uint64", "F16": "float16", "BF16": "bfloat16",
    "F32": "float32", "F64": "float64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
}  # fmt: skip
_NUMPY = {
    "BOOL": "bool", "U8": "<u1", "I8": "<i1", "I16": "<i2", "I32": "<i4", "I64": "<i8", "U16": "<u2",
    "U32": "<u4", "U64": "<u8", "F16": "<f2", "F32": "<f4", "F64": "<f8",
}  # fmt: skip


def _fail(path: str, what: str) -> DumpError:
    return DumpError(f"{path}: {what}", hint=HINT)


def _slices(path: str) -> list[tuple[str, str, list[int], bytes]]:
    """Each tensor's name, dtype, shape and bytes, from one read of the file, checked first."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise _fail(path, f"cannot read: {e.strerror or e}") from e
    header, body = parse_safetensors(Path(path), data)  # DumpError on any bad length, dtype, shape or offset
    out = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytes(body[begin:end])
        if entry["dtype"] == "BOOL" and raw.translate(None, b"\x00\x01"):
            raise _fail(path, f"tensor {name!r}: a BOOL byte that is neither 0 nor 1")
        out.append((name, entry["dtype"], list(entry["shape"]), raw))
    return out


def load_torch(path: str, device: str = "cpu") -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    for name, dtype, shape, raw in _slices(path):
        torch_dtype = getattr(torch, _TORCH[dtype], None)
        if torch_dtype is None:
            raise _fail(path, f"tensor {name!r}: dtype {dtype} is not in torch {torch.__version__}")
        flat = (
            torch.frombuffer(bytearray(raw), dtype=torch_dtype) if raw else torch.empty(0, dtype=torch_dtype)
        )
        out[name] = flat.reshape(shape).to(device)
    return out


def load_numpy(path: str) -> dict[str, Any]:
    import numpy as np

    out: dict[str, Any] = {}
    for name, dtype, shape, raw in _slices(path):
        if dtype not in _NUMPY:
            raise _fail(path, f"tensor {name!r}: dtype {dtype} has no numpy type")
        out[name] = np.frombuffer(raw, dtype=np.dtype(_NUMPY[dtype])).reshape(shape).copy()
    return out


def _refuse(*_: Any, **__: Any) -> None:
    raise RuntimeError("envkit's safetensors reader only reads (the image has no safetensors)")


def install() -> None:
    """Register the reader as ``safetensors.torch`` and ``safetensors.numpy`` (load_file only)."""
    package = types.ModuleType("safetensors")
    package.__path__ = []
    for front, load in (("torch", load_torch), ("numpy", load_numpy)):
        module = types.ModuleType(f"safetensors.{front}")
        module.load_file = load  # type: ignore[attr-defined]
        module.save_file = _refuse  # type: ignore[attr-defined]
        setattr(package, front, module)
        sys.modules[f"safetensors.{front}"] = module
    sys.modules["safetensors"] = package
