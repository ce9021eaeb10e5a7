"""``envkit init --from Dockerfile``: expanding ``ARG``/``ENV`` variables is bounded (finding 6).

An 862-byte Dockerfile of 40 doubling ``ARG`` lines made the reader allocate 2^40 characters (the
OOM killer, or a MemoryError traceback under a cap). Each expanded value and instruction is now at
most ``MAX_EXPANDED`` characters, and all expansions of one file at most ``MAX_EXPANDED_TOTAL``:
beyond, a clear refusal (exit 2) naming the file and line, nothing written.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.adopt.sources.dockerfile_expand import MAX_EXPANDED, MAX_EXPANDED_TOTAL
from envkit.cli import main

REPO = Path(__file__).resolve().parents[3]
CAP = 512 * 1024 * 1024  # the address space the hostile run gets: the RSS bound


def _doubling(keyword: str, lines: int = 40) -> str:
    body = [f"{keyword} A0=xx"] + [f"{keyword} A{i}=$A{i - 1}$A{i - 1}" for i in range(1, lines + 1)]
    return "FROM python:3.11-slim\n" + "\n".join(body) + f"\nRUN pip install numpy$A{lines}\n"


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def test_forty_doubling_args_are_refused_under_a_512_mib_cap(tmp_path: Path) -> None:
    """The finding: run in a child process limited to 512 MiB; main ran out of memory."""
    (tmp_path / "Dockerfile").write_text(_doubling("ARG"))
    assert len(_doubling("ARG")) < 1000
    env = {**os.environ, "ENVKIT_ROOT": str(tmp_path / "repo"), "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "envkit", "init", "--from", str(tmp_path / "Dockerfile")],
        capture_output=True, text=True, env=env, preexec_fn=_capped, timeout=300, check=False,
    )  # fmt: skip
    assert "Traceback" not in run.stderr and "MemoryError" not in run.stderr, run.stderr[-2000:]
    assert run.returncode == 2, run.stderr
    assert "expand to more than" in run.stderr and "Dockerfile:" in run.stderr
    assert not list((tmp_path / "repo").rglob("*.yaml"))


@pytest.fixture(autouse=True)
def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "repo").mkdir()
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path / "repo"))


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> str:
    (tmp_path / "Dockerfile").write_text(text)
    code = main(["init", "--from", str(tmp_path / "Dockerfile")])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == 2, out + err
    assert "expand to more than" in err and "nothing was written" in err
    assert not list((tmp_path / "repo").rglob("*.yaml"))
    return err


BIG = "y" * 60_000


@pytest.mark.parametrize(
    "text",
    [
        _doubling("ENV"),  # ENV doubles the same way
        _doubling("ARG", 20).replace("ENV", "ARG"),  # 2^21 characters: past one value's bound
        "FROM python:3.11\nARG A=xxxx\n"
        + "".join(
            f"ENV E{i}=${{A}}${{A}}${{E{i - 1}:-}}${{E{i - 1}:-}}\n" for i in range(1, 40)
        ),  # defaults double too
        "FROM python:3.11\nARG A=" + "z" * 1000 + "\nRUN pip install " + "$A" * 100 + "\n",  # one RUN line
        "FROM python:3.11\nARG A=" + "z" * 1000 + '\nRUN ["pip", "install", "' + "${A}" * 100 + '"]\n',
        "ARG A=" + "z" * 1000 + "\nFROM python:3.11-$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A"
        "$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A\n",
        # many values each under the bound, together past the total
        f"FROM python:3.11\nARG A={BIG}\n" + "".join(f"ARG B{i}=$A\n" for i in range(200)),
        # nested ${A:+${B}} inside one value
        "FROM python:3.11\nARG A=" + "q" * 40_000 + "\nARG B=${A:+$A$A}\n",
    ],
    ids=["env", "arg-20", "defaults", "run-line", "run-json", "from", "total", "alt-word"],
)
def test_expansion_variants_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    err = _refused(tmp_path, capsys, text)
    assert "Dockerfile:" in err


def test_bounds_leave_real_dockerfiles_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Variables a real Dockerfile uses (versions, URLs, a few KB) still expand."""
    assert MAX_EXPANDED >= 64 * 1024 and MAX_EXPANDED_TOTAL >= 100 * MAX_EXPANDED
    (tmp_path / "Dockerfile").write_text(
        "ARG PY=3.11\nFROM python:${PY}-slim\nARG NUMPY=1.26.4\nENV V=${NUMPY}\n"
        "RUN pip install numpy==${V} six==${SIX:-1.16.0}\n"
    )
    code = main(["init", "--from", str(tmp_path / "Dockerfile")])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    spec = next((tmp_path / "repo").rglob("*.yaml")).read_text()
    assert "numpy==1.26.4" in spec and "six==1.16.0" in spec
