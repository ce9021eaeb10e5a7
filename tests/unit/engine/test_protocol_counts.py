"""The engine protocols' operations as their docstrings and docs/concepts/design.md name them: the count and
the names (``ContainerEngine`` said "seven operations" with eight, for three reviews)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from envkit.engine.protocol import ContainerEngine
from envkit.engine.store import ImageStore

DESIGN = Path(__file__).resolve().parents[3] / "docs" / "concepts" / "design.md"
NUMBERS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
PROTOCOLS = [ContainerEngine, ImageStore]


def operations(protocol: type) -> set[str]:
    return {
        name
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def _listed(text: str) -> set[str]:
    return {word.strip() for word in text.replace("\n", " ").split(",")}


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_docstring_counts_and_names_its_operations(protocol: type) -> None:
    doc = inspect.getdoc(protocol) or ""
    found = re.search(r"(\w+) operations \(([^)]*)\)", doc)
    assert found, f"{protocol.__name__}'s docstring names no count of operations: {doc!r}"
    assert found[1] == NUMBERS[len(operations(protocol))]
    assert _listed(found[2]) == operations(protocol)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_design_md_lists_each_protocols_operations(protocol: type) -> None:
    text = DESIGN.read_text("utf-8")
    found = re.search(rf"`{protocol.__name__}`(?:, (\w+) operations)?: ([a-z_, ]+)", text)
    assert found, f"docs/concepts/design.md lists no operations of {protocol.__name__}"
    assert _listed(found[2]) == operations(protocol), (
        f"docs/concepts/design.md's {protocol.__name__} row is stale"
    )
    if found[1]:
        assert found[1] == NUMBERS[len(operations(protocol))]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_engine_package_docstring_names_each_protocols_operations(protocol: type) -> None:
    import envkit.engine

    found = re.search(rf"``{protocol.__name__}``: ([a-z_,\s]+)", envkit.engine.__doc__ or "")
    assert found, f"envkit/engine/__init__.py names no operations of {protocol.__name__}"
    assert _listed(found[1]) == operations(protocol)
