"""Class: specs whose versions are not strings (issue 16, item 13, first part)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Run, write_spec

BASE = {"python": '"3.11"', "cuda": "cpu", "torch": '"2.13.0"'}
HOSTILE = [
    ("python", "yes", "boolean"),
    ("cuda", "yes", "boolean"),
    ("cuda", "off", "boolean"),
    ("python", "[3, 11]", "list"),
    ("torch", "2024-01-01", "date"),
    ("python", "{major: 3}", "mapping"),
    ("python", "2024-01-01 10:00:00", "timestamp"),
    ("torch", "3.10", "number"),
    ("cuda", "null", None),
]


@pytest.mark.parametrize(("key", "value", "kind"), HOSTILE, ids=lambda v: str(v))
def test_non_string_versions_are_refused(
    project: Path, envkit: Callable[..., Run], key: str, value: str, kind: str | None
) -> None:
    fields = {**BASE, key: value}
    body = (
        f"name: v\npython: {fields['python']}\ncuda: {fields['cuda']}\n"
        f"frameworks:\n  torch: {fields['torch']}\n"
    )
    write_spec(project, "v", body)
    run = envkit("validate", "v", "--json")
    assert run.code == 2
    data = run.envelope()
    assert data["ok"] is False
    problems = data["errors"][0]["problems"]
    field = "frameworks.torch" if key == "torch" else key
    assert any(p["field"] == field for p in problems), problems
    if kind:
        assert any(kind in p["message"] for p in problems), problems
    text = envkit("validate", "v")
    assert text.code == 2 and "error:" in text.err
