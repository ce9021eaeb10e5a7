"""`envkit diff` of two `envkit check --json` outputs: loaded libraries and carried GPU code differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.inventory.read import detect_format, read_inventory
from envkit.readiness.check import check
from envkit.readiness.facts import parse_facts
from envkit.result import CommandResult, envelope
from tests.unit.readiness.test_rules import paddle_doc


def _check_json(tmp_path: Path, name: str, doc: dict[str, object]) -> Path:
    result = check(parse_facts(json.dumps(doc), name), [], load_catalog(), where=name)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(envelope(CommandResult("check", result.to_json(), ""))))
    return path


def test_diff_names_the_loaded_cudnn_and_the_library_whose_archs_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _check_json(tmp_path, "site-a", paddle_doc())
    other = paddle_doc()
    other["frameworks"]["paddle"]["loaded"]["versions"]["cudnn"] = 8906
    phi = other["libraries"]["/usr/local/lib/python3.10/dist-packages/paddle/libs/libphi.so"]
    phi["sass"]["sm_89"] = 666
    b = _check_json(tmp_path, "site-b", other)
    assert detect_format(a.read_text()) == "gpu-readiness"
    inv = read_inventory(a)
    assert inv.meta["cudnn"] == "8.6.0" and inv.meta["cuda_runtime"] == "11.8"
    assert main(["diff", str(a), str(b), "--min-severity", "info"]) == 1
    out = capsys.readouterr().out
    assert "cuDNN: 8.6.0 (site-a) -> 8.9.6 (site-b)" in out
    assert "CUDA libraries loaded: cudnn 8.6.0 (site-a) -> cudnn 8.9.6 (site-b)" in out
    assert (
        "GPU code (SASS | PTX): libphi.so: sm_35,sm_50,sm_52,sm_60,sm_61,sm_70,sm_75,sm_80,sm_86,sm_90 | "
        in out
    )
    assert (
        "-> libphi.so: sm_35,sm_50,sm_52,sm_60,sm_61,sm_70,sm_75,sm_80,sm_86,sm_89,sm_90 | no PTX (site-b)"
        in out
    )


def test_same_check_twice_is_no_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _check_json(tmp_path, "one", paddle_doc())
    b = _check_json(tmp_path, "two", paddle_doc())
    assert main(["diff", str(a), str(b)]) == 0
    assert "gpu_code" not in capsys.readouterr().out
