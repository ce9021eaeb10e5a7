"""Class: Ctrl-C and endless inputs (issue 16, item 17)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit import _entry
from envkit.cli import main

from .conftest import REPO, Run


def test_ctrl_c_during_start_up_prints_no_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import envkit.cli

    def interrupted(argv: object = None) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(envkit.cli, "main", interrupted)
    monkeypatch.setattr(sys, "argv", ["envkit", "validate", "--json"])
    assert _entry.main() == 130
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "interrupted" in captured.err
    assert json.loads(captured.out)["ok"] is False


def test_ctrl_c_in_a_command_exits_130(
    project: Path, monkeypatch: pytest.MonkeyPatch, envkit: Callable[..., Run]
) -> None:
    import envkit.cli.spec_cmds as spec_cmds

    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(spec_cmds, "load_spec", interrupted)
    run = envkit("validate", "cpu-torch", "--json")
    assert run.code == 130
    assert run.envelope()["errors"][0]["type"] == "Interrupted"


def _self_interrupting(tmp_path: Path, disposition: signal.Handlers) -> subprocess.CompletedProcess[str]:
    """``envkit validate --json`` in a child that sends itself SIGINT as ``envkit.cli`` starts importing.

    A ``sitecustomize`` hook sends the signal at that moment, so it lands inside the guarded
    start-up every time (a timer from outside raced the interpreter's own start on a busy machine).
    The child's SIGINT disposition is set explicitly (``disposition``) rather than inherited: a test
    run started with ``cmd &`` from a non-interactive shell, under ``nohup`` or by some CI runners
    inherits an *ignored* SIGINT, and Python keeps it ignored.
    """
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "class _Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'envkit.cli':\n"
        "            sys.meta_path.remove(self)\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Interrupt())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(REPO)])}
    return subprocess.run(
        [sys.executable, "-m", "envkit", "validate", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, disposition),  # the test process starts no threads
    )


@pytest.mark.slow
def test_sigint_in_a_real_process(tmp_path: Path) -> None:
    """A real SIGINT (default disposition, as from a terminal) while envkit imports its CLI: exit 130."""
    proc = _self_interrupting(tmp_path, signal.SIG_DFL)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert json.loads(proc.stdout)["errors"][0]["type"] == "Interrupted"


@pytest.mark.slow
def test_an_inherited_ignored_sigint_stays_ignored(tmp_path: Path) -> None:
    """Started with SIGINT ignored (``cmd &``, ``nohup``), envkit keeps it ignored
    (docs/reference/signals.md).

    The self-sent SIGINT changes nothing: the command runs to its own end (here: no specs in
    an empty folder, exit 2) instead of stopping with 130.
    """
    proc = _self_interrupting(tmp_path, signal.SIG_IGN)
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert data["errors"][0]["type"] != "Interrupted"


ENDLESS = ["/dev/zero", "/dev/urandom"]


@pytest.mark.parametrize("device", ENDLESS)
def test_endless_inventory_is_refused(device: str, envkit: Callable[..., Run]) -> None:
    if not Path(device).exists():
        pytest.skip(f"{device} is absent")
    start = time.monotonic()
    run = envkit("diff", device, device, "--json")
    assert time.monotonic() - start < 30
    assert run.code == 2
    assert device in run.envelope()["errors"][0]["message"]


@pytest.mark.parametrize("device", ENDLESS)
def test_endless_spec_is_refused(device: str, envkit: Callable[..., Run]) -> None:
    run = envkit("validate", device, "--json")
    assert run.code == 2


def test_main_is_the_guarded_entry_point() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'envkit = "envkit._entry:main"' in text
    assert main(["--version"]) == 0


def test_huge_inventory_is_refused_without_reading_it(tmp_path: Path, envkit: Callable[..., Run]) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as fh:  # sparse: 100 MB of NUL bytes that take no disk
        fh.truncate(100 * 1024 * 1024)
    run = envkit("diff", str(huge), str(huge), "--json")
    assert run.code == 2
    assert "larger than" in run.envelope()["errors"][0]["message"]
