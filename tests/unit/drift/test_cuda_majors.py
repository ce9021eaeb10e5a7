"""Class 4 (issue 26): the CUDA major of any nvidia-* wheel, from its name or version; mixed stacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.drift import diff_inventories
from envkit.drift.cuda_wheels import cuda_major
from envkit.inventory import Inventory, parse_inventory, read_inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"


def _fired(inventory: Inventory) -> dict[str, str]:
    return {f.rule: f.message for f in diff_inventories([inventory]).findings if f.rule}


@pytest.mark.parametrize(
    ("project", "version", "major"),
    [
        ("nvidia-cuda-runtime-cu12", "12.1.105", 12),
        ("nvidia-cudnn-cu13", "9.13.0.50", 13),  # the version is cuDNN's: the name says 13
        ("nvidia-nccl-cu11", "2.14.3", 11),
        ("nvidia-cusparselt-cu14", "1.0", 14),  # any major
        ("nvidia-cuda-runtime", "13.0.96", 13),  # CUDA 13: no suffix, the toolkit's version
        ("nvidia-cublas", "13.4.1.3", 13),
        ("cuda-toolkit", "13.2.2", 13),
        ("nvidia-dali-cuda120", "1.40.0", 12),
        ("cupy-cuda12x", "13.3.0", 12),
        ("cupy-cuda117", "10.6.0", 11),
        ("jax-cuda12-plugin", "0.4.35", 12),
        ("conda:cudatoolkit", "11.8.0", 11),
        ("conda:cuda-cudart", "12.1.105", 12),
        ("nvidia-cufft", "12.0.0.61", None),  # ships with CUDA 13, carries its own version
        ("nvidia-curand", "10.4.0.35", None),
        ("nvidia-cufile", "1.15.1.6", None),
        ("numpy", "1.26.4", None),
    ],
)
def test_cuda_major(project: str, version: str, major: int | None) -> None:
    assert cuda_major(project, version) == major


def test_a_real_cuda13_freeze_is_one_stack() -> None:
    """torch 2.15.0 from PyPI: cuda-toolkit 13.2.2 and its unsuffixed wheels, whose minors differ."""
    fired = _fired(read_inventory(DATA / "pipfreeze-torch215-cu132-pypi-linux.txt"))
    assert "cuda-majors-mixed" not in fired and "cuda-components-inconsistent" not in fired


def test_cu12_leftovers_beside_a_cuda13_torch_are_a_mixed_stack() -> None:
    fired = _fired(read_inventory(DATA / "pipfreeze-mixed-cu12-leftovers-cu13.txt"))
    message = fired["cuda-majors-mixed"]
    assert "CUDA 12: nvidia-cublas-cu12 12.1.3.1" in message and "CUDA 13: cuda-toolkit 13.2.2" in message


@pytest.mark.parametrize(
    "freeze",
    [
        "nvidia-cuda-runtime==13.0.96\nnvidia-cuda-runtime-cu12==12.8.90\n",  # the pair
        "nvidia-cudnn-cu13==9.13.0.50\nnvidia-cudnn-cu12==9.10.2.21\n",  # versions alike, majors not
        "cupy-cuda11x==12.3.0\nnvidia-cublas-cu12==12.1.3.1\n",
    ],
)
def test_two_majors_in_one_freeze(freeze: str) -> None:
    inventory = parse_inventory(freeze, path="f.txt", label="f", format="pip-freeze")
    assert "cuda-majors-mixed" in _fired(inventory)


def test_conda_cuda_packages_of_two_majors_are_reported_once() -> None:
    text = "cudatoolkit 11.8.0 h6a678d5_0 defaults\ncuda-cudart 12.1.105 0 nvidia\n"
    fired = _fired(parse_inventory(text, path="c.txt", label="c", format="conda-list"))
    assert "cuda-majors-mixed" in fired and "cuda-components-inconsistent" not in fired


def test_minors_of_one_major_are_still_the_components_rule() -> None:
    text = "cuda-cudart 12.1.105 0 nvidia\ncuda-nvrtc 12.4.127 0 nvidia\n"
    fired = _fired(parse_inventory(text, path="c.txt", label="c", format="conda-list"))
    assert "cuda-components-inconsistent" in fired and "cuda-majors-mixed" not in fired
