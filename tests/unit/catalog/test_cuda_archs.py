"""Class 10 (issue 26): the GPU architectures of a CUDA row against the CUDA compiler itself.

``nvrtcGetSupportedArchs()`` of the NVRTC that the installed torch's ``cuda-toolkit`` brings
(``nvidia/cu13/lib/libnvrtc.so.13``: torch 2.15.0 from PyPI requires cuda-toolkit 13.2.2) lists
the targets that CUDA release compiles for. The table leaves out sm_87 and sm_88 (as its 13.0 row).
Skipped where no CUDA 13 NVRTC is installed (a CPU-only venv).
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import pytest

from envkit.catalog import load_catalog

LEFT_OUT = {"sm_87", "sm_88"}


def _nvrtc() -> Path:
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        lib = Path(root) / "cu13" / "lib" / "libnvrtc.so.13"
        if lib.is_file():
            return lib
    pytest.skip("no CUDA 13 NVRTC installed (nvidia-cuda-nvrtc 13.x)")


def _supported(lib: Path) -> tuple[str, list[str]]:
    nvrtc = ctypes.CDLL(str(lib))
    major, minor, count = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    assert nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0
    assert nvrtc.nvrtcGetNumSupportedArchs(ctypes.byref(count)) == 0
    archs = (ctypes.c_int * count.value)()
    assert nvrtc.nvrtcGetSupportedArchs(archs) == 0
    return f"{major.value}.{minor.value}", [f"sm_{a}" for a in archs]


def test_the_cuda_row_of_the_installed_nvrtc_lists_its_archs() -> None:
    version, archs = _supported(_nvrtc())
    row = load_catalog().cuda_release(version)
    assert row is not None, f"CUDA {version} (the installed NVRTC) is not in the catalog"
    assert list(row.archs) == [a for a in archs if a not in LEFT_OUT]
    assert row.verified


def test_the_cuda_12_4_wheel_set_names_files_its_wheels_ship() -> None:
    """Each library the catalog's CUDA 12.4 set names is in the wheel of that pin (read from PyPI's
    wheels: tests/data/catalog/cuda124_wheel_libraries.json), and each pin is the committed lock's."""
    import json

    root = Path(__file__).resolve().parents[3]
    listing = json.loads((root / "tests/data/catalog/cuda124_wheel_libraries.json").read_text("utf-8"))[
        "wheels"
    ]
    lock = (root / "images/cuda12.4-torch2.5/requirements.lock").read_text("utf-8")
    wheel_set = load_catalog().cuda_wheels("12.4")
    assert wheel_set is not None and wheel_set.verified
    for wheel in (*wheel_set.wheels, *wheel_set.cudnn):
        shipped = listing[wheel.package]
        assert shipped["version"] == wheel.version, wheel.package
        names = {p.rsplit("/", 1)[-1] for p in shipped["libs"]}
        assert set(wheel.libraries) <= names, (wheel.package, sorted(names))
        assert f"{wheel.package}=={wheel.version} " in lock and f"sha256:{shipped['sha256']}" in lock
