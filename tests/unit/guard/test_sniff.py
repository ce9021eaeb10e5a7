"""Dump sniffing (issue 33, item 2): a file is parsed as safetensors first; only one that is not valid
safetensors is called a pickle. Header lengths whose first byte is 0x80 (128, 384, 640: pickle's PROTO
opcode) or ``(``, ``]``, ``}`` (40, 93, 125 mod 256: protocol 0/1 openers) are valid safetensors.

Each crafted file is checked against the real ``safetensors`` library (it loads them), then against
envkit's header check and its stdlib reader; the hostile variants are refused with a message.
"""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")

from envkit.errors import DumpError  # noqa: E402
from envkit.guard.dump import check_safetensors  # noqa: E402
from envkit.incident import st_reader  # noqa: E402

pytestmark = pytest.mark.frameworks

# 128, 384, 640: first byte 0x80; 40, 93, 125 (and + 256, + 512): first byte "(", "]", "}"
LENGTHS = [128, 384, 640, 40 + 256, 93, 93 + 256, 125, 125 + 512, 40 + 1024]


def craft(path: Path, length: int, tensors: dict[str, Any] | None = None) -> dict[str, Any]:
    """A safetensors file whose header is exactly ``length`` bytes (JSON padded with spaces)."""
    tensors = tensors if tensors is not None else {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}
    header: dict[str, Any] = {}
    body = b""
    for name, t in tensors.items():
        raw = t.contiguous().numpy().tobytes()
        dtype = {torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        header[name] = {
            "dtype": dtype,
            "shape": list(t.shape),
            "data_offsets": [len(body), len(body) + len(raw)],
        }
        body += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= length, (len(text), length)
    path.write_bytes(struct.pack("<Q", length) + text + b" " * (length - len(text)) + body)
    return tensors


@pytest.mark.parametrize("length", LENGTHS)
def test_headers_that_look_like_pickle_opcodes_are_read(tmp_path: Path, length: int) -> None:
    path = tmp_path / "batch.safetensors"
    tensors = craft(path, length)
    assert path.read_bytes()[:1] in (b"\x80", b"(", b"]", b"}")
    library = st_torch.load_file(str(path))  # the real library reads it: a valid file
    assert torch.equal(library["w"], tensors["w"])
    assert set(check_safetensors(path)) == {"w"}
    assert torch.equal(st_reader.load_torch(str(path))["w"], tensors["w"])


def test_the_library_itself_writes_a_0x80_header(tmp_path: Path) -> None:
    """A name chosen so that save_file's own (8-aligned) header is 128 bytes long, as nanoGPT's are."""
    path = tmp_path / "model.safetensors"
    for n in range(1, 120):
        st_torch.save_file({"x" * n: torch.zeros(2)}, str(path))
        if path.read_bytes()[:8] == struct.pack("<Q", 128):
            break
    else:
        pytest.fail("no name gave a 128-byte header")
    assert set(check_safetensors(path)) == {"x" * n}


class Boom:
    def __reduce__(self) -> tuple[Any, ...]:
        return (print, ("pwned",))


@pytest.mark.parametrize("protocol", range(6))
def test_real_pickles_are_still_named(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / "model.safetensors"
    for obj in ({"w": Boom()}, [Boom()], (Boom(), 1)):
        path.write_bytes(pickle.dumps(obj, protocol=protocol))
        with pytest.raises(DumpError, match="pickle"):
            check_safetensors(path)
        with pytest.raises(DumpError, match="pickle"):
            st_reader.load_torch(str(path))


def _valid(tmp_path: Path, length: int = 640) -> bytes:
    path = tmp_path / "v.safetensors"
    craft(path, length)
    return path.read_bytes()


HOSTILE = {
    # a 640-byte header (first byte 0x80) cut short: a damaged safetensors file, not a pickle
    "truncated after a 0x80 length": (lambda v: v[:300], "not a safetensors file"),
    "truncated inside the data": (lambda v: v[:-4], "tensors hold 24 bytes, the file 20"),
    "a length that lies (longer than the file)": (
        lambda v: struct.pack("<Q", 10**6) + v[8:],
        "header of 1000000",
    ),
    "a length that lies (shorter: cuts the JSON)": (lambda v: struct.pack("<Q", 20) + v[8:], "not JSON"),
    "two tensors on the same bytes (shared memory)": (None, "overlap"),
    "a tensor outside the data": (None, "do not fit|hold"),
    "an 8-byte file": (lambda v: v[:8], "not a safetensors file"),
    "empty": (lambda v: b"", "truncated: 0 bytes"),
}


def _shared(tmp_path: Path) -> bytes:
    header = {
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    }
    text = json.dumps(header).encode()
    text += b" " * (384 - len(text))
    return struct.pack("<Q", 384) + text + b"\0" * 8


def _outside(tmp_path: Path) -> bytes:
    header = {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    text = json.dumps(header).encode()
    text += b" " * (128 - len(text))
    return struct.pack("<Q", 128) + text + b"\0" * 8


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_invalid_files_are_refused_with_a_clear_message(tmp_path: Path, case: str) -> None:
    make, message = HOSTILE[case]
    if case.startswith("two tensors"):
        data = _shared(tmp_path)
    elif case.startswith("a tensor outside"):
        data = _outside(tmp_path)
    else:
        assert make is not None
        data = make(_valid(tmp_path))
    path = tmp_path / "batch.safetensors"
    path.write_bytes(data)
    for read in (check_safetensors, lambda p: st_reader.load_torch(str(p))):
        with pytest.raises(DumpError, match=message) as info:
            read(path)
        assert "pickle" not in info.value.message and "batch.safetensors" in info.value.message
