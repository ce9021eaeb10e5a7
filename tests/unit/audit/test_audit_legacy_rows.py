"""Legacy ``<pip>`` rows of a conda list are PyPI packages: the audit checks them against the PyPA data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main

LEGACY = """\
# packages in environment at /home/user/anaconda3/envs/py36:
#
matplotlib                2.2.2                     <pip>
bleach                    2.1.3                     <pip>
aiohttp                   3.5.4                     <pip>
numpy                     1.14.2          py36_blas_openblas_200  [blas_openblas]  conda-forge
"""


def _audit(path: Path, db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    main(["audit", str(path), "--db", str(db), "--json"])
    result: dict[str, object] = json.loads(capsys.readouterr().out)["result"]
    return result


def test_legacy_pip_rows_get_pypa_advisories(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conda-list.txt"
    path.write_text(LEGACY)
    result = _audit(path, shared_dir / "advisory-db", capsys)
    findings = result["findings"]
    assert isinstance(findings, list)
    hit = {f["package"] for f in findings}
    assert {"bleach", "aiohttp"} <= hit
    assert result["not_covered"] == []  # no "<pip>" row is taken for a conda-only package


def test_real_legacy_rows_are_checked_not_skipped(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = shared_dir / "inventories" / "condalist-defaults-pip-conda-7757-excerpt.txt"
    result = _audit(path, shared_dir / "advisory-db", capsys)
    skipped = json.dumps(result["not_covered"])
    assert "raven" not in skipped and "requests-oauthlib" not in skipped
    assert result["checked"] == 17
