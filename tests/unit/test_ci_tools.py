"""`.ci/tools.sh` checks every external tool the tests look up, and `.ci/run` runs it before the tests.

A test that finds a tool missing skips (or fails late, after minutes of builds), and a tool that was
installed by hand on one machine hides that CI never installs it: the list in `.ci/tools.sh` must
name every program a test asks ``shutil.which`` for, except those that only a GPU machine has.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".ci" / "tools.sh"
ONLY_ON_A_GPU_MACHINE = {"nvidia-smi": "the driver's tool: tests/gpu and the driver check of a GPU host"}
_CHECK = re.compile(r'^check (?:"([^"]+)"|(\S+)) ', re.MULTILINE)
_WHICH = re.compile(r"""shutil\.which\(\s*["']([\w.+-]+)["']""")


def _checked() -> set[str]:
    return {quoted or bare for quoted, bare in _CHECK.findall(TOOLS.read_text(encoding="utf-8"))}


def _looked_up() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for name in _WHICH.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_tool_a_test_looks_up_is_checked_by_ci() -> None:
    checked = _checked()
    assert {"docker", "debootstrap", "diffoscope", "hadolint", "sinfo", "conda bundle"} <= checked, checked
    missing = {name: where for name, where in _looked_up().items() if name not in checked}
    assert set(missing) <= set(ONLY_ON_A_GPU_MACHINE), (
        f"add to .ci/tools.sh (and install in .ci/run): {missing}"
    )


def test_ci_runs_the_tool_check_before_the_tests() -> None:
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert run.index(".ci/tools.sh") < run.index("\nmake test "), "the check must come before the tests"
    assert "diffoscope-minimal" in run


def test_ci_prints_the_failed_tests_last() -> None:
    # the log's tail is what a reader of a red CI sees: the suite's failures are printed again there
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test 2>&1 | tee /tmp/envkit-ci-test.log" in run and "rc=${PIPESTATUS[0]}" in run
    assert run.rindex("/tmp/envkit-ci-test.log") > run.index("make bench-smoke")


def _exit_trap_script(tmp_path: Path, body: str) -> Path:
    # .ci/run's own on_exit function, with stop scripts that fail and a prebuild group that has ended
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    start = run.index("prebuild_pid=\n")
    assert "on_exit() {" in run[start : start + 500]
    function = run[start : run.index("\n}\n", start) + 3]
    for name in ("registry.sh", "slurm.sh"):
        stub = tmp_path / ".ci" / name
        stub.parent.mkdir(exist_ok=True)
        stub.write_text("#!/usr/bin/env bash\necho stopped " + name + "\nexit 1\n", encoding="utf-8")
        stub.chmod(0o755)
    ended = subprocess.Popen(["true"], start_new_session=True)
    ended.wait()
    script = tmp_path / "run.sh"
    script.write_text(
        f"set -euo pipefail\n{function}trap on_exit EXIT\nprebuild_pid={ended.pid}\n{body}\n",
        encoding="utf-8",
    )
    return script


def test_ci_exit_trap_keeps_the_exit_status(tmp_path: Path) -> None:
    # a green run stays green when its clean-up fails (stops 38 and 39 failed CI that way), a red one red
    for body, expected in (("exit 0", 0), ("exit 3", 3), ("false", 1), ("echo done", 0)):
        script = _exit_trap_script(tmp_path, body)
        done = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert done.returncode == expected, (body, done.stdout, done.stderr)
        assert "stopped registry.sh" in done.stdout and "stopped slurm.sh" in done.stdout
        assert "disk at the end:" in done.stdout and "Avail" in done.stdout, done.stdout  # df's header


def test_ci_exit_trap_stops_the_docker_engine_it_started(tmp_path: Path) -> None:
    # an engine .ci/run started (in the background, dockerd_pid set) is stopped on exit; status kept
    body = "setsid sleep 60 </dev/null >/dev/null 2>&1 &\ndockerd_pid=$!\necho engine $dockerd_pid\nexit 4"
    script = _exit_trap_script(tmp_path, body)
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4, (done.stdout, done.stderr)
    pid = int(done.stdout.split("engine ")[1].split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped (and reaped by the script's shell)


def test_a_missing_tool_is_one_line_and_a_failure(tmp_path: Path) -> None:
    # the script's own check function on a command that cannot exist: exit 1, one line naming it
    script = TOOLS.read_text(encoding="utf-8")
    body = (
        script[: script.index("check docker")]
        + 'check nosuchtool "a test" command -v envkit-no-such-tool\nexit "$missing"\n'
    )
    probe = tmp_path / "tools.sh"
    probe.write_text(body, encoding="utf-8")
    done = subprocess.run(["bash", str(probe)], capture_output=True, text=True, check=False, timeout=30)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["missing: nosuchtool (installed by a test)"]
