"""Evidence of a GPU that the spec would not honour: a GPU-build package on a cpu spec is said, a
conda pytorch build beside CUDA plumbing that says another CUDA is refused with both. From real
corpus files (openutau, wd14-tagger) and hostile variants."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.adopt import AdoptOptions, plan_adoption, read_evidence
from envkit.adopt.adoption import Adoption
from envkit.adopt.evidence import AdoptError
from envkit.catalog import load_catalog

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "init" / "requirements"


def adopt_file(path: Path, cuda: str | None = None) -> Adoption:
    found, _ = read_evidence(str(path))
    return plan_adoption(found, load_catalog(), AdoptOptions(cuda=cuda))


def adopt_text(tmp_path: Path, text: str, name: str, cuda: str | None = None) -> Adoption:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return adopt_file(path, cuda)


# --- a GPU build on a cpu spec ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "packages"),
    [
        ("wd14-tagger-requirements-gpu.txt", ["onnxruntime-gpu==1.20.2"]),
        ("openutau-remote-requirements-cuda.txt", ["onnxruntime-gpu", "tensorrt"]),
    ],
)
def test_a_gpu_build_on_a_cpu_spec_is_said_with_the_flag_that_builds_on_cuda(
    name: str, packages: list[str]
) -> None:
    adoption = adopt_file(CORPUS / name)
    assert adoption.detected["cuda"] == "cpu"  # no framework names a CUDA: the spec stays cpu ...
    said = [w for w in adoption.warnings if "is a GPU build, carried on a cpu spec" in w]
    assert [w.split(" (", 1)[0] for w in said] == packages  # ... and each GPU build is named, with where
    assert all("--cuda" in w and f"{name}:" in w for w in said)
    assert any(p.startswith("onnxruntime-gpu") for p in adoption.pins["pip"])  # carried as written


def test_with_cuda_chosen_the_same_source_builds_on_cuda_and_says_nothing(tmp_path: Path) -> None:
    adoption = adopt_file(CORPUS / "wd14-tagger-requirements-gpu.txt", cuda="12.4")
    assert adoption.detected["cuda"] == "12.4"
    assert not [w for w in adoption.warnings if "GPU build" in w]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("cupy-cuda12x==13.3.0\n", True),
        ("cudf-cu12==24.12.*\n", True),
        ("nvidia-cudnn-cu12==9.1.0.70\n", True),
        ('jax[cuda12]==0.4.35; sys_platform == "linux"\n', True),
        ("tensorflow[and-cuda]==2.17.0\n", True),
        ("faiss-gpu-cu12==1.9.0\n", True),
        ("onnxruntime==1.20.1\n", False),  # the CPU build
        ("nvidia-ml-py==12.560.30\n", False),  # NVML bindings: no CUDA code
        ("cupy==13.3.0\n", False),  # the source build: not a GPU build by name
    ],
)
def test_which_packages_are_gpu_builds_by_name(tmp_path: Path, text: str, named: bool) -> None:
    adoption = adopt_text(tmp_path, "numpy==1.26.4\n" + text, "requirements.txt")
    assert any("is a GPU build" in w for w in adoption.warnings) is named


def test_a_gpu_build_beside_a_cuda_framework_is_not_flagged(tmp_path: Path) -> None:
    adoption = adopt_text(tmp_path, "torch==2.5.1\nonnxruntime-gpu==1.19.2\n", "requirements.txt")
    assert adoption.detected["cuda"] == "12.4"
    assert not [w for w in adoption.warnings if "GPU build" in w]


# --- two builds of conda's pytorch ------------------------------------------------------------

ENV = "name: x\nchannels:\n  - pytorch\n  - nvidia\ndependencies:\n  - python=3.10\n"


@pytest.mark.parametrize(
    ("pins", "says"),
    [
        ("  - pytorch=*=*cpu*\n  - pytorch-cuda=12.1\n", ["cpu (pytorch=*=*cpu*", "CUDA 12.1 (pytorch-cuda"]),
        ("  - pytorch=2.1.2=*cpu*\n  - pytorch-cuda=12.1\n", ["cpu (pytorch=2.1.2=*cpu*", "CUDA 12.1"]),
        ("  - pytorch=2.1.2=py3.10_cuda11.8_cudnn8.7.0_0\n  - cpuonly\n", ["CUDA 11.8", "cpu (cpuonly"]),
        ("  - pytorch=2.1.2=py3.10_cuda11.8_cudnn8.7.0_0\n  - pytorch-cuda=12.1\n", ["CUDA 11.8", "12.1"]),
        ("  - pytorch=*=*cpu*\n  - cudatoolkit=11.3\n", ["cpu (pytorch", "CUDA 11.3 (cudatoolkit=11.3"]),
    ],
)  # fmt: skip
def test_two_builds_of_pytorch_are_refused_with_both(tmp_path: Path, pins: str, says: list[str]) -> None:
    with pytest.raises(AdoptError) as e:
        adopt_text(tmp_path, ENV + pins, "environment.yml")
    assert "two builds of pytorch" in e.value.message and "nothing was written" in e.value.message
    for fragment in says:
        assert fragment in e.value.message
    assert "--cuda" in (e.value.hint or "")


@pytest.mark.parametrize(
    ("pins", "cuda"),
    [
        ("  - pytorch=*=*cpu*\n  - cpuonly\n", "cpu"),  # both say cpu
        ("  - pytorch=2.1.2=py3.10_cuda12.1_cudnn8.9.2_0\n  - pytorch-cuda=12.1\n", "12.1"),  # both 12.1
        ("  - pytorch=*=*cpu*\n", "cpu"),
    ],
)
def test_agreeing_builds_are_adopted(tmp_path: Path, pins: str, cuda: str) -> None:
    assert adopt_text(tmp_path, ENV + pins, "environment.yml").detected["cuda"] == cuda


def test_cuda_chosen_settles_the_conflict(tmp_path: Path) -> None:
    text = ENV + "  - pytorch=*=*cpu*\n  - pytorch-cuda=12.1\n"
    assert adopt_text(tmp_path, text, "environment.yml", cuda="12.1").detected["cuda"] == "12.1"
