"""Class: hostile JSON inventories (issue 16, item 15; advisory records are in test_advisories.py,
probe reports belong to the pipeline issue's typed loader): bounded, validated, exit 2 naming the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Run

HOSTILE_JSON = {
    "huge integer version": '[{"name": "numpy", "version": ' + "9" * 5000 + ', "channel": "conda-forge"}]',
    "deep nesting": "[" * 100_000 + "]" * 100_000,
    "deep nesting in an object": '{"fingerprint": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}",
    "version is a list": json.dumps([{"name": "numpy", "version": [1, 26], "channel": "conda-forge"}]),
    "version is an object": json.dumps([{"name": "numpy", "version": {"v": 1}}]),
    "version is null": json.dumps([{"name": "numpy", "version": None}]),
    "version is a boolean": json.dumps([{"name": "numpy", "version": True}]),
    "name is a number": json.dumps([{"name": 42, "version": "1.0"}]),
    "entries are strings": json.dumps(["numpy==1.26.4", "torch==2.1.2"]),
    "snapshot pip not a list": json.dumps({"kind": "envkit-snapshot", "pip": "numpy"}),
    "snapshot conda entries wrong": json.dumps({"kind": "envkit-snapshot", "conda": [1, 2], "pip": []}),
    "report distributions a number": json.dumps(
        {"kind": "envkit-probe-report", "fingerprint": {"distributions": 5}}
    ),
    "NaN and Infinity": '[{"name": "numpy", "version": NaN}, {"name": "torch", "version": Infinity}]',
    "truncated": '[{"name": "numpy", "version": "1.26.4"}, {"name": "tor',
    "empty list": "[]",
    "a number": "4" * 5000,
}


@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_hostile_json_inventories(tmp_path: Path, envkit: Callable[..., Run], text: str) -> None:
    path = tmp_path / "inv.json"
    path.write_text(text)
    for argv in (["diff", "--check", str(path)], ["audit", str(path), "--db", str(tmp_path / "nodb")]):
        run = envkit(*argv, "--json")
        assert run.code in (0, 1, 2), run.err  # read (maybe with skipped rows) or refused: never a crash
        if run.code == 2:
            message = run.envelope()["errors"][0]["message"]
            assert str(path) in message or "nodb" in message


@pytest.mark.parametrize("fmt", ["conda-json", "pip-json", "snapshot", "probe-report"])
def test_forced_json_readers_refuse_wrong_types(tmp_path: Path, envkit: Callable[..., Run], fmt: str) -> None:
    path = tmp_path / "inv.json"
    path.write_text(json.dumps({"name": ["x"], "version": {"a": 1}}))
    run = envkit("diff", "--check", str(path), "--format", fmt, "--json")
    assert run.code == 2
    assert str(path) in run.envelope()["errors"][0]["message"]
