"""What `envkit init --from` reads a CUDA, a framework and a Python from (the issue's own examples)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envkit.adopt import AdoptOptions, plan_adoption
from envkit.adopt.adoption import Adoption
from envkit.adopt.detect import image_facts
from envkit.adopt.evidence import AdoptError
from envkit.adopt.releases import read_releases
from envkit.adopt.sources.read import read_source
from envkit.catalog import load_catalog

PADDLE_CU126 = "https://www.paddlepaddle.org.cn/packages/stable/cu126/"


def adopt(
    tmp_path: Path, name: str, text: str, cuda: str | None = None, python: str | None = None
) -> Adoption:
    path = tmp_path / name
    path.write_text(text)
    found, _ = read_source(str(path))
    return plan_adoption(found, load_catalog(), AdoptOptions(cuda=cuda, python=python))


@pytest.mark.parametrize(
    ("name", "text", "detected"),
    [
        ("requirements.txt", "torch==2.1.2+cu121\nnumpy==1.26.4\n", {"torch": "2.1.2", "cuda": "12.1"}),
        ("requirements.txt", "torch==2.1.2+cpu\n", {"torch": "2.1.2", "cuda": "cpu"}),
        ("requirements.txt", "--index-url https://download.pytorch.org/whl/cu118\ntorch==2.1.2\n",
         {"torch": "2.1.2", "cuda": "11.8"}),
        ("requirements.txt", "torch==2.1.2\n", {"torch": "2.1.2", "cuda": "12.1"}),  # PyPI's Linux wheel
        ("requirements.txt", "paddlepaddle-gpu==2.6.0.post118\n", {"paddle": "2.6.0", "cuda": "11.8"}),
        ("requirements.txt", "paddlepaddle-gpu==2.6.0\n", {"paddle": "2.6.0", "cuda": "11.8"}),
        ("requirements.txt", f"paddlepaddle-gpu==3.0.0 -i {PADDLE_CU126}\n",
         {"paddle": "3.0.0", "cuda": "12.6"}),
        ("requirements.txt", "paddlepaddle==2.6.2\n", {"paddle": "2.6.2", "cuda": "cpu"}),
        ("environment.yml", "channels: [pytorch, nvidia]\ndependencies:\n  - python=3.11\n  - pytorch=2.1.2\n"
         "  - pytorch-cuda=12.1\n", {"torch": "2.1.2", "cuda": "12.1", "python": "3.11"}),
        ("environment.yml", "dependencies:\n  - pytorch=2.1.2=py3.10_cuda11.8_cudnn8.7.0_0\n",
         {"torch": "2.1.2", "cuda": "11.8", "python": "3.10"}),
        ("environment.yml", "dependencies:\n  - python=3.9.*\n  - numpy\n", {"python": "3.9", "cuda": "cpu"}),
        ("environment.yml", "dependencies:\n  - python >=3.9,<3.11\n", {"python": "3.10"}),
        ("environment.yml", "dependencies:\n  - pytorch::pytorch=2.1.2\n  - cpuonly\n",
         {"torch": "2.1.2", "cuda": "cpu"}),
        ("Dockerfile", "FROM paddlepaddle/paddle:2.6.2-gpu-cuda11.7-cudnn8.4-trt8.4\n",
         {"paddle": "2.6.2", "cuda": "11.7"}),
        ("Dockerfile", "FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04\nRUN pip install torch==2.1.2\n",
         {"torch": "2.1.2", "cuda": "12.1"}),
    ],
)  # fmt: skip
def test_detected(tmp_path: Path, name: str, text: str, detected: dict[str, str]) -> None:
    adoption = adopt(tmp_path, name, text)
    assert {k: adoption.detected[k] for k in detected} == detected


def test_post_build_is_installed_as_the_catalogs_wheel(tmp_path: Path) -> None:
    a = adopt(tmp_path, "requirements.txt", "paddlepaddle-gpu==2.6.0.post118\nscipy>=1.10,<1.14\n")
    assert a.spec.frameworks.paddle == "2.6.0" and a.spec.cuda == "11.8"
    assert a.pins["pip"] == ("scipy>=1.10,<1.14",)
    assert any("paddlepaddle-gpu==2.6.0.post118" in n and "paddlepaddle-gpu==2.6.0" in n for n in a.notes)


def test_a_base_image_of_another_cuda_is_reported(tmp_path: Path) -> None:
    text = "FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04\nRUN pip install torch==2.1.2\n"
    a = adopt(tmp_path, "Dockerfile", text)
    assert a.spec.base_image is None  # PyPI torch 2.1.2 is CUDA 12.1: the 11.8 image is not kept
    assert any("a CUDA 11.8 image under a CUDA 12.1 spec" in x.why for x in a.lost)
    assert any("differs from CUDA 12.1" in x.why for x in a.lost)


def test_torch_and_paddle_on_different_cudas(tmp_path: Path) -> None:
    text = "torch==2.4.0+cu121\npaddlepaddle-gpu==2.6.0.post118\n"
    with pytest.raises(Exception, match=r"paddle 2\.6\.0 on CUDA 12\.1"):
        adopt(tmp_path, "requirements.txt", text)


def test_python_from_a_wheel_tag_and_from_an_override(tmp_path: Path) -> None:
    a = adopt(
        tmp_path, "requirements.txt", "x @ https://h.example/x-1.0-cp310-cp310-linux_x86_64.whl\nsix==1\n"
    )
    assert a.detected["python"] == "3.10" and "cp310" in a.how["python"]
    b = adopt(tmp_path, "environment.yml", "dependencies:\n  - python=3.10\n  - six\n", python="3.12")
    assert b.detected["python"] == "3.12" and b.how["python"] == "--python 3.12"
    assert "python=3.10" not in b.pins["conda"]
    assert any("replaced by --python 3.12" in x.why for x in b.lost)


def test_unpinned_framework_takes_the_newest_release_in_range(tmp_path: Path) -> None:
    a = adopt(tmp_path, "requirements.txt", "torch>=2.4,<2.6\n", cuda="cpu")
    assert a.detected["torch"] == "2.5.1" and "newest release" in a.how["torch"]


def test_dockerfile_reads_requirements_from_its_build_context(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("six==1.16.0\nscipy>=1.10\n")
    text = (
        "FROM python:3.11-slim\nCOPY requirements.txt .\nRUN pip install -r requirements.txt -r /etc/passwd\n"
    )
    a = adopt(tmp_path, "Dockerfile", text)
    assert a.pins["pip"] == ("six==1.16.0", "scipy>=1.10")
    assert any(x.item == "-r /etc/passwd" and "absolute path" in x.why for x in a.lost)


@pytest.mark.parametrize(
    ("image", "cuda"),
    [
        ("nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04", "12.2"),
        ("nvcr.io/nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", "11.8"),
        ("nvidia/cuda:10.0-cudnn7-devel", "10.0"),
        # a mirror's `cuda` repository (tests/corpus/init/dockerfile/dockercuda-private-cuda122-unpinned
        # .Dockerfile): 22.04 is Ubuntu's release, and CUDA never writes a zero-padded minor
        ("registry.cn-shanghai.aliyuncs.com/cxp_rep1/cuda:22.04_12.2", "12.2"),
        ("registry.example/team/cuda:ubuntu20.04-11.3", "11.3"),
        ("nvidia/cuda:latest", None),
    ],
)
def test_the_cuda_of_a_cuda_images_tag_is_never_the_ubuntu_release(image: str, cuda: str | None) -> None:
    assert image_facts(image, read_releases(load_catalog(), image)).cuda == cuda


CORPUS_ENV = Path(__file__).resolve().parents[2] / "corpus" / "init" / "environment-yml"


@pytest.mark.parametrize(
    ("feature", "cuda"), [("cuda80", "8.0"), ("cuda92", "9.2"), ("cuda100", "10.0"), ("cuda75", "7.5")]
)
def test_a_legacy_cuda_feature_package_is_the_stacks_cuda(tmp_path: Path, feature: str, cuda: str) -> None:
    """The soumith/pytorch channels' `cudaNN` packages (tests/corpus/init/environment-yml/
    gpytorch-environment_cuda.yml) name the CUDA: no torch spec on cpu is written (was torch 2.8.0, cpu)."""
    text = f"name: g\nchannels:\n  - soumith\ndependencies:\n  - pytorch>=0.2.0\n  - {feature}\n"
    with pytest.raises(AdoptError, match=f"wheels for CUDA {re.escape(cuda)}"):
        adopt(tmp_path, "environment.yml", text)
    pinned = f"name: g\nchannels:\n  - pytorch\ndependencies:\n  - pytorch=0.4.1\n  - {feature}\n"
    (tmp_path / "p").mkdir()
    with pytest.raises(AdoptError):  # a release older than the catalog's: never a cpu spec
        adopt(tmp_path / "p", "environment.yml", pinned)


def test_an_unread_file_beside_a_package_built_on_the_framework_is_refused(tmp_path: Path) -> None:
    """tests/corpus/init/environment-yml/pathml-environment_cuda.yml: the pytorch channel, torch-geometric
    pinned, torch in an unread `-r requirements_cuda.txt`: was "no framework, cpu" with exit 0."""
    found, _ = read_source(str(CORPUS_ENV / "pathml-environment_cuda.yml"))
    with pytest.raises(AdoptError, match=r"torch-geometric==2\.3\.1 is built on it"):
        plan_adoption(found, load_catalog())
    body = "dependencies:\n  - python=3.10\n  - pip:\n    - -r more.txt\n    - torchvision\n"
    text = "channels:\n  - pytorch\n" + body
    with pytest.raises(AdoptError, match=r"more\.txt"):
        adopt(tmp_path, "environment.yml", text)
    # without the framework's channel a package named like it is not enough: adopted without one
    plain = "channels:\n  - conda-forge\n" + body
    (tmp_path / "x").mkdir()
    assert "torch" not in adopt(tmp_path / "x", "environment.yml", plain).detected


@pytest.mark.parametrize("spec", ["pytorch=*=*cuda*", "pytorch * *cuda*", "pytorch==*=*cuda*"])
def test_any_version_of_a_conda_build_is_any_release(tmp_path: Path, spec: str) -> None:
    """`pytorch=*=*cuda*` (tests/corpus/init/environment-yml/cellstream-environment_cuda.yml) is any
    release of a CUDA build: it was refused as an unreadable constraint '=*=*cuda*'."""
    text = f'channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - python=3.10\n  - "{spec}"\n'
    a = adopt(tmp_path, "environment.yml", text + "  - pytorch-cuda=11.8\n")
    assert (a.detected["torch"], a.detected["cuda"], a.detected["python"]) == ("2.5.1", "11.8", "3.10")
    found, _ = read_source(str(CORPUS_ENV / "cellstream-environment_cuda.yml"))
    assert plan_adoption(found, load_catalog()).detected["torch"] == "2.5.1"


CORPUS_REQ = CORPUS_ENV.parent / "requirements"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("requirements-cuda.txt", (CORPUS_REQ / "lstm-pm25-requirements-cuda.txt").read_text("utf-8")),
        ("requirements-cuda.txt", (CORPUS_REQ / "video-generation-requirements-cuda.txt").read_text("utf-8")),
        ("requirements.txt", "--index-url https://download.pytorch.org/whl/cu126\n"),
        ("requirements.txt", "\n\n# torch==2.5.1\n"),
        ("environment.yml", "name: empty\nchannels:\n  - conda-forge\ndependencies: []\n"),
    ],
)
def test_a_source_that_installs_nothing_is_refused(tmp_path: Path, name: str, text: str) -> None:
    """Two real requirements-cuda.txt of comments only were adopted as an empty cpu spec, exit 0."""
    with pytest.raises(AdoptError, match="installs nothing"):
        adopt(tmp_path, name, text)


def test_a_source_that_states_only_python_is_still_adopted(tmp_path: Path) -> None:
    a = adopt(tmp_path, "environment.yml", "name: p\ndependencies:\n  - python=3.12\n")
    assert (a.detected["python"], a.detected["cuda"]) == ("3.12", "cpu")


@pytest.mark.parametrize(
    "text",
    [
        (CORPUS_REQ / "ai-chamber-vllm-requirements-cuda.txt").read_text("utf-8"),
        "xformers==0.0.28.post3\nnumpy\n",
        "fastapi\nsglang[all]==0.4.1\n",
    ],
)
def test_a_package_that_pins_its_own_torch_is_not_adopted_as_cpu(tmp_path: Path, text: str) -> None:
    """AMRPH/ai-chamber's requirements-cuda.txt (vllm==0.29.0 alone) was "no framework, cpu", exit 0."""
    with pytest.raises(AdoptError, match="requires one exact torch release"):
        adopt(tmp_path, "requirements.txt", text)


def test_a_package_that_pins_torch_beside_a_torch_pin_is_adopted(tmp_path: Path) -> None:
    a = adopt(tmp_path, "requirements.txt", "torch==2.5.1\nxformers==0.0.28.post3\n")
    assert a.detected["torch"] == "2.5.1"


CORPUS_DOCKER = CORPUS_ENV.parent / "dockerfile"
_BUILD = (
    "FROM nvidia/cuda:12.8.0-cudnn-devel-ubuntu22.04 AS build\n"
    "RUN apt-get update && apt-get install -y python3 python3-pip python3-venv\n"
    "RUN python3 -m venv {venv}\nENV PATH={venv}/bin:$PATH\n"
    "RUN pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu128\n"
    "FROM nvidia/cuda:12.8.0-cudnn-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y python3\n"
)


@pytest.mark.parametrize(
    ("venv", "copy"),
    [
        ("/opt/venv", "COPY --from=build /opt/venv /opt/venv"),
        ("/opt/venv", "COPY --chown=1000:1000 --from=build /opt/venv/ /opt/venv"),
        ("/srv/py", "COPY --from=build /srv/py /srv/py"),  # on the build stage's PATH
    ],
)
def test_a_venv_copied_from_a_build_stage_is_the_final_images(tmp_path: Path, venv: str, copy: str) -> None:
    """BenediktBeigang/Master-Thesis-spt's Dockerfile.cuda installs torch 2.7.0 (cu128) into /opt/venv in
    its build stage and copies the venv into the runtime stage: it was refused as losing torch."""
    a = adopt(tmp_path, "Dockerfile", _BUILD.format(venv=venv) + copy + "\n")
    assert (a.detected["torch"], a.detected["cuda"]) == ("2.7.0", "12.8")
    found, _ = read_source(str(CORPUS_DOCKER / "master-thesis-spt-arg-torch270-cu128.Dockerfile"))
    assert plan_adoption(found, load_catalog()).detected["torch"] == "2.7.0"


def test_application_files_copied_from_a_build_stage_do_not_carry_its_framework(tmp_path: Path) -> None:
    text = _BUILD.format(venv="/opt/venv") + "COPY --from=build /app/dist /app\n"
    with pytest.raises(AdoptError, match="copied in with COPY --from"):
        adopt(tmp_path, "Dockerfile", text)


@pytest.mark.parametrize(
    ("stated", "python"),
    [(">=3.14.6,<3.15", "3.14"), (">=3.10.4,<3.11", "3.10"), ("~=3.11.2", "3.11"), (">3.12.0,<3.13", "3.12")],
)
def test_a_python_range_with_a_patch_bound_keeps_its_minor(tmp_path: Path, stated: str, python: str) -> None:
    """001Aashish/ml-learning-project's pixi.toml (python >=3.14.6,<3.15) was refused: 'no Python in
    that range', as only x.y.0 was tried."""
    a = adopt(tmp_path, "environment.yml", f'name: p\ndependencies:\n  - "python{stated}"\n  - numpy\n')
    assert a.detected["python"] == python


def test_a_ranged_torch_is_resolved_within_a_python_range_with_a_patch_bound(tmp_path: Path) -> None:
    text = 'name: p\ndependencies:\n  - "python>=3.10.4,<3.11"\n  - pytorch>=2.4,<2.6\n  - cpuonly\n'
    a = adopt(tmp_path, "environment.yml", text)
    assert (a.detected["python"], a.detected["torch"]) == ("3.10", "2.5.1")


@pytest.mark.parametrize(
    "image",
    [
        "ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddleocr-vl:latest-gpu-sm120-offline",
        "paddlepaddle/paddleocr-vl:latest",
        "registry.example/paddlepaddle/paddlenlp",
    ],
)
def test_a_paddle_application_image_without_a_release_is_refused(tmp_path: Path, image: str) -> None:
    """CreativeAcademyIndonesia/padddle-vl-ocr's Dockerfile (FROM .../paddlepaddle/paddleocr-vl:latest-gpu)
    was adopted as 'no framework, cpu' with exit 0."""
    text = f"FROM {image}\nRUN pip install --no-cache-dir fastapi uvicorn\n"
    with pytest.raises(AdoptError, match="Paddle application image"):
        adopt(tmp_path, "Dockerfile", text)


def test_a_paddle_image_whose_tag_names_the_release_is_still_read(tmp_path: Path) -> None:
    text = "FROM paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\nRUN pip install fastapi\n"
    assert adopt(tmp_path, "Dockerfile", text).detected["paddle"] == "2.6.1"
