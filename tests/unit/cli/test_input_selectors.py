"""Class 7 (issue 26): a per-input selector, ``FILE#ENVIRONMENT@PLATFORM``, in diff and audit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.inventory.selector import Selected, split_selector


def _diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["diff", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_two_platforms_of_one_real_conda_lock(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = shared_dir / "inventories" / "condalock-pangeo-3platforms.yml"
    code, out = _diff(capsys, f"{lock}@linux-64", f"{lock}@win-64")
    result = out["result"]
    assert isinstance(result, dict)
    shown = {i["label"]: i["selected"] for i in result["inputs"]}
    assert shown == {
        "condalock-pangeo-3platforms@linux-64": "platform linux-64 of linux-64, osx-64, win-64",
        "condalock-pangeo-3platforms@win-64": "platform win-64 of linux-64, osx-64, win-64",
    }
    blas = next(f for f in result["findings"] if f["rule"] == "blas-differs")
    assert blas["values"] == {
        "condalock-pangeo-3platforms@linux-64": "openblas",
        "condalock-pangeo-3platforms@win-64": "mkl",
    }
    assert code == 1


def test_two_environments_of_one_real_pixi_lock(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = shared_dir / "inventories" / "pixilock-conda-lock-repo.lock"
    _, out = _diff(capsys, f"{lock}#dev", f"{lock}#minimal@osx-arm64")
    result = out["result"]
    assert isinstance(result, dict)
    selected = [i["selected"] for i in result["inputs"]]
    assert selected[0].startswith("environment dev of") and "platform linux-64" in selected[0]
    assert selected[1].startswith("environment minimal of") and "platform osx-arm64" in selected[1]


def test_a_selector_overrides_the_global_option(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = shared_dir / "inventories" / "condalock-pangeo-3platforms.yml"
    _, out = _diff(capsys, str(lock), f"{lock}@osx-64", "--platform", "win-64")
    result = out["result"]
    assert isinstance(result, dict)
    assert [i["selected"].split(" of")[0] for i in result["inputs"]] == [
        "platform win-64",
        "platform osx-64",
    ]


def test_a_file_whose_name_has_at_or_hash_is_taken_as_it_is(tmp_path: Path) -> None:
    odd = tmp_path / "host@win-64"
    odd.write_text("numpy==1.26.4\n")
    assert split_selector(str(odd)) == Selected(str(odd))
    assert split_selector(str(tmp_path / "missing.lock@win-64")) == Selected(
        str(tmp_path / "missing.lock@win-64")
    )
    assert split_selector(f"{odd}#cuda@linux-64") == Selected(str(odd), "linux-64", "cuda")


def test_audit_takes_a_selector(shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = tmp_path / "conda-lock.yml"
    shutil.copy(shared_dir / "inventories" / "condalock-pangeo-3platforms.yml", lock)
    main(["audit", f"{lock}@win-64", "--db", str(shared_dir / "advisory-db"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["result"]["target"] == f"{lock} (platform win-64 of linux-64, osx-64, win-64)"
    assert out["result"]["checked"] > 0
