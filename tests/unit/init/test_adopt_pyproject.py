"""`envkit init --from pyproject.toml`: a PEP 621 project with uv's tables, read as `uv sync`
installs it on Linux (tests/corpus/init/pyproject/: dia, nanochat), and hostile variants."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envkit.adopt import AdoptOptions, adopt, plan_adoption, read_evidence
from envkit.adopt.adoption import Adoption
from envkit.adopt.evidence import AdoptError
from envkit.catalog import load_catalog

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "init" / "pyproject"


def adopt_text(tmp_path: Path, text: str) -> Adoption:
    path = tmp_path / "pyproject.toml"
    path.write_text(text, "utf-8")
    found, _ = read_evidence(str(path))
    return plan_adoption(found, load_catalog(), AdoptOptions())


def facts(adoption: Adoption) -> tuple[str, str, str]:
    return adoption.detected.get("torch", ""), adoption.detected["cuda"], adoption.detected["python"]


def test_dia_reads_torch_from_its_explicit_cuda_index(tmp_path: Path) -> None:
    adopted = adopt(str(CORPUS / "dia" / "pyproject.toml"), tmp_path)
    assert facts(adopted.adoption)[:2] == ("2.6.0", "12.6")
    lost = " | ".join(str(x) for x in adopted.adoption.lost)
    assert "triton-windows" in lost and "dependency-groups.dev" in lost
    assert adopted.path.name == "nari-tts.yaml"  # [project] name


def test_nanochat_without_an_extra_is_pypis_torch_and_says_the_extras_were_not_read(tmp_path: Path) -> None:
    adoption = adopt(str(CORPUS / "nanochat" / "pyproject.toml"), tmp_path).adoption
    assert facts(adoption)[:2] == ("2.9.1", "12.8")  # uv sync with no --extra: torch from PyPI
    lost = " | ".join(str(x) for x in adoption.lost)
    assert "optional-dependencies.gpu" in lost and "optional-dependencies.cpu" in lost


BASE = '[project]\nname = "p"\nversion = "0"\ndependencies = ["torch==2.4.1"]\n'
SOURCES = "[tool.uv.sources]\ntorch = ["
INDEX = '[[tool.uv.index]]\nname = "cu118"\nurl = "https://download.pytorch.org/whl/cu118"\nexplicit = true\n'


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", ("2.4.1", "12.1", None)),  # PyPI's wheel
        (f'[tool.uv.sources]\ntorch = {{ index = "cu118" }}\n{INDEX}', ("2.4.1", "11.8", None)),
        # an entry for another platform only, or behind an extra: PyPI's
        (f"{SOURCES}{{ index = \"cu118\", marker = \"sys_platform == 'win32'\" }}]\n{INDEX}",
         ("2.4.1", "12.1", None)),
        (f'{SOURCES}{{ index = "cu118", extra = "gpu" }}]\n{INDEX}', ("2.4.1", "12.1", None)),
        # a default index replaces PyPI
        ('[[tool.uv.index]]\nurl = "https://download.pytorch.org/whl/cu118"\ndefault = true\n',
         ("2.4.1", "11.8", None)),
    ],
)  # fmt: skip
def test_sources_and_indexes(tmp_path: Path, extra: str, expected: tuple[str, str, str | None]) -> None:
    torch, cuda, _ = facts(adopt_text(tmp_path, BASE + extra))
    assert (torch, cuda) == expected[:2]


def test_a_one_minor_requires_python_is_the_python(tmp_path: Path) -> None:
    text = BASE.replace('version = "0"', 'version = "0"\nrequires-python = "==3.10.*"')
    assert facts(adopt_text(tmp_path, text))[2] == "3.10"
    ranged = BASE.replace('version = "0"', 'version = "0"\nrequires-python = ">=3.10"')
    assert facts(adopt_text(tmp_path, ranged))[2] in {
        "3.10",
        "3.11",
        "3.12",
    }  # a range: the plan chooses in it


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + '[tool.uv.sources]\ntorch = { index = "nowhere" }\n', "no [[tool.uv.index]]"),
        ('[project]\nname = "p"\ndependencies = "torch"\n', "not a list"),
        ("[project\nname = ", "not TOML"),
        ('[project]\nname = "p"\ndependencies = ["torch==2.4.1; rm -rf ~"]\n', "shell command"),
    ],
)
def test_bad_projects_are_refused_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(AdoptError) as e:
        adopt_text(tmp_path, text)
    assert message in e.value.message and "pyproject.toml" in e.value.message


def test_a_git_source_is_reported(tmp_path: Path) -> None:
    text = BASE.replace('["torch==2.4.1"]', '["torch==2.4.1", "mylib"]')
    text += '[tool.uv.sources]\nmylib = { git = "https://github.com/x/mylib" }\n'
    assert any("a git source" in x.why for x in adopt_text(tmp_path, text).lost)


def test_a_pixi_pyproject_still_goes_to_the_pixi_reader(tmp_path: Path) -> None:
    source = tmp_path / "pyproject.toml"
    source.write_text(BASE + '[tool.pixi.project]\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n')
    found, _ = read_evidence(str(source))
    assert found.kind == "pixi.toml"


def test_the_uv_lock_beside_it_agrees(tmp_path: Path) -> None:
    lock = tmp_path / "uv.lock"
    shutil.copy(CORPUS.parent / "uv-lock" / "dia" / "uv.lock", lock)
    found, _ = read_evidence(str(lock))
    adoption = plan_adoption(found, load_catalog(), AdoptOptions())
    assert facts(adoption)[:2] == ("2.6.0", "12.6")


def test_a_pyproject_without_a_project_table_is_refused_as_such(tmp_path: Path) -> None:
    with pytest.raises(AdoptError, match=r"no \[project\] table"):
        adopt_text(tmp_path, '[tool.poetry]\nname = "p"\n[tool.poetry.dependencies]\ntorch = "2.4.1"\n')
