"""The advisory index: the answers of the files, rebuilt when the database or the index file changes."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.audit import index as index_module
from envkit.audit.index import AdvisoryIndex, decode_record, default_index_dir, encode_record
from envkit.audit.osv_dir import OsvDirService, OsvRecord
from envkit.audit.service import Dep, Vuln
from envkit.cli import main
from envkit.errors import AuditError, ExitCode

QUERIES = [("demo", v) for v in ("1.0", "1.4.9+cu121", "2.0.1", "2.1.0", "3.0.1", "4.2.0", "9.0", "x")] + [
    ("zstd", "1.0"),
    ("Torch.Thing", "5.0"),
    ("torch_thing", "0.9"),
    ("absent", "1.0"),
]

NEW_RECORD = """
id: PYSEC-0100
details: Added later.
affected:
- package: {name: zstd, ecosystem: PyPI}
  versions: ["7.0"]
"""


def answers(service: OsvDirService) -> list[tuple[Dep, list[Vuln]]]:
    return [service.query(Dep(name, version)) for name, version in QUERIES]


def header_of(cache: Path) -> dict[str, Any]:
    (path,) = cache.iterdir()
    header: dict[str, Any] = json.loads(path.read_bytes().partition(b"\n")[0])
    return header


def opened(db: Path, cache: Path) -> AdvisoryIndex:
    """The index after one lookup (it opens on the first)."""
    service, index = indexed(db, cache)
    service.query(Dep("demo", "1.0"))
    return index


def indexed(db: Path, cache: Path) -> tuple[OsvDirService, AdvisoryIndex]:
    service = OsvDirService(db, index_dir=cache)
    index = service._advisory_index
    assert index is not None
    return service, index


def test_the_index_answers_as_the_files_do_and_is_reused(osv_db: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, index = indexed(osv_db, cache)
    assert answers(first) == answers(OsvDirService(osv_db))
    assert index.rebuilt == "missing"
    header = json.loads(index.path.read_bytes().partition(b"\n")[0])  # JSON, never pickle
    assert header["kind"] == "envkit-advisory-index" and sorted(header["names"]) == [
        "demo", "torch-thing", "zstd",
    ]  # fmt: skip
    second, again = indexed(osv_db, cache)
    assert answers(second) == answers(OsvDirService(osv_db))
    assert again.rebuilt is None  # read from the cache, not rebuilt


def test_a_changed_or_added_advisory_file_is_seen_on_the_next_run(osv_db: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    service, _ = indexed(osv_db, cache)
    assert [v.id for v in service.query(Dep("demo", "9.0"))[1]] == []
    # Same size, rewritten at once (within one timestamp tick): the content check catches it.
    path = osv_db / "vulns" / "demo" / "PYSEC-0004.yaml"
    text = path.read_text("utf-8")
    path.write_text(text.replace("withdrawn:", "modified: "), "utf-8")
    assert len(path.read_text("utf-8")) == len(text)
    service, index = indexed(osv_db, cache)
    assert [v.id for v in service.query(Dep("demo", "9.0"))[1]] == ["PYSEC-0004"]
    assert index.rebuilt == "the database changed"
    (osv_db / "vulns" / "zstd" / "PYSEC-0100.yaml").write_text(NEW_RECORD.lstrip(), "utf-8")
    service, index = indexed(osv_db, cache)
    assert [v.id for v in service.query(Dep("zstd", "7.0"))[1]] == ["PYSEC-0006", "PYSEC-0100"]
    assert index.rebuilt == "the database changed"
    (osv_db / "vulns" / "zstd" / "PYSEC-0100.yaml").unlink()
    (osv_db / "vulns" / "newpkg").mkdir()
    (osv_db / "vulns" / "newpkg" / "PYSEC-0101.yaml").write_text(
        NEW_RECORD.replace("zstd", "newpkg").replace("0100", "0101").lstrip(), "utf-8"
    )
    service, _ = indexed(osv_db, cache)
    assert [v.id for v in service.query(Dep("zstd", "7.0"))[1]] == ["PYSEC-0006"]
    assert [v.id for v in service.query(Dep("newpkg", "7.0"))[1]] == ["PYSEC-0101"]
    assert answers(service) == answers(OsvDirService(osv_db))


def test_outside_the_racy_window_stat_alone_sees_a_rewrite(
    osv_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite moves ctime even when mtime is put back (``touch -d``, ``cp -p``)."""
    monkeypatch.setattr(index_module, "RACY_NS", 0)
    cache = tmp_path / "cache"
    opened(osv_db, cache)
    assert header_of(cache)["racy"] == {}
    path = osv_db / "vulns" / "demo" / "PYSEC-0004.yaml"
    before = path.stat()
    time.sleep(0.05)  # past the file system's timestamp tick
    path.write_text(path.read_text("utf-8").replace("withdrawn:", "modified: "), "utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    service, index = indexed(osv_db, cache)
    assert [v.id for v in service.query(Dep("demo", "9.0"))[1]] == ["PYSEC-0004"]
    assert index.rebuilt == "the database changed"


def test_racy_files_are_checked_by_content_until_they_are_old(
    osv_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    opened(osv_db, cache)
    assert len(header_of(cache)["racy"]) == len(list((osv_db / "vulns").rglob("*.yaml")))
    monkeypatch.setattr(index_module, "RACY_NS", 0)  # "later": the margin has passed
    assert opened(osv_db, cache).rebuilt is None
    assert header_of(cache)["racy"] == {}  # verified once, then stat alone
    assert opened(osv_db, cache).rebuilt is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"not json at all",
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-40] + bytes([data[-40] ^ 1]) + data[-39:],  # one flipped bit in the body
        lambda data: data.replace(b'"kind":"envkit-advisory-index"', b'"kind":"something-else"'),
        lambda data: b"",
    ],
    ids=["garbage", "truncated", "flipped-bit", "wrong-kind", "empty"],
)
def test_a_corrupt_index_is_rebuilt_not_trusted(
    osv_db: Path, tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    cache = tmp_path / "cache"
    opened(osv_db, cache)
    (path,) = cache.iterdir()
    path.write_bytes(damage(path.read_bytes()))
    service, index = indexed(osv_db, cache)
    assert answers(service) == answers(OsvDirService(osv_db))
    assert index.rebuilt is not None and index.rebuilt.startswith("corrupt")
    assert opened(osv_db, cache).rebuilt is None  # written whole again


def test_a_well_formed_index_with_a_wrong_record_shape_is_rebuilt(osv_db: Path, tmp_path: Path) -> None:
    """Even a body whose sha256 matches is checked record by record."""
    import hashlib

    cache = tmp_path / "cache"
    opened(osv_db, cache)
    (path,) = cache.iterdir()
    head, _, body = path.read_bytes().partition(b"\n")
    header = json.loads(head)
    start, end = header["names"]["zstd"]
    chunk = json.loads(body[start:end])
    chunk["records"][0]["affected"][0]["versions"] = [1, 2]
    new = json.dumps(chunk, separators=(",", ":")).encode()
    body = body[:start] + new + body[end:]
    header["names"] = {"zstd": [start, start + len(new)]}
    header["body_sha256"] = hashlib.sha256(body).hexdigest()
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)
    service, index = indexed(osv_db, cache)
    assert [v.id for v in service.query(Dep("zstd", "1.0"))[1]] == ["PYSEC-0006"]
    assert index.rebuilt is not None and index.rebuilt.startswith("corrupt: _Corrupt")


def test_a_corrupt_record_stops_every_run_as_reading_it_does(osv_db: Path, tmp_path: Path) -> None:
    (osv_db / "vulns" / "demo" / "PYSEC-0001.yaml").write_text("id: [\n", "utf-8")
    with pytest.raises(AuditError) as plain:
        OsvDirService(osv_db).query(Dep("demo", "1.0"))
    cache = tmp_path / "cache"
    for _ in range(2):  # building the index, then from the index
        service, _ = indexed(osv_db, cache)
        assert service.query(Dep("zstd", "1.0"))[1]  # other packages still answer
        with pytest.raises(AuditError) as got:
            service.query(Dep("demo", "1.0"))
        assert (got.value.message, got.value.hint) == (plain.value.message, plain.value.hint)


def test_an_unwritable_cache_is_not_an_error(osv_db: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", "utf-8")
    service, index = indexed(osv_db, blocker / "cache")  # a folder under a file: cannot be created
    assert answers(service) == answers(OsvDirService(osv_db))
    assert index.rebuilt is not None and index.rebuilt.startswith("unreadable")
    assert opened(osv_db, blocker / "cache").rebuilt == index.rebuilt  # every run builds its own


def test_where_the_index_lives() -> None:
    assert default_index_dir({"ENVKIT_ADVISORY_INDEX": "/x/idx"}) == Path("/x/idx")
    assert default_index_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/envkit/advisory-index")
    assert default_index_dir({}) == Path.home() / ".cache" / "envkit" / "advisory-index"


def test_every_record_field_is_kept(osv_db: Path) -> None:
    """A field added to OsvRecord must be added to the index's encoding (and its FORMAT bumped)."""
    records = OsvDirService(osv_db).records("demo")
    assert set(encode_record(records[0])) == {f.name for f in dataclasses.fields(OsvRecord)}
    assert [decode_record(encode_record(r)) for r in records] == records


def test_envkit_audit_keeps_its_index_where_envkit_advisory_index_says(
    osv_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENVKIT_ADVISORY_INDEX", str(tmp_path / "index"))
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("demo==1.4\nzstd==1.0\n", "utf-8")
    argv = ["audit", str(freeze), "--db", str(osv_db), "--json"]
    assert main(argv) == ExitCode.FINDINGS
    first = capsys.readouterr().out
    assert len(list((tmp_path / "index").iterdir())) == 1
    assert main(argv) == ExitCode.FINDINGS
    assert capsys.readouterr().out == first  # from the index: the same envelope
    (osv_db / "vulns" / "demo" / "PYSEC-0001.yaml").unlink()
    main(argv)
    ids = {f["id"] for f in json.loads(capsys.readouterr().out)["result"]["findings"]}
    assert "PYSEC-0001" not in ids and "PYSEC-0006" in ids
