"""Read a shared library's ELF header, dynamic section and CUDA fatbins. Standard library only.

Only what the readiness check needs: ``DT_NEEDED``, ``DT_SONAME``, ``DT_RPATH``/``DT_RUNPATH``
and the GPU code of every fatbin in ``.nv_fatbin`` (SASS ``sm_XX``, PTX ``compute_XX``; not the
relocatable ``__nv_relfatbin``, which is never loaded). Nothing is read whole: headers are read
at their offsets and fatbin payloads are skipped by seeking, so a 2 GB ``libphi.so`` costs a few
thousand small reads. Every size the file states is checked against the file and the section
before it is used; a lie stops that file's walk with a *problem* (a string naming the file and
offset), never an exception.

Fatbin layout (little-endian), as written by NVIDIA's fatbinary tool and read back here::

    header  u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 fat_size (bytes of entries)
    entry   u16 kind (1 PTX, 2 ELF/SASS), u16 -, u32 header_size, u64 payload_size (padded),
            u32 -, u32 -, u16 minor, u16 major, u32 arch (e.g. 86), ..., u64 flags (at 40)
"""

from __future__ import annotations

import os
import stat
import struct
import time
from typing import BinaryIO

ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = 0xBA55ED50
FATBIN_MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
DT_NULL, DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 14, 15, 29
MAX_SECTIONS = 65535
MAX_DYNAMIC = 1 << 20  # bytes of .dynamic
MAX_STRING = 4096  # bytes of one dynamic string (a soname, a run path)
MAX_SHSTRTAB = 1 << 20
# Per FILE, over all its fatbin sections together (a bound per section let 1,600 section headers
# over one region walk the same bytes 1,600 times: 6.5 million entries from a 0.56 MB file).
MAX_ENTRIES = 4_000_000  # fatbin entries per file (libtorch_cuda: ~100k)
MAX_SECONDS = 60.0  # per file
MAX_GROUPS = 4096  # distinct arch sets recorded per file (libtorch_cuda: a handful)
RESYNC_WINDOW = 4096  # bytes searched for the next fatbin header after one ends
KIND_PTX, KIND_ELF = 1, 2
# The fatbins the CUDA runtime registers (__cudaRegisterFatBinary through .nvFatBinSegment). Not
# __nv_relfatbin: relocatable device code left for a later device link, never loaded (NCCL 2.19.3's
# cu11 wheel keeps compute_80 PTX there; cuobjdump --list-elf/--list-ptx do not list it either).
FATBIN_SECTIONS = (".nv_fatbin",)
# Arch-specific ("a") SASS: runs on that exact compute capability only (sm_90a, sm_100a). Read from
# torch 2.15.0's libtorch_cuda.so against cuobjdump 13.5 --list-elf: the entries it names sm_90a,
# sm_100a, sm_120a, sm_121a carry 0x100000 in their flags; its 59 "sm_103" entries carry 0x200000
# (printed without a suffix, so not given one here).
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_COMPRESSED = 0x2000


class ElfProblem(Exception):
    """This file cannot be read as a 64-bit little-endian ELF shared library (the message says why)."""


def _read_at(fh: BinaryIO, offset: int, size: int, file_size: int, what: str) -> bytes:
    if offset < 0 or size < 0 or offset + size > file_size:
        raise ElfProblem(
            f"{what} at offset {offset} ({size} bytes) lies past the end of the file ({file_size} bytes)"
        )
    fh.seek(offset)
    data = fh.read(size)
    if len(data) != size:
        raise ElfProblem(f"short read of {what} at offset {offset}")
    return data


def _cstr(table: bytes, offset: int) -> str:
    if offset < 0 or offset >= len(table):
        raise ElfProblem(f"string offset {offset} outside its table ({len(table)} bytes)")
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _sections(fh: BinaryIO, size: int) -> list[tuple[str, int, int, int, int]]:
    """(name, type, offset, size, link) of every section."""
    ident = _read_at(fh, 0, 64, size, "the ELF header") if size >= 64 else b""
    if ident[:4] != ELF_MAGIC:
        raise ElfProblem("not an ELF file")
    if ident[4] != 2 or ident[5] != 1:
        raise ElfProblem("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", ident, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if shnum == 0:
        return []
    if shentsize != 64 or shnum > MAX_SECTIONS or shstrndx >= shnum:
        raise ElfProblem(
            f"implausible section table ({shnum} entries of {shentsize} bytes, names in {shstrndx})"
        )
    table = _read_at(fh, shoff, shnum * 64, size, "the section table")
    raw = [struct.unpack_from("<IIQQQQII", table, i * 64) for i in range(shnum)]
    _, _, _, _, str_off, str_size, _, _ = raw[shstrndx]
    if str_size > MAX_SHSTRTAB:
        raise ElfProblem(f"section-name table of {str_size} bytes (limit {MAX_SHSTRTAB})")
    names = _read_at(fh, str_off, str_size, size, "the section-name table")
    out = []
    for name_off, sh_type, _flags, _addr, off, sh_size, link, _info in raw:
        name = _cstr(names, name_off) if name_off < len(names) else "?"
        out.append((name, sh_type, off, sh_size, link))
    return out


def _dynamic(fh: BinaryIO, size: int, sections: list[tuple[str, int, int, int, int]]) -> dict[str, object]:
    dyn = next((s for s in sections if s[1] == 6), None)  # SHT_DYNAMIC
    if dyn is None:
        return {"needed": [], "soname": None, "rpath": [], "runpath": []}
    _, _, off, dsize, link = dyn
    if dsize > MAX_DYNAMIC:
        raise ElfProblem(f".dynamic of {dsize} bytes (limit {MAX_DYNAMIC})")
    if link >= len(sections):
        raise ElfProblem(".dynamic names a string table that does not exist")
    data = _read_at(fh, off, dsize - dsize % 16, size, ".dynamic")
    _, _, str_off, str_size, _ = sections[link]
    if str_off + str_size > size:
        raise ElfProblem(
            f"the dynamic string table ({str_size} bytes at {str_off}) lies past the end of the file"
        )
    out: dict[str, object] = {"needed": [], "soname": None, "rpath": [], "runpath": []}
    for i in range(0, len(data), 16):
        tag, val = struct.unpack_from("<qQ", data, i)
        if tag == DT_NULL:
            break
        if tag not in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
            continue
        if val >= str_size:
            raise ElfProblem(f"dynamic entry {tag} names string {val}, outside its table ({str_size} bytes)")
        text = _cstr(
            _read_at(fh, str_off + val, min(MAX_STRING, str_size - val), size, "a dynamic string"), 0
        )
        if tag == DT_NEEDED:
            out["needed"].append(text)
        elif tag == DT_SONAME:
            out["soname"] = text
        else:
            key = "rpath" if tag == DT_RPATH else "runpath"
            out[key].extend(p for p in text.split(":") if p)
    return out


def arch_name(kind: int, arch: int, flags: int) -> str:
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else ""
    return ("compute_" if kind == KIND_PTX else "sm_") + str(arch) + suffix


class _Budget:
    """What one file may cost, all its fatbin sections together: entries read and the deadline."""

    def __init__(self) -> None:
        self.entries = 0
        self.deadline = time.monotonic() + MAX_SECONDS
        self.groups: dict[tuple[str, ...], int] = {}  # the arch set of a fatbin -> how many fatbins have it

    def spend(self) -> None:
        if self.entries >= MAX_ENTRIES or time.monotonic() > self.deadline:
            raise ElfProblem(
                f"more than {MAX_ENTRIES} fatbin entries or {MAX_SECONDS:.0f} s in this file: walk stopped"
            )
        self.entries += 1


def _fatbin_regions(sections: list[tuple[str, int, int, int, int]], size: int) -> list[tuple[int, int]]:
    """(offset, size) of each ``.nv_fatbin`` section holding bytes; sections that share bytes are a
    problem (a linker never writes them; a crafted file repeats one region to multiply the walk)."""
    regions = sorted(
        (off, sec_size)
        for name, sh_type, off, sec_size, _link in sections
        if name in FATBIN_SECTIONS and sh_type != 8  # SHT_NOBITS holds no bytes
    )
    for off, sec_size in regions:
        if off + sec_size > size:
            raise ElfProblem(f".nv_fatbin ({sec_size} bytes at {off}) lies past the end of the file ({size})")
    for (a_off, a_size), (b_off, b_size) in zip(regions, regions[1:]):  # noqa: RUF007 (Python 3.8)
        if b_off < a_off + a_size or (b_off == a_off and b_size and a_size):
            raise ElfProblem(
                f".nv_fatbin sections overlap ({a_size} bytes at {a_off} and {b_size} bytes at "
                f"{b_off}): {len(regions)} fatbin sections, not read"
            )
    return regions


class _Walk:
    """The fatbins of one ``.nv_fatbin`` section, walked header by header."""

    def __init__(self, fh: BinaryIO, start: int, length: int, budget: _Budget) -> None:
        self.fh, self.start, self.end, self.budget = fh, start, start + length, budget
        self.fatbins = 0
        self.sass: dict[str, int] = {}
        self.ptx: dict[str, int] = {}
        self.elf_entries: dict[str, int] = {}  # entries per arch, as cuobjdump --list-elf counts them
        self.other = 0
        self.compressed = 0

    def _header(self, pos: int, size: int) -> bytes:
        self.fh.seek(pos)
        data = self.fh.read(size)
        if len(data) != size:
            raise ElfProblem(f"fatbin header at offset {pos} cut short (the file ends)")
        return data

    def _resync(self, pos: int) -> int | None:
        """The next fatbin header within a small window (fatbins are padded to alignment)."""
        window = min(RESYNC_WINDOW, self.end - pos)
        if window < 16:
            return None
        self.fh.seek(pos)
        found = self.fh.read(window).find(FATBIN_MAGIC_BYTES)
        return pos + found if found >= 0 else None

    def run(self) -> None:
        pos: int | None = self.start
        while pos is not None and pos + 16 <= self.end:
            magic, _version, hsize, fat_size = struct.unpack("<IHHQ", self._header(pos, 16))
            if magic != FATBIN_MAGIC:
                nxt = self._resync(pos)
                if nxt is None and any(self._header(pos, min(16, self.end - pos))):
                    raise ElfProblem(f"no fatbin header at offset {pos} of .nv_fatbin (unknown data)")
                pos = nxt
                continue
            if hsize < 16 or pos + hsize + fat_size > self.end:
                raise ElfProblem(
                    f"fatbin at offset {pos} claims {fat_size} bytes; "
                    f"its section has {self.end - pos - hsize} left"
                )
            self.fatbins += 1
            self._entries(pos + hsize, pos + hsize + fat_size)
            pos = pos + hsize + fat_size

    def _entries(self, pos: int, end: int) -> None:
        kinds: dict[str, int] = {}
        while pos + 32 <= end:
            self.budget.spend()
            head = self._header(pos, min(64, end - pos))
            kind, _v, hsize, payload = struct.unpack_from("<HHIQ", head, 0)
            if hsize < 32 or hsize > 4096 or pos + hsize + payload > end:
                raise ElfProblem(
                    f"fatbin entry at offset {pos} claims {hsize}+{payload} bytes; {end - pos} left"
                )
            arch = struct.unpack_from("<I", head, 28)[0]
            flags = struct.unpack_from("<Q", head, 40)[0] if len(head) >= 48 else 0
            if flags & FLAG_COMPRESSED:
                self.compressed += 1
            if kind in (KIND_PTX, KIND_ELF) and 0 < arch < 10000:
                name = arch_name(kind, arch, flags)
                kinds[name] = kind
                if kind == KIND_ELF:
                    self.elf_entries[name] = self.elf_entries.get(name, 0) + 1
            else:
                self.other += 1
            pos += hsize + payload
        for name, kind in kinds.items():  # count fatbins, not entries
            target = self.ptx if kind == KIND_PTX else self.sass
            target[name] = target.get(name, 0) + 1
        signature = tuple(sorted(kinds))
        groups = self.budget.groups
        if signature in groups or len(groups) < MAX_GROUPS:
            groups[signature] = groups.get(signature, 0) + 1


def scan(path: str) -> dict[str, object]:
    """One library: soname, needed, rpath/runpath, fatbins (counts per arch), problem (or None)."""
    try:
        # O_NONBLOCK: a FIFO planted where a library was found (or swapped in since) never blocks the
        # open; anything but a regular file is refused once open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ElfProblem("not a regular file")
            return scan_stream(fh, info.st_size)
    except ElfProblem as e:
        out = _empty()
        out["problem"] = str(e)
        return out
    except OSError as e:
        out = _empty()
        out["problem"] = f"unreadable: {type(e).__name__}: {e}"
        return out


def _empty() -> dict[str, object]:
    out: dict[str, object] = {"soname": None, "needed": [], "rpath": [], "runpath": [], "fatbins": 0}
    out.update({"sass": {}, "ptx": {}, "elf_entries": {}, "groups": [], "problem": None, "size": None})
    return out


def scan_stream(fh: BinaryIO, size: int) -> dict[str, object]:
    """:func:`scan` of an open, seekable binary stream of ``size`` bytes (a file, a wheel's member)."""
    out = _empty()
    out["size"] = size
    budget = _Budget()
    try:
        sections = _sections(fh, size)
        out.update(_dynamic(fh, size, sections))
        for off, sec_size in _fatbin_regions(sections, size):
            walk = _Walk(fh, off, sec_size, budget)
            try:
                walk.run()
            finally:
                _merge(out, walk)
    except ElfProblem as e:
        out["problem"] = str(e)
    except (OSError, struct.error, ValueError, MemoryError, EOFError, RuntimeError) as e:
        out["problem"] = f"unreadable: {type(e).__name__}: {e}"
    for signature, n in sorted(budget.groups.items(), key=lambda kv: (-kv[1], kv[0])):
        out["groups"].append({"archs": list(signature), "fatbins": n})
    return out


def _merge(out: dict[str, object], walk: _Walk) -> None:
    out["fatbins"] += walk.fatbins
    for key, counts in (("sass", walk.sass), ("ptx", walk.ptx), ("elf_entries", walk.elf_entries)):
        merged = dict(out[key])
        for arch, n in counts.items():
            merged[arch] = merged.get(arch, 0) + n
        out[key] = dict(sorted(merged.items()))
