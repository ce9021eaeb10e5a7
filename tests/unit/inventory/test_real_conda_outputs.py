"""What real conda 23.5.2, 24.3.0 and 26.7.1 printed about one environment, read back by envkit.

``tests/data/realconda/`` was written by ``python -m tests.integration.realconda.record`` (real
conda from ../shared/conda-bundle, see tests/data/realconda/README.md): ``lock/`` is the lock
``envkit lock`` wrote against a channel served on 127.0.0.1, each ``<version>/`` what that conda
printed about the environment it installed from ``lock/conda-linux-64.lock``: ``conda list``
(classic columns; 26.7.1's new layout), ``--json``, ``--export``, ``--explicit --md5``,
``--explicit --sha256`` (26.7.1), ``conda env export`` with and without ``- defaults``.
Every one reads as the same three packages, and ``envkit diff LOCK OUTPUT`` finds nothing at
warning or above (tests/integration/realconda/test_realconda_outputs.py does the same live).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.inventory import read_inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "realconda"
OUTPUTS = sorted(p for p in DATA.glob("[0-9]*/*") if p.is_file())
LOCK = DATA / "lock" / "conda-lock.yml"
FORMAT = {
    "list.txt": "conda-list",
    "list.json": "conda-json",
    "list-export.txt": "conda-export",
    "list-explicit-md5.txt": "conda-explicit",
    "list-explicit-sha256.txt": "conda-explicit",
    "env-export.yml": "env-export",
    "env-export-defaults.yml": "env-export",
}


def _rows(path: Path) -> set[tuple[str, str, str | None]]:
    return {(p.name, p.version, p.build) for p in read_inventory(path).packages}


def test_every_conda_printed_every_listing() -> None:
    names = {(p.parent.name, p.name) for p in OUTPUTS}
    for version in ("23.5.2", "24.3.0", "26.7.1"):
        wanted = set(FORMAT) - ({"list-explicit-sha256.txt"} if version != "26.7.1" else set())
        assert {n for v, n in names if v == version} == wanted
    # the layouts and the defaults line really differ between the condas (else nothing is tested)
    assert "# created-by: conda 26.7.1" in (DATA / "26.7.1" / "list-export.txt").read_text()
    header = {v: (DATA / v / "list.txt").read_text().splitlines()[2] for v in ("23.5.2", "26.7.1")}
    assert header["23.5.2"].split() == header["26.7.1"].split() and header["23.5.2"] != header["26.7.1"]
    assert "- defaults" in (DATA / "23.5.2" / "env-export-defaults.yml").read_text()
    assert "- defaults" in (DATA / "24.3.0" / "env-export-defaults.yml").read_text()
    assert "- defaults" not in (DATA / "26.7.1" / "env-export-defaults.yml").read_text()


@pytest.mark.parametrize("path", OUTPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_output_reads_as_the_locked_inventory(path: Path) -> None:
    inventory = read_inventory(path)
    assert inventory.format == FORMAT[path.name]
    assert _rows(path) == _rows(LOCK) and len(_rows(LOCK)) == 3
    port = json.loads((DATA / "recorded.json").read_text())["port"]
    for package in inventory.packages:
        assert package.channel in (None, f"127.0.0.1:{port}"), package


@pytest.mark.parametrize("path", OUTPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_diff_of_the_lock_against_real_output_finds_nothing(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["diff", str(LOCK), str(path), "--min-severity", "info", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["result"]["findings"] == [], out["result"]["findings"]
