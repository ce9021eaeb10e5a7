"""Hostile packs: tar entries that would land outside the extraction folder or clash.

``envkit build --pack FILE`` extracts a tarball carried from another machine; every entry
must be a regular file inside the cache folder, once. Anything else is a PackMismatch
naming the pack, with nothing written outside the cache and no half extraction left.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from envkit.errors import PackMismatch
from envkit.offline.archive import open_pack
from envkit.offline.collect import PackRequest

REQUEST = PackRequest("demo", ("linux-64",), "0" * 64, {}, None, "3.11", {})


def _tar(path: Path, members: list[tuple[str, bytes | None, bytes]]) -> Path:
    """``(name, link target or None, data)``: a file, or a symlink when a target is given."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, link, data in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link.decode()
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


HOSTILE: dict[str, list[tuple[str, bytes | None, bytes]]] = {
    "dotdot": [("manifest.json", None, b"{}"), ("../../victim", None, b"x")],
    "absolute": [("/tmp/envkit-victim", None, b"x")],
    "symlink": [("channel", b"/", b""), ("channel/etc/victim", None, b"x")],
    "dot": [(".", None, b"x")],
    "file-then-dir": [("channel", None, b"x"), ("channel/noarch/a.conda", None, b"x")],
    "twice": [("wheels/a.whl", None, b"x"), ("wheels/a.whl", None, b"y")],
    "very-long": [("a" * 5000, None, b"x")],
    "deep-long": [("/".join(["d" * 200] * 40), None, b"x")],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_pack_entry_is_refused(case: str, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    pack = _tar(tmp_path / "in" / "hostile.tar", HOSTILE[case])
    cache = tmp_path / "home" / "cache"
    with pytest.raises(PackMismatch) as info:
        open_pack(pack, REQUEST, cache)
    assert str(pack) in info.value.message and len(info.value.message) < 600
    written = [p for p in tmp_path.rglob("*") if p.is_file() or p.is_symlink()]
    assert written == [pack]  # nothing extracted anywhere, no half extraction kept
    assert not Path("/tmp/envkit-victim").exists()
