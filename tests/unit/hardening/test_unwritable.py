"""Class: unwritable output (issue 16, item 16): exit 3 naming the path, never a traceback or exit 1."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from envkit._atomic import write_text_atomic
from envkit.errors import EnvkitError

from .conftest import Run


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A directory this process cannot write: mode 0555, or /sys when running as root."""
    if os.geteuid() == 0:
        probe = Path("/sys/envkit-write-probe")
        try:
            probe.mkdir()
        except OSError:
            yield Path("/sys")
            return
        probe.rmdir()
        pytest.skip("running as root with a writable /sys: no unwritable directory to test with")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


def test_atomic_write_names_the_path(read_only: Path) -> None:
    with pytest.raises(EnvkitError) as info:
        write_text_atomic(read_only / "x.txt", "data")
    assert str(read_only / "x.txt") in info.value.message and info.value.exit_code == 3


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "cpu-torch", "-o", "{ro}/ctx"],
        ["render", "cpu-torch", "-o", "{ro}"],
        ["snapshot", "-o", "{ro}/snap.json"],
        ["init"],
    ],
)
def test_commands_exit_3_with_the_path(
    project: Path,
    envkit: Callable[..., Run],
    read_only: Path,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if argv == ["init"]:
        monkeypatch.setenv("ENVKIT_ROOT", str(read_only))
    run = envkit(*[a.format(ro=read_only) for a in argv], "--json")
    assert run.code == 3, run.err
    assert str(read_only) in run.envelope()["errors"][0]["message"]
