"""Class: hostile YAML in specs (issue 16, item 14): bombs, nesting, bad tags -> exit 2 with file:line."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Run, write_spec

HEAD = 'name: bomb\npython: "3.11"\ncuda: cpu\n'
BILLION_LAUGHS = (
    HEAD
    + "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(8)
    )
)

HOSTILE_YAML = {
    "alias bomb": (BILLION_LAUGHS, "aliases"),
    "plain alias": (HEAD + "description: &d hello\nconda: [*d]\n", "aliases"),
    "recursive alias": (HEAD + "env: &e {A: *e}\n", "aliases"),
    "merge key": (HEAD + "env:\n  <<: {A: '1'}\n", "merge"),
    "complex key": (HEAD + "? [a, b]\n: 1\n", "complex"),
    "custom tag": (HEAD + "description: !evil x\n", "cannot read"),
    "python object tag": (HEAD + "description: !!python/object/apply:os.system ['id']\n", "not allowed"),
    "python name tag": (HEAD + "description: !!python/name:os.system x\n", "cannot read"),
    "bad int tag": (HEAD + "description: !!int abc\n", "cannot read"),
    "bad timestamp tag": (HEAD + "description: !!timestamp not-a-date\n", "cannot read"),
    "5000-digit integer": (HEAD + "description: " + "9" * 5000 + "\n", "cannot read"),
    "deep nesting": (HEAD + "env: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper"),
    "deep block nesting": (
        HEAD + "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "x\n",
        "nested deeper",
    ),
    "huge file": (HEAD + "# " + "x" * 300_000 + "\n", "larger than"),
    "tab indentation": (HEAD + "env:\n\tA: '1'\n", "syntax"),
    "binary garbage": ("\x00\x01\x02name: x\n", ""),
    "unterminated quote": (HEAD + 'description: "open\n', "syntax"),
}


@pytest.mark.parametrize(("body", "expected"), HOSTILE_YAML.values(), ids=HOSTILE_YAML.keys())
def test_hostile_yaml_is_refused_with_a_line(
    project: Path, envkit: Callable[..., Run], body: str, expected: str
) -> None:
    write_spec(project, "bomb", body)
    start = time.monotonic()
    run = envkit("validate", "bomb", "--json")
    assert time.monotonic() - start < 20, "the loader must not expand or walk without bound"
    assert run.code == 2, run.err
    error = run.envelope()["errors"][0]
    assert error["type"] == "SpecError"
    assert expected.lower() in error["message"].lower()
    assert "environments/bomb.yaml" in error["message"]
    if expected not in ("larger than", ""):
        assert error["problems"][0]["line"] is not None


def test_text_mode_prints_no_traceback_either(project: Path, envkit: Callable[..., Run]) -> None:
    for index, (body, _) in enumerate(HOSTILE_YAML.values()):
        write_spec(project, f"bomb{index}", body)
        assert envkit("validate", f"bomb{index}").code == 2
