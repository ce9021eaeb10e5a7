"""Every real file in ../shared/inventories, read row by row: installer, name, version, build, channel.

The rows below were checked by hand against the files (sources in ../shared/inventories/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.inventory import read_inventory

# (name, installer, version, build, channel) per file, plus its format and row count.
Row = tuple[str, str, str, str | None, str | None]
EXPECTED: dict[str, tuple[str, int, list[Row]]] = {
    "collectenv-pip-conda-rows-pytorch-35646.txt": (
        "collect-env",
        13,
        [
            ("numpy", "pip", "1.18.1", None, None),
            ("numpy-base", "conda", "1.18.1", "py37hde5b4d6_1", None),
            ("pytorch", "conda", "1.4.0", "py3.7_cuda10.1.243_cudnn7.6.3_0", "pytorch"),
            ("torchvision", "conda", "0.5.0", "py37_cu101", "pytorch"),
            ("mkl", "conda", "2020.0", "166", None),
        ],
    ),
    "collectenv-windows-nopackages-pytorch-39133.txt": (
        "collect-env",
        1,
        [("torch", "pip", "1.5.0+cu101", None, None)],
    ),
    "condaexport-moma-ppo.txt": (
        "conda-export",
        226,
        [
            ("python", "conda", "3.8.12", "h0744224_3_cpython", None),
            ("matplotlib", "pip", "3.7.5", None, None),
            ("numpy", "conda", "1.22.1", "py38h6ae9a64_0", None),
            ("scipy", "pip", "1.10.1", None, None),
        ],
    ),
    "condalist-DINO_Drifting.txt": (
        "conda-list",
        387,
        [
            ("aiohttp", "pip", "3.13.3", None, None),
            ("bleach", "conda", "6.3.0", "pyhcf101f3_0", "conda-forge"),
            ("python", "conda", "3.11.14", "h6fa692b_0", "pkgs/main"),
            ("nvidia-cudnn-cu12", "pip", "8.9.2.26", None, None),
            ("pytorch", "conda", "2.5.1", None, None),
        ],
    ),
    "condalist-defaults-pip-conda-7757-excerpt.txt": (
        "conda-list",
        19,
        [
            ("pytorch", "conda", "0.4.1", "py36_py35_py27__9.0.176_7.1.2_2", "pytorch"),
            ("python-dateutil", "conda", "2.7.3", "py36_0", "pkgs/main"),  # `defaults` is pkgs/main
            ("raven", "pip", "6.9.0", None, None),  # legacy `<pip>` row: a PyPI project
            ("requests-oauthlib", "pip", "1.0.0", None, None),
            ("scipy", "conda", "1.1.0", "py36hfa4b5c9_1", "pkgs/main"),
        ],
    ),
    "condalist-lang2sql-README.txt": (
        "conda-list",
        82,
        [
            ("aiohttp", "pip", "3.9.0", None, None),
            ("python", "conda", "3.10.13", "h4bb2201_0", "pkgs/main"),
            ("numpy", "pip", "1.26.2", None, None),
            ("libuuid", "conda", "1.41.5", "h998d150_0", "pkgs/main"),
        ],
    ),
    "condalist-numpy-pypi-vs-numpybase-torchdynamo-2019-excerpt.txt": (
        "conda-list",
        21,
        [
            ("numpy", "pip", "1.24.1", None, None),
            ("numpy-base", "conda", "1.23.5", "py39h31eccc5_0", "pkgs/main"),
            ("networkx", "pip", "3.0rc1", None, None),
            ("mpmath", "pip", "1.2.1", None, None),
        ],
    ),
    "condalist-object_centric_2dGS.txt": (
        "conda-list",
        101,
        [
            ("numpy", "conda", "2.0.1", "py310h5f9d8c6_1", "pkgs/main"),
            ("pytorch", "conda", "2.4.1", "py3.10_cuda12.4_cudnn9.1.0_0", "pytorch"),
            ("zstd", "conda", "1.5.6", "hc292b87_0", "pkgs/main"),
        ],
    ),
    "condalist-pip-legacy-features-plate_scATAC.txt": (
        "conda-list",
        15,
        [
            ("matplotlib", "pip", "2.2.2", None, None),  # `<pip>`: pip-installed, not a conda build
            ("multicoretsne", "pip", "0.1", None, None),
            ("numpy", "conda", "1.14.2", "py36_blas_openblas_200", "conda-forge"),  # not `[blas_openblas]`
            ("scikit-learn", "conda", "0.19.1", "py36_blas_openblas_201", "conda-forge"),
            ("pandas", "conda", "0.22.0", "py36hf484d3e_0", "pkgs/main"),  # no channel column: defaults
            ("salmon", "conda", "0.9.1", "1", "bioconda"),
        ],
    ),
    "condalist-windows-anaconda-base-ComfyUI_Anaconda.txt": (
        "conda-list",
        607,
        [
            ("aiohttp", "conda", "3.10.5", "py312h4389bb4_0", "conda-forge"),
            ("python", "conda", "3.12.3", "h2628c8c_0_cpython", "conda-forge"),
            ("cuda-version", "conda", "12.6", None, None),
            ("pytorch", "conda", "2.4.1", None, "pytorch"),
        ],
    ),
    "condalock-pangeo-3platforms.yml": (
        "conda-lock",
        255,
        [
            ("aiohttp", "conda", "3.8.1", "py310h6acc77f_0", "conda-forge"),
            ("numpy", "conda", "1.21.5", "py310h647a097_0", "conda-forge"),
            ("python", "conda", "3.10.2", "h85951f9_3_cpython", "conda-forge"),
        ],
    ),
    "envexport-nobuilds-moma-ppo.yml": (
        "env-export",
        224,
        [
            ("python", "conda", "3.8.12", None, None),
            ("matplotlib", "pip", "3.7.5", None, None),
            ("libcufft", "conda", "10.9.0.58", None, None),
        ],
    ),
    "envexport-paris-444fb8e.yml": (
        "env-export",
        239,
        [
            ("aiohttp", "pip", "3.8.3", None, None),
            ("bleach", "pip", "5.0.1", None, None),
            ("numpy", "conda", "1.23.3", "py39h14f4228_0", None),
        ],
    ),
    "envexport-paris-aec6a0f.yml": (
        "env-export",
        242,
        [
            ("aiohttp", "pip", "3.8.4", None, None),
            ("bleach", "pip", "6.0.0", None, None),
            ("python", "conda", "3.9.13", "haa1d7c7_2", None),
        ],
    ),
    "envyml-ComfyUI_Anaconda.yml": (
        "env-export",
        202,
        [
            ("aiohttp", "conda", "3.10.5", "py312h4389bb4_1", None),
            ("numpy", "conda", "1.26.4", "py312h8753938_0", None),
            ("cuda-nvrtc-dev", "conda", "12.4.127", "0", None),
        ],
    ),
    "explicit-DCL-conda_list.txt": (
        "conda-explicit",
        84,
        [
            ("python", "conda", "3.6.5", "hc3d631a_2", "pkgs/main"),
            ("numpy-base", "conda", "1.14.3", "py36h9be14a7_1", "pkgs/main"),
            ("pytz", "conda", "2018.4", "py36_0", "pkgs/main"),
        ],
    ),
    "explicit-paris-aec6a0f.txt": (
        "conda-explicit",
        89,
        [
            ("pytorch", "conda", "1.11.0", "py3.9_cuda11.3_cudnn8.2.0_0", "pytorch"),
            ("requests", "conda", "2.28.1", "py39h06a4308_0", "pkgs/main"),
        ],
    ),
    "pipfreeze-EmbodMocap_my.txt": (
        "pip-freeze",
        237,
        [
            ("aiohttp", "pip", "3.13.3", None, None),
            ("numpy", "pip", "2.4.3", None, None),
            ("embod-mocap", "pip", "0+git.eb88d641aa68", None, None),
        ],
    ),
    "pipfreeze-editable-nover-flashattn-GLANCE.txt": (
        "pip-freeze",
        285,
        [
            ("torch", "pip", "2.6.0+cu124", None, None),
            ("numpy", "pip", "2.2.6", None, None),
            ("builtin-interfaces", "pip", "1.2.2", None, None),
        ],
    ),
    "pipfreeze-moma-ppo.txt": (
        "pip-freeze",
        88,
        [("torch", "pip", "2.4.1", None, None), ("scipy", "pip", "1.10.1", None, None)],
    ),
    "pipfreeze-wheelurl-localver-nix_python_cuda_flake.txt": (
        "pip-freeze",
        48,
        [("torch", "pip", "2.3.1+cu121", None, None), ("safetensors", "pip", "0.4.3", None, None)],
    ),
}


def _row(inv_rows: list[Row], want: Row) -> bool:
    name, installer, version, build, channel = want
    return any(
        r[0] == name
        and r[1] == installer
        and r[2] == version
        and (build is None or r[3] == build)
        and (channel is None or r[4] == channel)
        for r in inv_rows
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_real_file_reads_right(shared_dir: Path, name: str) -> None:
    inv = read_inventory(shared_dir / "inventories" / name)
    fmt, count, rows = EXPECTED[name]
    assert (inv.format, len(inv.packages)) == (fmt, count)
    assert inv.warnings == ()
    got: list[Row] = [(p.name, p.installer, p.version, p.build, p.channel) for p in inv.packages]
    missing = [r for r in rows if not _row(got, r)]
    assert not missing, missing


def test_legacy_pip_rows_have_no_build_or_channel(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "condalist-pip-legacy-features-plate_scATAC.txt")
    pips = {p.name: p for p in inv.packages if p.installer == "pip"}
    assert set(pips) == {"matplotlib", "multicoretsne"}
    assert all(p.build is None and p.channel is None and p.project == p.name for p in pips.values())
    assert not any((p.channel or "").startswith("[") for p in inv.packages)


def test_collect_env_header_only_is_read(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "collectenv-windows-nopackages-pytorch-39133.txt")
    assert inv.meta["torch"] == "1.5.0+cu101"
    assert inv.meta["torch_cuda"] == "10.1"
    assert inv.meta["driver"] == "426.25"
    assert inv.meta["cuda_runtime"] == "10.1.243"
    assert inv.meta["gpu"] == "Quadro P1000"
    assert "cudnn" not in inv.meta and "os" not in inv.meta  # "Could not collect"


def test_collect_env_rows_keep_their_section(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "collectenv-pip-conda-rows-pytorch-35646.txt")
    assert {(p.name, p.env) for p in inv.packages if p.project == "torch"} == {
        ("torch", "pip"),
        ("pytorch", "conda"),
    }
    assert inv.meta["active_env"] == "pip"
    assert "environments" not in inv.meta  # the same packages seen twice, one environment
