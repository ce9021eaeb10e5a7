"""Class 9 (issue 26): GPU facts recorded on one side only are reported ("driver 580 vs none")."""

from __future__ import annotations

from pathlib import Path

from envkit.drift import diff_inventories
from envkit.inventory import parse_inventory, read_inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"


def _host(*names: str) -> dict[str, tuple[str, str]]:
    inventories = [read_inventory(DATA / n) for n in names]
    return {
        f.package: (f.severity, f.message) for f in diff_inventories(inventories).findings if f.kind == "host"
    }


def test_a_real_gpu_host_against_a_real_cpu_box_sectioned() -> None:
    host = _host(
        "collectenv-sectioned-a100x4-vllm-omni-2859.txt", "collectenv-sectioned-cpu-vllm-omni-pr429.txt"
    )
    gpu_label, cpu_label = (
        "collectenv-sectioned-a100x4-vllm-omni-2859",
        "collectenv-sectioned-cpu-vllm-omni-pr429",
    )
    assert host["gpu"] == ("warning", f"GPU: NVIDIA A100 80GB PCIe ×4 ({gpu_label}) vs no GPU ({cpu_label})")
    assert host["driver"] == ("warning", f"NVIDIA driver: 550.54.14 ({gpu_label}) vs none ({cpu_label})")


def test_a_real_gpu_host_against_a_real_cpu_box_classic() -> None:
    host = _host("collectenv-torch-points3d-pr66.txt", "collectenv-cpu-nocuda-vllm-4858.txt")
    assert host["gpu"][1].startswith("GPU: GeForce RTX 2060 ×1 (collectenv-torch-points3d-pr66) vs no GPU")
    assert host["driver"][1].startswith("NVIDIA driver: 418.67 (collectenv-torch-points3d-pr66) vs none")
    assert host["cuda_runtime"][1].startswith("CUDA runtime: 9.1.85 (collectenv-torch-points3d-pr66) vs none")


def test_an_input_that_records_no_host_is_not_a_cpu_box() -> None:
    """A pip freeze says nothing about its machine: no one-sided finding against it."""
    freeze = parse_inventory("torch==2.10.0\n", path="f.txt", label="freeze", format="pip-freeze")
    gpu = read_inventory(DATA / "collectenv-sectioned-a100x4-vllm-omni-2859.txt")
    assert not [f for f in diff_inventories([gpu, freeze]).findings if f.kind == "host"]


def test_a_fleet_groups_hosts_with_and_without_gpus() -> None:
    names = [
        "collectenv-sectioned-a100x4-vllm-omni-2859.txt",
        "collectenv-torch-points3d-pr66.txt",
        "collectenv-sectioned-cpu-vllm-omni-pr429.txt",
    ]
    severity, message = _host(*names)["gpu"]
    assert severity == "warning"
    assert "no GPU on 1 (collectenv-sectioned-cpu-vllm-omni-pr429)" in message
    assert "NVIDIA A100 80GB PCIe ×4 on 1" in message and "GeForce RTX 2060 ×1 on 1" in message
