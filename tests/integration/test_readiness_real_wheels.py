"""Readiness on the real CUDA wheels (no image, no GPU): envkit's fatbin reading equals cuobjdump's, and
the Paddle flagship's libraries give the verdicts issue 31 names. Skipped when the wheels are absent
(see ``cuda_wheels.py``: ENVKIT_CUDA_WHEELS, ENVKIT_DOWNLOAD_CUDA_WHEELS=1)."""

from __future__ import annotations

import collections
import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from envkit.catalog import load_catalog
from envkit.payload import PAYLOAD_DIR
from envkit.readiness.check import check, facts_on_host
from envkit.readiness.facts import ReadinessFacts
from envkit.readiness.targets import gpu_target
from tests.integration.cuda_wheels import extracted

pytestmark = pytest.mark.slow
PADDLE = "paddlepaddle-gpu==2.6.2"
TORCH = "torch==2.15.0"


def _elfscan() -> ModuleType:
    spec = importlib.util.spec_from_file_location("envkit_payload_elfscan", PAYLOAD_DIR / "elfscan.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cuobjdump() -> Path:
    root = extracted("nvidia-cuda-cuobjdump", ("nvidia/",))
    (exe,) = root.glob("nvidia/*/bin/cuobjdump")
    return exe


def _cuobjdump_archs(exe: Path, lib: Path, flag: str) -> tuple[collections.Counter[str], str]:
    done = subprocess.run(
        [str(exe), flag, str(lib)], capture_output=True, text=True, timeout=600, check=False
    )
    kind = "ELF" if flag == "--list-elf" else "PTX"
    names = re.findall(
        rf"^{kind} file\s+\d+: \S+?\.((?:sm|compute)_\d+[a-z]?)\.(?:cubin|ptx)$", done.stdout, re.M
    )
    return collections.Counter(names), done.stderr


@pytest.mark.parametrize(
    ("requirement", "member"),
    [
        (PADDLE, "paddle/libs/libphi.so"),
        (PADDLE, "paddle/base/libpaddle.so"),
        (TORCH, "torch/lib/libtorch_cuda.so"),
    ],
)
def test_archs_equal_cuobjdumps(requirement: str, member: str, cuobjdump: Path) -> None:
    root = extracted(requirement, (member,))
    lib = root / member
    ours = _elfscan().scan(str(lib))
    assert ours["problem"] is None
    elf, err = _cuobjdump_archs(cuobjdump, lib, "--list-elf")
    ptx, _ = _cuobjdump_archs(cuobjdump, lib, "--list-ptx")
    stopped = re.search(r"Support for '(sm_\d+)' has been removed", err)
    if stopped:  # cuobjdump 13.x stops at the first sm_35 entry (libphi.so's last); envkit reads on
        removed = stopped.group(1)
        assert ours["elf_entries"].pop(removed) >= 1
    assert collections.Counter(ours["elf_entries"]) == elf
    assert {a.replace("compute_", "sm_") for a in ours["ptx"]} == {a.replace("compute_", "sm_") for a in ptx}
    if member.endswith("libphi.so"):  # the facts
        assert ours["fatbins"] == 666 and not ours["ptx"]
        assert {a for a, n in ours["sass"].items() if n >= 665} == {
            "sm_61",
            "sm_70",
            "sm_75",
            "sm_80",
            "sm_86",
        }


def _paddle_site(
    tmp_path: Path, *, cudnn: bool = True, nvrtc_link: bool = True
) -> tuple[str, dict[str, str]]:
    """paddle + NVIDIA's cu11 wheels laid out as a site-packages, the libraries on LD_LIBRARY_PATH."""
    site = tmp_path / "site-packages"
    (site / "nvidia").mkdir(parents=True)
    (site / "paddle").symlink_to(
        extracted(PADDLE, ("paddle/libs/", "paddle/base/", "paddle/version/")) / "paddle"
    )
    parts = {"cublas": "nvidia-cublas-cu11==11.11.3.6", "cuda_runtime": "nvidia-cuda-runtime-cu11==11.8.89",
             "cuda_nvrtc": "nvidia-cuda-nvrtc-cu11==11.8.89"}  # fmt: skip
    if cudnn:
        parts["cudnn"] = "nvidia-cudnn-cu11==8.6.0.163"
    dirs = []
    for name, requirement in parts.items():
        (site / "nvidia" / name).symlink_to(extracted(requirement, ("nvidia/",)) / "nvidia" / name)
        dirs.append(str(site / "nvidia" / name / "lib"))
    if nvrtc_link:  # cuDNN 8 opens the unversioned libnvrtc.so; NVIDIA's wheel ships libnvrtc.so.11.2
        extra = tmp_path / "lib"
        extra.mkdir()
        (extra / "libnvrtc.so").symlink_to(site / "nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2")
        dirs.append(str(extra))
    return str(site), {"LD_LIBRARY_PATH": ":".join(dirs)}


def _facts(tmp_path: Path, **layout: bool) -> ReadinessFacts:
    site, env = _paddle_site(tmp_path, **layout)
    return facts_on_host([site], load_catalog(), env=env)


def test_paddle_flagship_libraries_on_h100_and_a100(tmp_path: Path) -> None:
    facts = _facts(tmp_path)
    paddle = facts.frameworks["paddle"]
    assert (paddle.version, paddle.cuda, paddle.cudnn) == ("2.6.2", "11.8", "8.6.0")
    assert paddle.loaded.versions["cudnn"] == 8600
    assert paddle.loaded.versions["cublas"] == "11.11.3"
    assert any(
        p.endswith("libcudnn_ops_infer.so.8") for p in paddle.loaded.maps["cudnn"]
    )  # what cudnn opened
    catalog = load_catalog()
    result = check(facts, [gpu_target("H100", catalog), gpu_target("A100", catalog)], catalog, where="t")
    h100 = [f for f in result.verdicts[0].findings if f.code == "no-kernel-image"]
    a100 = [f for f in result.verdicts[1].findings if f.code == "no-kernel-image"]
    assert any(
        f.message.startswith("no kernel image for sm_90 in libphi.so (665 of 666 fatbins)") for f in h100
    )
    assert a100 == []


def test_cudnn_removed_and_the_nvrtc_link_missing_on_real_libraries(tmp_path: Path) -> None:
    gone = _facts(tmp_path / "a", cudnn=False)
    (cudnn,) = [o for o in gone.frameworks["paddle"].opened if o.lib == "cudnn"]
    assert cudnn.to is None
    no_link = _facts(tmp_path / "b", nvrtc_link=False).frameworks["paddle"].loaded.errors
    assert "libnvrtc.so: cannot open shared object file" in no_link["cudnn"]
