"""Layer normalization: the same files in any order, at any time, with any owner names give the same bytes."""

from __future__ import annotations

import hashlib
import io
import random
import tarfile

import pytest

from envkit.lock.epoch import EPOCH_START, EPOCH_WINDOW_S, epoch_rfc3339, source_date_epoch
from envkit.reproduce.layers import iter_entries, normalize_layer, normalized_size

EPOCH = 1_700_000_000


def _layer(
    order: list[str], *, now: int, names: tuple[str, str] = ("root", "root"), link_first: str = "a/x"
) -> bytes:
    """A layer tar as an engine might write it: entries in ``order``, times ``now``, owner names."""
    files = {
        "a": None,
        "a/x": b"same bytes\n",
        "a/y": b"same bytes\n",  # hard link of a/x (or the other way round)
        "a/old.txt": b"kept time\n",
        "opt/env/conda-meta/history": b"==> 2026-12-01 08:40:12 <==\n# cmd: install\n+channel::six-1.16\n",
        "opt/env/bin/python": "symlink",
        "opt/.wh.removed": b"",
    }
    other = "a/y" if link_first == "a/x" else "a/x"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in order:
            info = tarfile.TarInfo(name)
            info.mtime = 1_000 if name == "a/old.txt" else now
            info.uname, info.gname = names
            info.uid = info.gid = 10001 if name.startswith("opt") else 0
            info.pax_headers = {"atime": str(now), "ctime": f"{now}.123", "SCHILY.xattr.user.k": "v"}
            value = files[name]
            if value is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif value == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, "python3.11"
                tar.addfile(info)
            elif name == other:
                info.type, info.linkname = tarfile.LNKTYPE, link_first
                tar.addfile(info)
            else:
                assert isinstance(value, bytes)
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
    return buf.getvalue()


def _normalized(raw: bytes) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as source:
        planned = normalized_size(source, EPOCH)
        result = normalize_layer(source, out, EPOCH)
    data = out.getvalue()
    assert result.size == planned == len(data)
    assert result.diff_id == f"sha256:{hashlib.sha256(data).hexdigest()}"
    return data


NAMES = [
    "a",
    "a/x",
    "a/y",
    "a/old.txt",
    "opt/env/conda-meta/history",
    "opt/env/bin/python",
    "opt/.wh.removed",
]


def test_order_time_owner_names_and_link_direction_do_not_matter() -> None:
    shuffled = NAMES[:]
    random.Random(7).shuffle(shuffled)
    one = _normalized(_layer(NAMES, now=1_800_000_000))
    two = _normalized(_layer(shuffled, now=1_800_000_999, names=("envkit", "staff"), link_first="a/x"))
    reversed_link = [n for n in shuffled if n != "a/x"] + ["a/x"]  # a/y is now the regular file
    three = _normalized(_layer(["a", "a/y", *[n for n in reversed_link if n not in ("a", "a/y")]],
                               now=1_900_000_000, link_first="a/y"))  # fmt: skip
    assert one == two == three


def test_what_the_normalized_layer_holds() -> None:
    data = _normalized(_layer(NAMES, now=1_800_000_000))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == sorted(NAMES)
        by = {m.name: m for m in members}
        assert all(m.uname == "" and m.gname == "" for m in members)
        assert by["opt/env/bin/python"].uid == 10001  # numeric owners kept
        assert by["a/old.txt"].mtime == 1_000  # older than the epoch: kept
        assert {m.mtime for n, m in by.items() if n != "a/old.txt"} == {EPOCH}  # clamped
        assert by["a/x"].isreg() and by["a/y"].islnk() and by["a/y"].linkname == "a/x"
        assert all(set(m.pax_headers) <= {"SCHILY.xattr.user.k"} for m in members)  # no atime/ctime
        assert by["opt/.wh.removed"].isreg()  # whiteouts stay
        history = tar.extractfile(by["opt/env/conda-meta/history"]).read()  # type: ignore[union-attr]
    assert history.startswith(b"==> 2023-11-14 22:13:20 <==\n")  # the epoch, not the install time
    entries = {e.path: e for e in iter_entries(io.BytesIO(data))}
    assert entries["a/x"].sha256 == hashlib.sha256(b"same bytes\n").hexdigest()
    assert entries["a/y"].kind == "hardlink"


def test_a_changed_file_changes_the_layer() -> None:
    raw = _layer(NAMES, now=1_800_000_000).replace(b"kept time\n", b"kept tyme\n")
    assert _normalized(raw) != _normalized(_layer(NAMES, now=1_800_000_000))


def test_a_hard_link_to_a_missing_target_is_refused() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("b")
        info.type, info.linkname = tarfile.LNKTYPE, "nowhere"
        tar.addfile(info)
    with (
        tarfile.open(fileobj=io.BytesIO(buf.getvalue()), mode="r:") as source,
        pytest.raises(ValueError, match="nowhere"),
    ):
        normalize_layer(source, io.BytesIO(), EPOCH)


def test_epoch_comes_from_the_digest() -> None:
    a, b = source_date_epoch("ab" * 32), source_date_epoch("cd" * 32)
    assert a == source_date_epoch("ab" * 32) and a != b
    assert EPOCH_START <= a < EPOCH_START + EPOCH_WINDOW_S
    assert epoch_rfc3339(EPOCH) == "2023-11-14T22:13:20Z"
    with pytest.raises(ValueError):
        source_date_epoch("not hex")
