"""``envkit.project``: the project's layout (environments/, images/, names), usable from any stage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envkit import project
from envkit.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    specs = tmp_path / "environments"
    specs.mkdir()
    for name in ("cuda12.4-torch2.5", "cuda11.8-paddle2.6", "cpu-torch"):
        (specs / f"{name}.yaml").write_text(f"name: {name}\n", "utf-8")
    (specs / "notes.txt").write_text("not a spec\n", "utf-8")
    return tmp_path


def test_find_specs_lists_the_yaml_files_sorted(root: Path) -> None:
    assert [p.name for p in project.find_specs(root)] == [
        "cpu-torch.yaml",
        "cuda11.8-paddle2.6.yaml",
        "cuda12.4-torch2.5.yaml",
    ]
    assert project.find_specs(root / "nowhere") == []


def test_a_name_is_its_spec_file_and_a_path_is_taken_as_it_is(root: Path) -> None:
    assert project.resolve_spec_path("cpu-torch", root) == root / "environments" / "cpu-torch.yaml"
    elsewhere = root / "other.yml"
    elsewhere.write_text("name: other\n", "utf-8")
    assert project.resolve_spec_path(str(elsewhere), root) == elsewhere


@pytest.mark.parametrize(
    ("given", "message", "hint"),
    [
        ("cuda12.4-torch2.6", "no such environment", "did you mean cuda12.4-torch2.5, cpu-torch?"),
        ("Torch", "is not an environment name", "names match [a-z0-9][a-z0-9._-]*"),
        ("../x.yaml", "no such spec file", "check the path"),
        ("zzz", "no such environment", "known: cpu-torch, cuda11.8-paddle2.6, cuda12.4-torch2.5"),
    ],
)
def test_what_is_not_a_spec_is_a_usage_error_with_a_hint(
    root: Path, given: str, message: str, hint: str
) -> None:
    with pytest.raises(UsageError) as caught:
        project.resolve_spec_path(given, root)
    assert message in caught.value.message and caught.value.hint == hint


def test_image_dir_refuses_a_link_out_of_the_project(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert project.image_dir(root, "cpu-torch") == root / "images" / "cpu-torch"
    outside = tmp_path_factory.mktemp("outside")
    (root / "images").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UsageError, match="outside the project"):
        project.image_dir(root, "cpu-torch")


def test_the_spec_loader_names_the_same_helpers() -> None:
    from envkit.spec import load, models

    assert load.resolve_spec_path is project.resolve_spec_path and load.image_dir is project.image_dir
    assert load.find_specs is project.find_specs and load.SPEC_DIR == project.SPEC_DIR == "environments"
    assert models.NAME_RE is project.NAME_RE


def test_it_imports_no_stage_and_no_pydantic() -> None:
    code = (
        "import sys, envkit.project\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('envkit', 'pydantic')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["envkit", "envkit.errors", "envkit.project"]
