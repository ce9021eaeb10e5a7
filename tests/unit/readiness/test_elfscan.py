"""The payload's ELF/fatbin reader on crafted libraries: what it reads, and hostile files it survives."""

from __future__ import annotations

import importlib.util
import itertools
import os
import struct
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit.payload import PAYLOAD_DIR
from tests.unit.readiness.crafted import Entry, Library, fatbin, sm


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"envkit_payload_{name}", PAYLOAD_DIR / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


elfscan = _load("elfscan")


def _write(tmp_path: Path, data: bytes, name: str = "libx.so") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_reads_needed_soname_runpath_and_the_archs_of_each_fatbin(tmp_path: Path) -> None:
    lib = Library(
        soname="libphi.so",
        needed=["libcudnn.so.8", "libc.so.6"],
        runpath="$ORIGIN:$ORIGIN/../libs",
        fatbins=[sm(61, 70, 80), sm(61, 70, 80), sm(35, 90, ptx=[90], specific=[90])],
    )
    out = elfscan.scan(_write(tmp_path, lib.encode()))
    assert out["problem"] is None
    assert out["soname"] == "libphi.so"
    assert out["needed"] == ["libcudnn.so.8", "libc.so.6"]
    assert out["runpath"] == ["$ORIGIN", "$ORIGIN/../libs"]
    assert out["fatbins"] == 3
    assert out["sass"] == {"sm_35": 1, "sm_61": 2, "sm_70": 2, "sm_80": 2, "sm_90": 1, "sm_90a": 1}
    assert out["ptx"] == {"compute_90": 1}
    assert out["groups"] == [
        {"archs": ["sm_61", "sm_70", "sm_80"], "fatbins": 2},
        {"archs": ["compute_90", "sm_35", "sm_90", "sm_90a"], "fatbins": 1},
    ]


def test_a_library_without_gpu_code_has_no_fatbins(tmp_path: Path) -> None:
    out = elfscan.scan(_write(tmp_path, Library(soname="libz.so.1").encode()))
    assert (out["problem"], out["fatbins"], out["sass"], out["needed"]) == (None, 0, {}, [])


def test_relocatable_fatbins_are_not_what_the_runtime_loads(tmp_path: Path) -> None:
    lib = Library(fatbins=[sm(80)], extra_sections=[("__nv_relfatbin", sm(80, ptx=[80]) * 2)])
    out = elfscan.scan(_write(tmp_path, lib.encode()))
    assert out["problem"] is None and out["fatbins"] == 1 and out["ptx"] == {}


def test_zero_padding_between_fatbins_is_skipped(tmp_path: Path) -> None:
    padded = sm(80) + b"\0" * 40
    out = elfscan.scan(_write(tmp_path, Library(fatbins=[padded, sm(86)]).encode()))
    assert out["problem"] is None and out["sass"] == {"sm_80": 1, "sm_86": 1}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "not an ELF"),
        (b"#!/bin/sh\necho not a library\n" * 10, "not an ELF"),
        (b"\x7fELF" + bytes([1, 1, 1]) + b"\0" * 57, "64-bit little-endian"),  # 32-bit
        (b"\x7fELF" + bytes([2, 2, 1]) + b"\0" * 57, "64-bit little-endian"),  # big-endian
        (b"\x7fELF\x02\x01", "not an ELF"),  # shorter than a header
    ],
)
def test_non_elf_files_are_a_problem_naming_why(tmp_path: Path, data: bytes, words: str) -> None:
    out = elfscan.scan(_write(tmp_path, data))
    assert out["problem"] and words in out["problem"]


def test_every_truncation_of_a_library_is_a_problem_or_a_clean_read(tmp_path: Path) -> None:
    whole = Library(soname="libt.so", needed=["libm.so.6"], fatbins=[sm(80, 90), sm(86, ptx=[86])]).encode()
    problems = 0
    for cut in range(0, len(whole), 7):
        out = elfscan.scan(_write(tmp_path, whole[:cut]))
        assert isinstance(out["problem"], str), cut  # the section table sits at the end: every cut loses it
        problems += 1
    assert problems > 10


def test_a_fatbin_whose_size_lies_stops_the_walk_with_its_offset(tmp_path: Path) -> None:
    liar = fatbin([Entry(2, 80)], claimed=1 << 40)
    out = elfscan.scan(_write(tmp_path, Library(fatbins=[sm(70), liar]).encode()))
    assert "claims 1099511627776 bytes" in out["problem"]
    assert out["sass"] == {"sm_70": 1}  # what was read before the lie stays


def test_an_entry_whose_payload_size_lies_is_a_problem(tmp_path: Path) -> None:
    liar = fatbin([Entry(2, 80, claimed=1 << 33)])
    out = elfscan.scan(_write(tmp_path, Library(fatbins=[liar]).encode()))
    assert "fatbin entry at offset" in out["problem"] and "claims" in out["problem"]


def test_an_entry_with_an_impossible_header_size_is_a_problem(tmp_path: Path) -> None:
    for header_size in (0, 8):
        bad = fatbin([Entry(2, 80, header_size=64)])
        bad = bad[:20] + struct.pack("<I", header_size) + bad[24:]
        out = elfscan.scan(_write(tmp_path, Library(fatbins=[bad]).encode()))
        assert "fatbin entry at offset" in out["problem"], header_size


def test_garbage_inside_the_fatbin_section_is_named(tmp_path: Path) -> None:
    out = elfscan.scan(_write(tmp_path, Library(fatbins=[b"\x01" * 64]).encode()))
    assert "no fatbin header at offset" in out["problem"]


def test_section_table_past_the_end_is_a_problem(tmp_path: Path) -> None:
    data = bytearray(Library(soname="libx.so").encode())
    struct.pack_into("<Q", data, 0x28, len(data) * 100)  # e_shoff
    out = elfscan.scan(_write(tmp_path, bytes(data)))
    assert "past the end of the file" in out["problem"]


def test_huge_section_counts_are_refused_before_reading(tmp_path: Path) -> None:
    data = bytearray(Library(soname="libx.so").encode())
    struct.pack_into("<HHH", data, 0x3A, 64, 65535, 1)  # 65,535 sections: 4 MB of headers claimed
    out = elfscan.scan(_write(tmp_path, bytes(data)))
    assert out["problem"] and "past the end" in out["problem"]
    struct.pack_into("<HHH", data, 0x3A, 4096, 10, 1)  # entries of 4 KB: not ELF64
    assert "implausible section table" in elfscan.scan(_write(tmp_path, bytes(data)))["problem"]


def test_a_huge_sparse_file_is_read_by_headers_only(tmp_path: Path) -> None:
    # 64 GiB on paper (sparse: no disk used), a real library at the start, a lying fatbin at the end
    path = tmp_path / "libhuge.so"
    lib = Library(soname="libhuge.so", fatbins=[sm(80), fatbin([Entry(2, 80)], claimed=(64 << 30))]).encode()
    with path.open("wb") as fh:
        fh.write(lib)
        fh.truncate(64 << 30)
    out = elfscan.scan(str(path))
    assert out["size"] == 64 << 30
    assert "claims" in out["problem"] and out["sass"] == {"sm_80": 1}


def test_a_symlink_loop_and_a_directory_are_unreadable_not_tracebacks(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b.so", tmp_path / "a.so")
    os.symlink(tmp_path / "a.so", tmp_path / "b.so")
    assert "unreadable" in elfscan.scan(str(tmp_path / "a.so"))["problem"]
    (tmp_path / "dir.so").mkdir()
    assert "unreadable" in elfscan.scan(str(tmp_path / "dir.so"))["problem"]
    assert "unreadable" in elfscan.scan(str(tmp_path / "absent.so"))["problem"]


def test_dynamic_strings_outside_their_table_are_a_problem(tmp_path: Path) -> None:
    data = bytearray(Library(needed=["libc.so.6"]).encode())
    at = data.find(struct.pack("<qQ", 1, 1))  # DT_NEEDED -> offset 1 of .dynstr
    struct.pack_into("<qQ", data, at, 1, 1 << 50)
    assert "outside its table" in elfscan.scan(_write(tmp_path, bytes(data)))["problem"]


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=0, max_size=64), st.integers(min_value=0, max_value=10_000))
def test_random_damage_never_raises(tmp_path_factory: pytest.TempPathFactory, junk: bytes, at: int) -> None:
    whole = bytearray(
        Library(soname="libf.so", needed=["libm.so.6"], fatbins=[sm(80, ptx=[80]), sm(90)]).encode()
    )
    at %= len(whole)
    whole[at : at + len(junk)] = junk
    path = tmp_path_factory.mktemp("fuzz") / "libf.so"
    path.write_bytes(bytes(whole))
    out = elfscan.scan(str(path))
    assert out["problem"] is None or isinstance(out["problem"], str)
    assert sum(g["fatbins"] for g in out["groups"]) <= out["fatbins"] + 1


# -- amplification: bounds per file, sections that share bytes (security round 4, item 9) ----------------
def _with_repeated_section(data: bytes, copies: int, shift: int = 0) -> bytes:
    """``data`` with its ``.nv_fatbin`` section header appended ``copies`` more times, the n-th copy
    starting ``n * shift`` bytes later (0: all over the same region) and as long as the original."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum = struct.unpack_from("<H", data, 0x3C)[0]
    headers = [data[shoff + i * 64 : shoff + (i + 1) * 64] for i in range(shnum)]
    fat = next(h for h in headers if struct.unpack_from("<I", h, 4)[0] == 1 and h is not headers[0])
    name, sh_type, flags, addr, off, size, link, info, align, ent = struct.unpack("<IIQQQQIIQQ", fat)
    extra = b"".join(
        struct.pack("<IIQQQQIIQQ", name, sh_type, flags, addr, off + n * shift, size, link, info, align, ent)
        for n in range(1, copies + 1)
    )
    out = bytearray(data + extra)
    struct.pack_into("<H", out, 0x3C, shnum + copies)
    return bytes(out)


@pytest.mark.parametrize(
    ("copies", "shift"),
    [
        (1599, 0),  # the finding: 1,600 section headers over one region
        (1, 0),  # one duplicate
        (200, 8),  # each copy 8 bytes later: every pair overlaps
        (1, 16),  # one overlapping by all but 16 bytes
    ],
)
def test_fatbin_sections_that_share_bytes_are_refused(tmp_path: Path, copies: int, shift: int) -> None:
    lib = Library(soname="libamp.so", fatbins=[sm(80, 90, ptx=[90]) for _ in range(20)]).encode()
    out = elfscan.scan(_write(tmp_path, _with_repeated_section(lib, copies, shift)))
    assert out["problem"] and ".nv_fatbin sections overlap" in out["problem"]
    assert out["fatbins"] == 0  # nothing walked, let alone 1,600 times


def test_a_section_nested_inside_another_is_refused(tmp_path: Path) -> None:
    lib = Library(soname="libnest.so", fatbins=[sm(80), sm(86), sm(90)]).encode()
    data = bytearray(_with_repeated_section(lib, 1))
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum = struct.unpack_from("<H", data, 0x3C)[0]
    last = shoff + (shnum - 1) * 64
    off, size = struct.unpack_from("<QQ", data, last + 24)
    struct.pack_into("<QQ", data, last + 24, off + 8, size // 3)  # a slice inside the first one
    out = elfscan.scan(_write(tmp_path, bytes(data)))
    assert out["problem"] and "overlap" in out["problem"]


def test_the_entry_bound_is_per_file_not_per_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # two sections that do not overlap, 30 entries each: a bound of 40 per file stops the walk
    monkeypatch.setattr(elfscan, "MAX_ENTRIES", 40)
    one = b"".join(sm(80, 86, 90) for _ in range(10))
    lib = Library(fatbins=[one], extra_sections=[(".nv_fatbin", one)]).encode()
    out = elfscan.scan(_write(tmp_path, lib))
    assert (
        out["problem"] and "more than 40 fatbin entries" in out["problem"] and "this file" in out["problem"]
    )
    monkeypatch.setattr(elfscan, "MAX_ENTRIES", 60)
    out = elfscan.scan(_write(tmp_path, lib))
    assert out["problem"] is None and out["fatbins"] == 20  # both sections read, once each


def test_the_group_bound_is_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elfscan, "MAX_GROUPS", 3)
    sections = [(".nv_fatbin", sm(50 + i)) for i in range(8)]  # eight sections, eight arch sets
    out = elfscan.scan(_write(tmp_path, Library(fatbins=[sm(90)], extra_sections=sections).encode()))
    assert out["problem"] is None and out["fatbins"] == 9
    assert len(out["groups"]) == 3


def test_the_deadline_is_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = itertools.count(0, 7)  # every look at the clock 7 s later
    monkeypatch.setattr(elfscan.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(elfscan, "MAX_SECONDS", 60.0)
    one = b"".join(sm(80) for _ in range(6))
    lib = Library(fatbins=[one], extra_sections=[(".nv_fatbin", one)]).encode()
    out = elfscan.scan(_write(tmp_path, lib))
    assert out["problem"] and "60 s in this file" in out["problem"]
