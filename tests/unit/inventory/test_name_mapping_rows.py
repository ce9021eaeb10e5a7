"""Issue 34, class 11: the shipped conda -> PyPI mapping's bad rows, listed; an override wins.

:func:`envkit.inventory.names.suspicious_rows` flags every row that maps a conda name to a core tool
(pip, setuptools, wheel, ...) or to a PyPI project that is another conda package's own name while the
two names share nothing. Each flagged row is either overridden in ``envkit/inventory/data/names.yaml``
or reviewed here and kept; a new flagged row (a mapping refresh) fails this test until it is sorted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.catalog.conda_pypi import load_mapping
from envkit.inventory import read_inventory
from envkit.inventory.names import load_names, project_of, suspicious_rows

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "inventory"

# Wrong rows, overridden in names.yaml (not_pypi: the conda package is no PyPI project; renames).
OVERRIDDEN = {
    "charliecloud": "lark",  # a container runtime; its artifact vendors lark
    "flit-core": "tomli",  # flit-core is itself on PyPI (it vendors tomli)
    "inkscape": "lxml",
    "isce2": "pip",
    "lidar": "gdal",
    "nsight-compute": "pip",  # the row seen on a real listing (corpus: mid-table-nsight-compute-...)
    "pypy3.9": "cffi",
    "qgis": "future",
    "vscode-python": "microvenv",
}
# Reviewed and right: the conda name differs from the PyPI project it packages.
REVIEWED = {
    "daal4py": "scikit-learn-intelex",  # conda-forge's daal4py feedstock builds scikit-learn-intelex
    "filesystem-spec": "fsspec",
    "kernprof": "line-profiler",  # kernprof is line_profiler's script
    "libgpuarray": "pygpu",
    "oq-engine": "openquake-engine",
    "pardiso4py": "pypardiso",
    "python-avro": "avro-python3",
    "pytorch-dp": "opacus",  # the project's old name
    "skprogs-python": "sktools",
}
# Kept as the mapping says, not verified here (no listing seen with them): named so a reader knows.
UNVERIFIED = {
    "finesse": "click",
    "mambular": "deeptab",
    "privy": "argon2-cffi",
    "solaris": "shapely",
    "spherematch": "smatch",
    "u8darts-all": "tbats",
    "userspacefs": "fusepyng",
}


def test_every_suspicious_row_is_overridden_or_reviewed() -> None:
    rows = dict(suspicious_rows(load_mapping()))
    assert rows == OVERRIDDEN | REVIEWED | UNVERIFIED


def test_an_override_wins_over_the_mapping() -> None:
    names = load_names()
    mapping = load_mapping()
    for conda, pypi in OVERRIDDEN.items():
        assert mapping[conda] == pypi  # the shipped row is still there ...
        assert conda in names.not_pypi or conda in names.renames  # ... and names.yaml overrides it
        assert project_of(conda, "conda") != project_of(pypi, "pip"), conda
    assert project_of("nsight-compute", "conda", "0") == "conda:nsight-compute"
    assert project_of("flit-core", "conda") == "flit-core"


@pytest.mark.parametrize("tool", ["pip", "setuptools", "wheel"])
def test_no_conda_name_becomes_a_core_tool(tool: str) -> None:
    wrong = [c for c, p in load_mapping().items() if p == tool and c != tool]
    assert all(project_of(c, "conda").startswith("conda:") for c in wrong), wrong


def test_the_real_listing_keeps_nsight_compute_apart_from_pip() -> None:
    inv = read_inventory(CORPUS / "conda-list" / "mid-table-nsight-compute-cudatoolkit-dev-66-excerpt.txt")
    projects = {p.name: p.project for p in inv.packages}
    assert projects["nsight-compute"] == "conda:nsight-compute"
    assert projects["pip"] == "pip"
