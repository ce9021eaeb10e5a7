"""``envkit init --from``: an include (``-r``/``-c``) never reads a file outside the source's folder.

Finding 1 of the third review: ``-r ../../secret`` or a ``-r`` that is a link was followed out of
the source's folder, and the included lines became pip pins in ``environments/NAME.yaml`` (a file
meant to be committed), "not carried" comments and output (and with ``--lock``, requests to the
index). An include now resolves (links followed) inside the source's folder or is not read, with a
"not carried" line naming the file and line. Requirements files, an environment.yml ``pip:``
section and a Dockerfile ``RUN pip install -r`` go through the same check.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envkit.cli import main

# what an ssh private key's lines look like to a requirements reader: each parses as a name
KEY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nSECRETNAME123==1.0\nAAAAtzSecretLine42\n"
SECRETS = ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "SECRETNAME123", "AAAAtzSecretLine42", "secretname123")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/src`` (the source's folder), ``tmp/secret/id_rsa`` beside it, ``tmp/repo`` (the project)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "id_rsa").write_text(KEY)
    (tmp_path / "repo").mkdir()
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path / "repo"))
    return tmp_path


def _adopt(tree: Path, capsys: pytest.CaptureFixture[str], name: str, text: str) -> tuple[int, str, str]:
    source = tree / "src" / name
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(text)
    code = main(["init", "--from", str(source), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    specs = sorted((tree / "repo").rglob("*.yaml"))
    spec = specs[0].read_text() if specs else ""
    return code, spec, out + err


def _assert_not_read(code: int, spec: str, output: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in spec, spec
        assert secret not in output, output
    assert code in (0, 2), output
    if code == 0:
        lost = json.loads(output)["result"]["not_carried"]
        assert any(x["where"] == where and "not read" in x["why"] for x in lost), lost


def test_requirements_dotdot_include_does_not_reach_the_spec(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The finding itself: the key's lines were pins in the spec and in the output."""
    code, spec, output = _adopt(tree, capsys, "requirements.txt", "numpy==1.26.4\n-r ../secret/id_rsa\n")
    assert code == 0
    _assert_not_read(code, spec, output, f"{tree}/src/requirements.txt:2")
    assert "numpy==1.26.4" in spec  # the source's own lines are carried
    lost = json.loads(output)["result"]["not_carried"]
    assert any("outside the source's folder" in x["why"] for x in lost)


@pytest.mark.parametrize(
    "line",
    [
        "-r ../secret/id_rsa",
        "--requirement ../secret/id_rsa",
        "--requirement=../secret/id_rsa",
        "-r sub/../../secret/id_rsa",
        "-r ./../secret/id_rsa",
        "-c ../secret/id_rsa",
        "--constraint=../secret/id_rsa",
        "-r link.txt",  # a link to the key
        "-r linkdir/id_rsa",  # a folder link leading out
        "-r chain.txt",  # a link to a link to the key
        "-r /etc/passwd",
        "-r ~/.ssh/id_rsa",
        "-r https://evil.example/r.txt",
        "-r file:///etc/passwd",
        "-r ${HOME}/.ssh/id_rsa",
        "-r .",  # a folder
        "-r .ssh/id_rsa",  # a hidden folder inside the source's folder (a source in ~)
        "-r .env",
        "-r sub/.netrc",
        "-r hidden-link.txt",  # a visible link to a hidden file inside the folder
    ],
)
def test_requirements_include_variants(tree: Path, capsys: pytest.CaptureFixture[str], line: str) -> None:
    src = tree / "src"
    (src / "sub").mkdir()
    (src / "link.txt").symlink_to(tree / "secret" / "id_rsa")
    (src / "linkdir").symlink_to(tree / "secret")
    (src / "chain.txt").symlink_to(src / "link.txt")
    (src / ".ssh").mkdir()
    (src / ".ssh" / "id_rsa").write_text(KEY)
    (src / ".env").write_text(KEY)
    (src / "sub" / ".netrc").write_text(KEY)
    (src / "hidden-link.txt").symlink_to(src / ".env")
    code, spec, output = _adopt(tree, capsys, "requirements.txt", f"numpy==1.26.4\n{line}\n")
    _assert_not_read(code, spec, output, f"{src}/requirements.txt:2")


def test_a_nested_include_cannot_leave_the_source_folder(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An included file inside the folder includes one outside it: the second is not read."""
    (tree / "src" / "base.txt").write_text("six==1.16.0\n-r ../secret/id_rsa\n")
    code, spec, output = _adopt(tree, capsys, "requirements.txt", "-r base.txt\n")
    assert code == 0 and "six==1.16.0" in spec
    _assert_not_read(code, spec, output, "base.txt:2")


def test_a_folder_inside_linked_out_is_not_read(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "src" / "deps").mkdir()
    (tree / "src" / "deps" / "more.txt").symlink_to(tree / "secret" / "id_rsa")
    code, spec, output = _adopt(tree, capsys, "requirements.txt", "six==1.16.0\n-r deps/more.txt\n")
    _assert_not_read(code, spec, output, f"{tree}/src/requirements.txt:2")


def test_includes_inside_the_folder_are_still_read(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link that stays inside the source's folder is fine, as a subfolder is."""
    src = tree / "src"
    (src / "req").mkdir()
    (src / "req" / "base.txt").write_text("six==1.16.0\n-r ../more.txt\n")  # relative to req/
    (src / "more.txt").write_text("packaging==24.1\n")
    (src / "real.txt").write_text("idna==3.7\n")
    (src / "alias.txt").symlink_to(src / "real.txt")
    code, spec, _ = _adopt(tree, capsys, "requirements.txt", "-r req/base.txt\n-r alias.txt\n")
    assert code == 0
    assert "six==1.16.0" in spec and "packaging==24.1" in spec and "idna==3.7" in spec


def test_a_fifo_include_is_not_read_and_does_not_hang(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tree / "src" / "pipe.txt")
    code, spec, output = _adopt(tree, capsys, "requirements.txt", "six==1.16.0\n-r pipe.txt\n")
    assert code == 0 and "six==1.16.0" in spec
    lost = json.loads(output)["result"]["not_carried"]
    assert any("not a regular file" in x["why"] for x in lost), lost


@pytest.mark.parametrize(
    "line", ["-r ../secret/id_rsa", "--requirement=../secret/id_rsa", "-r link.txt", "-c ../secret/id_rsa"]
)
def test_environment_yml_pip_section_includes(
    tree: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    (tree / "src" / "link.txt").symlink_to(tree / "secret" / "id_rsa")
    text = f"name: x\ndependencies:\n  - python=3.11\n  - pip\n  - pip:\n    - six==1.16.0\n    - {line}\n"
    code, spec, output = _adopt(tree, capsys, "environment.yml", text)
    assert code == 0, output
    _assert_not_read(code, spec, output, f"{tree}/src/environment.yml:7")


@pytest.mark.parametrize(
    "run",
    [
        "RUN pip install -r ../secret/id_rsa",
        "RUN pip install --requirement=../secret/id_rsa",
        "RUN python3 -m pip install -r link.txt",
        "RUN pip install six==1.16.0 && pip install -c ../secret/id_rsa -r link.txt",
        'RUN ["pip", "install", "-r", "../secret/id_rsa"]',
        "ARG REQ=../secret/id_rsa\nRUN pip install -r $REQ",
    ],
)
def test_dockerfile_pip_install_includes(tree: Path, capsys: pytest.CaptureFixture[str], run: str) -> None:
    (tree / "src" / "link.txt").symlink_to(tree / "secret" / "id_rsa")
    code, spec, output = _adopt(tree, capsys, "Dockerfile", f"FROM python:3.11-slim\n{run}\n")
    assert code == 0, output
    for secret in SECRETS:
        assert secret not in spec + output
    lost = json.loads(output)["result"]["not_carried"]
    assert any("not read" in x["why"] for x in lost), lost


def test_a_source_that_is_itself_a_link_reads_beside_the_link(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The source's folder is where the source is named, so a linked source cannot widen it."""
    (tree / "secret" / "req.txt").write_text("-r id_rsa\n")
    (tree / "src" / "requirements.txt").symlink_to(tree / "secret" / "req.txt")
    code = main(["init", "--from", str(tree / "src" / "requirements.txt"), "--json"])
    out, err = capsys.readouterr()
    for secret in SECRETS:
        assert secret not in out + err
    assert code in (0, 2) and "Traceback" not in out + err
