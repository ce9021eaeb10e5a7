"""envkit.incident.st_reader (the stdlib safetensors reader images without the library use).

Every dtype it claims is read back bitwise as the real ``safetensors`` library (0.8.0) reads the
same file, for torch and numpy, 0-d and empty tensors included. Hostile files (after the format at
https://github.com/huggingface/safetensors#format and the library's own checks: offsets must tile
the data, a header object of tensors, ``__metadata__`` of strings) give a DumpError naming the file.
"""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
st_torch = pytest.importorskip("safetensors.torch")
st_numpy = pytest.importorskip("safetensors.numpy")
SafetensorError = pytest.importorskip("safetensors").SafetensorError

from envkit.errors import DumpError  # noqa: E402
from envkit.guard.dump import check_safetensors  # noqa: E402
from envkit.incident import st_reader  # noqa: E402

pytestmark = pytest.mark.frameworks

TORCH_DTYPES = [
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
    "float32", "float64", "float8_e4m3fn", "float8_e5m2",
]  # fmt: skip
NUMPY_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16",
                "float32", "float64"]  # fmt: skip
SHAPES = [(3, 5), (), (0,), (2, 0, 3), (7,)]


def _torch_values(name: str, shape: tuple[int, ...], seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, name)
    if name == "bool":
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        values = torch.randn(shape, generator=g, dtype=torch.float64) * 3
        if values.numel():
            values.view(-1)[0] = -0.0  # a sign bit to keep
        return values.to(dtype)
    info = torch.iinfo(dtype)
    low, high = max(info.min, -(2**62)), min(info.max, 2**62)
    ints = torch.randint(low, high, shape, generator=g, dtype=torch.int64)
    return (
        ints.to(dtype) if name not in ("uint32", "uint64") else torch.tensor(ints.abs().tolist(), dtype=dtype)
    )


def _bits(t: Any) -> bytes:
    return bytes(t.contiguous().reshape(-1).view(torch.uint8).tolist()) if t.numel() else b""


def test_every_torch_dtype_reads_as_the_library_reads_it(tmp_path: Path) -> None:
    tensors = {
        f"{name}-{i}": _torch_values(name, shape, i)
        for name in TORCH_DTYPES
        for i, shape in enumerate(SHAPES)
    }
    path = tmp_path / "all.safetensors"
    st_torch.save_file(tensors, str(path), metadata={"made": "by the library"})
    ours, theirs = st_reader.load_torch(str(path)), st_torch.load_file(str(path))
    assert sorted(ours) == sorted(theirs) == sorted(tensors)
    for key, expected in theirs.items():
        got = ours[key]
        assert (got.dtype, tuple(got.shape)) == (expected.dtype, tuple(expected.shape)), key
        assert _bits(got) == _bits(expected) == _bits(tensors[key]), key
        assert got.is_contiguous() and got.device.type == "cpu"


def test_every_numpy_dtype_reads_as_the_library_reads_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        f"{name}-{i}": np.asarray(rng.standard_normal(shape) * 1000).astype(name) if name != "bool"
        else np.asarray(rng.standard_normal(shape) > 0)
        for name in NUMPY_DTYPES for i, shape in enumerate(SHAPES)
    }  # fmt: skip
    path = tmp_path / "all.safetensors"
    st_numpy.save_file(arrays, str(path))
    ours, theirs = st_reader.load_numpy(str(path)), st_numpy.load_file(str(path))
    assert sorted(ours) == sorted(theirs) == sorted(arrays)
    for key, expected in theirs.items():
        got = ours[key]
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), key
        assert got.tobytes() == expected.tobytes() == arrays[key].tobytes(), key
        assert got.flags.writeable  # a copy, not a view of the file's bytes


def test_install_serves_the_dumps_front_ends_and_refuses_to_write(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    for name in ("safetensors", "safetensors.torch", "safetensors.numpy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    st_reader.install()
    from safetensors.numpy import load_file as numpy_load
    from safetensors.torch import load_file, save_file

    assert load_file is st_reader.load_torch and numpy_load is st_reader.load_numpy
    with pytest.raises(RuntimeError, match="only reads"):
        save_file({}, "x.safetensors")


def test_bf16_has_no_numpy_type(tmp_path: Path) -> None:
    path = tmp_path / "bf16.safetensors"
    st_torch.save_file({"w": torch.ones(2, dtype=torch.bfloat16)}, str(path))
    with pytest.raises(DumpError) as info:
        st_reader.load_numpy(str(path))
    assert str(path) in info.value.message and "BF16 has no numpy type" in info.value.message


# -- hostile files ----------------------------------------------------------------------------------


def _file(header: Any, data: bytes = b"", *, raw: bytes | None = None) -> bytes:
    text = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _one(
    dtype: Any = "F32", shape: list[Any] | None = None, offsets: list[int] | None = None
) -> dict[str, Any]:
    return {"dtype": dtype, "shape": [2] if shape is None else shape, "data_offsets": offsets or [0, 8]}


class _Evil:
    def __reduce__(self) -> tuple[Any, ...]:
        return (print, ("pickle ran",))


HOSTILE: dict[str, tuple[bytes, str]] = {
    "empty file": (b"", "truncated: 0 bytes"),
    "truncated header length": (b"\x10\x00\x00", "truncated: 3 bytes"),
    "header longer than the file": (
        struct.pack("<Q", 500) + b'{"a":1}',
        "a header of 500 bytes in a 15-byte",
    ),
    "huge header length": (struct.pack("<Q", 2**63) + b"{}", f"a header of {2**63} bytes"),
    "header cut short": (_file({"w": _one()}, b"\0" * 8)[:20], "bytes in a 20-byte file"),
    "non-JSON header": (_file(None, raw=b"{not json}"), "its header is not JSON"),
    "non-UTF-8 header": (_file(None, raw=b'{"\xff": 1}'), "its header is not JSON"),
    "deeply nested header": (_file(None, raw=b"[" * 200_000 + b"]" * 200_000), "its header is not JSON"),
    "header not an object": (_file([1, 2]), "its header is not an object"),
    "duplicate keys": (
        _file(
            None,
            b"\0" * 8,
            raw=b'{"w": ' + json.dumps(_one()).encode() + b', "w": ' + json.dumps(_one()).encode() + b"}",
        ),
        "its header names 'w' twice",
    ),
    "duplicate field in an entry": (
        _file(
            None,
            b"\0" * 8,
            raw=b'{"w": {"dtype": "F32", "dtype": "F64", "shape": [2], "data_offsets": [0, 8]}}',
        ),
        "names 'dtype' twice",
    ),
    "overlapping offsets": (
        _file({"a": _one(offsets=[0, 8]), "b": _one(offsets=[4, 12])}, b"\0" * 12),
        "overlap another tensor's",
    ),
    "a gap between tensors": (
        _file({"a": _one(offsets=[0, 8]), "b": _one(offsets=[12, 20])}, b"\0" * 20),
        "leave a gap",
    ),
    "offsets past the data": (_file({"w": _one(offsets=[8, 16])}, b"\0" * 8), "leave a gap"),
    "end past the file": (
        _file({"w": _one(shape=[4], offsets=[0, 16])}, b"\0" * 8),
        "hold 16 bytes, the file 8",
    ),
    "trailing bytes": (_file({"w": _one()}, b"\0" * 12), "hold 8 bytes, the file 12"),
    "offsets reversed": (_file({"w": _one(offsets=[8, 0])}, b"\0" * 8), "do not fit its shape"),
    "negative offset": (_file({"w": _one(offsets=[-8, 0])}, b"\0" * 8), "bad data_offsets"),
    "three offsets": (_file({"w": _one(offsets=[0, 4, 8])}, b"\0" * 8), "bad data_offsets"),
    "shape x dtype mismatch": (_file({"w": _one(shape=[3])}, b"\0" * 8), "do not fit its shape [3] of F32"),
    "dtype size mismatch": (_file({"w": _one(dtype="F64")}, b"\0" * 8), "do not fit its shape [2] of F64"),
    "negative dimension": (_file({"w": _one(shape=[-2])}, b"\0" * 8), "bad shape"),
    "boolean dimension": (_file({"w": _one(shape=[True, 2])}, b"\0" * 8), "bad shape"),
    "float dimension": (_file({"w": _one(shape=[2.0])}, b"\0" * 8), "bad shape"),
    "unknown dtype": (_file({"w": _one(dtype="F128")}, b"\0" * 8), "unknown dtype 'F128'"),
    "dtype not a string": (_file({"w": _one(dtype=["F32"])}, b"\0" * 8), "unknown dtype ['F32']"),
    "entry not an object": (_file({"w": [1, 2]}), "unknown dtype [1, 2]"),
    "metadata not an object": (_file({"__metadata__": "x"}), "__metadata__ is not an object of strings"),
    "metadata values not strings": (
        _file({"__metadata__": {"a": 1}}),
        "__metadata__ is not an object of strings",
    ),
    "BOOL byte 2": (_file({"w": _one(dtype="BOOL", offsets=[0, 2])}, b"\x01\x02"), "neither 0 nor 1"),
    "pickle renamed": (pickle.dumps(_Evil(), protocol=2), "a Python pickle"),
    "pickle protocol 0 renamed": (pickle.dumps(_Evil(), protocol=0), "a Python pickle"),
    "torch.save zip renamed": (b"PK\x03\x04" + b"\0" * 60, "a zip archive"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("load", ["torch", "numpy"])
def test_a_hostile_file_is_a_dump_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, load: str
) -> None:
    data, expected = HOSTILE[case]
    path = tmp_path / "batch.safetensors"
    path.write_bytes(data)
    reader = st_reader.load_torch if load == "torch" else st_reader.load_numpy
    with pytest.raises(DumpError) as info:
        reader(str(path))
    assert info.value.message.startswith(f"{path}: "), info.value.message
    assert expected in info.value.message, info.value.message
    assert info.value.hint
    assert "pickle ran" not in capsys.readouterr().out
    if case != "BOOL byte 2":  # the header check (the host's, before any reader) refuses the same files
        with pytest.raises(DumpError, match=r"batch\.safetensors"):
            check_safetensors(path)


def test_a_missing_file_is_a_dump_error(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match=r"missing\.safetensors: cannot read"):
        st_reader.load_torch(str(tmp_path / "missing.safetensors"))
    (tmp_path / "a-dir.safetensors").mkdir()
    with pytest.raises(DumpError, match=r"a-dir\.safetensors: cannot read"):
        check_safetensors(tmp_path / "a-dir.safetensors")


def test_the_library_refuses_what_the_reader_refuses(tmp_path: Path) -> None:
    """The reader is no stricter than the format on the files the library writes, and as strict on these."""
    for case in (
        "overlapping offsets",
        "a gap between tensors",
        "trailing bytes",
        "header longer than the file",
    ):
        path = tmp_path / "x.safetensors"
        path.write_bytes(HOSTILE[case][0])
        with pytest.raises(SafetensorError):
            st_torch.load_file(str(path))
