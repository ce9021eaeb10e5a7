"""envkit._pep503.canonicalize_name is packaging's, and a file audit does not import packaging.tags."""

from __future__ import annotations

import re

import pytest
from packaging.utils import canonicalize_name as packaging_canonical

from envkit._pep503 import canonicalize_name

NAMES = [
    "Django",
    "oslo.concurrency",
    "ruamel.yaml",
    "A__B",
    "a-_.-b",
    "--x--",
    "",
    "Ä_ö.Ü",
    "PyYAML",
    "x..y",
]


@pytest.mark.parametrize("name", NAMES)
def test_as_packaging_and_pep503(name: str) -> None:
    assert canonicalize_name(name) == packaging_canonical(name) == re.sub(r"[-_.]+", "-", name).lower()
