"""Pastes cut off part-way, collect_env variants, and files that are not inventories."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.errors import InventoryError
from envkit.inventory import detect_format, parse_inventory, read_inventory


def _cut(path: Path, keep: int) -> str:
    """The file as a paste cut off ``keep`` characters into its last line."""
    lines = path.read_text("utf-8").rstrip().splitlines()
    return "\n".join([*lines[:-1], lines[-1][:keep]])


@pytest.mark.parametrize(
    ("name", "keep"),
    [
        ("condalist-lang2sql-README.txt", 9),  # "zlib     ": a name without its version
        ("condaexport-moma-ppo.txt", 5),  # "zstd=": no version
        ("explicit-paris-aec6a0f.txt", 30),  # half a URL
    ],
)
def test_a_paste_cut_in_its_last_line_keeps_the_rest(shared_dir: Path, name: str, keep: int) -> None:
    path = shared_dir / "inventories" / name
    whole = read_inventory(path)
    text = _cut(path, keep)
    cut = parse_inventory(text, path=name, label="cut")
    assert len(cut.packages) >= len(whole.packages) - 1
    last = len(text.splitlines())
    assert len(cut.packages) == len(whole.packages) - 1
    assert len(cut.warnings) == 1 and cut.warnings[0].startswith(f"{name}:{last}:")


def test_mostly_unreadable_still_fails_naming_the_line() -> None:
    text = "numpy==1.26.4\nthis is not = a requirement\nnor is this one !\n"
    with pytest.raises(InventoryError, match=r"x.txt:2: .*1 rows read, 2 unreadable"):
        parse_inventory(text, path="x.txt", label="x")


def test_a_cut_json_list_keeps_its_complete_entries() -> None:
    text = (
        '[\n {"name": "numpy", "version": "1.26.4"},\n {"name": "torch", "version": "2.4.1"},\n {"name": "sci'
    )
    inv = parse_inventory(text, path="pip.json", label="p")
    assert inv.format == "pip-json"
    assert [(p.name, p.version) for p in inv.packages] == [("numpy", "1.26.4"), ("torch", "2.4.1")]
    assert inv.warnings and inv.warnings[0].startswith("pip.json:")


def test_collect_env_rows_alone_are_collect_env_not_json() -> None:
    text = "[pip3] numpy==1.26.4\n[pip3] torch==2.3.1+cu121\n[conda] Could not collect\n"
    assert detect_format(text) == "collect-env"
    inv = parse_inventory(text, path="rows.txt", label="r")
    assert {(p.name, p.version, p.env) for p in inv.packages} == {
        ("numpy", "1.26.4", "pip3"),
        ("torch", "2.3.1+cu121", "pip3"),
    }


COLLECT_ENV_CUDNN = """\
Collecting environment information...
PyTorch version: 2.1.0+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
OS: Ubuntu 22.04.3 LTS (x86_64)
Libc version: glibc-2.35
Python version: 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] (64-bit runtime)
Is CUDA available: True
CUDA runtime version: 12.1.105
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB

Nvidia driver version: 535.104.12
cuDNN version: Probably one of the following:
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.5
/usr/lib/x86_64-linux-gnu/libcudnn_ops_infer.so.8.9.5
HIP runtime version: N/A

CPU:
Architecture:                       x86_64
Model name:                         AMD EPYC 7742 64-Core Processor

Versions of relevant libraries:
[pip3] numpy==1.26.1
[pip3] torch==2.1.0+cu121
[conda] numpy                     1.21.2           py39h20f2e39_0
[conda] pytorch                   1.10.0          py3.9_cuda11.3_cudnn8.2.0_0    pytorch
[conda] torchvision               0.11.1               py39_cu113    pytorch
[pip3] torchvision==0.16.0+cu121
"""


def test_collect_env_header_facts_and_cudnn_list() -> None:
    inv = parse_inventory(COLLECT_ENV_CUDNN, path="ce.txt", label="ce")
    meta = inv.meta
    assert (meta["cudnn"], meta["cudnn_candidates"]) == ("8.9.5", "8.9.0, 8.9.5")
    assert (meta["driver"], meta["cuda_runtime"], meta["torch_cuda"]) == ("535.104.12", "12.1.105", "12.1")
    assert (meta["gpu"], meta["gpu_count"]) == ("NVIDIA A100-SXM4-80GB", "2")
    assert (meta["libc"], meta["cpu"], meta["python"]) == (
        "glibc-2.35",
        "AMD EPYC 7742 64-Core Processor",
        "3.10.12",
    )


def test_collect_env_two_environments_pick_the_one_that_ran_torch() -> None:
    inv = parse_inventory(COLLECT_ENV_CUDNN, path="ce.txt", label="ce")
    assert inv.meta["environments"] == "pip3, conda" and inv.meta["active_env"] == "pip3"
    assert inv.meta["selected"] == "the [pip3] environment; the [conda] rows are another environment"
    assert any("two environments" in w and "numpy 1.26.1 vs 1.21.2" in w for w in inv.warnings)
    primary = inv.primary()
    assert (primary["numpy"].version, primary["numpy"].env) == ("1.26.1", "pip3")
    assert primary["torchvision"].version == "0.16.0+cu121"


def test_collect_env_conda_environment_ran_torch() -> None:
    text = COLLECT_ENV_CUDNN.replace("PyTorch version: 2.1.0+cu121", "PyTorch version: 1.10.0")
    inv = parse_inventory(text, path="ce.txt", label="ce")
    assert inv.meta["active_env"] == "conda"
    assert inv.primary()["numpy"].version == "1.21.2"  # installer precedence, not string sort


NVIDIA_SMI = """\
Mon Nov 30 09:12:01 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
"""
PADDLE_RUN_CHECK = """\
Running verify PaddlePaddle program ...
I1130 09:12:01.000000  1234 program_interpreter.cc:212] New Executor is Running.
PaddlePaddle works well on 1 CPU.
PaddlePaddle is installed successfully! Let's start deep learning with PaddlePaddle now.
"""
TORCH_CONFIG = """\
PyTorch built with:
  - GCC 9.3
  - C++ Version: 201703
  - CPU capability usage: AVX512
  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_VERSION=12.1, CUDNN_VERSION=8.9.2,
"""


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (NVIDIA_SMI, "nvidia-smi"),
        (PADDLE_RUN_CHECK, "run_check"),
        (TORCH_CONFIG, "torch build configuration"),
    ],
)
def test_files_that_are_not_inventories_get_one_clear_line(text: str, what: str) -> None:
    with pytest.raises(InventoryError) as err:
        parse_inventory(text, path="out.txt", label="o")
    assert err.value.message.startswith("out.txt: this is ") and what in err.value.message
    assert "not a list of packages" in err.value.message and "\n" not in err.value.message
    assert "pip freeze" in (err.value.hint or "")


def test_nothing_readable_as_the_forced_format_is_one_line() -> None:
    with pytest.raises(InventoryError) as err:
        parse_inventory("some notes\nabout my setup\n", path="n.txt", label="n", format="conda-list")
    assert err.value.message.startswith(
        "n.txt: not an environment listing: none of its 2 rows reads as conda-list"
    )
    assert detect_format("hello world this is\njust some notes\n") is None  # prose is not a conda list


def test_audit_and_diff_report_the_skipped_rows(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from envkit.cli import main

    path = tmp_path / "cut.txt"
    path.write_text(_cut(shared_dir / "inventories" / "condalist-lang2sql-README.txt", 9) + "\n")
    assert main(["audit", str(path), "--db", str(shared_dir / "advisory-db"), "--json"]) in {0, 1}
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert [e["level"] for e in errors] == ["warning"] and f"{path}:" in errors[0]["message"]
    assert main(["diff", "--check", str(path)]) in {0, 1}
    assert f"warning: {path}:" in capsys.readouterr().err
