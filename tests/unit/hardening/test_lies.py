"""Class: wrong answers with a success code (issue 16, item 13; items 10 and the withdrawn part of 13
are in test_advisories.py, non-string versions in test_versions.py)."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import envkit.probe.run as probe_run
from envkit.inventory import parse_inventory
from envkit.probe.runner import run_on_host

from .conftest import Run

# `null`, `42`, one word: JSON scalars and bare words are not package listings
NOT_INVENTORIES = ["null\n", "42\n", "true\n", '"numpy"\n', "numpy\n", "hello\n", "3.14\n", "[]\n", "{}\n"]


@pytest.mark.parametrize("text", NOT_INVENTORIES, ids=repr)
def test_scalars_and_single_words_are_not_inventories(
    tmp_path: Path, envkit: Callable[..., Run], text: str
) -> None:
    path = tmp_path / "x.txt"
    path.write_text(text)
    run = envkit("diff", "--check", str(path), "--json")
    assert run.code == 2
    assert str(path) in run.envelope()["errors"][0]["message"]


def test_a_real_freeze_with_a_bare_name_still_reads() -> None:
    inv = parse_inventory("numpy==1.26.4\nsix\n", path="f.txt", label="f")
    assert {p.name for p in inv.packages} == {"numpy", "six"}


DUPLICATES = {
    "two numpy pins": ("numpy==1.26.4\nnumpy==2.0.1\ntorch==2.1.2\n", "numpy==2.0.1\ntorch==2.1.2\n"),
    "reversed order": ("numpy==2.0.1\ntorch==2.1.2\nnumpy==1.26.4\n", "numpy==1.26.4\ntorch==2.1.2\n"),
    "three torch rows": (
        "torch==2.1.2\ntorch==2.5.1\ntorch==2.1.0\nnumpy==2.0.1\n",
        "torch==2.5.1\nnumpy==2.0.1\n",
    ),
}


@pytest.mark.parametrize(("dup", "clean"), DUPLICATES.values(), ids=DUPLICATES.keys())
def test_duplicates_are_reported_and_every_version_is_ruled(
    tmp_path: Path, envkit: Callable[..., Run], dup: str, clean: str
) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(dup)
    b.write_text(clean)
    compared = envkit("diff", str(a), str(b), "--json")
    assert compared.code == 1, "two different files must not compare clean"
    findings = compared.envelope()["result"]["findings"]
    assert any(f["rule"] == "duplicate-entry" for f in findings)
    checked = envkit("diff", "--check", str(a), "--json")
    rules = {f["rule"] for f in checked.envelope()["result"]["findings"]}
    assert "duplicate-entry" in rules
    assert any(r and "numpy2" in r for r in rules), rules  # torch < 2.3 with numpy 2: known bad


NO_BUILDS = "name: x\nchannels: [conda-forge]\ndependencies:\n  - python=3.10\n  - {pkgs}\n"


@pytest.mark.parametrize(
    "package", ["lmdb=0.9.31", "exiv2=0.27.5", "geos=3.12.1", "proj=9.3.1", "x264=1!164.3095"]
)
def test_conda_c_libraries_without_builds_are_not_pypi_projects(
    tmp_path: Path, envkit: Callable[..., Run], package: str
) -> None:
    path = tmp_path / "env.yml"
    path.write_text(NO_BUILDS.format(pkgs=package))
    inv = parse_inventory(path.read_text(), path=str(path), label="x")
    name = package.split("=")[0]
    assert {p.project for p in inv.packages if p.name == name} == {f"conda:{name}"}


@pytest.mark.frameworks
def test_probe_with_no_framework_installed_exits_3(
    project: Path, envkit: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = shutil.which("python3", path="/usr/bin:/bin")
    if bare is None:
        pytest.skip("no system python3")
    monkeypatch.setattr(probe_run, "run_on_host", functools.partial(run_on_host, python=bare))
    run = envkit("probe", "--no-store", "--steps", "1", "--json")
    if run.code == 0:
        pytest.skip(f"{bare} has a framework installed")
    assert run.code == 3
    error = run.envelope()["errors"][0]
    assert "no framework ran" in error["message"] and error["type"] == "ProbeError"
