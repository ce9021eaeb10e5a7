from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from envkit._proc import ProcResult
from envkit.errors import BuildFailed, ExitCode, Unsatisfiable
from envkit.offline.wheelhouse import WheelhouseRequest, fill_wheelhouse, pip_platforms


def test_fill_records_hashes_and_is_cached(tmp_path: Path, pip: object) -> None:
    request = WheelhouseRequest("six==1.16.0\npackaging==24.1\n", "3.11", find_links=("/opt/wheels",))
    house = fill_wheelhouse(request, tmp_path, runner=pip)  # type: ignore[arg-type]
    assert [w.name for w in house.wheels] == ["packaging", "six"]
    assert house.cached is False
    assert all(len(w.sha256) == 64 for w in house.wheels)
    (argv,) = pip.calls  # type: ignore[attr-defined]
    assert argv[argv.index("--python-version") + 1] == "3.11"
    assert argv[argv.index("--abi") + 1] == "cp311"
    assert "--only-binary=:all:" in argv
    assert argv[argv.index("--find-links") + 1] == "/opt/wheels"
    assert "--require-hashes" not in argv
    again = fill_wheelhouse(request, tmp_path, runner=pip)  # type: ignore[arg-type]
    assert again.cached is True and again.wheels == house.wheels
    assert len(pip.calls) == 1  # type: ignore[attr-defined]


def test_a_changed_file_invalidates_the_cache(tmp_path: Path, pip: object) -> None:
    request = WheelhouseRequest("six==1.16.0\n", "3.11")
    house = fill_wheelhouse(request, tmp_path, runner=pip)  # type: ignore[arg-type]
    (house.directory / house.wheels[0].filename).write_bytes(b"truncated")
    assert fill_wheelhouse(request, tmp_path, runner=pip).cached is False  # type: ignore[arg-type]


def test_hashed_lock_makes_pip_check_hashes(tmp_path: Path, pip: object) -> None:
    request = WheelhouseRequest(f"six==1.16.0 --hash=sha256:{'a' * 64}\n", "3.10")
    fill_wheelhouse(request, tmp_path, runner=pip)  # type: ignore[arg-type]
    argv = pip.calls[0]  # type: ignore[attr-defined]
    assert "--require-hashes" in argv and "--no-deps" in argv


def _failing(stderr: str):  # type: ignore[no-untyped-def]
    def run(argv: Sequence[str], *, check: bool = True) -> ProcResult:
        return ProcResult(tuple(argv), 1, "", stderr)

    return run


@pytest.mark.parametrize(
    ("stderr", "kind", "needle"),
    [
        ("ERROR: No matching distribution found for six==99\n", Unsatisfiable, "six==99"),
        ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n", BuildFailed, "hash"),
        ("OSError: [Errno 28] No space left on device\n", BuildFailed, "disk is full"),
        ("Failed to establish a new connection: [Errno -3] Temporary failure\n", BuildFailed, "unreachable"),
        ("something odd\n", BuildFailed, "pip download failed"),
    ],
)
def test_pip_failures_are_translated(tmp_path: Path, stderr: str, kind: type[Exception], needle: str) -> None:
    with pytest.raises(kind, match=needle) as info:
        fill_wheelhouse(WheelhouseRequest("six==99\n", "3.11"), tmp_path, runner=_failing(stderr))
    assert info.value.hint  # type: ignore[attr-defined]
    if kind is Unsatisfiable:
        assert info.value.exit_code == ExitCode.USAGE  # type: ignore[attr-defined]
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]


def test_pip_platforms_cover_manylinux() -> None:
    tags = pip_platforms("linux-64")
    assert tags[0] == "manylinux_2_28_x86_64"
    assert "manylinux2014_x86_64" in tags and "manylinux_2_17_x86_64" in tags
    assert pip_platforms("linux-aarch64")[-1] == "linux_aarch64"


def test_a_one_pin_change_downloads_the_changed_wheel_only(tmp_path: Path) -> None:
    """Issue 47: a new lock is a new wheelhouse, and every wheel was downloaded again (the
    flagship's 2.4 GB for one changed pin). The wheels another wheelhouse holds with a sha256 the
    lock pins are linked in first: pip keeps them (it checks their hashes) and fetches the rest."""
    import hashlib

    from tests.unit.build.conftest import FakePip

    fake, present = FakePip(), []

    def pip(argv: Sequence[str], *, check: bool = True) -> ProcResult:
        dest = Path(argv[list(argv).index("--dest") + 1])
        present.append(sorted(p.name for p in dest.iterdir()) if dest.is_dir() else [])
        return fake(argv, check=check)

    def lock(*pins: str) -> str:
        return "".join(
            f"{p} --hash=sha256:{hashlib.sha256(p.replace('==', ' ').encode()).hexdigest()}\n" for p in pins
        )

    first = fill_wheelhouse(WheelhouseRequest(lock("six==1.16.0", "idna==3.7"), "3.11"), tmp_path, runner=pip)
    second = fill_wheelhouse(
        WheelhouseRequest(lock("six==1.16.0", "idna==3.8"), "3.11"), tmp_path, runner=pip
    )
    assert present == [[], ["six-1.16.0-py3-none-any.whl"]]  # idna 3.7 is not pinned any more
    assert second.directory != first.directory
    six = [w for w in second.wheels if w.name == "six"]
    assert six == [w for w in first.wheels if w.name == "six"]
    assert (second.directory / six[0].filename).stat().st_ino == (
        first.directory / six[0].filename
    ).stat().st_ino
    assert [w.name for w in second.wheels] == ["idna", "six"]
