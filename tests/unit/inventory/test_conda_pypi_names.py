"""Class 3 (issue 26), part: conda ``pyqt`` is PyPI ``PyQt5`` (parselmouth's conda-forge mapping)."""

from __future__ import annotations

from envkit.drift import diff_inventories
from envkit.inventory import parse_inventory
from envkit.inventory.names import project_of

ROWS = (
    "# Name  Version  Build  Channel\n"
    "pyqt  5.15.9  py311hf0fb5b6_5  conda-forge\n"
    "pyqt5  5.15.10  pypi_0  pypi\n"
    "python  3.11.9  hb806964_0_cpython  conda-forge\n"
)


def test_conda_pyqt_is_pypi_pyqt5() -> None:
    assert project_of("pyqt", "conda", "py311hf0fb5b6_5") == "pyqt5" == project_of("PyQt5", "pip")
    assert project_of("pyqt-impl", "conda", "py311h_0") == "pyqt5"


def test_a_pip_pyqt5_over_conda_pyqt_is_a_shadowing_warning() -> None:
    inv = parse_inventory(ROWS, path="conda-list.txt", label="env", format="conda-list")
    shadow = [f for f in diff_inventories([inv]).findings if f.rule == "pip-shadows-conda"]
    assert len(shadow) == 1 and shadow[0].package == "pyqt5"
    assert "conda pyqt 5.15.9 and pip pyqt5 5.15.10" in shadow[0].message
