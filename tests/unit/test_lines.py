"""The one continuation-line joiner (``envkit._lines.logical_lines``): requirements files and Dockerfiles.

Inputs are the shipped locks (``images/*/requirements.lock``, uv/pip-compile output with ``--hash`` lines) and
the public files under ``tests/data/init`` (Dockerfiles and requirements files, sources in its README).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit._lines import logical_lines
from envkit.adopt.evidence import joined_lines
from envkit.inventory import parse_inventory

ROOT = Path(__file__).resolve().parents[2]
REAL = sorted(
    [
        *ROOT.glob("images/*/requirements.lock"),
        *ROOT.glob("tests/data/init/*.Dockerfile"),
        *ROOT.glob("tests/data/init/req-*.txt"),
    ]
)


def test_hash_lines_join_their_pin() -> None:
    text = "numpy==1.26.4 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\nscipy==1.11.4\n"
    assert list(logical_lines(text)) == [
        (1, "numpy==1.26.4 --hash=sha256:aa --hash=sha256:bb"),
        (4, "scipy==1.11.4"),
    ]


def test_any_line_ending_and_trailing_blanks_after_the_backslash() -> None:
    text = "RUN apt-get update \\  \r\n && apt-get install -y gdb\r\n"
    assert list(logical_lines(text)) == [(1, "RUN apt-get update && apt-get install -y gdb")]


def test_a_comment_never_continues() -> None:
    """pip: a comment line ending in a backslash does not swallow the next requirement."""
    text = "# pinned for CUDA 11.8 \\\nnumpy==1.26.4\n"
    assert list(logical_lines(text)) == [(1, "# pinned for CUDA 11.8 \\"), (2, "numpy==1.26.4")]
    assert list(logical_lines(text, drop_comments=True)) == [(2, "numpy==1.26.4")]


def test_docker_drops_comments_between_continuation_lines() -> None:
    text = "FROM python:3.11\n\nRUN pip install \\\n# the solver\n    numpy \\\n    scipy\n"
    assert list(logical_lines(text, drop_comments=True)) == [
        (1, "FROM python:3.11"),
        (3, "RUN pip install numpy scipy"),
    ]


def test_without_drop_every_line_is_kept_and_numbered() -> None:
    text = "a==1\n\n# note\nb==2 \\\n  --hash=sha256:cc\n"
    assert list(logical_lines(text)) == [(1, "a==1"), (2, ""), (3, "# note"), (4, "b==2 --hash=sha256:cc")]


def test_a_last_line_ending_in_a_backslash_is_still_yielded() -> None:
    assert list(logical_lines("x==1 \\\n  --hash=sha256:dd \\")) == [(1, "x==1 --hash=sha256:dd")]


def test_the_requirements_reader_keeps_a_pin_after_a_commented_backslash() -> None:
    """It joined the comment with the next line and lost ``numpy`` (pip installs it)."""
    text = "# pinned for CUDA 11.8 \\\nnumpy==1.26.4 \\\n    --hash=sha256:" + "a" * 64 + "\nscipy==1.11.4\n"
    inventory = parse_inventory(text, path="requirements.txt", label="t", format="pip-freeze")
    assert {(p.name, p.version) for p in inventory.packages} == {("numpy", "1.26.4"), ("scipy", "1.11.4")}


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_init_from_reads_the_same_lines(path: Path) -> None:
    """``init --from``'s joiner (``envkit.adopt.evidence.joined_lines``) gives the same logical lines: it can
    become this one."""
    text = path.read_text("utf-8")
    assert list(joined_lines(text)) == list(logical_lines(text, drop_comments=True))


def test_the_real_files_have_continuations() -> None:
    assert len(REAL) >= 6
    joined = sum(
        1
        for p in REAL
        for _, line in logical_lines(p.read_text("utf-8"))
        if "\\" not in line and " --hash" in line
    )
    assert joined > 50  # 81 pins with hashes in the shipped locks
