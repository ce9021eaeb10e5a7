"""Class 5 (issue 26): the BLAS numpy links comes from ``libblas``'s build, not the ``blas`` selector."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.drift import diff_inventories
from envkit.drift.facts import FACTS
from envkit.inventory import Inventory, parse_inventory, read_inventory


def _blas(inventory: Inventory) -> str | None:
    return FACTS["blas"](inventory, inventory.primary())


def _list(rows: str, label: str = "env") -> Inventory:
    return parse_inventory(rows, path=f"{label}.txt", label=label, format="conda-list")


PIXI_MIXED = (  # a conda-forge (pixi) environment that also pulled defaults' `blas 1.0 mkl` selector
    "numpy 1.26.4 py312h8753938_0 conda-forge\n"
    "blas 1.0 mkl\n"
    "libblas 3.9.0 1_h8933c1f_netlib conda-forge\n"
    "libcblas 3.9.0 5_hd5c7e75_netlib conda-forge\n"
)


def test_libblas_decides_in_a_conda_forge_environment() -> None:
    assert _blas(_list(PIXI_MIXED)) == "netlib"


@pytest.mark.parametrize(
    ("build", "impl"),
    [
        ("16_linux64_mkl", "mkl"),
        ("20_linux64_openblas", "openblas"),
        ("5_h4a7cf45_openblas", "openblas"),
        ("1_h8933c1f_netlib", "netlib"),
        ("20_osxarm64_accelerate", "accelerate"),
        ("22_osxarm64_newaccelerate", "accelerate"),
        ("18_linux64_blis", "blis"),
    ],
)
def test_each_libblas_build(build: str, impl: str) -> None:
    rows = "numpy 1.26.4 py312h8753938_0 conda-forge\nblas 2.120 mkl conda-forge\n"
    rows += f"libblas 3.9.0 {build} conda-forge\n"  # the selector says mkl: libblas wins
    assert _blas(_list(rows)) == impl


def test_a_real_anaconda_base_whose_numpy_is_defaults_links_mkl(shared_dir: Path) -> None:
    """Anaconda's numpy 1.26.4 (no channel column: defaults) links MKL through `blas 1.0 mkl`;
    the conda-forge `libblas 3.9.0 1_h8933c1f_netlib` there serves conda-forge's scipy."""
    inventory = read_inventory(
        shared_dir / "inventories" / "condalist-windows-anaconda-base-ComfyUI_Anaconda.txt"
    )
    pkgs = inventory.primary()
    assert pkgs["conda:blas"].build == "mkl" and "netlib" in (pkgs["conda:libblas"].build or "")
    assert _blas(inventory) == "mkl"


@pytest.mark.parametrize(
    ("name", "impl"),
    [("condalist-DINO_Drifting.txt", "openblas"), ("condaexport-moma-ppo.txt", "mkl")],
)
def test_real_conda_forge_lists(shared_dir: Path, name: str, impl: str) -> None:
    assert _blas(read_inventory(shared_dir / "inventories" / name)) == impl


def test_two_environments_that_differ_only_in_libblas_are_reported() -> None:
    netlib = _list(PIXI_MIXED, "netlib")
    mkl = _list(
        PIXI_MIXED.replace("1_h8933c1f_netlib", "16_linux64_mkl").replace(
            "5_hd5c7e75_netlib", "16_linux64_mkl"
        ),
        "mkl",
    )
    blas = [f for f in diff_inventories([netlib, mkl]).findings if f.rule == "blas-differs"]
    assert blas and blas[0].values == {"netlib": "netlib", "mkl": "mkl"}
