"""Class 2 (issue 26): the sectioned collect_env layout (vLLM's) keeps its header facts."""

from __future__ import annotations

from pathlib import Path

from envkit.inventory import read_inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"


def test_sectioned_gpu_host_reads_like_the_classic_header() -> None:
    inventory = read_inventory(DATA / "collectenv-sectioned-a100x4-vllm-omni-2859.txt")
    assert inventory.format == "collect-env"
    meta = inventory.meta
    assert (meta["python"], meta["torch"], meta["torch_cuda"]) == ("3.12.9", "2.10.0+cu126", "12.6")
    assert (meta["gpu"], meta["gpu_count"], meta["driver"]) == ("NVIDIA A100 80GB PCIe", "4", "550.54.14")
    assert (meta["os"], meta["libc"], meta["cuda_available"]) == (
        "openSUSE Leap 15.5 (x86_64)",
        "glibc-2.31",
        "True",
    )
    assert "cuda_runtime" not in meta  # "Could not collect"
    assert [(p.name, p.version) for p in inventory.packages] == [("torch", "2.10.0+cu126")]


def test_sectioned_cpu_box_records_no_gpu_facts() -> None:
    meta = read_inventory(DATA / "collectenv-sectioned-cpu-vllm-omni-pr429.txt").meta
    assert (meta["python"], meta["cuda_available"], meta["libc"]) == ("3.10.12", "False", "glibc-2.35")
    assert not {"gpu", "driver", "cuda_runtime"} & set(meta)  # "No CUDA" is no value


def test_classic_no_cuda_is_no_value() -> None:
    meta = read_inventory(DATA / "collectenv-cpu-nocuda-vllm-4858.txt").meta
    assert not {"gpu", "driver", "cuda_runtime", "cudnn"} & set(meta)
    assert meta["cpu"] == "AMD Ryzen 5 6600H with Radeon Graphics"
