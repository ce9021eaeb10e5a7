"""Issue 34, reading classes 9-19: each from real corpus files of that class plus hostile variants.

Class 11 (the name mapping) is tests/unit/inventory/test_name_mapping_rows.py, class 20 (the advisory
data's age) tests/unit/audit/test_data_age.py; the whole corpus is graded by
tests/unit/test_corpus_inventory.py. Corpus files are in tests/corpus/inventory/<kind>/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.cli import main
from envkit.drift import diff_inventories
from envkit.drift.cuda_wheels import placeholder
from envkit.drift.facts import FACTS
from envkit.drift.host import host_facts
from envkit.drift.rules import cuda_library_majors
from envkit.drift.torch_flavour import inventory_os
from envkit.errors import InventoryError
from envkit.inventory import parse_inventory, read_inventory
from envkit.inventory.models import Inventory

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "inventory"


def _real(rel: str, **options: str) -> Inventory:
    return read_inventory(CORPUS / rel, **options)


def _text(text: str, **options: str) -> Inventory:
    return parse_inventory(text, path="hostile.txt", label="hostile", **options)


def _torch_cuda(inv: Inventory) -> str | None:
    return FACTS["torch_cuda"](inv, inv.primary())


def _rules(*inventories: Inventory) -> set[str]:
    return {f.rule or f.kind for f in diff_inventories(list(inventories)).findings}


_COLLECT = """\
PyTorch version: {torch}
Is debug build: False
CUDA used to build PyTorch: {cuda}
ROCM used to build PyTorch: N/A

OS: {os}
Python version: 3.10.12 (main) [GCC 11.4.0] (64-bit runtime)
Is CUDA available: {available}
CUDA runtime version: {runtime}
GPU models and configuration: {gpu}
Nvidia driver version: {driver}
cuDNN version: {cudnn}

Versions of relevant libraries:
{rows}
"""


def _collect(**given: str) -> str:
    fields = {
        "torch": "2.1.0",
        "cuda": "None",
        "os": "Ubuntu 22.04.3 LTS (x86_64)",
        "available": "False",
        "runtime": "No CUDA",
        "gpu": "No CUDA",
        "driver": "No CUDA",
        "cudnn": "No CUDA",
        "rows": "[pip3] numpy==1.26.0\n[pip3] torch==2.1.0",
    }
    return _COLLECT.format(**(fields | given))


# -- 9: CPU torch without +cpu on a CPU-only platform ------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        "collect-env/macos-arm64-source-backticks-pytorch-49924-excerpt.txt",
        "collect-env/linux-cpu-wheel-pytorch-150168-excerpt.txt",
        "collect-env/windows-cpu-nightly-pytorch-137846-excerpt.txt",
        "conda-explicit/osx64-pytorch-cpu-py37_0-Better_LSTM-spec-file.txt",
    ],
)
def test_9_real_cpu_builds_read_as_cpu(rel: str) -> None:
    assert _torch_cuda(_real(rel)) == "cpu"


def test_9_a_cu117_linux_vs_a_macos_cpu_diff_is_critical() -> None:
    linux = _real("collect-env/nightly-companions-docstring-3x3090-excerpt.txt")
    mac = _real("collect-env/macos-arm64-source-backticks-pytorch-49924-excerpt.txt")
    assert inventory_os(mac, mac.primary()) == "macos"
    report = diff_inventories([linux, mac])
    assert any(f.severity == "critical" and f.package == "torch" for f in report.findings)


def test_9_hostile_cuda_none_and_os_lines() -> None:
    inv = _text(_collect(os="macOS 14.1 (arm64)"))
    assert _torch_cuda(inv) == "cpu"
    assert inventory_os(inv, inv.primary()) == "macos"
    conda = "# Name Version Build Channel\npytorch 2.0.1 py3.10_0 pytorch\nllvm-openmp 16.0.6 h1c12783_0\n"
    mac = _text(conda + "libcxx 16.0.6 h4653b0c_0\n", platform="osx-arm64")
    assert _torch_cuda(mac) in ("cpu", None)  # never a CUDA flavour on macOS


# -- 10: "Could not collect" is unknown, not absent --------------------------------------------------


def test_10_real_jetson_gpu_and_driver_are_unknown_not_none() -> None:
    jetson = _real("collect-env/jetson-agx-orin-vllm-5640-excerpt.txt")
    assert {"gpu", "driver"} <= set(jetson.meta["not_collected"].split(","))
    assert "gpu" not in host_facts(jetson)
    h100 = _real("collect-env/centos-h100x8-two-cudnn-ogx-1798-excerpt.txt")
    for finding in diff_inventories([h100, jetson]).findings:
        if finding.package in ("gpu", "driver"):
            assert "none" not in finding.message.lower().split(), finding.message
            assert "no gpu" not in finding.message.lower(), finding.message


def test_10_hostile_could_not_collect_everywhere() -> None:
    given = {"available": "True", "gpu": "Could not collect", "driver": "Could not collect"}
    inv = _text(_collect(cuda="12.1", runtime="Could not collect", cudnn="Could not collect", **given))
    assert set(inv.meta["not_collected"].split(",")) >= {"gpu", "driver", "cudnn"}
    assert host_facts(inv).get("gpu") is None


# -- 12: cuDNN from Windows dll paths and from a conda build string ---------------------------------


def test_12_real_windows_dll_paths_give_the_major() -> None:
    for rel in (
        "collect-env/windows-cu117-cudnn-dll-pytorch-51858-excerpt.txt",
        "collect-env/windows-source-cudnn-dll-pytorch-48535-excerpt.txt",
    ):
        cudnn = host_facts(_real(rel)).get("cudnn", "")
        assert cudnn[:1].isdigit() and "\\" not in cudnn and ".dll" not in cudnn, (rel, cudnn)


def test_12_hostile_split_dlls_and_a_build_string_under_a_pip_row() -> None:
    dlls = (
        "Probably one of the following:\nC:\\CUDA\\v11.7\\bin\\cudnn_ops_train64_8.dll\n"
        "C:\\CUDA\\v11.7\\bin\\cudnn_cnn_infer64_8.dll"
    )
    inv = _text(_collect(cudnn=dlls, cuda="11.7", os="Microsoft Windows 10 Pro"))
    assert host_facts(inv)["cudnn"].startswith("8")
    rows = "[pip3] torch==1.13.0\n[conda] pytorch 1.13.0 py3.9_cuda11.7_cudnn8.5.0_0 pytorch"
    built = _text(_collect(torch="1.13.0", cuda="11.7", rows=rows))
    assert FACTS["cudnn_major"](built, built.primary()) == "8"


# -- 13: double installs inside one collect_env -------------------------------------------------------


def test_13_real_double_install_is_reported() -> None:
    inv = _real("conda-list/windows-pytorch-cuda101-numpy-pypi-over-base-RES-conda_list.txt")
    assert "pip-shadows-conda" in _rules(inv)  # numpy from pypi over conda's numpy
    flight = _real("collect-env/cu130-wheels-vs-conda-env-cu124-flight-recorder-excerpt.txt")
    assert any("two environments" in w for w in flight.warnings)  # [pip3] and [conda] disagree throughout


def test_13_hostile_conda_pytorch_beside_a_pypi_torch() -> None:
    rows = "[conda] pytorch 1.11.0 py3.9_cuda11.3_cudnn8.2.0_0 pytorch\n[conda] torch 1.11.0 pypi_0 pypi"
    inv = _text(_collect(torch="1.11.0", cuda="11.3", rows=rows))
    assert "pip-shadows-conda" in _rules(inv)  # one conda list with both rows: two installs
    view = "[pip3] torch==1.11.0\n[conda] pytorch 1.11.0 py3.9_cuda11.3_cudnn8.2.0_0 pytorch"
    assert "pip-shadows-conda" not in _rules(_text(_collect(torch="1.11.0", cuda="11.3", rows=view)))
    numpy = "[pip3] numpy==1.21.0\n[conda] numpy 1.22.0 py39h0_0 defaults"
    assert "pip-shadows-conda" in _rules(_text(_collect(rows=numpy)))


# -- 14: pip list tables are pip ----------------------------------------------------------------------

_TABLE = "Package    Version\n---------- -------\nnumpy      1.26.4\ntorch      2.2.0\n"


@pytest.mark.parametrize(
    "above",
    ["", "Python 3.8.10\n", "PS C:\\Users\\me> pip list\n", "这是gpu版本的\n`", "$ pip list\n"],
)
def test_14_hostile_pip_list_with_anything_above(above: str) -> None:
    inv = _text(above + _TABLE)
    assert inv.format == "pip-list"
    assert {p.name: p.installer for p in inv.packages} == {"numpy": "pip", "torch": "pip"}


def test_14_real_tables_with_build_and_editable_columns_and_no_header() -> None:
    for rel in (
        "pip-list/pip-build-editable-columns-TinyZeroWithSFT-pip_list.txt",
        "pip-list/build-column-torch-build3-Clinical-BERT-pip_list.txt",
        "pip-list/headerless-windows-nonpep440-cu111-Mindspore-SSH-pip_list.txt",
        "pip-list/powershell-prompt-windows-torch231-CVDL-NCKU-pip_list.txt",
    ):
        inv = _real(rel)
        assert inv.format == "pip-list", rel
        assert all(p.installer == "pip" for p in inv.packages), rel


# -- 15: stub wheels are no fact -------------------------------------------------------------------


def test_15_hostile_placeholders_give_no_cuda_and_no_cudnn() -> None:
    assert placeholder("0.0.0a0") and placeholder("0.0") and placeholder("0.0.0.dev0+stub")
    assert not placeholder("0.1.0") and not placeholder("12.4.127") and not placeholder("10.0")
    stub = _text(
        "torch==2.6.0a0+ecf3bae40a.nv25.01\nnvidia-cuda-runtime-cu13==0.0.0a0\nnvidia-cudnn-cu13==0.0.0a0\n"
    )
    table = stub.primary()
    assert _torch_cuda(stub) != "cu00"
    assert FACTS["cuda_toolkit"](stub, table) is None
    assert FACTS["cudnn_major"](stub, table) is None
    assert not cuda_library_majors(stub, table)


def test_15_real_placeholder_rows_do_not_make_a_cuda() -> None:
    inv = _real("pip-list/ubuntu-cu11-and-cu12-wheels-placeholders-VIP5-pip_list.txt")
    assert _torch_cuda(inv) != "cu00"
    assert FACTS["cuda_toolkit"](inv, inv.primary()) != "0.0"


# -- 16: messages name what the file is and what to read instead -----------------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "not-inventory").glob("*.txt")))
def test_16_real_detectron2_tables_are_named(name: str) -> None:
    with pytest.raises(InventoryError) as caught:
        read_inventory(CORPUS / "not-inventory" / name)
    assert "detectron2" in caught.value.message
    assert "torch.utils.collect_env" in (caught.value.hint or "")  # what to run instead
    assert "pass --format" not in (caught.value.hint or "")


def test_16_hostile_paddle_summary_env_is_named() -> None:
    text = (
        "****************************************\nPaddle version: 2.4.0\nPaddle With CUDA: True\n\n"
        "OS: ubuntu 20.04\nPython version: 3.8.10\n\nCUDA version: 11.2.152\ncuDNN version: 8.2.1\n"
        "Nvidia driver version: 470.82.01\n****************************************\n"
    )
    with pytest.raises(InventoryError) as caught:
        _text(text)
    assert "summary_env" in caught.value.message
    assert "pass --format" not in (caught.value.hint or "")


# -- 17: rules -------------------------------------------------------------------------------------


def test_17_one_to_one_is_no_majority() -> None:
    a = _text("numpy==1.26.4\n")
    b = parse_inventory("numpy==2.0.0\n", path="b.txt", label="b")
    messages = [f.message for f in diff_inventories([a, b]).findings if f.package == "numpy"]
    assert messages and all("majority" not in m or "no majority" in m for m in messages)


def test_17_cuda_version_is_no_cuda_library() -> None:
    inv = _real("conda-list/cuda-version-126-runtime-121-axolotl-conda_list-excerpt.txt")
    assert "cuda-majors-mixed" not in _rules(inv)
    lock = _real("pixi-lock/cuda-version-only-pixi-cuda_virtual_dependency.lock")
    assert not cuda_library_majors(lock, lock.primary())


def test_17_the_nightly_channels_real_pairs() -> None:
    """What the nightly channel really pairs (three real collect_env outputs): companions a day apart
    are normal; the release rule is silent on them; the 3x3090 file's +cpu torchvision beside a +cu117
    torch is a real flavour mismatch, and is reported."""
    real = _real("collect-env/nightly-companions-docstring-3x3090-excerpt.txt")  # 1.14.0.dev20221202
    assert "torch-companion-release" not in _rules(real)
    assert "torch-companion-flavour" in _rules(real)
    for rel in (
        "collect-env/macos-x86-conda-nightly-pytorch-48145-excerpt.txt",  # 1.8.0.dev20201117
        "collect-env/windows-cpu-nightly-pytorch-137846-excerpt.txt",  # 2.8.0.dev20250528+cpu
    ):
        assert "torch-companion-release" not in _rules(_real(rel)), rel


def test_17_hostile_nightly_pairs() -> None:
    same = _text("torch==2.6.0.dev20241201+cu124\ntorchvision==0.21.0.dev20241202+cu124\n")
    assert "torch-companion-release" not in _rules(same)
    wrong = _text("torch==1.14.0.dev20221202+cu117\ntorchvision==0.14.0.dev20221203+cu117\n")
    assert "torch-companion-release" in _rules(wrong)


# -- 18: locks with a range of Pythons -------------------------------------------------------------


def test_18_real_pylock_per_python_and_says_which() -> None:
    rel = "pylock/python-range-markers-pyhon-uv-project-template-pylock-excerpt.toml"
    old, new = _real(rel, python="3.10", platform="linux-64"), _real(rel, python="3.12", platform="linux-64")
    assert len(old.packages) == 6 and len(new.packages) == 5
    assert old.meta["python_used"] == "3.10" and new.meta["python_used"] == "3.12"
    assert old.meta["requires_python"].replace(" ", "") == ">=3.9,<3.13"
    outside = _real(rel, python="3.13", platform="linux-64")
    assert any("3.13" in w for w in outside.warnings)


def test_18_diff_and_audit_take_python_and_say_which(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = str(CORPUS / "pylock/python-range-markers-pyhon-uv-project-template-pylock-excerpt.toml")
    for python, count in (("3.10", 6), ("3.12", 5)):
        main(["diff", lock, lock, "--python", python, "--platform", "linux-64"])
        out = capsys.readouterr().out
        assert f"Python {python} (chosen with --python" in out and f"{count} packages" in out
    db = str(shared_dir / "advisory-db")
    main(["audit", lock, "--python", "3.10", "--platform", "linux-64", "--db", db])
    out = capsys.readouterr().out
    assert "Python 3.10 (chosen with --python" in out and "6 package(s) checked" in out
    assert main(["diff", lock, lock, "--python", "3;x"]) == 2


def test_18_hostile_python_option_is_validated() -> None:
    with pytest.raises(InventoryError):
        _real("uv-lock/workspace-dynamic-version-test-uv-versions-uv.lock", python="3.10; rm -rf /")


# -- 19: old poetry locks walk the edges; 5,000-digit versions -------------------------------------

_OLD_POETRY = """\
[[package]]
name = "app-tool"
version = "1.0"
description = ""
category = "main"
optional = false
python-versions = "*"

[package.dependencies]
pywin32 = {version = ">=300", markers = "sys_platform == \\"win32\\""}
click = "*"

[[package]]
name = "pywin32"
version = "306"
description = ""
category = "main"
optional = false
python-versions = "*"

[[package]]
name = "click"
version = "8.1.7"
description = ""
category = "main"
optional = false
python-versions = ">=3.7"

[metadata]
lock-version = "1.1"
python-versions = "^3.8"
content-hash = "0"

[metadata.files]
app-tool = []
pywin32 = []
click = []
"""


def test_19_real_old_poetry_lock_drops_windows_only_packages_on_linux() -> None:
    lock = _real("poetry-lock/old-format-package-markers-poetry-old-lock.test", platform="linux-64")
    names = {p.name for p in lock.packages}
    assert "colorama" not in names and "funcsigs" not in names


def test_19_hostile_edge_marker_lock() -> None:
    linux = _text(_OLD_POETRY, platform="linux-64", format="poetry-lock")
    windows = _text(_OLD_POETRY, platform="win-64", format="poetry-lock")
    assert "pywin32" not in {p.name for p in linux.packages}
    assert "pywin32" in {p.name for p in windows.packages}
    assert not any("poetry install fails" in w for w in linux.warnings)


@pytest.mark.parametrize(
    "line",
    [
        "numpy==" + "9" * 5000 + "!1.0",
        "numpy==1." + "7" * 5000,
        "numpy==1.0.post" + "1" * 5000,
        "torch==2.1.0+cu" + "1" * 5000,
    ],
)
def test_19_hostile_5000_digit_versions_do_not_crash_diff_or_audit(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("numpy==1.26.4\ntorch==2.1.0\n", "utf-8")
    b.write_text(f"{line}\ntorch==2.1.0\n", "utf-8")
    assert main(["diff", str(a), str(b)]) in (0, 1, 2)
    db = tmp_path / "db" / "vulns" / "numpy"
    db.mkdir(parents=True)
    (db / "PYSEC-1.yaml").write_text(
        'id: PYSEC-1\nmodified: "2026-01-01T00:00:00Z"\ndetails: d\naffected:\n- package: {name: numpy, '
        'ecosystem: PyPI}\n  ranges: [{type: ECOSYSTEM, events: [{introduced: "0"}, {fixed: "1.22"}]}]\n',
        "utf-8",
    )
    assert main(["audit", str(b), "--db", str(tmp_path / "db")]) in (0, 1, 2)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
