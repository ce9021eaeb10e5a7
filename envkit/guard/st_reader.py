"""A safetensors reader for images without the library: stdlib + torch (or numpy), never pickle.

The format (https://github.com/huggingface/safetensors#format): an 8-byte little-endian header
length, a JSON header of ``name -> {dtype, shape, data_offsets}``, then the raw bytes.
:func:`envkit.guard.dump.check_safetensors` checks the header's length, JSON, dtypes, shapes and
offsets against the file first; only then are the bytes read, each tensor from its own slice.
``install`` registers it as ``safetensors.torch`` / ``safetensors.numpy`` (``load_file`` only) for
``envkit guard replay --image`` when the image lacks safetensors.
"""

from __future__ import annotations

import struct
import sys
import types
from pathlib import Path
from typing import Any

from envkit.guard.dump import check_safetensors

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


def _slices(path: str) -> list[tuple[str, str, list[int], bytes]]:
    header = check_safetensors(Path(path))  # DumpError on any bad length, dtype, shape or offset
    data = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    body = data[8 + length :]
    return [
        (
            name,
            entry["dtype"],
            list(entry["shape"]),
            body[entry["data_offsets"][0] : entry["data_offsets"][1]],
        )
        for name, entry in header.items()
        if name != "__metadata__"
    ]


def load_torch(path: str, device: str = "cpu") -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    for name, dtype, shape, raw in _slices(path):
        torch_dtype = getattr(torch, _TORCH[dtype], None)
        if torch_dtype is None:
            raise ValueError(f"tensor {name!r}: dtype {dtype} is not in this torch")
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
            raise ValueError(f"tensor {name!r}: dtype {dtype} has no numpy type")
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
