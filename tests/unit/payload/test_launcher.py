"""``envkit.payload``: every payload file is launched by ``payload.run`` and the interpreter line is
written once; the launcher's shell line really runs (here, through ``sh``) and its in-image argv."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from envkit import payload
from envkit.engine.in_image import InImage
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine, FakeRun

PACKAGE = Path(payload.__file__).resolve().parents[1]  # envkit/
NAMES = sorted(p.stem for p in payload.PAYLOAD_DIR.glob("*.py"))
FILE = re.compile(r"(?:\A|/)(?:" + "|".join(map(re.escape, NAMES)) + r")\.py\Z")
LAUNCHERS = {"run", "container_path"}  # payload.X(..., "run.py", ...): the file named to the launcher


def bypasses(source: str, where: str) -> list[str]:
    """Where ``source`` names a payload file, or finds an interpreter, other than through ``payload``."""
    tree = ast.parse(source, where)
    named: set[int] = set()  # the file names given to the launcher itself
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "payload":
            named |= {id(a) for a in node.args if f.attr in LAUNCHERS and isinstance(a, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in named:
            continue
        last_word = (node.value.split() or [""])[-1]
        if payload.FIND_PYTHON in node.value or FILE.search(last_word):
            found.append(f"{where}:{node.lineno}: {node.value.strip()[:70]!r}")
    return found


def test_no_payload_file_is_launched_but_by_the_launcher() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if payload.PAYLOAD_DIR.parent in path.parents:
            continue  # the launcher and the payload files themselves
        found += bypasses(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    assert found == [], "launch these through envkit.payload.run:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [  # the launch lines this package replaced: each is caught
        'script = \'exec "$(command -v python3 || command -v python)" "$0" "$@"\'\n',
        'argv = [exe, str(PAYLOAD_DIR / "run.py")]\n',
        "argv = ['sh', '-c', line, f'{CONTAINER_PAYLOAD}/ready.py', '--spec', spec]\n",
        "text = f'\"$py\" {MOUNT}/run.py {args} > out'\n",
    ],
)
def test_a_launch_around_the_launcher_is_found(source: str) -> None:
    assert bypasses(source, "planted.py") != []


def test_the_launcher_naming_a_file_is_no_bypass() -> None:
    assert bypasses("payload.run(where, 'ready.py', argv)\npayload.container_path('run.py')\n", "ok.py") == []


def test_the_interpreter_line_is_written_once_in_envkit() -> None:
    done = subprocess.run(
        ["grep", "-rnF", "--include=*.py", payload.FIND_PYTHON, str(PACKAGE)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(str(PACKAGE / "payload" / "__init__.py")), lines


@dataclass(frozen=True)
class ThroughSh:
    """An "image" that is this host: the launcher's argv run as is (the sh line for real), mounts kept."""

    python: None = None

    def execute(self, argv: Sequence[str], mounts: Sequence[tuple[str, str]], cwd: str | None) -> payload.Ran:
        assert cwd is None  # the shell line changes directory itself
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=60)
        return payload.Ran(done.returncode, done.stdout, done.stderr)


def test_the_shell_line_finds_python_and_passes_arguments(tmp_path: Path) -> None:
    code = "import os, sys; print(os.getcwd(), sys.argv[1:])"
    ran = payload.run(ThroughSh(), ("-c", code), ["a b", "$HOME"])
    assert ran.code == 0, ran.stderr
    assert ran.stdout.split(" ", 1)[1].strip() == "['a b', '$HOME']"
    ran = payload.run(ThroughSh(), ("-c", code), ["x"], cwd=str(tmp_path))
    assert ran.stdout.strip() == f"{tmp_path} ['x']"


def test_a_payload_file_in_an_image_is_mounted_and_named_there() -> None:
    engine = FakeEngine(handler=lambda run: RunResult(0, "{}", ""))
    ran = payload.run(
        InImage(engine, "img", gpus=True, timeout_s=5), "ready.py", ["--spec", "{}"], [("/d", "/in")]
    )
    assert ran == payload.Ran(0, "{}", "")
    run: FakeRun = engine.runs[0]
    assert run.argv[:2] == ("sh", "-c") and payload.FIND_PYTHON in run.argv[2]
    assert run.argv[3:] == (f"{payload.CONTAINER_PAYLOAD}/ready.py", "--spec", "{}")
    assert [(m.source, m.target, m.read_only) for m in run.mounts] == [
        (str(payload.PAYLOAD_DIR), payload.CONTAINER_PAYLOAD, True),
        ("/d", "/in", True),
    ]
    assert run.gpus and run.timeout_s == 5


def test_on_the_host_the_file_runs_where_it_is() -> None:
    ran = payload.run(payload.Host(sys.executable, timeout_s=60), "ready.py", ["--help"])
    assert ran.code == 0 and "--spec" in ran.stdout


def test_a_name_that_is_no_payload_file_is_refused() -> None:
    for name in ("nope.py", "../runner.py"):
        with pytest.raises(ValueError, match="is not a file of"):
            payload.container_path(name)
