"""Hostile advisory downloads: names that would become paths outside the database.

``envkit audit --update-db`` turns each record's package name and each archive entry's
name into a path. Every hostile case must refuse the whole update with an AuditError
naming the record, write nothing outside (or inside) the database, and leave the
previous database byte for byte as it was.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.audit.osv_dir import OsvDirService
from envkit.audit.service import Dep
from envkit.audit.update_db import OSV_PYPI_URL, update_db, valid_distribution_name
from envkit.errors import AuditError, ExitCode
from envkit.offline.testing import FakeFetcher
from tests.unit.hardening.conftest import Run


def served(data: bytes) -> FakeFetcher:
    """The one Fetcher's fake, serving ``data`` as the OSV export."""
    return FakeFetcher({OSV_PYPI_URL: data})


def _record(package: str, ident: str = "PYSEC-2099-1") -> dict[str, Any]:
    return {
        "id": ident,
        "details": "d",
        "affected": [
            {
                "package": {"name": package, "ecosystem": "PyPI"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.1"}]}],
            }
        ],
    }


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, raw in entries.items():
            archive.writestr(name, raw)
    return buffer.getvalue()


GOOD = {"PYSEC-2099-0.json": json.dumps(_record("demo-pkg", "PYSEC-2099-0")).encode()}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def database(tmp_path: Path) -> Path:
    target = tmp_path / "home" / "db"
    update_db(target, served(_zip(GOOD)))
    return target


def _outside_name(tmp_path: Path) -> str:
    return str(tmp_path / "home" / "victim")


HOSTILE_NAMES: dict[str, Callable[[Path], str]] = {
    "absolute": _outside_name,
    "absolute-config": lambda tmp: str(tmp / "home" / ".docker"),
    "dotdot": lambda tmp: "../../victim",
    "dotdot-only": lambda tmp: "..",
    "dot": lambda tmp: ".",
    "slash": lambda tmp: "a/b",
    "backslash": lambda tmp: "a\\..\\..\\victim",
    "nul": lambda tmp: "torch\x00/etc/passwd",
    "empty": lambda tmp: "",
    "very-long": lambda tmp: "a" * 5000,
    "newline": lambda tmp: "torch\n",
    "leading-dash": lambda tmp: "-torch",
    "kelvin-sign": lambda tmp: "\u212aeras",  # 'K' KELVIN SIGN lowercases to ASCII 'k'
    "cyrillic-o": lambda tmp: "t\u043erch",
    "fullwidth": lambda tmp: "\uff54\uff4f\uff52\uff43\uff48",
    "bidi-override": lambda tmp: "torch\u202e",
    "space": lambda tmp: "torch vision",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_NAMES))
def test_a_hostile_package_name_refuses_the_whole_update(case: str, database: Path, tmp_path: Path) -> None:
    name = HOSTILE_NAMES[case](tmp_path)
    before = _snapshot(tmp_path)
    download = _zip({**GOOD, "PYSEC-2099-7.json": json.dumps(_record(name, "PYSEC-2099-7")).encode()})
    with pytest.raises(AuditError) as info:
        update_db(database, served(download))
    message = info.value.message
    assert "PYSEC-2099-7.json" in message and "refused" in message
    assert "\x00" not in message and "\u202e" not in message and len(message) < 600
    assert info.value.exit_code == ExitCode.FAILURE
    assert _snapshot(tmp_path) == before  # nothing written anywhere under tmp, the old db intact
    assert not (tmp_path / "home" / ".db.new").exists()
    assert not (tmp_path / "victim").exists() and not (tmp_path / "home" / "victim").exists()


@pytest.mark.parametrize(
    "entry",
    [
        "../../victim.json",
        "/abs/victim.json",
        "a\\..\\victim.json",
        ".hidden.json",
        "x/../../v.json",
        "C:\\victim.json",
    ],  # a NUL cannot reach update_db: zipfile cuts entry names at the first NUL
)
def test_a_hostile_archive_entry_refuses_the_update(entry: str, database: Path, tmp_path: Path) -> None:
    before = _snapshot(tmp_path)
    raw = json.dumps(_record("demo-pkg", "PYSEC-2099-8")).encode()
    try:
        download = _zip({**GOOD, entry: raw})
    except ValueError:  # zipfile itself refuses the name: craft nothing further
        pytest.skip("zipfile cannot write this name")
    with pytest.raises(AuditError, match="refused"):
        update_db(database, served(download))
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("case", "raw"),
    [
        ("deep-nesting", b"[" * 100_000 + b"]" * 100_000),
        ("huge-integer", b'{"id": "X", "affected": [], "n": ' + b"9" * 5000 + b"}"),
        ("not-utf8", b"\xff\xfe{}"),
        ("oversized", b'{"id": "X", "details": "' + b"a" * (5 * 1024 * 1024) + b'", "affected": []}'),
        ("list", b"[]"),
    ],
)
def test_unreadable_records_refuse_the_update(case: str, raw: bytes, database: Path, tmp_path: Path) -> None:
    before = _snapshot(tmp_path)
    download = _zip({**GOOD, "PYSEC-2099-9.json": raw})
    with pytest.raises(AuditError, match=r"PYSEC-2099-9\.json"):
        update_db(database, served(download))
    assert _snapshot(tmp_path) == before


def test_a_corrupted_zip_entry_is_an_error_not_a_traceback(database: Path, tmp_path: Path) -> None:
    data = bytearray(_zip({**GOOD, "PYSEC-2099-5.json": json.dumps(_record("demo-pkg")).encode() * 50}))
    body = data.find(b"PYSEC-2099-5.json") + len("PYSEC-2099-5.json")
    data[body + 40] ^= 0xFF  # corrupt the stored record: a CRC mismatch on read
    before = _snapshot(tmp_path)
    with pytest.raises(AuditError, match="refused"):
        update_db(database, served(bytes(data)))
    assert _snapshot(tmp_path) == before


def test_real_names_still_land_in_their_canonical_folder(tmp_path: Path) -> None:
    names = ["Pillow", "zope.interface", "backports_abc", "opencv-python-headless", "a", "tensorflow-gpu"]
    entries = {
        f"PYSEC-2099-{i}.json": json.dumps(_record(n, f"PYSEC-2099-{i}")).encode()
        for i, n in enumerate(names)
    }
    meta = update_db(tmp_path / "db", served(_zip({f"nested/{k}": v for k, v in entries.items()})))
    assert meta["records"] == len(names)
    folders = sorted(p.name for p in (tmp_path / "db" / "vulns").iterdir())
    assert folders == sorted(
        ["pillow", "zope-interface", "backports-abc", "opencv-python-headless", "a", "tensorflow-gpu"]
    )
    _, vulns = OsvDirService(tmp_path / "db").query(Dep("zope.interface", "1.0"))
    assert [v.id for v in vulns] == ["PYSEC-2099-1"]


@pytest.mark.parametrize(
    ("name", "ok"),
    [("torch", True), ("a", True), ("zope.interface", True), ("x_", False), ("/x", False), ("é", False)],
)
def test_valid_distribution_name(name: str, ok: bool) -> None:
    assert valid_distribution_name(name) is ok


def test_cli_update_db_with_a_hostile_download_is_exit_3(
    envkit: Callable[..., Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    download = _zip({"PYSEC-2099-7.json": json.dumps(_record(str(tmp_path / "victim"))).encode()})
    # the one Fetcher that Services builds (urllib) serves the hostile download
    monkeypatch.setattr("envkit.offline.fetch.UrlFetcher", lambda: FakeFetcher({OSV_PYPI_URL: download}))
    run = envkit("audit", "--update-db", str(tmp_path / "db"))
    assert run.code == ExitCode.FAILURE
    assert "PYSEC-2099-7.json" in run.err and "not a PEP 508 distribution name" in run.err
    assert not (tmp_path / "victim").exists() and not (tmp_path / "db").exists()
