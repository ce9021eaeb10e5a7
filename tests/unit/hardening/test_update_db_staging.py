"""``envkit audit --update-db DIR`` never adopts a staging path someone planted (finding 8).

The update used ``DIR/../.NAME.new`` as its staging directory: a link planted there received the
records, and was then renamed into place as the database, so whoever planted it could edit the
records afterwards and make ``envkit audit`` pass. The staging directory (and the one the old
database retires into) is now created exclusively under a fresh random name, each file in it
``O_EXCL | O_NOFOLLOW``, then renamed into place.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from envkit.audit.osv_dir import OsvDirService
from envkit.audit.service import Dep
from envkit.audit.update_db import update_db
from tests.unit.hardening.test_update_db_paths import GOOD, _record, _zip, served

NEW = {**GOOD, "PYSEC-2099-7.json": json.dumps(_record("victim-pkg", "PYSEC-2099-7")).encode()}


def _update(db: Path) -> dict[str, object]:
    return update_db(db, served(_zip(NEW)))


def _flags_victim(db: Path) -> bool:
    results = dict(OsvDirService(db).query_all([Dep("victim-pkg", "1.0")]))
    return any(v.id == "PYSEC-2099-7" for vs in results.values() for v in vs)


def _assert_own_database(db: Path, evil: Path) -> None:
    assert db.is_dir() and not db.is_symlink()
    assert not any(evil.rglob("*.json")), sorted(evil.rglob("*"))  # nothing written into their folder
    assert _flags_victim(db)
    assert stat.S_IMODE(db.stat().st_mode) == 0o755
    for path in db.rglob("*"):
        assert not path.is_symlink()
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.fixture
def evil(tmp_path: Path) -> Path:
    folder = tmp_path / "evil"  # a folder the other user controls
    folder.mkdir()
    return folder


def test_a_planted_staging_link_is_not_adopted(tmp_path: Path, evil: Path) -> None:
    """The finding: main wrote the records into the link's target and renamed the link into place."""
    db = tmp_path / "db"
    (tmp_path / ".db.new").symlink_to(evil)
    _update(db)
    _assert_own_database(db, evil)
    # what they can still do to their folder changes nothing of the database
    (evil / "vulns").mkdir(exist_ok=True)
    assert _flags_victim(db)
    assert (tmp_path / ".db.new").is_symlink()  # left as it was: envkit removes nothing it did not make


def test_a_planted_staging_folder_with_records_is_not_adopted(tmp_path: Path) -> None:
    """A real folder at the old staging name, holding an edited record: none of it becomes the database."""
    db = tmp_path / "db"
    planted = tmp_path / ".db.new" / "vulns" / "victim-pkg"
    planted.mkdir(parents=True)
    (planted / "PLANTED-1.json").write_text(json.dumps(_record("victim-pkg", "PLANTED-1")))
    _update(db)
    assert not list(db.rglob("PLANTED-1.json"))
    assert _flags_victim(db)


@pytest.mark.parametrize("kind", ["file", "fifo", "dangling-link", "link-to-db"])
def test_other_things_at_the_staging_name(tmp_path: Path, evil: Path, kind: str) -> None:
    db = tmp_path / "db"
    planted = tmp_path / ".db.new"
    if kind == "file":
        planted.write_text("x")
    elif kind == "fifo":
        os.mkfifo(planted)
    elif kind == "dangling-link":
        planted.symlink_to(evil / "not-yet")
    else:
        planted.symlink_to(db)
    _update(db)
    _assert_own_database(db, evil)
    assert not (evil / "not-yet").exists()


def test_a_planted_retire_link_does_not_receive_the_old_database(tmp_path: Path, evil: Path) -> None:
    """``.NAME.old`` linked to their folder: main renamed the previous database through it (or failed)."""
    db = tmp_path / "db"
    _update(db)
    (tmp_path / ".db.old").symlink_to(evil)
    _update(db)
    _assert_own_database(db, evil)
    assert not any(evil.iterdir())


def test_a_database_that_is_a_link_is_replaced_not_written_through(tmp_path: Path, evil: Path) -> None:
    db = tmp_path / "db"
    db.symlink_to(evil)
    _update(db)
    _assert_own_database(db, evil)


def test_no_staging_is_left_behind(tmp_path: Path) -> None:
    db = tmp_path / "db"
    _update(db)
    _update(db)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db"]
