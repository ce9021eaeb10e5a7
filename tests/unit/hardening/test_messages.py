"""Class: messages that misled (issue 16, item 19)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.inventory import parse_inventory

from .conftest import Run

BOM = "\ufeff"


@pytest.mark.parametrize(
    "text",
    [
        f"{BOM}numpy==1.26.4\ntorch==2.1.2\n",
        f"{BOM}# packages in environment at /opt/conda:\n#\nnumpy 1.26.4 py311h_0 conda-forge\n",
        f"{BOM}name: x\ndependencies:\n  - numpy=1.26.4=py311h_0\n",
        f'{BOM}[{{"name": "numpy", "version": "1.26.4"}}]',
    ],
    ids=["pip-freeze", "conda-list", "env-export", "pip-json"],
)
def test_a_utf8_bom_is_read(text: str, tmp_path: Path, envkit: Callable[..., Run]) -> None:
    inv = parse_inventory(text, path="bom.txt", label="bom")
    assert "numpy" in {p.name for p in inv.packages}
    path = tmp_path / "bom.txt"
    path.write_bytes(text.encode("utf-8"))
    assert envkit("diff", "--check", str(path)).code in (0, 1)


@pytest.mark.parametrize("name", ["Bad Name", "../etc", "a;rm -rf", "UPPER", "-x"])
def test_images_refuses_bad_names(envkit: Callable[..., Run], project: Path, name: str) -> None:
    run = envkit("images", "--json", "--", name)
    assert run.code == 2
    assert "not an environment name" in run.envelope()["errors"][0]["message"]


@pytest.mark.parametrize("schema", ["1", 1.0, True, None, [1]])
def test_report_schema_of_the_wrong_type_says_so(
    tmp_path: Path, envkit: Callable[..., Run], schema: object
) -> None:
    report = {
        "kind": "envkit-probe-report",
        "schema": schema,
        "config": {},
        "fingerprint": {},
        "frameworks": {},
    }
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(report))
    b.write_text(json.dumps(report))
    run = envkit("probe", "--compare", str(a), str(b), "--json")
    assert run.code == 2
    message = run.envelope()["errors"][0]["message"]
    if schema != 1:
        assert "wrong type" in message, message
