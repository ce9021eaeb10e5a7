"""Class 6 (issue 26), part: what a lock installs on the chosen platform, and no assumed Python.

Poetry 2 writes one marker per dependency group (``markers = {main = "...", dev = "..."}``, as in
the real cffi 2.0.0 entry: ``markers = {main = "platform_python_implementation != \\"PyPy\\"", dev =
...}``); a Windows-only package must not count on linux-64. A lock for ``>=3.10`` is no Python 3.11
environment: its Python is recorded as assumed, so comparing it with an environment on another
Python gives no ``python-minor-differs``.
"""

from __future__ import annotations

from envkit.drift import diff_inventories
from envkit.inventory import parse_inventory

POETRY2 = """\
[[package]]
name = "click"
version = "8.1.7"
description = "Composable command line interface toolkit"
optional = false
python-versions = ">=3.7"
groups = ["main"]
files = []

[package.dependencies]
colorama = {version = "*", markers = "platform_system == \\"Windows\\""}

[[package]]
name = "colorama"
version = "0.4.6"
description = "Cross-platform colored terminal text."
optional = false
python-versions = "!=3.0.*,!=3.1.*,!=3.2.*,!=3.3.*,!=3.4.*,!=3.5.*,!=3.6.*,>=2.7"
groups = ["main", "dev"]
markers = {main = "platform_system == \\"Windows\\"", dev = "sys_platform == \\"win32\\""}
files = []

[[package]]
name = "cffi"
version = "2.0.0"
description = "Foreign Function Interface for Python calling C code."
optional = false
python-versions = ">=3.9"
groups = ["main", "dev"]
markers = {main = "platform_python_implementation != \\"PyPy\\"", dev = "os_name == \\"nt\\""}
files = []

[metadata]
lock-version = "2.1"
python-versions = ">=3.10"
content-hash = "0000000000000000000000000000000000000000000000000000000000000000"
"""


def _read(text: str, platform: str) -> dict[str, str]:
    inv = parse_inventory(text, path="poetry.lock", label=platform, format="poetry-lock", platform=platform)
    return {p.name: p.version for p in inv.packages}


def test_poetry2_group_markers_are_evaluated_for_the_platform() -> None:
    assert _read(POETRY2, "linux-64") == {"click": "8.1.7", "cffi": "2.0.0"}
    assert _read(POETRY2, "win-64") == {"click": "8.1.7", "colorama": "0.4.6", "cffi": "2.0.0"}


def test_a_python_range_is_assumed_not_recorded() -> None:
    inv = parse_inventory(
        POETRY2, path="poetry.lock", label="lock", format="poetry-lock", platform="linux-64"
    )
    assert "python" not in inv.meta and inv.meta["python_assumed"]
    assert "assumed for markers (the lock allows >=3.10)" in inv.meta["selected"]
    env = parse_inventory(
        "PyTorch version: 2.4.1\nPython version: 3.12.3\n[pip3] click==8.1.7\n[pip3] cffi==2.0.0\n",
        path="ce.txt",
        label="host",
        format="collect-env",
    )
    fired = {f.rule for f in diff_inventories([inv, env]).findings}
    assert "python-minor-differs" not in fired


def test_a_lock_for_one_python_minor_records_it() -> None:
    text = POETRY2.replace('python-versions = ">=3.10"\ncontent', 'python-versions = ">=3.11,<3.12"\ncontent')
    inv = parse_inventory(text, path="poetry.lock", label="lock", format="poetry-lock", platform="linux-64")
    assert inv.meta["python"] == "3.11" and "python_assumed" not in inv.meta
