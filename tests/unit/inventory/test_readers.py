from __future__ import annotations

from pathlib import Path

import pytest

from envkit.errors import ExitCode, InventoryError
from envkit.inventory import parse_inventory, read_inventory
from envkit.inventory.names import project_of

DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"

SHARED = {
    "condaexport-moma-ppo.txt": ("conda-export", 226),
    "condalist-DINO_Drifting.txt": ("conda-list", 387),
    "condalist-lang2sql-README.txt": ("conda-list", 82),
    "condalist-object_centric_2dGS.txt": ("conda-list", 101),
    "envexport-nobuilds-moma-ppo.yml": ("env-export", 224),
    "envexport-paris-444fb8e.yml": ("env-export", 239),
    "envexport-paris-aec6a0f.yml": ("env-export", 242),
    "explicit-DCL-conda_list.txt": ("conda-explicit", 84),
    "explicit-paris-aec6a0f.txt": ("conda-explicit", 89),
    "pipfreeze-EmbodMocap_my.txt": ("pip-freeze", 237),
    "pipfreeze-moma-ppo.txt": ("pip-freeze", 88),
}

LOCAL = {
    "collectenv-torch-points3d-pr66.txt": ("collect-env", 9),
    "collectenv-pytorch-pr35646.txt": ("collect-env", 13),
    "condajson-conda-issue8708.json": ("conda-json", 1),
    "micromamba2-json-mamba-issue3480.json": ("conda-json", 1),
    "piplistjson-pip-api-issue92.json": ("pip-json", 9),
    "condalist-miniforge-issue774.txt": ("conda-list", 9),
    "planted-micromamba-list.txt": ("mamba-list", 4),
    "planted-conda-lock.yml": ("conda-lock", 2),
    "planted-requirements.lock": ("requirements-lock", 2),
    "planted-probe-report.json": ("probe-report", 2),
}


@pytest.mark.parametrize(("name", "expected"), sorted(SHARED.items()))
def test_reads_shared_real_samples(shared_dir: Path, name: str, expected: tuple[str, int]) -> None:
    inv = read_inventory(shared_dir / "inventories" / name)
    assert (inv.format, len(inv.packages)) == expected
    assert all(p.line is not None for p in inv.packages)


@pytest.mark.parametrize(("name", "expected"), sorted(LOCAL.items()))
def test_reads_local_samples(name: str, expected: tuple[str, int]) -> None:
    inv = read_inventory(DATA / name)
    assert (inv.format, len(inv.packages)) == expected


def test_conda_list_pypi_rows_prompt_and_channels(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "condalist-lang2sql-README.txt")
    by = {p.name: p for p in inv.packages}
    assert by["aiohttp"].installer == "pip" and by["aiohttp"].channel is None
    assert by["bzip2"].installer == "conda" and by["bzip2"].channel == "pkgs/main"
    assert inv.meta["prefix"] == "/opt/conda/envs/openai_api"


def test_wide_layout_and_pip_shadow(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "condalist-DINO_Drifting.txt")
    torch = sorted((p.installer, p.name, p.version) for p in inv.packages if p.project == "torch")
    assert torch == [("conda", "pytorch", "2.5.1"), ("pip", "torch", "2.2.0+cu121")]


def test_explicit_urls_channels_and_builds(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "explicit-paris-aec6a0f.txt")
    mutex = next(p for p in inv.packages if p.name == "pytorch-mutex")
    assert (mutex.version, mutex.build, mutex.channel) == ("1.0", "cuda", "pytorch")
    blas = next(p for p in inv.packages if p.name == "blas")
    assert blas.channel == "pkgs/main" and blas.project == "conda:blas"


def test_pip_freeze_forms(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "pipfreeze-moma-ppo.txt")
    by = {p.name: p for p in inv.packages}
    assert (
        by["alfred"].version == "0.0.1"
        and by["alfred"].url == "/home/mila/b/bardepau/code/offline_marl/alfred_omarl"
    )
    assert by["d4rl"].url is not None and by["d4rl"].version.startswith("0+git.cf0efbd75a9e")
    assert by["brotli"].version == ""  # `Brotli @ file:///...feedstock...`: version unknown
    emb = {
        p.name: p for p in read_inventory(shared_dir / "inventories" / "pipfreeze-EmbodMocap_my.txt").packages
    }
    assert emb["scipy"].url is not None and emb["scipy"].version  # version from the wheel file name


def test_env_export_pip_section_and_lines(shared_dir: Path) -> None:
    inv = read_inventory(shared_dir / "inventories" / "envexport-paris-444fb8e.yml")
    assert "prefix" in inv.meta
    pips = [p for p in inv.packages if p.installer == "pip"]
    assert pips and all(p.line for p in pips)
    nobuilds = read_inventory(shared_dir / "inventories" / "envexport-nobuilds-moma-ppo.yml")
    assert all(p.build is None for p in nobuilds.packages)


def test_collect_env_meta_and_conda_rows() -> None:
    old = read_inventory(DATA / "collectenv-torch-points3d-pr66.txt")
    assert old.meta["driver"] == "418.67" and old.meta["torch_cuda"] == "9.0.176"
    rows = read_inventory(DATA / "collectenv-pytorch-pr35646.txt")
    conda_torch = next(p for p in rows.packages if p.name == "pytorch")
    assert (conda_torch.project, conda_torch.channel) == ("torch", "pytorch")


def test_micromamba2_mangled_channel_is_repaired() -> None:
    (pkg,) = read_inventory(DATA / "micromamba2-json-mamba-issue3480.json").packages
    assert (pkg.channel, pkg.project) == ("conda-forge", "conda:zstd")


def test_conda_lock_picks_linux_and_reads_pip_rows() -> None:
    inv = read_inventory(DATA / "planted-conda-lock.yml")
    assert {(p.name, p.installer, p.build) for p in inv.packages} == {
        ("numpy", "conda", "py311h64a7726_0"),
        ("torch", "pip", None),
    }


@pytest.mark.parametrize(
    ("name", "line"),
    [("garbled-conda-list.txt", 5), ("garbled-env-export.yml", 6), ("garbled-pip-freeze.txt", 2)],
)
def test_garbled_names_file_and_line(name: str, line: int) -> None:
    with pytest.raises(InventoryError) as err:
        read_inventory(DATA / name)
    assert f"{name}:{line}:" in err.value.message
    assert err.value.exit_code == ExitCode.USAGE


def test_unrecognized_and_forced_format(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="not a recognized"):
        parse_inventory("!!!\n", path="x.txt", label="x")
    inv = parse_inventory("numpy 1.26.4 py311_0\n", path="x.txt", label="x", format="conda-list")
    assert inv.packages[0].project == "numpy"
    with pytest.raises(InventoryError, match="unknown inventory format"):
        parse_inventory("", path="x", label="x", format="nope")
    bad = tmp_path / "bin.txt"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InventoryError, match="not UTF-8"):
        read_inventory(bad)


def test_same_project_names() -> None:
    assert (
        project_of("pytorch", "conda", "py3.9_cuda11.7_cudnn8.5.0_0") == project_of("torch", "pip") == "torch"
    )
    assert project_of("pyyaml", "conda", "py39h5eee18b_1") == project_of("PyYAML", "pip")
    assert project_of("pillow", "conda") == project_of("Pillow", "pip")
    assert project_of("py-opencv", "conda") == "opencv-python"


def test_colliding_names_do_not_merge() -> None:
    assert project_of("graphviz", "conda", "h1234_0") == "conda:graphviz" != project_of("graphviz", "pip")
    assert project_of("zstd", "conda") == "conda:zstd"
    assert project_of("libgcc-ng", "conda") == "conda:libgcc-ng"
    assert project_of("somecpplib", "conda", "h7b6447c_0") == "conda:somecpplib"
