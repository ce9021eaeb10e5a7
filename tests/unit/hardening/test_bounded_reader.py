"""``envkit._io.read_text_bounded``: a FIFO, a device, a socket or a huge file is refused, never waited on.

The helper opened with a plain ``open()``: a FIFO where a file was expected blocked the reader until
someone wrote to it (forever), and every caller inherited that. Each case here runs the call in a
thread; a call still blocked after a few seconds is released (the FIFO opened for writing, so the
thread ends) and the test fails. Real FIFOs (``os.mkfifo``), a real unix socket, ``/dev/zero``.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit._io import NotRegular, TooLarge, read_bytes_bounded, read_text_bounded
from envkit.audit.osv_dir import OsvDirService
from envkit.errors import AuditError, InventoryError, LockError, SpecError
from envkit.inventory.read import read_inventory
from envkit.lock.debug_tools import read_debug_lock
from envkit.spec.load import load_spec

from .conftest import Run
from .test_advisories import audit, record

WAIT_S = 30.0  # the CLI cases import and build an index first; blocked is forever


def _release(fifo: Path) -> None:
    """Open ``fifo`` for writing (without blocking) and close it: a reader blocked in open() ends."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:  # ENXIO: nobody has it open for reading, so nobody is blocked
        assert e.errno == errno.ENXIO
        return
    os.close(fd)


def returns_or_raises(call: Callable[[], Any], fifo: Path | None = None) -> BaseException | None:
    """What ``call`` raised (None: it returned), failing the test if it is still blocked after WAIT_S."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            outcome.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    blocked = thread.is_alive()
    while thread.is_alive() and fifo is not None:
        _release(fifo)
        thread.join(0.1)
    assert not blocked, f"blocked for {WAIT_S} s on {fifo}"
    return outcome[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    yield path
    if path.exists():
        _release(path)


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        yield path


def test_a_fifo_is_refused_at_once(fifo: Path) -> None:
    error = returns_or_raises(lambda: read_text_bounded(fifo, 1 << 20), fifo)
    assert isinstance(error, NotRegular) and error.strerror == "a FIFO, not a regular file"


def test_a_link_to_a_fifo_is_refused_at_once(fifo: Path, tmp_path: Path) -> None:
    link = tmp_path / "record.json"
    link.symlink_to(fifo)
    error = returns_or_raises(lambda: read_bytes_bounded(link, 1 << 20), fifo)
    assert isinstance(error, NotRegular) and "FIFO" in str(error)


@pytest.mark.parametrize(
    ("target", "kind"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")]
)
def test_a_device_is_refused(target: str, kind: str) -> None:
    error = returns_or_raises(lambda: read_bytes_bounded(Path(target), 1 << 20))
    assert isinstance(error, NotRegular) and error.strerror == f"{kind}, not a regular file"


def test_a_socket_and_a_directory_are_refused(unix_socket: Path, tmp_path: Path) -> None:
    for path, kind in ((unix_socket, "a socket"), (tmp_path, "a directory")):
        error = returns_or_raises(lambda p=path: read_text_bounded(p, 1 << 20))  # type: ignore[misc]
        assert isinstance(error, NotRegular) and error.strerror == f"{kind}, not a regular file"


def test_a_sparse_huge_file_is_refused_by_its_size_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as fh:
        fh.truncate(1 << 40)  # 1 TiB of holes: reading it whole would never end
    error = returns_or_raises(lambda: read_bytes_bounded(path, 1 << 20))
    assert isinstance(error, TooLarge) and error.limit == 1 << 20


def test_a_regular_file_and_a_link_to_one_still_read(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xef\xbb\xbfnumpy==1.26.4\n")
    (tmp_path / "link.txt").symlink_to(path)
    assert read_text_bounded(tmp_path / "link.txt", 100) == "numpy==1.26.4\n"
    assert read_bytes_bounded(path, 17) == path.read_bytes()
    with pytest.raises(TooLarge):
        read_bytes_bounded(path, 16)


# the callers: each names the file and says why, as its own error


def test_the_debug_lock_as_a_fifo_is_an_error_naming_it(fifo: Path, tmp_path: Path) -> None:
    lock = tmp_path / "debug.lock.json"
    fifo.rename(lock)
    error = returns_or_raises(lambda: read_debug_lock(lock), lock)
    assert isinstance(error, LockError) and "debug.lock.json" in error.message and "FIFO" in error.message


def test_a_spec_that_is_a_fifo_is_an_error_naming_it(fifo: Path, tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    fifo.rename(spec)
    error = returns_or_raises(lambda: load_spec(spec), spec)
    assert isinstance(error, SpecError) and "a FIFO, not a regular file" in str(error)


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_an_inventory_that_is_not_a_file_is_an_error_naming_it(fifo: Path, target: str) -> None:
    path = fifo if target == "fifo" else Path(target)
    error = returns_or_raises(lambda: read_inventory(path), fifo)
    assert isinstance(error, InventoryError) and str(path) in error.message
    assert "not a regular file" in error.message


def test_an_advisory_record_that_is_a_fifo_is_an_error_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "db" / "vulns" / "demo"
    folder.mkdir(parents=True)
    (folder / "PYSEC-1.json").write_text(json.dumps(record("PYSEC-1")))
    os.mkfifo(folder / "PYSEC-2.json")
    service = OsvDirService(tmp_path / "db")
    error = returns_or_raises(lambda: service.records("demo"), folder / "PYSEC-2.json")
    assert isinstance(error, AuditError) and "PYSEC-2.json" in error.message and "FIFO" in error.message


def test_audit_db_with_a_fifo_record_exits_3_naming_it(
    tmp_path: Path, envkit: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVKIT_ADVISORY_INDEX", str(tmp_path / "index"))
    folder = tmp_path / "db" / "vulns" / "demo"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "PYSEC-2.json")
    result: list[Run] = []
    error = returns_or_raises(
        lambda: result.append(audit(tmp_path, envkit, {"PYSEC-1.json": json.dumps(record("PYSEC-1"))})),
        folder / "PYSEC-2.json",
    )
    assert error is None
    (run,) = result
    assert run.code == 3, run.out
    assert "PYSEC-2.json" in run.out and "FIFO" in run.out


def test_a_host_report_that_is_a_fifo_is_a_usage_error(fifo: Path) -> None:
    """``envkit check --host FILE`` reads the report through the helper too."""
    from envkit.catalog import load_catalog
    from envkit.errors import UsageError
    from envkit.readiness.targets import host_targets

    catalog = load_catalog()
    error = returns_or_raises(lambda: host_targets(fifo, catalog), fifo)
    assert isinstance(error, UsageError) and "a FIFO, not a regular file" in error.message
