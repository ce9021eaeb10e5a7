"""The lock files teams commit: pixi.lock, uv.lock, pylock.toml, poetry.lock, multi-platform conda-lock.yml.

Real files: ../shared/inventories (pixi.lock, conda-lock.yml) and tests/data/inventories (uv.lock from
NVlabs/earth2grid, a pylock.toml that uv exported from it, a poetry.lock made by poetry; sources in
its README).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.errors import InventoryError
from envkit.inventory import read_inventory as _read_inventory

read_inventory = functools.lru_cache(maxsize=None)(_read_inventory)  # the large YAML locks take seconds
DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"
UV = DATA / "uvlock-earth2grid-8fdff5a.lock"
PYLOCK = DATA / "pylock-earth2grid-uv-export.toml"
POETRY = DATA / "poetrylock-torch26-generated.lock"


def _rows(inv: object) -> dict[str, tuple[str, str, str | None, str | None]]:
    return {p.name: (p.installer, p.version, p.build, p.channel) for p in inv.packages}  # type: ignore[attr-defined]


def test_pixi_lock_environment_and_platform(shared_dir: Path) -> None:
    path = shared_dir / "inventories" / "pixilock-conda-lock-repo.lock"
    inv = read_inventory(path, platform="linux-64")
    assert inv.format == "pixi-lock" and len(inv.packages) == 193
    rows = _rows(inv)
    assert rows["bcrypt"] == ("conda", "5.0.0", "py314h68536ef_0", "conda-forge")
    assert rows["annotated-types"] == ("conda", "0.7.0", "pyhd8ed1ab_1", "conda-forge")
    assert rows["ty"] == ("pip", "0.0.1a21", None, None)  # a PyPI package of the environment
    assert rows["conda-lock"][:2] == ("pip", "4.0.1.dev40+g5213017f4")  # `pypi: ./`, the project itself
    assert inv.meta["selected"].startswith(
        "environment default of default, dev, minimal; platform linux-64 of"
    )
    win = read_inventory(path, platform="win-64")
    assert "win_inet_pton" in _rows(win) and "win_inet_pton" not in rows
    minimal = read_inventory(path, platform="linux-64", environment="minimal")
    assert len(minimal.packages) < len(inv.packages)


def test_pixi_lock_unknown_environment_or_platform_says_what_there_is(shared_dir: Path) -> None:
    path = shared_dir / "inventories" / "pixilock-conda-lock-repo.lock"
    with pytest.raises(InventoryError) as err:
        read_inventory(path, environment="gpu")
    assert "default, dev, minimal" in (err.value.hint or "")
    with pytest.raises(InventoryError) as err:
        read_inventory(path, platform="linux-ppc64le")
    assert "linux-aarch64" in (err.value.hint or "")


def test_conda_lock_reads_one_platform_and_says_which(shared_dir: Path) -> None:
    path = shared_dir / "inventories" / "condalock-pangeo-3platforms.yml"
    counts = {p: len(read_inventory(path, platform=p).packages) for p in ("linux-64", "osx-64", "win-64")}
    assert counts == {"linux-64": 255, "osx-64": 250, "win-64": 249}
    osx = read_inventory(path, platform="osx-64")
    assert osx.meta["selected"] == "platform osx-64 of linux-64, osx-64, win-64"
    assert _rows(osx)["python"][:2] == ("conda", "3.10.2")


def test_uv_lock_follows_the_graph_for_one_platform() -> None:
    linux = read_inventory(UV, platform="linux-64")
    assert linux.format == "uv-lock" and len(linux.packages) == 30
    rows = _rows(linux)
    assert rows["torch"][:2] == ("pip", "2.10.0")
    assert rows["nvidia-cuda-runtime-cu12"][:2] == ("pip", "12.8.90")
    assert rows["triton"][:2] == ("pip", "3.6.0")
    mac = _rows(read_inventory(UV, platform="osx-arm64"))
    assert "torch" in mac and "nvidia-cuda-runtime-cu12" not in mac and "triton" not in mac
    assert "earth2grid" not in rows  # the project itself (editable) is not a locked package


def test_uv_lock_picks_the_version_for_the_python() -> None:
    """numpy 2.2.6 for Python < 3.11, 2.3.5 from 3.11: the lock's markers decide."""
    rows = _rows(read_inventory(UV, platform="linux-64"))
    assert rows["numpy"][1] in {"2.2.6", "2.3.5"}
    assert sum(1 for p in read_inventory(UV).packages if p.name == "numpy") == 1


def test_pylock_markers_per_platform() -> None:
    linux = read_inventory(PYLOCK, platform="linux-64")
    assert linux.format == "pylock" and len(linux.packages) == 30
    rows = _rows(linux)
    assert rows["torch"][:2] == ("pip", "2.10.0") and rows["nvidia-cudnn-cu12"][0] == "pip"
    mac = _rows(read_inventory(PYLOCK, platform="osx-arm64"))
    assert len(mac) == 12 and "nvidia-cudnn-cu12" not in mac
    assert _rows(read_inventory(UV, platform="linux-64")).keys() == rows.keys()


def test_poetry_lock_markers_per_platform() -> None:
    linux = read_inventory(POETRY, platform="linux-64")
    assert linux.format == "poetry-lock" and len(linux.packages) == 24
    rows = _rows(linux)
    assert rows["torch"][:2] == ("pip", "2.6.0")
    assert rows["numpy"][:2] == ("pip", "1.26.4")
    assert rows["nvidia-cuda-runtime-cu12"][:2] == ("pip", "12.4.127")
    assert "nvidia-cuda-runtime-cu12" not in _rows(read_inventory(POETRY, platform="osx-arm64"))


def test_diff_locks_gives_the_cuda_flavour_and_says_the_platform(capsys: pytest.CaptureFixture[str]) -> None:
    cpu = DATA / "pipfreeze-cpu-box-torch213-cpu.txt"
    assert main(["diff", str(UV), str(cpu), "--platform", "linux-64", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["inputs"][0]["selected"].startswith("platform linux-64")
    flavour = [f for f in result["findings"] if f["rule"] == "torch-cuda-flavour-differs"]
    assert flavour and flavour[0]["values"] == {
        "uvlock-earth2grid-8fdff5a": "cu128",
        "pipfreeze-cpu-box-torch213-cpu": "cpu",
    }
    assert main(["diff", str(POETRY), str(PYLOCK), "--platform", "linux-64"]) == 1
    out = capsys.readouterr().out
    assert "poetry-lock (platform linux-64, Python" in out and "pylock (platform linux-64" in out


def test_audit_reads_the_locks(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = shared_dir / "advisory-db"
    for path in (UV, PYLOCK, POETRY, shared_dir / "inventories" / "pixilock-conda-lock-repo.lock"):
        code = main(["audit", str(path), "--db", str(db), "--platform", "linux-64", "--json"])
        result = json.loads(capsys.readouterr().out)["result"]
        assert code in {0, 1}
        assert "platform linux-64" in result["target"]
        assert result["checked"] > 0
