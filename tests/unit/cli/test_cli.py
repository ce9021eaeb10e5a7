"""The CLI through ``main(argv) -> int``: exit codes, the JSON envelope, errors without tracebacks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import envkit
from envkit.cli import cli, main

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "environments", tmp_path / "environments")
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    return tmp_path


def envelope(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    assert set(data) == {"envkit", "schema", "command", "ok", "result", "errors"}
    assert data["envkit"] == envkit.__version__
    assert data["schema"] == 1
    return data


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    for name in cli.list_commands(None):  # type: ignore[arg-type]
        assert main([name, "--help"]) == 0, name
        out = capsys.readouterr().out
        assert "--json" in out, name


def test_validate_all(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate"]) == 0
    assert "ok  cuda11.8-paddle2.6" in capsys.readouterr().out


def test_validate_json(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "cpu-torch", "--json"]) == 0
    data = envelope(capsys)
    assert data["ok"] is True and data["command"] == "validate"


def test_invalid_spec_exits_2_with_file_line_and_hint(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = project / "environments" / "bad.yaml"
    bad.write_text('name: bad\npython: "3.10"\ncuda: "11.9"\ncuda: "11.8"\n')
    assert main(["validate", "bad"]) == 2
    err = capsys.readouterr().err
    assert "environments/bad.yaml:4" in err and "duplicate key" in err
    assert "hint:" in err
    assert "Traceback" not in err


def test_invalid_spec_json_lists_problems(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "environments" / "bad.yaml").write_text("name: bad\npython: [\n")
    assert main(["validate", "bad", "--json"]) == 2
    data = envelope(capsys)
    assert data["ok"] is False
    errors = data["errors"]
    assert isinstance(errors, list) and errors[0]["problems"][0]["line"] is not None


def test_unknown_environment_suggests_names(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "cuda11.8-padle2.6"]) == 2
    assert "did you mean cuda11.8-paddle2.6" in capsys.readouterr().err


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render"]) == 2
    assert main(["no-such-command"]) == 2


def test_render_twice_identical(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "cuda11.8-paddle2.6"]) == 0
    first = {p.name: p.read_bytes() for p in (project / "images" / "cuda11.8-paddle2.6").iterdir()}
    assert main(["render", "cuda11.8-paddle2.6", "--json"]) == 0
    capsys.readouterr()
    second = {p.name: p.read_bytes() for p in (project / "images" / "cuda11.8-paddle2.6").iterdir()}
    assert first == second and {"Dockerfile", "environment.yml", ".dockerignore", "README.md"} <= set(first)


def test_render_json_reports_no_changes_on_rerun(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "cpu-torch", "-o", str(project / "out")]) == 0
    capsys.readouterr()
    assert main(["render", "cpu-torch", "-o", str(project / "out"), "--json"]) == 0
    result = envelope(capsys)["result"]
    assert isinstance(result, dict) and result["changed"] == []


def test_failed_render_keeps_earlier_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "cpu-torch"]) == 0
    before = (project / "images" / "cpu-torch" / "Dockerfile").read_bytes()
    spec = project / "environments" / "cpu-torch.yaml"
    spec.write_text(spec.read_text() + "bogus: 1\n")
    assert main(["render", "cpu-torch"]) == 2
    assert (project / "images" / "cpu-torch" / "Dockerfile").read_bytes() == before


def test_catalog_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--json", "--section", "installers"]) == 0
    result = envelope(capsys)["result"]
    assert isinstance(result, dict)
    assert all(len(i["sha256"]) == 64 and i["source"] for i in result["installers"])


def test_catalog_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    assert "11.8" in out and "paddle" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert envkit.__version__ in capsys.readouterr().out


def test_diff_min_severity_hides_only_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("numpy==1.26.4\nsix==1.16.0\ntorch==2.1.2\n")
    b.write_text("numpy==1.24.4\nsix==1.17.0\ntorch==2.1.2\n")
    assert main(["diff", str(a), str(b), "--min-severity", "warning"]) == 1
    out = capsys.readouterr().out
    assert "numpy" in out and "six" not in out.split("\n", 2)[2].split("(")[0]
    assert "1 info finding hidden (--min-severity info shows all)" in out
    assert main(["diff", str(a), str(b), "--min-severity", "warning", "--json"]) == 1
    findings = envelope(capsys)["result"]["findings"]  # type: ignore[index]
    assert {f["package"] for f in findings} >= {"numpy", "six"}


def test_messages_keep_square_brackets(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Errors, hints and warnings are text, not rich markup: '[torch-numpy2]' must survive."""
    spec = project / "environments" / "bad.yaml"
    spec.write_text('name: bad\npython: "3.11"\ncuda: "12.1"\nframeworks: {torch: "2.1.2"}\n')
    assert main(["validate", "bad"]) == 0
    assert "[torch-numpy2]" in capsys.readouterr().err
    spec.write_text(spec.read_text() + 'pip: ["numpy>=2"]\n')
    assert main(["validate", "bad"]) == 2
    assert "known-bad combination [torch-numpy2]" in capsys.readouterr().err


def test_every_registered_command_is_in_the_lazy_table() -> None:
    """A command a module registers must be in envkit.cli.COMMANDS, or `envkit --help` would not list it."""
    import pkgutil

    import envkit.cli
    from envkit.cli import COMMANDS

    for info in pkgutil.iter_modules(envkit.cli.__path__):
        if info.name.endswith(("_cmd", "_cmds")):
            __import__(f"envkit.cli.{info.name}")
    assert set(cli.commands) == set(COMMANDS)


def test_the_lazy_command_table_matches_the_commands() -> None:
    """``envkit --help`` lists commands from envkit.cli.COMMANDS without importing them: it must agree."""
    import click

    from envkit.cli import COMMANDS

    ctx = click.Context(cli)
    for name, (module, short) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.callback is not None, name
        assert command.get_short_help_str(1000) == short, name
        assert f"envkit.cli.{module}" in {
            command.callback.__module__,
            getattr(command.callback, "__wrapped__", command.callback).__module__,
        }, name


def test_help_and_compare_import_no_heavy_module(tmp_path: Path) -> None:
    """Start-up stays light: no docker, pydantic, rich, conda_lock, rattler, frameworks or network stack
    for --help and --compare."""
    import subprocess
    import sys

    from tests.unit.probe.conftest import make_report

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(make_report()))
    b.write_text(json.dumps(make_report(host="host-b")))
    heavy: tuple[str, ...] = ("docker", "pydantic", "rich", "conda_lock", "rattler", "yaml", "packaging")
    heavy += ("requests", "torch", "paddle", "numpy", "jinja2", "ssl", "urllib3", "tomllib", "zipfile")
    for argv in (["--help"], ["probe", "--compare", str(a), str(b)]):
        code = (
            "import sys, runpy; sys.argv = ['envkit', *sys.argv[1:]]\n"
            "from envkit.cli import main\nrc = main()\n"
            f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))\n"
            "print('LOADED', bad, file=sys.stderr)\n"
            "print('ENVKIT', sorted(m for m in sys.modules if m.startswith('envkit.')), file=sys.stderr)\n"
            "sys.exit(rc)"
        )
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "LOADED []" in out.stderr, (argv, out.stderr[-500:])
        if argv == ["--help"]:  # the command table alone: no command module, no composition root
            assert "ENVKIT ['envkit.cli']" in out.stderr, out.stderr[-500:]
