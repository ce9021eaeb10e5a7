"""The flight recorder's dump, ``RUN/incidents/step-N/``: written with safetensors + JSON, read strictly.

Files: ``manifest.json`` (kind, schema, framework, step, the outcome to reproduce, and the sha256
and size of every other file), ``batch.safetensors`` + ``batch.json`` (the batch's tree),
``rng.safetensors`` + ``rng.json`` (python, numpy, framework CPU/CUDA generators from before the
step), ``model.safetensors``, ``optimizer.safetensors`` + ``optimizer.json``, ``records.json``
(the last steps) and ``env.json`` (the probe's host fingerprint and the framework's info).

Nothing is unpickled, ever: a reader checks the manifest, each file's size and sha256, and each
safetensors header (length, JSON, dtypes, offsets) before the safetensors library sees the file.
Every file is read as a regular file, never through a link, and at most its limit (the manifest
1 MiB) plus one byte. A file is parsed first; only one that is not valid safetensors (or JSON) is
named a pickle or a ``torch.save`` zip when it looks like one (a header length whose first byte is
0x80 or ``(`` is valid safetensors). The hashes catch changed or truncated files; someone who
rewrites the manifest too is not stopped (sign dumps if that matters). :func:`copy_dump` stages a
checked dump for others (a fleet store, an image): the manifest's own files only, hashed as copied.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit._atomic import write_text_atomic
from envkit._io import NotRegular, TooLarge, open_regular, read_limited
from envkit.errors import DumpError

__all__ = [
    "KIND",
    "SCHEMA",
    "Dump",
    "copy_dump",
    "parse_safetensors",
    "read_dump",
    "sha256_file",
    "write_manifest",
]

KIND = "envkit-guard-dump"
SCHEMA = 1
MAX_JSON = 16 * 1024 * 1024
MAX_MANIFEST = 1024 * 1024  # a manifest lists ~10 files: read before anything else is checked
MAX_HEADER = 100 * 1024 * 1024
_GLOBAL = re.compile(rb"c[A-Za-z_][\w.]{2,}\n")  # protocol 0's GLOBAL: as a header length, > MAX_HEADER
NAME = re.compile(r"[a-z][a-z0-9_]*\.(json|safetensors)")
TENSOR_FILES = ("batch.safetensors", "rng.safetensors", "model.safetensors", "optimizer.safetensors")
JSON_FILES = ("batch.json", "rng.json", "optimizer.json", "records.json", "env.json")
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
HINT = "the dump was changed, truncated or not written by envkit.guard; use the dump the run wrote"


def sha256_file(path: Path) -> str:
    with open_regular(path) as fh:
        return _hash(fh)


def _hash(fh: Any) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Hash every file of ``directory`` into the manifest and write it last (atomically)."""
    files = {}
    for path in sorted(directory.iterdir()):
        if path.name != "manifest.json" and path.is_file():
            files[path.name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    manifest = {**manifest, "kind": KIND, "schema": SCHEMA, "files": files}
    write_text_atomic(directory / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True) + "\n")


@dataclass(frozen=True)
class Dump:
    """A dump whose files all matched their recorded hashes (tensors are loaded by the adapter)."""

    path: Path
    manifest: Mapping[str, Any]
    json_parts: Mapping[str, Any]

    @property
    def framework(self) -> str:
        return str(self.manifest["framework"])

    @property
    def step(self) -> int:
        return int(self.manifest["step"])

    def file(self, name: str) -> Path:
        return self.path / name

    def has(self, name: str) -> bool:
        return name in self.manifest["files"]


def _fail(path: Path, what: str, hint: str = HINT) -> DumpError:
    return DumpError(f"{path}: {what}", hint=hint)


def _sniff(head: bytes) -> str | None:
    """What a file that did not parse looks like (never parsed further): asked only after parsing.

    A pickle opens with PROTO (0x80, protocol 2-5) or, in protocol 0/1, ``(``, ``]``, ``}`` or a
    GLOBAL; the opcode after those is a byte >= 0x28 (``(``), which a short length's zero bytes are not.
    """
    if len(head) > 2 and head[0] == 0x80 and 2 <= head[1] <= 5 and head[2] >= 0x28:
        return "a Python pickle (envkit never unpickles)"
    if head[:4] == b"PK\x03\x04":
        return "a zip archive (torch.save writes one: a pickle inside; envkit never unpickles)"
    if (len(head) > 1 and head[:1] in (b"(", b"]", b"}") and head[1] >= 0x28) or _GLOBAL.match(head):
        return "a Python pickle (protocol 0/1; envkit never unpickles)"
    return None


def _read(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (never through a link); DumpError otherwise."""
    try:
        with open_regular(path) as fh:
            return read_limited(fh, limit, path)
    except TooLarge as e:
        raise _fail(path, f"more than a dump's {path.suffix[1:]} holds ({limit} bytes)") from e
    except NotRegular as e:
        raise _fail(path, f"cannot read: {e.strerror} (a dump's files are regular files)") from e
    except OSError as e:
        raise _fail(path, f"cannot read: {e.strerror or e}") from e


def _load_json(path: Path, limit: int = MAX_JSON) -> Any:
    data = _read(path, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        sniffed = _sniff(data[:16])
        if sniffed:
            raise _fail(path, f"is {sniffed}, where JSON belongs") from e
        raise _fail(path, f"not valid JSON ({str(e)[:200]})") from e


class _Duplicate(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _not_safetensors(path: Path, head: bytes, what: str) -> DumpError:
    """A file that did not parse as safetensors: named a pickle or zip when it looks like one (a
    header that opens with ``{`` is a damaged safetensors file, whatever its length's first byte)."""
    sniffed = None if head[8:9] == b"{" else _sniff(head)
    return _fail(path, f"is {sniffed}, where safetensors belong" if sniffed else what)


def _header_length(path: Path, head: bytes, size: int) -> int:
    """The header length of a file whose first bytes are ``head``, bounded by the file and MAX_HEADER."""
    if len(head) < 8:
        raise _not_safetensors(path, head, f"truncated: {size} bytes, not a safetensors file")
    (length,) = struct.unpack("<Q", head[:8])
    if length > MAX_HEADER or length > size - 8:
        what = f"not a safetensors file (a header of {length} bytes in a {size}-byte file)"
        raise _not_safetensors(path, head, what)
    return int(length)


def _checked_header(path: Path, head: bytes, raw: bytes, data_size: int) -> dict[str, Any]:
    """:func:`_validate`, a refusal named a pickle or zip when the file looks like one."""
    try:
        return _validate(path, raw, data_size)
    except DumpError as e:
        if head[8:9] == b"{" or not _sniff(head):
            raise
        raise _not_safetensors(path, head, "") from e


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(path: Path, name: str, entry: Any) -> tuple[int, int]:
    """One tensor's entry checked: its dtype, shape and offsets agree; its byte range."""
    dtype = entry.get("dtype") if isinstance(entry, dict) else None
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise _fail(path, f"tensor {name!r}: unknown dtype {_kind_of(entry)}")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
        raise _fail(path, f"tensor {name!r}: bad shape {str(shape)[:60]}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)):
        raise _fail(path, f"tensor {name!r}: bad data_offsets {str(offsets)[:60]}")
    count = 1
    for d in shape:
        count *= d
    begin, end = offsets
    if end < begin or end - begin != count * DTYPE_BYTES[dtype]:
        raise _fail(path, f"tensor {name!r}: its bytes {begin}…{end} do not fit its shape {shape} of {dtype}")
    return begin, end


def _validate(path: Path, raw: bytes, data_size: int) -> dict[str, Any]:
    """The header's JSON: an object of tensors whose byte ranges tile the data exactly (as the library)."""
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique)
    except _Duplicate as e:
        raise _fail(path, f"not a safetensors file: its header names {str(e)[:60]!r} twice") from e
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _fail(path, f"not a safetensors file: its header is not JSON ({str(e)[:100]})") from e
    if not isinstance(header, dict):
        raise _fail(path, "not a safetensors file: its header is not an object")
    metadata = header.get("__metadata__", {})
    if not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise _fail(path, "not a safetensors file: __metadata__ is not an object of strings")
    ranges = sorted(
        (*_entry(path, name, entry), name) for name, entry in header.items() if name != "__metadata__"
    )
    at = 0
    for begin, end, name in ranges:
        if begin != at:
            what = "overlap another tensor's" if begin < at else "leave a gap after the previous tensor's"
            raise _fail(path, f"tensor {name!r}: its bytes {begin}…{end} {what} (at {at})")
        at = end
    if at != data_size:
        raise _fail(path, f"not a safetensors file: its tensors hold {at} bytes, the file {data_size}")
    return header


def check_safetensors(path: Path) -> dict[str, Any]:
    """Validate a safetensors file's header without the library (reads the header only)."""
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(16)
            length = _header_length(path, head, size)
            fh.seek(8)
            raw = fh.read(length)
    except NotRegular as e:
        raise _fail(path, f"cannot read: {e.strerror} (a dump's files are regular files)") from e
    except OSError as e:
        raise _fail(path, f"cannot read: {e.strerror or e}") from e
    return _checked_header(path, head, raw, size - 8 - length)


def parse_safetensors(path: Path, data: bytes) -> tuple[dict[str, Any], memoryview]:
    """A whole safetensors file already read (``data``): its checked header and its data bytes."""
    length = _header_length(path, data[:16], len(data))
    header = _checked_header(path, data[:16], data[8 : 8 + length], len(data) - 8 - length)
    return header, memoryview(data)[8 + length :]


def read_dump(path: Path) -> Dump:  # noqa: C901 (one check per manifest field)
    """Check a dump directory (or its manifest.json) completely; DumpError naming the file otherwise."""
    directory = path.parent if path.name == "manifest.json" else path
    manifest_path = directory / "manifest.json"
    if not directory.is_dir():
        raise _fail(directory, "no such dump directory", "give RUN/incidents/step-N")
    if not os.path.lexists(manifest_path):
        raise _fail(manifest_path, "missing: not an envkit.guard dump", "give RUN/incidents/step-N")
    manifest = _load_json(manifest_path, MAX_MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise _fail(manifest_path, f"not an envkit.guard dump manifest (kind {_kind(manifest)})")
    if manifest.get("schema") != SCHEMA:
        raise _fail(manifest_path, f"schema {manifest.get('schema')!r}, this envkit reads schema {SCHEMA}")
    if manifest.get("framework") not in ("torch", "paddle"):
        raise _fail(manifest_path, f"framework {manifest.get('framework')!r}: expected torch or paddle")
    step = manifest.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise _fail(manifest_path, f"step {step!r}: expected a non-negative integer")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise _fail(manifest_path, "files: expected an object of name -> {sha256, bytes}")
    for required in ("batch.safetensors", "batch.json", "rng.json", "model.safetensors", "records.json"):
        if required not in files:
            raise _fail(manifest_path, f"files: {required} is not listed")
    for name, entry in files.items():
        _check_file(directory, manifest_path, name, entry)
    parts = {name: _load_json(directory / name) for name in JSON_FILES if name in files}
    for name in TENSOR_FILES:
        if name in files:
            check_safetensors(directory / name)
    return Dump(directory, manifest, parts)


def _check_file(directory: Path, manifest_path: Path, name: Any, entry: Any) -> None:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise _fail(manifest_path, f"files: {name!r} is not a dump file name (no paths, no dots)")
    if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
        raise _fail(manifest_path, f"files.{name}: expected {{sha256, bytes}}")
    path = directory / name
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if entry.get("bytes") != size:
                what = f"{size} bytes, the manifest recorded {entry.get('bytes')}: truncated or changed"
                raise _fail(path, what)
            digest = _hash(fh)
    except FileNotFoundError as e:
        raise _fail(path, "missing (the manifest lists it)") from e
    except NotRegular as e:
        raise _fail(path, f"cannot read: {e.strerror} (a dump's files are regular files, never links)") from e
    except OSError as e:
        raise _fail(path, f"cannot read: {e.strerror or e}") from e
    if digest != entry["sha256"]:
        raise _fail(
            path,
            f"sha256 {digest[:16]}… differs from the recorded {str(entry['sha256'])[:16]}…: "
            "the file was changed after the run wrote it; refusing to replay it",
        )


def _kind_of(entry: Any) -> str:
    return repr(entry.get("dtype") if isinstance(entry, dict) else entry)[:60]


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return repr(value.get("kind"))[:60]
    return type(value).__name__


def copy_dump(dump: Dump, target: Path, *, mode: int | None = None) -> Dump:
    """The checked ``dump`` copied into the new directory ``target``, and checked there again.

    Only the manifest's own files and the manifest: regular files, never through a link (a planted
    ``notes.json -> ~/.ssh/id_rsa`` is not copied, a listed file that became a link is refused), each
    hashed as it is copied and compared with the manifest. Each copy keeps its file's mode (at most
    0644: the guard writes 0600) unless ``mode`` is given; ``target`` is made 0700, then 0755 only
    when a ``mode`` readable by others is asked for (an image's user of another uid).
    """
    target.mkdir(mode=0o700)  # never an existing directory or a link (EEXIST)
    files: Mapping[str, Any] = dump.manifest["files"]
    for name in sorted(files):
        _copy_file(dump.path / name, target / name, mode, files[name])
    _copy_file(dump.path / "manifest.json", target / "manifest.json", mode, None)
    if mode is not None and mode & 0o044:
        target.chmod(0o755)
    copied = read_dump(target)
    if copied.manifest != dump.manifest:
        raise _fail(dump.path / "manifest.json", "changed while it was copied; refusing to stage it")
    return copied


def _copy_file(source: Path, target: Path, mode: int | None, entry: Any) -> None:
    h = hashlib.sha256()
    size = 0
    try:
        with open_regular(source) as src:
            keep = stat.S_IMODE(os.fstat(src.fileno()).st_mode) & 0o644 if mode is None else mode
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as dst:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    h.update(chunk)
                    size += len(chunk)
                    dst.write(chunk)
                os.fchmod(dst.fileno(), keep)
    except NotRegular as e:
        raise _fail(
            source, f"cannot copy: {e.strerror} (a dump's files are regular files, never links)"
        ) from e
    except OSError as e:
        raise _fail(source, f"cannot copy: {e.strerror or e}") from e
    if entry is not None and (h.hexdigest() != entry.get("sha256") or size != entry.get("bytes")):
        raise _fail(source, "changed while it was copied (its sha256 or size differs from the manifest's)")
