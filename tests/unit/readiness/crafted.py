"""Hand-made ELF shared libraries with fatbins, for the readiness payload's tests (no CUDA toolkit needed).

The layout follows the ELF64 specification and the fatbin headers ``elfscan`` reads (checked
against cuobjdump on real libraries in ``test_real_wheels.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

FATBIN_MAGIC = 0xBA55ED50
ARCH_SPECIFIC = 0x100000


@dataclass
class Entry:
    kind: int  # 1 PTX, 2 ELF
    arch: int  # 90 for sm_90
    flags: int = 0x11
    payload: bytes = b"\0" * 24
    header_size: int = 64
    claimed: int | None = None  # payload size the header states (a lie when set)

    def encode(self) -> bytes:
        size = len(self.payload) if self.claimed is None else self.claimed
        head = struct.pack("<HHIQ", self.kind, 0x0101, self.header_size, size)
        head += struct.pack("<IIHHI", len(self.payload), 0, 7, 1, self.arch)
        head += struct.pack("<IIQQQ", 0, 0, self.flags, 0, 0)
        return head.ljust(self.header_size, b"\0") + self.payload


def fatbin(entries: Sequence[Entry], claimed: int | None = None) -> bytes:
    body = b"".join(e.encode() for e in entries)
    size = len(body) if claimed is None else claimed
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, size) + body


def sm(*archs: int, ptx: Sequence[int] = (), specific: Sequence[int] = ()) -> bytes:
    """One fatbin with SASS for ``archs`` (and ``specific`` as sm_XXa) and PTX for ``ptx``."""
    entries = [Entry(2, a) for a in archs] + [Entry(2, a, flags=0x11 | ARCH_SPECIFIC) for a in specific]
    return fatbin(entries + [Entry(1, p) for p in ptx])


@dataclass
class Library:
    soname: str | None = None
    needed: Sequence[str] = ()
    runpath: str | None = None
    fatbins: Sequence[bytes] = ()
    extra_sections: Sequence[tuple[str, bytes]] = field(default_factory=tuple)

    def encode(self) -> bytes:
        strtab = b"\0"
        offsets: dict[str, int] = {}
        for text in [
            *self.needed,
            *([self.soname] if self.soname else []),
            *([self.runpath] if self.runpath else []),
        ]:
            offsets[text] = len(strtab)
            strtab += text.encode() + b"\0"
        dyn = b"".join(struct.pack("<qQ", 1, offsets[n]) for n in self.needed)
        if self.soname:
            dyn += struct.pack("<qQ", 14, offsets[self.soname])
        if self.runpath:
            dyn += struct.pack("<qQ", 29, offsets[self.runpath])
        dyn += struct.pack("<qQ", 0, 0)
        nv = b"".join(fb.ljust((len(fb) + 7) // 8 * 8, b"\0") for fb in self.fatbins)
        sections: list[tuple[str, int, bytes, int]] = [("", 0, b"", 0), (".dynstr", 3, strtab, 0)]
        sections.append((".dynamic", 6, dyn, 1))
        if self.fatbins:
            sections.append((".nv_fatbin", 1, nv, 0))
        sections.extend((name, 1, data, 0) for name, data in self.extra_sections)
        names = b"\0"
        name_off = []
        for name, *_ in sections:
            name_off.append(len(names) if name else 0)
            if name:
                names += name.encode() + b"\0"
        sections.append((".shstrtab", 3, names, 0))
        name_off.append(len(names))
        names += b".shstrtab\0"
        sections[-1] = (".shstrtab", 3, names, 0)
        body = b""
        placed = []
        pos = 64
        for _, _, data, _ in sections:
            placed.append(pos if data else 0)
            body += data
            pos += len(data)
        shoff = 64 + len(body)
        headers = b""
        for (_, sh_type, data, link), off, noff in zip(sections, placed, name_off, strict=True):
            headers += struct.pack("<IIQQQQIIQQ", noff, sh_type, 0, 0, off, len(data), link, 0, 8, 0)
        ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
        head = ident + struct.pack(
            "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(sections), len(sections) - 1
        )
        return head + body + headers
