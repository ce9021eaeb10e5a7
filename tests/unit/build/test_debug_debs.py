"""Debian pins for the debug image: apt's simulation parsed, index records, hash-checked downloads.

tests/data/debug/apt-simulate-*.txt are real ``apt-get -s install`` outputs, run in the
debootstrapped ``envkit/debian-python:bookworm`` against Debian bookworm's indexes (Debian's
package metadata), and apt-cache-show-bookworm.txt a real ``apt-cache show gdb=13.1-3
procps=2:4.0.2-3`` of the same indexes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from envkit._proc import ProcResult
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine, FakeRun
from envkit.errors import BuildFailed, EnvkitError, UsageError
from envkit.lock.debian import (
    AptState,
    DebPin,
    deb_records,
    image_release,
    parse_simulation,
    simulate_install,
)
from envkit.lock.debug_tools import DebugRequest, ImagePython, image_python, nsys_note
from envkit.offline.debs import download_debs

DATA = Path(__file__).resolve().parents[2] / "data" / "debug"


def _state(tmp_path: Path) -> AptState:
    return AptState(tmp_path / "apt" / "bookworm", "bookworm")


def test_the_simulation_gives_the_exact_closure_and_no_upgrade() -> None:
    new, upgrades = parse_simulation((DATA / "apt-simulate-bookworm.txt").read_text())
    assert upgrades == []
    assert len(new) == 38
    found = dict(new)
    assert found["gdb"] == "13.1-3"
    assert found["openssh-server"] == "1:9.2p1-2+deb12u10"  # epochs kept: apt-get download needs them
    assert found["python3.11-dbg"] == found["libpython3.11"] == "3.11.2-6+deb12u8"


def test_an_upgrade_of_an_installed_package_is_refused(tmp_path: Path) -> None:
    output = (DATA / "apt-simulate-upgrade.txt").read_text()
    _, upgrades = parse_simulation(output)
    assert any(u.startswith("python3.11 3.11.2-6+deb12u8 -> 3.11.2-6+deb12u9") for u in upgrades)
    engine = FakeEngine(handler=lambda run: RunResult(0, output, ""))
    with pytest.raises(BuildFailed, match=r"would upgrade packages of img: .*python3\.11 ") as e:
        simulate_install(engine, "img", _state(tmp_path), ["python3.11-dbg"])
    assert "never changes what the runtime image has" in (e.value.hint or "")


def test_the_simulation_runs_in_the_image_with_envkits_lists_mounted(tmp_path: Path) -> None:
    seen: list[FakeRun] = []

    def answer(run: FakeRun) -> RunResult:
        seen.append(run)
        return RunResult(0, (DATA / "apt-simulate-bookworm.txt").read_text(), "")

    state = _state(tmp_path)
    simulate_install(FakeEngine(handler=answer), "sha256:abc", state, ["gdb"])
    (run,) = seen
    assert run.image == "sha256:abc" and not run.network
    assert [(m.source, m.target, m.read_only) for m in run.mounts] == [
        (str(state.directory), "/run/envkit-apt", True)
    ]
    assert "Dir::State::Lists=/run/envkit-apt/lists" in run.argv and "-s" in run.argv


@pytest.mark.parametrize(
    "name", ["gdb;rm -rf /", "-o=APT::x", "gdb\nopenssh", "", "GDB", "../gdb", "$(id)", "a b"]
)
def test_hostile_package_names_never_reach_apt(tmp_path: Path, name: str) -> None:
    engine = FakeEngine()
    with pytest.raises(UsageError, match="not a Debian package name"):
        simulate_install(engine, "img", _state(tmp_path), [name])
    assert engine.runs == []


def test_a_failed_simulation_names_the_packages_and_apts_words(tmp_path: Path) -> None:
    engine = FakeEngine(handler=lambda run: RunResult(100, "", "E: Unable to locate package gdbx\n"))
    with pytest.raises(BuildFailed, match="apt cannot install gdbx in img: E: Unable to locate package"):
        simulate_install(engine, "img", _state(tmp_path), ["gdbx"])


@pytest.mark.parametrize(
    ("stdout", "code"),
    [
        ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n', 0),
        ('NAME="Ubuntu"\nVERSION_CODENAME=jammy\nID=ubuntu\n', 0),
        ("", 1),
        ("ID=debian\n", 0),
    ],
)
def test_the_release_is_read_from_the_image(stdout: str, code: int) -> None:
    engine = FakeEngine(handler=lambda run: RunResult(code, stdout, ""))
    if "bookworm" in stdout:
        assert image_release(engine, "img") == "bookworm"
    else:
        with pytest.raises(UsageError, match="not a Debian image"):
            image_release(engine, "img")


class FakeApt:
    """``apt-cache show`` from the recorded output; ``apt-get download`` writes ``contents`` per pin."""

    def __init__(self, contents: dict[str, bytes] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.contents = contents or {}

    def __call__(self, argv: Sequence[str], *, cwd: str | None = None, **_: object) -> ProcResult:
        args = list(argv)
        self.calls.append(args)
        if args[0] == "apt-cache":
            return ProcResult(tuple(args), 0, (DATA / "apt-cache-show-bookworm.txt").read_text(), "")
        for pin in (a for a in args if "=" in a and not a.startswith(("Dir::", "Debug::", "APT::", "Acq"))):
            name, version = pin.split("=", 1)
            Path(cwd or ".", f"{name}_{version.replace(':', '%3a')}_amd64.deb").write_bytes(
                self.contents[name]
            )
        return ProcResult(tuple(args), 0, "", "")


def test_records_come_from_the_index_with_sha256_and_file_name(tmp_path: Path) -> None:
    pins = deb_records(_state(tmp_path), [("gdb", "13.1-3"), ("procps", "2:4.0.2-3")], FakeApt())
    gdb, procps = pins
    assert (gdb.name, gdb.version, gdb.arch) == ("gdb", "13.1-3", "amd64")
    assert len(gdb.sha256) == 64 and gdb.filename == "gdb_13.1-3_amd64.deb" and gdb.size > 1_000_000
    assert procps.filename == "procps_4.0.2-3_amd64.deb"  # the pool's name has no epoch


def test_a_pin_the_index_does_not_have_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BuildFailed, match=r"no file for gdb=99\.0"):
        deb_records(_state(tmp_path), [("gdb", "13.1-3"), ("gdb", "99.0")], FakeApt())


@pytest.mark.parametrize("version", ["1.0 2", "1;id", "$(x)", "", "1\n2"])
def test_hostile_versions_are_refused(tmp_path: Path, version: str) -> None:
    apt = FakeApt()
    with pytest.raises(UsageError, match="not a Debian version"):
        deb_records(_state(tmp_path), [("gdb", version)], apt)
    assert apt.calls == []


def _pin(name: str, data: bytes) -> DebPin:
    return DebPin(
        name, "1.0-1", "amd64", hashlib.sha256(data).hexdigest(), len(data), f"{name}_1.0-1_amd64.deb"
    )


def test_downloads_are_checked_and_cached(tmp_path: Path) -> None:
    pins = [_pin("gdb", b"gdb bytes"), _pin("procps", b"procps bytes")]
    apt = FakeApt({"gdb": b"gdb bytes", "procps": b"procps bytes"})
    entries = download_debs(_state(tmp_path), pins, tmp_path / "debs", apt)
    assert [e.path for e in entries] == ["debs/gdb_1.0-1_amd64.deb", "debs/procps_1.0-1_amd64.deb"]
    assert [e.sha256 for e in entries] == [p.sha256 for p in pins]
    assert (tmp_path / "debs" / "gdb_1.0-1_amd64.deb").read_bytes() == b"gdb bytes"
    again = FakeApt()
    download_debs(_state(tmp_path), pins, tmp_path / "debs", again)
    assert again.calls == []  # cached, checked by sha256
    (tmp_path / "debs" / "gdb_1.0-1_amd64.deb").write_bytes(b"tampered")
    third = FakeApt({"gdb": b"gdb bytes"})
    download_debs(_state(tmp_path), pins, tmp_path / "debs", third)
    assert len(third.calls) == 1 and "gdb=1.0-1" in third.calls[0] and "procps=1.0-1" not in third.calls[0]


def test_a_file_that_is_not_the_pinned_one_never_enters_the_context(tmp_path: Path) -> None:
    pins = [_pin("gdb", b"gdb bytes")]
    with pytest.raises(BuildFailed, match="which no pin names"):
        download_debs(_state(tmp_path), pins, tmp_path / "debs", FakeApt({"gdb": b"other bytes"}))
    assert not (tmp_path / "debs" / "gdb_1.0-1_amd64.deb").exists()


def test_the_private_apt_state_never_names_the_hosts_configuration(tmp_path: Path) -> None:
    state = _state(tmp_path)
    calls: list[list[str]] = []

    def run(argv: Sequence[str], **_: object) -> ProcResult:
        calls.append(list(argv))
        return ProcResult(tuple(argv), 0, "", "")

    state.update(run)
    options = " ".join(calls[0])
    assert "/etc/apt" not in options and f"Dir::State::Lists={state.directory}/lists" in options
    assert "non-free" in (state.directory / "sources.list").read_text()
    with pytest.raises(UsageError):
        AptState(tmp_path, "bookworm; rm")


def _request(cuda: bool, debian: str | None = "3.11.2-6+deb12u8") -> DebugRequest:
    python = ImagePython("3.11", "/usr/bin/python3.11", debian)
    return DebugRequest("sha256:" + "a" * 64, "bookworm", python, "x86_64-manylinux_2_36", cuda)


POLICY = "nsight-systems-target:\n  Installed: (none)\n  Candidate: {}\n"


@pytest.mark.parametrize(
    ("cuda", "policy", "expected"),
    [
        (False, "", "nsys: not added: a CPU environment has no CUDA kernels to profile"),
        (
            True,
            POLICY.format("2022.4.2.1~11.8.0-5~deb12u1"),
            "has nsight-systems-target 2022.4.2.1~11.8.0-5~deb12u1, but it depends on the driver's libcuda1",
        ),
        (True, POLICY.format("(none)"), "no nsight-systems-target in"),
        (True, "", "no nsight-systems-target in Debian bookworm"),
    ],
)
def test_nsight_systems_is_looked_up_and_said_in_one_line(
    tmp_path: Path, cuda: bool, policy: str, expected: str
) -> None:
    def run(argv: Sequence[str], **_: object) -> ProcResult:
        assert argv[0] == "apt-cache" and argv[-3:] == ["policy", "--", "nsight-systems-target"]
        return ProcResult(tuple(argv), 0, policy, "")

    note = nsys_note(_state(tmp_path), _request(cuda), run)
    assert expected in note and "\n" not in note


def test_the_python_symbols_are_pinned_to_the_installed_interpreter() -> None:
    assert _request(False).python.dbg_pins() == [
        "python3.11-dbg=3.11.2-6+deb12u8",
        "libpython3.11-dbg=3.11.2-6+deb12u8",
        "libpython3.11=3.11.2-6+deb12u8",
    ]
    assert _request(False, debian=None).python.dbg_pins() == []  # conda's python: no Debian symbols


@pytest.mark.parametrize(
    ("stdout", "found"),
    [
        ("3.11 /usr/bin/python3.11 3.11.2-6+deb12u8\n", ("3.11", "/usr/bin/python3.11", "3.11.2-6+deb12u8")),
        ("3.10 /opt/env/bin/python3.10 \n", ("3.10", "/opt/env/bin/python3.10", None)),
        ("garbage", None),
        ("", None),
    ],
)
def test_the_environments_python_is_read_from_the_image(stdout: str, found: tuple[str, ...] | None) -> None:
    engine = FakeEngine(handler=lambda run: RunResult(0, stdout, ""))
    if found is None:
        with pytest.raises(EnvkitError, match="cannot find the environment's Python"):
            image_python(engine, "img")
    else:
        python = image_python(engine, "img")
        assert (python.version, python.path, python.debian) == found
