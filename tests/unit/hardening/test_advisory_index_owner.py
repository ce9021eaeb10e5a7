"""A planted advisory index is not trusted (finding 11 of the third review).

The parsed-records index lives in ``$ENVKIT_ADVISORY_INDEX``, which teams point at a shared
folder. A self-consistent index (header, digest of the database's stat, body sha256 all right)
whose body leaves out a CRITICAL advisory made ``envkit audit`` pass (exit 0) when someone else
wrote it. The index file is now treated as the fleet store's files are: a link, a FIFO, a file
owned by another user (not root), writable by its group or others, or larger than the bound is
not read, and the index is rebuilt from the database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.audit.index import MAX_INDEX_BYTES
from envkit.cli import main
from envkit.errors import ExitCode
from tests.unit.hardening.hostile import make_foreign

CRITICAL = """\
id: PYSEC-2099-99
summary: remote code execution
details: d
affected:
- package: {name: victim, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: "0"}, {fixed: "2.0"}]
database_specific: {severity: CRITICAL}
"""


@pytest.fixture
def audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[[], int]:
    db = tmp_path / "db" / "vulns" / "victim"
    db.mkdir(parents=True)
    (db / "PYSEC-2099-99.yaml").write_text(CRITICAL)
    (tmp_path / "freeze.txt").write_text("victim==1.0\n")
    monkeypatch.setenv("ENVKIT_ADVISORY_INDEX", str(tmp_path / "index"))

    def run() -> int:
        code = main(["audit", str(tmp_path / "freeze.txt"), "--db", str(tmp_path / "db"), "--json"])
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        return code

    return run


def _index(tmp_path: Path) -> Path:
    (path,) = (tmp_path / "index").iterdir()
    return path


def _forge(path: Path) -> bytes:
    """The index with ``victim``'s records emptied, every sum and span made right again."""
    head, _, body = path.read_bytes().partition(b"\n")
    header = json.loads(head)
    entries = {name: json.loads(body[a:b]) for name, (a, b) in header["names"].items()}
    entries["victim"] = {"records": []}
    parts, spans, offset = [], {}, 0
    for name in sorted(entries):
        chunk = json.dumps(entries[name], separators=(",", ":")).encode()
        spans[name] = [offset, offset + len(chunk)]
        parts.append(chunk)
        offset += len(chunk)
    forged = b"".join(parts)
    header.update(names=spans, body_sha256=hashlib.sha256(forged).hexdigest())
    return json.dumps(header, separators=(",", ":")).encode() + b"\n" + forged


def test_a_world_writable_forged_index_does_not_hide_a_critical(
    tmp_path: Path, audit: Callable[[], int]
) -> None:
    """The finding: main read the forged index and exited 0."""
    assert audit() == ExitCode.FINDINGS  # builds the index
    path = _index(tmp_path)
    path.write_bytes(_forge(path))
    path.chmod(0o644)
    assert audit() == ExitCode.OK  # the forgery is self-consistent: as this user's own file, it is used
    path.write_bytes(_forge(path))
    make_foreign(path, "world-writable")
    assert audit() == ExitCode.FINDINGS
    assert audit() == ExitCode.FINDINGS  # and the rebuilt index is this user's, trusted again


@pytest.mark.parametrize("how", ["other user", "group-writable", "world-writable", "symlink", "fifo"])
def test_index_files_others_could_have_written_are_rebuilt(
    tmp_path: Path, audit: Callable[[], int], how: str
) -> None:
    assert audit() == ExitCode.FINDINGS
    path = _index(tmp_path)
    path.write_bytes(_forge(path))
    make_foreign(path, how)
    assert audit() == ExitCode.FINDINGS


def test_a_forged_index_in_a_folder_of_another_user(tmp_path: Path, audit: Callable[[], int]) -> None:
    """Their folder, their file, which this user cannot replace: rebuilt in memory on every run."""
    assert audit() == ExitCode.FINDINGS
    path = _index(tmp_path)
    path.write_bytes(_forge(path))
    make_foreign(path, "other user")
    make_foreign(path.parent, "other user")
    (path.parent).chmod(0o755)
    assert audit() == ExitCode.FINDINGS
    assert audit() == ExitCode.FINDINGS


def test_a_sparse_huge_index_is_not_read(tmp_path: Path, audit: Callable[[], int]) -> None:
    assert audit() == ExitCode.FINDINGS
    path = _index(tmp_path)
    with path.open("r+b") as fh:
        fh.truncate(MAX_INDEX_BYTES + 4096)
    assert audit() == ExitCode.FINDINGS
    assert path.stat().st_size < MAX_INDEX_BYTES  # rebuilt and written again
