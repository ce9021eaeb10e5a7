"""Class 6 (issue 26), part: pixi's path (editable) PyPI packages are read, not dropped.

pixi.lock v4/v5 key a path package by ``path:`` in the package table (the form shown in
prefix-dev/pixi issue #1274: ``kind: pypi, name: foo, version: 0.1.0, path: foo, ...,
editable: true``) while the environment lists it as ``- pypi: .`` or ``./``; v6 keys it by
``pypi: ./``. All name the same project directory.
"""

from __future__ import annotations

import pytest

from envkit.inventory import parse_inventory

V5 = """\
version: 5
environments:
  default:
    channels:
    - url: https://conda.anaconda.org/conda-forge/
    packages:
      linux-64:
      - conda: https://conda.anaconda.org/conda-forge/noarch/tzdata-2024a-h0c530f3_0.conda
      - pypi: {listed}
packages:
- kind: conda
  name: tzdata
  version: 2024a
  build: h0c530f3_0
  subdir: noarch
  url: https://conda.anaconda.org/conda-forge/noarch/tzdata-2024a-h0c530f3_0.conda
- kind: pypi
  name: myproject
  version: 0.1.0
  path: {table}
  sha256: 5eb7d27a464b108fef2bb090ef1d2f62a2750e7bd625c70d2b00ef3f19a2edf7
  editable: true
"""


@pytest.mark.parametrize(("listed", "table"), [(".", "."), ("./", "."), (".", "./"), ("./sub/", "sub")])
def test_a_path_package_is_read(listed: str, table: str) -> None:
    text = V5.format(listed=listed, table=table)
    inv = parse_inventory(text, path="pixi.lock", label="p", format="pixi-lock", platform="linux-64")
    assert {p.name: p.version for p in inv.packages} == {"tzdata": "2024a", "myproject": "0.1.0"}
    assert not any("not in the lock's package table" in w for w in inv.warnings)
