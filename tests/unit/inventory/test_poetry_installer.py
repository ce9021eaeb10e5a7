"""Class 6 (issue 26): a poetry.lock is read as ``poetry install`` installs it on one platform.

Real locks (sources in tests/data/inventories/README.md): jangedoo/nep-lms (Poetry 2.1.3, lock 2.1:
groups, per-group markers, torch from download.pytorch.org cpu/cu126 beside PyPI's torch),
sktime/pytorch-forecasting (Poetry 1.8.3, lock 2.0: optional packages behind [extras]),
hironow/gpu-using-with-poetry (Poetry 1.4.2: category main/dev, torch 2.0.1+cu118 from a legacy
source). The Poetry 2 extras-by-marker case is built from the pattern real pyproject files use
(``torch = {source = "pytorch-cpu", markers = "extra=='cpu' and extra!='cuda'"}``).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from envkit.drift import diff_inventories
from envkit.errors import InventoryError
from envkit.inventory import parse_inventory
from envkit.inventory import read_inventory as _read_inventory
from envkit.inventory.readers_poetry import fits_platform

read_inventory = functools.lru_cache(maxsize=None)(_read_inventory)
DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"
NEP = DATA / "poetrylock-nep-lms-torch-cpu-cu126-d2f1966.lock"
FORECASTING = DATA / "poetrylock-pytorch-forecasting-extras-8d176d8.lock"
CU118 = DATA / "poetrylock-gpu-using-with-poetry-cu118-c2c3ada.lock"


def _rows(inv: object) -> dict[str, tuple[str, str | None]]:
    return {p.name: (p.version, p.url) for p in inv.packages}  # type: ignore[attr-defined]


# ---- lock-version 2.1 (Poetry 2): groups and per-group markers, no re-resolution


def test_torch_from_the_pytorch_index_on_linux_and_the_mirror_is_its_url() -> None:
    inv = read_inventory(NEP, platform="linux-64")
    rows = _rows(inv)
    assert rows["torch"] == ("2.7.1+cu126", "https://download.pytorch.org/whl/cu126")
    assert rows["nvidia-cudnn-cu12"][0] == "9.5.1.17"  # PyPI torch's CUDA wheels are locked for Linux x86_64
    # PyPI torch 2.7.1 holds on linux too (no marker): poetry installs both, in parallel
    (twice,) = [w for w in inv.warnings if "locked 2 times" in w]
    assert "torch is locked 2 times for linux-64" in twice and "read 2.7.1+cu126" in twice
    assert "groups dev, main of dev, main" in inv.meta["selected"]
    assert "extras not read: cpu, cuda" in inv.meta["selected"]


def test_on_macos_the_cpu_index_entry_has_no_wheel_and_pypi_torch_is_read() -> None:
    inv = read_inventory(NEP, platform="osx-arm64")
    rows = _rows(inv)
    assert rows["torch"] == ("2.7.1", None)  # PyPI's macOS wheel: the cpu index's +cpu has none for macOS
    assert "nvidia-cudnn-cu12" not in rows
    fails = [w for w in inv.warnings if "poetry install fails there" in w]
    assert any("torch 2.7.1+cpu: none of its" in w and "osx-arm64" in w for w in fails)
    assert any(w.split(": ", 1)[1].startswith("bitsandbytes 0.48.1") for w in fails)


def test_groups_are_chosen_as_poetry_install_does() -> None:
    everything = _rows(read_inventory(NEP, platform="linux-64"))
    main = _rows(read_inventory(NEP, platform="linux-64", environment="without=dev"))
    only_dev = _rows(read_inventory(NEP, platform="linux-64", environment="only=dev"))
    assert "black" in everything and "black" not in main and "black" in only_dev
    assert "torch" in main and "torch" not in only_dev  # torch: groups = ["main"]
    assert len(main) + len(only_dev) > len(everything)  # 23 packages are in both groups


def test_per_group_markers() -> None:
    # colorama: groups main, dev; markers {main = Windows, dev = Windows or win32}
    assert "colorama" in _rows(read_inventory(NEP, platform="win-64", environment="only=main"))
    assert "colorama" not in _rows(read_inventory(NEP, platform="linux-64"))


def test_unknown_extras_groups_and_items_are_clear_errors() -> None:
    with pytest.raises(InventoryError, match="no extra 'gpu'") as err:
        read_inventory(NEP, environment="gpu")
    assert "cpu, cuda" in (err.value.hint or "")
    with pytest.raises(InventoryError, match="no group 'docs'") as err:
        read_inventory(NEP, environment="with=docs")
    assert "dev, main" in (err.value.hint or "")
    with pytest.raises(InventoryError, match=r"cannot read 'with=' as a poetry\.lock choice"):
        read_inventory(NEP, environment="with=")


EXTRAS_LOCK = """\
[[package]]
name = "numpy"
version = "2.2.6"
description = "Fundamental package for array computing in Python"
optional = false
python-versions = ">=3.10"
groups = ["main"]
files = [{file = "numpy-2.2.6-cp311-cp311-manylinux_2_28_x86_64.whl", hash = "sha256:00"}]

[[package]]
name = "torch"
version = "2.7.1+cpu"
description = "Tensors and Dynamic neural networks in Python with strong GPU acceleration"
optional = true
python-versions = ">=3.9.0"
groups = ["main"]
markers = "extra == \\"cpu\\" and extra != \\"cuda\\""
files = [{file = "torch-2.7.1+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", hash = "sha256:01"}]

[package.source]
type = "legacy"
url = "https://download.pytorch.org/whl/cpu"
reference = "pytorch-cpu"

[[package]]
name = "torch"
version = "2.7.1+cu126"
description = "Tensors and Dynamic neural networks in Python with strong GPU acceleration"
optional = true
python-versions = ">=3.9.0"
groups = ["main"]
markers = "extra == \\"cuda\\" and extra != \\"cpu\\""
files = [{file = "torch-2.7.1+cu126-cp311-cp311-manylinux_2_28_x86_64.whl", hash = "sha256:02"}]

[package.source]
type = "legacy"
url = "https://download.pytorch.org/whl/cu126"
reference = "pytorch-cuda"

[[package]]
name = "common"
version = "0.3.0"
description = "the team's shared code"
optional = false
python-versions = ">=3.10"
groups = ["main"]
files = []
develop = true

[package.source]
type = "directory"
url = "../libs/common"

[[package]]
name = "diffusers"
version = "0.35.0.dev0"
description = "State-of-the-art diffusion in PyTorch and JAX."
optional = false
python-versions = ">=3.8.0"
groups = ["main"]
files = []

[package.source]
type = "git"
url = "https://github.com/huggingface/diffusers"
reference = "HEAD"
resolved_reference = "ba2ba9019f76fd96c532240ed07d3f98343e4041"

[extras]
cpu = ["torch"]
cuda = ["torch"]

[metadata]
lock-version = "2.1"
python-versions = ">=3.11,<3.12"
content-hash = "00"
"""


def _extras(environment: str | None) -> dict[str, tuple[str, str | None]]:
    inv = parse_inventory(
        EXTRAS_LOCK,
        path="poetry.lock",
        label="x",
        format="poetry-lock",
        platform="linux-64",
        environment=environment,
    )
    return _rows(inv)


def test_poetry2_extras_are_markers_on_extra() -> None:
    assert "torch" not in _extras(None)  # optional: "Not required" without -E
    assert _extras("cuda")["torch"] == ("2.7.1+cu126", "https://download.pytorch.org/whl/cu126")
    assert _extras("cpu")["torch"] == ("2.7.1+cpu", "https://download.pytorch.org/whl/cpu")


def test_a_marker_excluding_a_chosen_extra_does_not_hold() -> None:
    """Poetry evaluates ``extra`` as the set of chosen extras: ``extra != "cpu"`` fails under -E cpu."""
    lock = EXTRAS_LOCK.replace(
        "[extras]",
        '[[package]]\nname = "nvidia-nccl-cu12"\nversion = "2.26.2"\noptional = true\n'
        'python-versions = ">=3"\ngroups = ["main"]\nmarkers = "extra != \\"cpu\\""\nfiles = []\n\n[extras]',
    )
    rows = {
        e: _rows(
            parse_inventory(
                lock, path="poetry.lock", label="x", format="poetry-lock", platform="linux-64", environment=e
            )
        )
        for e in (None, "cpu", "cuda")
    }
    assert "nvidia-nccl-cu12" in rows[None] and "nvidia-nccl-cu12" in rows["cuda"]
    assert "nvidia-nccl-cu12" not in rows["cpu"]


def test_path_and_git_packages() -> None:
    rows = _extras(None)
    assert rows["common"] == ("0.3.0", "../libs/common")  # develop = true: an editable path package
    assert rows["diffusers"] == (
        "0.35.0.dev0",
        "https://github.com/huggingface/diffusers@ba2ba9019f76fd96c532240ed07d3f98343e4041",
    )
    inv = parse_inventory(
        EXTRAS_LOCK, path="poetry.lock", label="x", format="poetry-lock", platform="linux-64"
    )
    assert "1 path packages" in inv.meta["selected"] and inv.meta["python"] == "3.11"


def test_two_extras_of_one_lock_diff_as_two_torch_flavours() -> None:
    cpu, cuda = (
        parse_inventory(
            EXTRAS_LOCK, path="poetry.lock", label=e, format="poetry-lock", platform="linux-64", environment=e
        )
        for e in ("cpu", "cuda")
    )
    flavour = [f for f in diff_inventories([cpu, cuda]).findings if f.rule == "torch-cuda-flavour-differs"]
    assert len(flavour) == 1 and flavour[0].severity == "critical"


# ---- older locks: optional packages through [extras], category groups


def test_lock_2_0_optional_packages_come_with_their_extra() -> None:
    plain = _rows(read_inventory(FORECASTING, platform="linux-64"))
    mqf2 = _rows(read_inventory(FORECASTING, platform="linux-64", environment="mqf2"))
    assert "cpflows" not in plain and "networkx" in plain  # networkx is not optional in this lock
    # mqf2 = ["cpflows"]; cpflows needs h5py, seaborn, torchvision, future, ... (optional = true)
    assert {"cpflows", "h5py", "seaborn", "torchvision", "future"} <= set(mqf2) - set(plain)
    assert "pytest-github-actions-annotate-failures" not in mqf2
    both = read_inventory(FORECASTING, platform="linux-64", environment="mqf2,github-actions")
    assert "pytest-github-actions-annotate-failures" in _rows(both)
    assert "Poetry would re-resolve it" in both.meta["selected"]


def test_lock_2_0_without_categories_cannot_choose_groups() -> None:
    with pytest.raises(InventoryError, match="does not record dependency groups"):
        read_inventory(FORECASTING, environment="without=dev")


def test_poetry_1_4_categories_and_a_cuda_index() -> None:
    everything = _rows(read_inventory(CU118, platform="linux-64"))
    main = _rows(read_inventory(CU118, platform="linux-64", environment="without=dev"))
    assert everything["torch"] == ("2.0.1+cu118", "https://download.pytorch.org/whl/cu118")
    assert "black" in everything and "black" not in main and "torch" in main
    mac = read_inventory(CU118, platform="osx-arm64")
    assert any(
        w.endswith(
            "torch 2.0.1+cu118: none of its 8 locked files is for osx-arm64 (only linux_x86_64, "
            "win_amd64): poetry install fails there"
        )
        for w in mac.warnings
    )


def test_only_ignores_with_and_without_as_poetry_install_does() -> None:
    """``poetry install --only main --without main`` installs main (and warns): GroupCommand."""
    only = read_inventory(CU118, platform="linux-64", environment="only=main")
    both = read_inventory(CU118, platform="linux-64", environment="only=main,without=main")
    assert _rows(both) == _rows(only) and "torch" in _rows(both)
    assert any("ignored along with only=" in w for w in both.warnings)


@pytest.mark.parametrize(
    ("filename", "platform", "fits"),
    [
        ("torch-2.7.1+cu126-cp311-cp311-manylinux_2_28_x86_64.whl", "linux-64", True),
        ("torch-2.7.1+cu126-cp311-cp311-manylinux_2_28_x86_64.whl", "osx-arm64", False),
        ("torch-2.7.1-cp311-none-macosx_11_0_arm64.whl", "osx-arm64", True),
        ("numpy-2.2.6-cp311-cp311-macosx_14_0_x86_64.whl", "osx-arm64", False),
        ("aiohttp-3.10.3-cp311-cp311-macosx_10_9_universal2.whl", "osx-arm64", True),
        ("triton-2.0.0-1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", "linux-64", True),
        ("torch-2.0.1+cu118-cp311-cp311-win_amd64.whl", "win-64", True),
        ("bitsandbytes-0.48.1-py3-none-manylinux_2_24_aarch64.whl", "linux-aarch64", True),
        ("six-1.16.0-py2.py3-none-any.whl", "win-64", True),
        ("absl-py-2.1.0.tar.gz", "osx-arm64", True),
    ],
)
def test_which_locked_files_install_where(filename: str, platform: str, fits: bool) -> None:
    assert fits_platform(filename, platform) is fits
