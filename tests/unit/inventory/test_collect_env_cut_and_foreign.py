"""Issue 45 class 9: collect_env reports that say less than a full one. A paste cut after its Python
line leaves the GPU unknown (not absent); a report with no package rows takes no part in the package
comparison (its packages are unknown, never "absent"); a host fact known on one side and not
collected on the other is shown as `X vs not collected`, never dropped."""

from __future__ import annotations

from envkit.drift import diff_inventories
from envkit.inventory import parse_inventory
from envkit.inventory.models import Inventory

HEAD = (
    "PyTorch version: 2.1.2+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
    "ROCM used to build PyTorch: N/A\n\nOS: Ubuntu 22.04.3 LTS (x86_64)\n"
    "GCC version: (Ubuntu 11.4.0) 11.4.0\n"
    "Clang version: Could not collect\nCMake version: version 3.27.9\nLibc version: glibc-2.35\n\n"
    "Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)\n"
)
GPU = (
    "Python platform: Linux-5.15.0-x86_64-with-glibc2.35\nIs CUDA available: True\n"
    "CUDA runtime version: 12.1.105\nCUDA_MODULE_LOADING set to: LAZY\n"
    "GPU models and configuration: GPU 0: NVIDIA H200\nNvidia driver version: 580.159.04\n"
    "cuDNN version: Could not collect\n"
)
CPU_BOX = (
    "Python platform: Linux-5.15.0-x86_64-with-glibc2.35\nIs CUDA available: False\n"
    "CUDA runtime version: Could not collect\nCUDA_MODULE_LOADING set to: N/A\n"
    "GPU models and configuration: Could not collect\nNvidia driver version: Could not collect\n"
    "cuDNN version: Could not collect\n"
)
PACKAGES = "\nVersions of relevant libraries:\n[pip3] numpy==1.26.4\n[pip3] torch==2.1.2+cu121\n"
NO_PACKAGES = "\nVersions of relevant libraries:\n[pip3] Could not collect\n[conda] Could not collect\n"


def read(text: str, label: str) -> Inventory:
    return parse_inventory(text, path=f"{label}.txt", label=label)


def messages(*inventories: Inventory) -> list[str]:
    return [f.message for f in diff_inventories(inventories).findings]


def test_a_paste_cut_after_its_python_line_leaves_the_gpu_unknown_not_absent() -> None:
    cut = read(HEAD, "cut")
    assert {"gpu", "driver", "cuda_runtime", "cudnn"} <= set(cut.meta["not_collected"].split(","))
    shown = messages(read(HEAD + GPU + PACKAGES, "h200"), cut)
    assert not any("no GPU" in m or "vs none" in m for m in shown), shown
    assert any("NVIDIA H200" in m and "not collected (cut)" in m for m in shown), shown


def test_a_fact_known_on_one_side_and_not_collected_on_the_other_is_shown() -> None:
    shown = messages(read(HEAD + GPU + PACKAGES, "h200"), read(HEAD + CPU_BOX + PACKAGES, "cpu-box"))
    assert any("580.159.04 (h200) vs not collected (cpu-box)" in m for m in shown), shown
    assert any("NVIDIA H200" in m and "not collected (cpu-box)" in m for m in shown), shown


def test_a_report_without_package_rows_says_nothing_is_absent() -> None:
    empty = read(
        "vLLM Version: 0.6.3\n" + HEAD.replace("2.1.2+cu121", "N/A") + GPU + NO_PACKAGES, "vllm-report"
    )
    assert not empty.packages and empty.meta["packages"] == "not collected"
    shown = messages(read(HEAD + GPU + PACKAGES, "h200"), empty)
    assert not any(m.startswith(("torch:", "numpy:")) for m in shown), shown
