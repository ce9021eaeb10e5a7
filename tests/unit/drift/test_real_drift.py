"""Drift on real inventories: PyPI CUDA flavours, shadowing, host facts, rules and messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.drift import diff_inventories
from envkit.inventory import parse_inventory, read_inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"
GPU = DATA / "pipfreeze-gpu-host-torch211-cu130.txt"
CPU = DATA / "pipfreeze-cpu-box-torch213-cpu.txt"


def test_pypi_torch_cuda_build_from_nvidia_wheels_is_critical() -> None:
    report = diff_inventories([read_inventory(GPU, label="gpu"), read_inventory(CPU, label="cpu")])
    (flavour,) = [f for f in report.findings if f.rule == "torch-cuda-flavour-differs"]
    assert flavour.severity == "critical"
    assert dict(flavour.values) == {"gpu": "cu130", "cpu": "cpu"}
    assert "cu130 (gpu) vs cpu (cpu)" in flavour.message and "e.g." not in flavour.message
    assert report.worst == "critical"


def test_cuda12_wheels_give_the_runtime_minor() -> None:
    a = parse_inventory(
        "torch==2.6.0\nnvidia-cuda-runtime-cu12==12.4.127\nnvidia-cublas-cu12==12.4.5.8\n",
        path="a",
        label="a",
    )
    b = parse_inventory("torch==2.6.0+cu118\n", path="b", label="b")
    (flavour,) = [f for f in diff_inventories([a, b]).findings if f.rule == "torch-cuda-flavour-differs"]
    assert dict(flavour.values) == {"a": "cu124", "b": "cu118"}


@pytest.mark.parametrize(
    ("gpu_line", "expected"),
    [
        ("paddlepaddle-gpu==2.6.1.post120", "cu120"),
        ("paddlepaddle-gpu==2.5.2.post117", "cu117"),
        ("paddlepaddle-gpu==1.8.5.post107", "cu100"),
        ("paddlepaddle-gpu==3.0.0\nnvidia-cuda-runtime-cu12==12.6.77", "cu126"),
    ],
)
def test_paddle_gpu_against_cpu_is_a_critical_flavour_finding(gpu_line: str, expected: str) -> None:
    gpu = parse_inventory(f"{gpu_line}\nnumpy==1.26.4\n", path="g", label="g")
    cpu = parse_inventory("paddlepaddle==2.6.1\nnumpy==1.26.4\n", path="c", label="c")
    (flavour,) = [f for f in diff_inventories([gpu, cpu]).findings if f.rule == "paddle-cuda-flavour-differs"]
    assert flavour.severity == "critical" and dict(flavour.values) == {"g": expected, "c": "cpu"}


def test_clean_conda_collect_env_has_no_shadowing_but_a_real_shadow_does(shared_dir: Path) -> None:
    inventories = shared_dir / "inventories"
    clean = read_inventory(inventories / "collectenv-pip-conda-rows-pytorch-35646.txt")
    assert not [f for f in diff_inventories([clean]).findings if f.rule == "pip-shadows-conda"]
    real = read_inventory(inventories / "condalist-numpy-pypi-vs-numpybase-torchdynamo-2019-excerpt.txt")
    (shadow,) = [f for f in diff_inventories([real]).findings if f.rule == "pip-shadows-conda"]
    assert shadow.package == "numpy" and "numpy-base 1.23.5" in shadow.message and "1.24.1" in shadow.message


def test_collect_env_pip_over_conda_with_another_version_is_a_shadow() -> None:
    text = "[pip3] numpy==1.24.1\n[conda] numpy                     1.23.5           py39h_0\n"
    inv = parse_inventory(text, path="ce", label="ce")
    assert [f.package for f in diff_inventories([inv]).findings if f.rule == "pip-shadows-conda"] == ["numpy"]


COLLECT_ENV = """\
PyTorch version: {torch}
CUDA used to build PyTorch: {built}
OS: Ubuntu 22.04.3 LTS (x86_64)
Is CUDA available: True
CUDA runtime version: {runtime}
GPU models and configuration: GPU 0: {gpu}
Nvidia driver version: {driver}
cuDNN version: {cudnn}

Versions of relevant libraries:
[pip3] numpy==1.26.4
[pip3] torch=={torch}
"""


def _ce(tmp_path: Path, name: str, **values: str) -> Path:
    path = tmp_path / f"{name}.txt"
    path.write_text(COLLECT_ENV.format(**values))
    return path


def test_host_facts_are_compared_in_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _ce(
        tmp_path,
        "node-a",
        torch="2.1.0+cu121",
        built="12.1",
        runtime="12.1.105",
        gpu="NVIDIA A100-SXM4-80GB",
        driver="535.104.12",
        cudnn="/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.2",
    )
    b = _ce(
        tmp_path,
        "node-b",
        torch="2.1.0+cu121",
        built="12.1",
        runtime="12.4.131",
        gpu="NVIDIA H100 80GB HBM3",
        driver="550.54.15",
        cudnn="Probably one of the following:\n/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0",
    )
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "NVIDIA driver: 535.104.12 (node-a) -> 550.54.15 (node-b)" in out
    assert "GPU: NVIDIA A100-SXM4-80GB (node-a) -> NVIDIA H100 80GB HBM3 (node-b)" in out
    assert "CUDA runtime: 12.1.105 (node-a) -> 12.4.131 (node-b)" in out
    assert "cuDNN: 8.9.2 (node-a) -> 9.1.0 (node-b)" in out
    assert main(["diff", str(a), str(b), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["result"]["findings"]
    host = {f["package"]: (f["severity"], f["values"]) for f in findings if f["kind"] == "host"}
    assert set(host) == {"driver", "gpu", "cuda_runtime", "cudnn"}
    assert host["driver"] == ("warning", {"node-a": "535.104.12", "node-b": "550.54.15"})
    assert all(severity in {"warning", "critical"} for severity, _ in host.values())


def test_numpy_prerelease_counts_as_numpy2() -> None:
    inv = parse_inventory("torch==2.2.2\nnumpy==2.0.0rc1\n", path="p", label="p")
    assert [f.rule for f in diff_inventories([inv]).findings] == ["torch-numpy2"]


def test_fleet_reports_the_numpy_outlier_once() -> None:
    base = "torch==2.4.1\nnumpy==1.26.4\n"
    inventories = [parse_inventory(base, path=f"h{i}", label=f"h{i}") for i in range(3)]
    inventories.append(parse_inventory("torch==2.4.1\nnumpy==1.24.4\n", path="h3", label="h3"))
    numpy = [f for f in diff_inventories(inventories).findings if f.package == "numpy"]
    assert len(numpy) == 1
    (finding,) = numpy
    assert finding.severity == "warning" and finding.rule == "numpy-differs-under-framework"
    assert "majority 1.26.4 (3/4); outliers: h3 1.24.4" in finding.message
    assert "story" not in finding.message


def test_cuda_version_metapackage_is_not_the_runtime(shared_dir: Path) -> None:
    """cuda-version 12.6 beside a 12.4 runtime (real Windows Anaconda env): the runtime counts."""
    inv = read_inventory(shared_dir / "inventories" / "condalist-windows-anaconda-base-ComfyUI_Anaconda.txt")
    assert not [f for f in diff_inventories([inv]).findings if f.rule == "cuda-components-inconsistent"]
    other = parse_inventory(
        "cuda-version 12.6 h_0\ncuda-cudart 12.6.77 h_0\npytorch 2.4.1 py3.12_cuda12.6_cudnn9_0\n",
        path="o",
        label="o",
        format="conda-list",
    )
    (runtime,) = [f for f in diff_inventories([inv, other]).findings if f.rule == "cuda-toolkit-differs"]
    assert runtime.values["condalist-windows-anaconda-base-ComfyUI_Anaconda"] == "12.4"


def test_snapshots_carry_host_facts_that_diff_compares(tmp_path: Path) -> None:
    from envkit.inventory.snapshot import take_snapshot, write_snapshot
    from envkit.inventory.testing import FakeSource

    dists = [("torch", "2.13.0+cpu"), ("numpy", "2.2.6")]
    a = FakeSource(
        hostname="a", dists=dists, host_facts={"os": "Debian GNU/Linux 12 (bookworm)", "libc": "glibc-2.36"}
    )
    b = FakeSource(
        hostname="b",
        dists=dists,
        host_facts={
            "os": "Ubuntu 22.04.4 LTS",
            "libc": "glibc-2.35",
            "driver": "550.54.15",
            "gpu": "NVIDIA H100",
        },
    )
    for source in (a, b):
        write_snapshot(take_snapshot(source), tmp_path / f"{source.hostname}.json")
    report = diff_inventories([read_inventory(tmp_path / "a.json"), read_inventory(tmp_path / "b.json")])
    host = {f.package: f for f in report.findings if f.kind == "host"}
    # a driver or GPU on one side only is reported (issue 26, class 9): the CPU box has none
    assert set(host) == {"os", "libc", "driver", "gpu"}
    assert host["gpu"].message == "GPU: NVIDIA H100 ×1 (b) vs no GPU (a)"
    assert host["driver"].message == "NVIDIA driver: 550.54.15 (b) vs none (a)"
    assert host["gpu"].severity == host["driver"].severity == "warning"
    assert host["os"].message == "OS: Debian GNU/Linux 12 (bookworm) (a) -> Ubuntu 22.04.4 LTS (b)"
    assert host["os"].severity == "info"
