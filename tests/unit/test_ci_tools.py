"""`.ci/tools.sh` checks every external tool the tests look up, and `.ci/run` runs it before the tests.

A test that finds a tool missing skips (or fails late, after minutes of builds), and a tool that was
installed by hand on one machine hides that CI never installs it: the list in `.ci/tools.sh` must
name every program a test asks ``shutil.which`` for, except those that only a GPU machine has.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

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
