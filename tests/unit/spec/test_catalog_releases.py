"""Must-shows of the refreshed catalog: real releases validate, unknown ones warn (fail with --strict)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.errors import SpecError
from envkit.render import render_image
from envkit.render.pip import framework_requirements
from envkit.spec.load import load_spec


def write(root: Path, name: str, text: str) -> Path:
    path = root / "environments" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"name: {name}\n{text}")
    return path


@pytest.mark.parametrize(
    ("framework", "version", "python", "cuda", "requirement"),
    [
        ("paddle", "2.6.0", "3.10", "11.8", "paddlepaddle-gpu==2.6.0"),
        ("paddle", "2.6.1", "3.12", "12.0", "paddlepaddle-gpu==2.6.1.post120"),
        ("paddle", "2.6.1", "3.11", "cpu", "paddlepaddle==2.6.1"),
        ("torch", "2.0.1", "3.11", "11.7", "torch==2.0.1+cu117"),
        ("torch", "2.0.1", "3.10", "11.8", "torch==2.0.1+cu118"),
        ("torch", "1.13.1", "3.10", "11.7", "torch==1.13.1+cu117"),
        ("torch", "1.13.1", "3.9", "11.6", "torch==1.13.1+cu116"),
        ("torch", "2.10.0", "3.12", "12.8", "torch==2.10.0+cu128"),
        ("torch", "2.10.0", "3.14", "cpu", "torch==2.10.0+cpu"),
    ],
)
def test_real_releases_validate_with_their_flavours(
    tmp_path: Path, framework: str, version: str, python: str, cuda: str, requirement: str
) -> None:
    text = f'python: "{python}"\ncuda: "{cuda}"\nframeworks:\n  {framework}: "{version}"\n'
    text += (
        "base_image: ubuntu:22.04\n"  # not every CUDA has a runtime image in the catalog (11.6, 11.7, 12.0)
    )
    loaded = load_spec(write(tmp_path, "demo", text), strict=True)
    assert not [w for w in loaded.warnings if "not in the catalog" in w]
    assert framework_requirements(loaded.resolved) == [requirement]


def test_flavour_that_does_not_exist_is_an_error_naming_the_real_ones(tmp_path: Path) -> None:
    text = 'python: "3.10"\ncuda: "12.1"\nframeworks:\n  torch: "2.0.1"\n'
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, "demo", text))
    (problem,) = info.value.problems
    assert "no published wheels for CUDA 12.1" in problem.message and "11.7, 11.8" in (problem.hint or "")


def test_python_without_wheels_is_an_error_naming_the_pythons_that_exist(tmp_path: Path) -> None:
    text = 'python: "3.12"\ncuda: "11.8"\nframeworks:\n  torch: "2.0.1"\n'
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, "demo", text))
    (problem,) = info.value.problems
    assert problem.field == "frameworks.torch" and problem.line == 5
    assert "no wheels for Python 3.12" in problem.message and "3.8, 3.9, 3.10, 3.11" in problem.message


def test_unknown_release_is_a_warning_and_an_error_with_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "future", 'python: "3.12"\ncuda: cpu\nframeworks:\n  torch: "2.99.0"\n')
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    assert main(["validate", "future"]) == 0
    err = capsys.readouterr().err
    assert "torch 2.99.0 is not in the catalog" in err and "envkit catalog refresh" in err
    assert main(["validate", "future", "--strict", "--json"]) == 2
    envelope = json.loads(capsys.readouterr().out)
    assert "not in the catalog" in envelope["errors"][0]["message"]
    loaded = load_spec(tmp_path / "environments" / "future.yaml")
    # the lock is asked for the wheel the newest release's flavour names: it says whether it exists
    assert framework_requirements(loaded.resolved) == ["torch==2.99.0+cpu"]


def test_render_on_the_official_paddle_image_with_venv_and_a_tuna_mirror(tmp_path: Path) -> None:
    text = (
        'python: "3.10"\ncuda: "11.8"\ninstaller: venv\n'
        "base_image: paddlepaddle/paddle:2.6.0-gpu-cuda11.8-cudnn8\n"
        'frameworks:\n  paddle: "2.6.0"\n'
        "mirrors:\n  pypi: https://pypi.tuna.tsinghua.edu.cn/simple\n"
    )
    loaded = load_spec(write(tmp_path, "paddle26", text))
    assert any("not in the catalog" in w and "paddlepaddle/paddle" in w for w in loaded.warnings)
    files = render_image(loaded).files
    dockerfile = files["Dockerfile"].decode()
    assert "FROM paddlepaddle/paddle:2.6.0-gpu-cuda11.8-cudnn8 AS builder" in dockerfile
    assert "FROM paddlepaddle/paddle:2.6.0-gpu-cuda11.8-cudnn8 AS runtime" in dockerfile
    assert 'PIP_INDEX_URL="https://pypi.tuna.tsinghua.edu.cn/simple"' in dockerfile
    requirements = files["requirements.txt"].decode()
    assert "--index-url https://pypi.tuna.tsinghua.edu.cn/simple" in requirements
    assert "paddlepaddle-gpu==2.6.0" in requirements
