from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.errors import UsageError
from envkit.init import FRAMEWORKS, choose_starter, init_repo, valid_cudas
from envkit.spec.load import load_spec

SOURCE = "git+https://github.com/example/envkit@" + "0123456789abcdef" * 2 + "01234567"


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def test_init_adds_targets_without_losing_anything(repo: Path, team_makefile: str, make: Any) -> None:
    result = init_repo(repo)
    makefile = (repo / "Makefile").read_text()
    assert makefile.startswith(team_makefile)
    assert makefile.rstrip().endswith("include envkit.mk")
    assert makefile.count("include envkit.mk") == 1
    name = result.choice.name
    assert (repo / "environments" / f"{name}.yaml").is_file()
    assert (repo / "envkit.mk").is_file()
    statuses = {f.path: f.status for f in result.files}
    assert statuses == {f"environments/{name}.yaml": "created", "envkit.mk": "created", "Makefile": "updated"}
    # the team's own targets still work next to the new ones
    assert "python3 -m pytest -q" in make(repo, "test")
    assert f"envkit lock {name}" in make(repo, "env-lock")


def test_rerun_changes_nothing(repo: Path) -> None:
    init_repo(repo, ci="github", source=SOURCE)
    before = snapshot(repo)
    again = init_repo(repo, ci="github", source=SOURCE)
    assert snapshot(repo) == before
    assert {f.status for f in again.files} == {"unchanged"}
    assert not again.changed
    assert again.warnings == ()


def test_existing_envkit_mk_is_kept_unless_forced(repo: Path) -> None:
    (repo / "envkit.mk").write_text("# our own\n")
    kept = init_repo(repo)
    assert (repo / "envkit.mk").read_text() == "# our own\n"
    assert any(f.path == "envkit.mk" and f.status == "kept" for f in kept.files)
    assert any("envkit.mk" in w for w in kept.warnings)
    forced = init_repo(repo, force=True)
    assert "env-check:" in (repo / "envkit.mk").read_text()
    assert any(f.path == "envkit.mk" and f.status == "overwritten" for f in forced.files)


def test_edited_spec_is_kept(repo: Path) -> None:
    first = init_repo(repo, "torch", "cpu")
    spec = repo / "environments" / f"{first.choice.name}.yaml"
    edited = spec.read_text() + "pip:\n  - safetensors>=0.4\n"
    spec.write_text(edited)
    second = init_repo(repo, "torch", "cpu")
    assert spec.read_text() == edited
    assert second.warnings


def test_makefile_is_created_when_missing(tmp_path: Path, make: Any) -> None:
    result = init_repo(tmp_path, "torch", "cpu")
    assert (tmp_path / "Makefile").read_text().splitlines()[-1] == "include envkit.mk"
    assert any(f.path == "Makefile" and f.status == "created" for f in result.files)
    assert "envkit build cpu-torch" in make(tmp_path, "env-build")


def test_makefile_without_final_newline_and_existing_include(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("all:\n\t@true")
    init_repo(tmp_path, "torch", "cpu")
    text = (tmp_path / "Makefile").read_text()
    assert text.startswith("all:\n\t@true\n")
    (tmp_path / "Makefile").write_text("-include ./envkit.mk\n")
    result = init_repo(tmp_path, "torch", "cpu")
    assert (tmp_path / "Makefile").read_text() == "-include ./envkit.mk\n"
    assert any(f.path == "Makefile" and f.status == "unchanged" for f in result.files)


def test_gnumakefile_is_preferred(tmp_path: Path) -> None:
    (tmp_path / "GNUmakefile").write_text("x:\n\t@true\n")
    init_repo(tmp_path, "torch", "cpu")
    assert not (tmp_path / "Makefile").exists()
    assert "include envkit.mk" in (tmp_path / "GNUmakefile").read_text()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_offered_cuda_gives_a_valid_spec(tmp_path: Path, framework: str) -> None:
    catalog = load_catalog()
    cudas = valid_cudas(catalog, framework)
    assert "cpu" in cudas
    assert len(cudas) > 1
    for cuda in cudas:
        result = init_repo(tmp_path, framework, cuda)
        loaded = load_spec(tmp_path / "environments" / f"{result.choice.name}.yaml", catalog)
        assert loaded.spec.cuda == cuda
        assert getattr(loaded.spec.frameworks, framework) == result.choice.version
        assert loaded.spec.python == result.choice.python
        assert loaded.warnings == ()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_default_is_a_verified_gpu_release(tmp_path: Path, framework: str) -> None:
    catalog = load_catalog()
    choice = choose_starter(catalog, framework)
    release = catalog.framework_release(framework, choice.version)
    assert release is not None
    assert release.verified
    assert choice.cuda != "cpu"
    assert release.wheel_for(choice.cuda) is not None
    result = init_repo(tmp_path, framework)
    load_spec(tmp_path / "environments" / f"{result.choice.name}.yaml", catalog)


def test_python_and_name_options(tmp_path: Path) -> None:
    result = init_repo(tmp_path, "paddle", "cpu", "3.10", name="team-paddle")
    loaded = load_spec(tmp_path / "environments" / "team-paddle.yaml")
    assert loaded.spec.python == "3.10"
    assert loaded.spec.frameworks.paddle == result.choice.version
    assert "ENV           ?= team-paddle" in (tmp_path / "envkit.mk").read_text()


def test_unknown_cuda_is_refused_with_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        init_repo(tmp_path, "paddle", "12.4")
    assert info.value.exit_code == 2
    assert info.value.hint is not None
    for cuda in valid_cudas(load_catalog(), "paddle"):
        assert cuda in info.value.hint
    assert not (tmp_path / "environments").exists()


def test_unsupported_python_and_bad_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"Python 3\.7"):
        init_repo(tmp_path, "torch", "12.4", "3.7")
    with pytest.raises(UsageError, match="not an environment name"):
        init_repo(tmp_path, name="Bad Name")


def test_cli_init_json_and_exit_codes(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENVKIT_ROOT", os.fspath(repo))
    assert main(["init", "--framework", "torch", "--cuda", "cpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True
    assert data["result"]["environment"]["cuda"] == "cpu"
    assert data["result"]["changed"] is True
    assert main(["init", "--framework", "torch", "--cuda", "cpu"]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert main(["init", "--framework", "paddle", "--cuda", "10.2"]) == 2
    err = capsys.readouterr().err
    assert "hint" in err
    assert "11.8" in err
    assert main(["init", "--ci", "jenkins"]) == 2


def test_symlinked_and_non_utf8_makefile_are_preserved(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "make").mkdir(parents=True)
    shared = (
        repo / "make" / "common.mk"
    )  # a link inside the project is written through (issue 24: not outside)
    shared.write_bytes(b"# caf\xe9 (latin-1)\nall:\n\t@true\n")
    (repo / "Makefile").symlink_to(shared)
    init_repo(repo, "torch", "cpu")
    assert (repo / "Makefile").is_symlink()
    data = shared.read_bytes()
    assert data.startswith(b"# caf\xe9 (latin-1)\nall:\n\t@true\n")
    assert data.endswith(b"include envkit.mk\n")
