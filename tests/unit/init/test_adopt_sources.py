"""Every format ``init --from`` reads has one reader of one signature (``envkit.adopt.sources``).

Each reader takes a :class:`~envkit.adopt.sources.SourceText` and returns the evidence and the
``envkit diff`` inventory of the file; read directly, a real file of each format gives exactly what
the walk (``read_source``, ``read_evidence``) gives for it, so the walk goes through that reader.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.adopt import read_evidence
from envkit.adopt.evidence import AdoptError
from envkit.adopt.sources import (
    Reader,
    SourceText,
    read_conda_env,
    read_dockerfile,
    read_inventory,
    read_pixi_toml,
    read_pyproject_uv,
    read_requirements,
)
from envkit.adopt.sources.requirements import MAX_TEXT_BYTES
from envkit.inventory import detect_format

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "init"
CASES: list[tuple[Reader, str, str, bool]] = [  # reader, corpus file, the evidence's kind, has an inventory
    (read_requirements, "requirements/aiyuyin-requirements-cuda.txt", "requirements", True),
    (read_conda_env, "environment-yml/abodybuilder3-environment_gpu.yml", "environment.yml", False),
    (read_dockerfile, "dockerfile/alufia-pytorch260-devel.Dockerfile", "dockerfile", False),
    (read_inventory, "conda-listing/paris-spec-file.txt", "conda-explicit", True),
    (read_pixi_toml, "pixi-toml/act-aloha/pixi.toml", "pixi.toml", False),
    (read_pyproject_uv, "pyproject/dia/pyproject.toml", "pyproject.toml", False),
]


@pytest.mark.parametrize(("reader", "name", "kind", "listed"), CASES, ids=[c[1] for c in CASES])
def test_each_format_is_read_by_its_reader(reader: Reader, name: str, kind: str, listed: bool) -> None:
    path = CORPUS / name
    text = path.read_text(encoding="utf-8")
    found, inventory = reader(SourceText(path, text, str(path), detect_format(text)))
    assert found.origin == str(path)
    assert found.kind == kind
    assert (inventory is not None) == listed
    walked, walked_inventory = read_evidence(str(path))
    assert walked == found  # the walk read it with this reader, and nothing else
    assert walked_inventory == inventory


@pytest.mark.parametrize("reader", [read_requirements, read_dockerfile])
def test_a_reader_refuses_a_file_over_its_kind_limit(reader: Reader, tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with pytest.raises(AdoptError, match=r"huge\.txt: larger than \d+ bytes for its kind"):
        reader(SourceText(path, "# x\n" * (MAX_TEXT_BYTES // 4 + 1), str(path)))
