"""Class 1 (issue 26): a PyPI torch with no suffix and no nvidia-* wheels: inferred, else a warning."""

from __future__ import annotations

from envkit.drift import diff_inventories
from envkit.drift.facts import FACTS
from envkit.inventory import Inventory, parse_inventory

# torch 2.3.1 as rakuri255/UltraSinger's install/CPU/windows_cpu.bat installs it on Windows (plain PyPI),
# beside pywin32 (Windows-only wheels) as a Windows freeze lists it
WINDOWS = "numpy==1.26.4\npywin32==306\ntorch==2.3.1\ntorchaudio==2.3.1\ntorchvision==0.18.1\n"
MACOS = "appnope==0.1.4\nnumpy==1.26.4\ntorch==2.3.1\ntorchvision==0.18.1\n"
GPU_HOST = "numpy==1.26.4\ntorch==2.3.1+cu121\ntorchvision==0.18.1+cu121\n"
OLD_GPU_HOST = "numpy==1.21.6\ntorch==1.8.0+cu111\ntorchvision==0.9.0+cu111\n"


def _inv(text: str, label: str, fmt: str = "pip-freeze") -> Inventory:
    return parse_inventory(text, path=f"{label}.txt", label=label, format=fmt)


def _flavour(inventory: Inventory) -> str | None:
    return FACTS["torch_cuda"](inventory, inventory.primary())


def test_windows_and_macos_pypi_torch_is_cpu() -> None:
    assert _flavour(_inv(WINDOWS, "win")) == "cpu"
    assert _flavour(_inv(MACOS, "mac")) == "cpu"


def test_a_windows_cpu_box_against_a_cuda_host_is_a_flavour_difference() -> None:
    findings = diff_inventories([_inv(WINDOWS, "win"), _inv(GPU_HOST, "gpu")]).findings
    flavour = next(f for f in findings if f.rule == "torch-cuda-flavour-differs")
    assert flavour.severity == "critical" and flavour.values == {"win": "cpu", "gpu": "cu121"}


def test_the_platform_recorded_by_collect_env_decides() -> None:
    text = (
        "PyTorch version: 2.3.1\nPython version: 3.11.9\n"
        "Python platform: Windows-10-10.0.22631-SP0\n[pip3] torch==2.3.1\n"
    )
    assert _flavour(_inv(text, "ce", "collect-env")) == "cpu"


def test_linux_torch_before_1_13_bundled_cuda_10_2() -> None:
    """torch 1.8-1.12 on PyPI: the Linux wheel bundles CUDA 10.2 (catalog pypi_cuda)."""
    text = (
        "PyTorch version: 1.10.0\nPython platform: Linux-5.4.0-x86_64-with-glibc2.31\n[pip3] torch==1.10.0\n"
    )
    assert _flavour(_inv(text, "ce", "collect-env")) == "cu102"


def test_linux_torch_from_1_13_without_nvidia_wheels_stays_unknown() -> None:
    text = (
        "PyTorch version: 2.3.1\nPython platform: Linux-5.15.0-x86_64-with-glibc2.35\n[pip3] torch==2.3.1\n"
    )
    assert _flavour(_inv(text, "ce", "collect-env")) is None


def test_unknown_against_known_is_a_warning_not_silence() -> None:
    """The issue's case: a CPU box whose freeze says nothing, against a +cu111 host."""
    box = _inv("numpy==1.21.6\ntorch==1.8.0\ntorchvision==0.9.0\n", "box")
    findings = diff_inventories([box, _inv(OLD_GPU_HOST, "host")]).findings
    unknown = next(f for f in findings if f.rule == "torch-cuda-flavour-unknown")
    assert unknown.severity == "warning" and unknown.values == {"box": None, "host": "cu111"}
    assert "unknown on box" in unknown.message and "cu111 (host)" in unknown.message


def test_known_on_both_sides_is_no_unknown_warning() -> None:
    findings = diff_inventories([_inv(WINDOWS, "win"), _inv(GPU_HOST, "gpu")]).findings
    assert not [f for f in findings if f.rule == "torch-cuda-flavour-unknown"]
