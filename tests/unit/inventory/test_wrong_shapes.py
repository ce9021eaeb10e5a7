"""Readers of ``envkit diff`` on wrong shapes: an error naming the file and field, never a traceback.

Two found by issue 43 (item 8) and their classes: an ``envkit check --json`` document whose
``gpu_code`` lists are not lists of architectures, and a ``conda list`` whose header line is cut
short (``# packages in environment at``). The check documents start as real ones
(``envkit check`` of the recorded Paddle facts, tests/unit/readiness/test_diff.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import InventoryError
from envkit.inventory.read import read_inventory
from tests.unit.hardening.conftest import Run
from tests.unit.readiness.test_diff import _check_json
from tests.unit.readiness.test_rules import paddle_doc


@pytest.fixture
def envkit(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    from envkit.cli import main

    def run(*argv: str) -> Run:
        code = main(list(argv))
        captured = capsys.readouterr()
        assert "Traceback" not in captured.out + captured.err
        return Run(code, captured.out, captured.err)

    return run


def _with_gpu_code(tmp_path: Path, field: str, value: object) -> Path:
    path = _check_json(tmp_path, "site-b", paddle_doc())
    doc = json.loads(path.read_text())
    code: dict[str, Any] = doc["result"]["summary"]["gpu_code"]
    lib = sorted(code)[0]
    code[lib][field] = value
    path.write_text(json.dumps(doc))
    return path


SHAPES = {
    "an int": 90,
    "a string": "sm_90",
    "null": None,
    "an object": {"sm_90": 1},
    "a list holding an object": ["sm_80", {"sm_90": 1}],
    "a list holding a list": [["sm_90"]],
    "a list holding a bool": [True],
    "a list holding null": ["sm_90", None],
}


@pytest.mark.parametrize("field", ["sass", "ptx"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_check_json_with_gpu_code_not_a_list_is_an_error_naming_the_field(
    tmp_path: Path, envkit: Callable[..., Run], field: str, shape: str
) -> None:
    b = _with_gpu_code(tmp_path, field, SHAPES[shape])
    with pytest.raises(
        InventoryError, match=rf"site-b\.json: result\.summary\.gpu_code\.'[^']+'\.{field}: expected"
    ):
        read_inventory(b)
    a = _check_json(tmp_path, "site-a", paddle_doc())
    run = envkit("diff", str(a), str(b))
    assert run.code == 2 and f".{field}: expected a list of GPU architectures" in run.err, run.err


def test_check_json_with_architectures_as_numbers_still_reads(tmp_path: Path) -> None:
    inv = read_inventory(_with_gpu_code(tmp_path, "ptx", [80, "sm_90"]))
    assert "| 80,sm_90" in inv.meta["gpu_code"]


ROWS = "numpy                     1.26.4          py311h64a7726_0    conda-forge\n"
HEADERS = {
    "cut after 'at'": "# packages in environment at",
    "cut after 'at '": "# packages in environment at ",
    "only the colon": "# packages in environment at:",
    "'at' and a colon, spaced": "# packages in environment at :",
    "a longer word": "# packages in environment atlas",
    "cut inside the word": "# packages in environment a",
}


@pytest.mark.parametrize("header", sorted(HEADERS))
@pytest.mark.parametrize("rows", ["", ROWS])
def test_a_conda_list_with_its_header_cut_short_reads_or_is_an_error(
    tmp_path: Path, envkit: Callable[..., Run], header: str, rows: str
) -> None:
    path = tmp_path / "list.txt"
    path.write_text(HEADERS[header] + "\n" + rows)
    other = tmp_path / "other.txt"
    other.write_text("# packages in environment at /opt/conda:\n#\n" + ROWS)
    run = envkit("diff", str(path), str(other))
    if rows:
        assert run.code == 0, run.err  # the same numpy: no drift; the cut header names no prefix
        assert "prefix" not in read_inventory(path).meta
    else:
        assert run.code == 2 and "list.txt" in run.err


def test_a_whole_header_keeps_its_prefix(tmp_path: Path) -> None:
    for line, prefix in [
        ("# packages in environment at /opt/conda:", "/opt/conda"),
        ("# packages in environment at /home/u/miniforge3/envs/a b:", "/home/u/miniforge3/envs/a b"),
        ("# packages in environment at C:\\Users\\u\\miniconda3:", "C:\\Users\\u\\miniconda3"),
    ]:
        path = tmp_path / "list.txt"
        path.write_text(f"{line}\n#\n{ROWS}")
        assert read_inventory(path).meta["prefix"] == prefix
