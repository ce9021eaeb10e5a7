"""A spec's ``name`` becomes ``images/<name>/`` and a tag: nothing but one plain path part passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.errors import SpecError, UsageError
from envkit.spec.load import load_spec, resolve_spec_path
from tests.unit.hardening.conftest import GOOD_SPEC


@pytest.mark.parametrize("name", ["../demo", "/tmp/demo", "de/mo", ".demo", "d\u0435mo", "demo\x00"])
def test_a_spec_name_that_is_not_one_path_part_is_refused(name: str, tmp_path: Path) -> None:
    spec = tmp_path / "demo.yaml"  # (a trailing newline is stripped on reading: "demo\n" is demo)
    spec.write_text(GOOD_SPEC.format(name=json.dumps(name), description="d"), "utf-8")
    with pytest.raises(SpecError, match="must match"):
        load_spec(spec)


@pytest.mark.parametrize("given", ["demo\n", "de\x00mo", "..", "."])
def test_a_cli_name_that_is_not_one_path_part_is_a_usage_error(given: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not an environment name"):
        resolve_spec_path(given, tmp_path)
