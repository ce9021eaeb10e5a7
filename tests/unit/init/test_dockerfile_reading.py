"""How `envkit init --from Dockerfile` reads shell expansions, BuildKit's platform ARGs, ``bash -c``,
vendor image tags, conda installers and envs, ``uv sync`` and PyPI's paddlepaddle-gpu: each from a
real Dockerfile of the init corpus (tests/corpus/init/dockerfile, source recorded beside it) and
hostile variants of it written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.adopt import AdoptOptions, plan_adoption, read_evidence
from envkit.adopt.adoption import Adoption
from envkit.adopt.detect import image_facts
from envkit.adopt.evidence import AdoptError, Collected
from envkit.adopt.releases import read_releases
from envkit.adopt.sources.dockerfile_expand import expand
from envkit.catalog import load_catalog

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "init" / "dockerfile"
CPU_PAGE = "https://download.pytorch.org/whl/cpu/torch_stable.html"


def adopt_file(path: Path) -> tuple[Collected, Adoption]:
    """As ``envkit init --from PATH`` reads and plans (the accelerator refusals included)."""
    found, _ = read_evidence(str(path))
    return found, plan_adoption(found, load_catalog(), AdoptOptions())


def adopt_text(tmp_path: Path, text: str) -> Adoption:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return adopt_file(path)[1]


def said(adoption: Adoption) -> str:
    return " | ".join([*adoption.notes, *adoption.warnings, *(f"{x.item}: {x.why}" for x in adoption.lost)])


def facts(adoption: Adoption) -> dict[str, str]:
    return {k: v for k, v in adoption.detected.items() if k != "base_image"}


# --- the shell's ${VAR%pattern} family -------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expanded"),
    [
        ("${V%.*}", "11.8"),
        ("${V%%.*}", "11"),
        ("${V#*.}", "8.0"),
        ("${V##*.}", "0"),
        ("${V%.0}", "11.8"),
        ("${V%x}", "11.8.0"),  # no match: the value
        ("cu${V%.*}", "cu11.8"),
        ("${UNSET%.*}", "${UNSET%.*}"),  # unknown: stays, reported by the caller
        ("${E%.*}", ""),
    ],
)
def test_shell_pattern_removal_expands_as_the_shell_does(word: str, expanded: str) -> None:
    assert expand(word, {"V": "11.8.0", "E": ""}) == expanded


def test_real_dockerfile_pins_pytorch_cuda_with_a_suffix_removal() -> None:
    """coiled/examples: ``"pytorch-cuda=${CUDA_VER%.*}.*"`` with ``ARG CUDA_VER=11.8.0`` (before: refused
    as "a shell command, not a package pin")."""
    _, adoption = adopt_file(CORPUS / "coiled-rapids-pytorch-cuda-arg-expansion.Dockerfile")
    assert facts(adoption) == {"torch": "2.5.1", "cuda": "11.8", "python": "3.10"}
    assert "pytorch.yml" in said(adoption)


# --- BuildKit's automatic platform ARGs ------------------------------------------------------------


def test_real_dockerfile_branches_on_targetplatform_read_for_linux_amd64() -> None:
    """Caesar723/Magic: ``ARG TARGETPLATFORM`` then ``if [ "$TARGETPLATFORM" = "linux/amd64" ]`` installs
    torch 2.3.1+cpu (before: the ARG read as empty, the else branch's PyPI CUDA torch was written)."""
    _, adoption = adopt_file(CORPUS / "magic-targetplatform-torch231-cpu.Dockerfile")
    assert facts(adoption) == {"torch": "2.3.1", "cuda": "cpu", "python": "3.9"}
    assert "ARG TARGETPLATFORM is set by the builder" in said(adoption)
    assert "linux/amd64" in said(adoption)


@pytest.mark.parametrize(
    ("arg", "cuda"),
    [
        ("ARG TARGETARCH", "cpu"),  # amd64: the CPU wheel
        ("ARG TARGETARCH=arm64", "12.1"),  # a default the file gives is its own: the other branch
    ],
)
def test_targetarch_branch_hostile(tmp_path: Path, arg: str, cuda: str) -> None:
    adoption = adopt_text(
        tmp_path,
        f"FROM python:3.11-slim\n{arg}\n"
        'RUN if [ "$TARGETARCH" = "amd64" ]; then \\\n'
        f"      pip install torch==2.3.1+cpu -f {CPU_PAGE}; \\\n"
        "    else pip install torch==2.3.1; fi\n",
    )
    assert facts(adoption) == {"torch": "2.3.1", "cuda": cuda, "python": "3.11"}


# --- bash -c "..." ---------------------------------------------------------------------------------


def test_real_dockerfile_installs_torch_inside_bash_c() -> None:
    """hwi0lee/2023-1_DL_TeamProject_t5: ``/bin/bash -c "source activate my_env && pip3 install torch
    torchvision --index-url .../cu118"`` (before: torch lost, a no-framework CUDA spec written)."""
    _, adoption = adopt_file(CORPUS / "t5-teamproject-cuda118-conda-bash-c.Dockerfile")
    assert adoption.detected["cuda"] == "11.8"
    assert adoption.detected["torch"] == "2.7.1"  # the newest torch with cu118 wheels
    assert "source activate my_env" in said(adoption)


CU118 = "--index-url https://download.pytorch.org/whl/cu118"


@pytest.mark.parametrize(
    "run",
    [
        f"sh -ec 'pip install torch==2.1.2 {CU118}'",
        f'/bin/bash -lc "V=2.1.2 && pip install torch==$V {CU118}"',
        f'bash -c "if [ true ]; then pip install torch==2.1.2 {CU118}; fi"',
    ],
)
def test_shell_c_hostile(tmp_path: Path, run: str) -> None:
    adoption = adopt_text(tmp_path, f"FROM python:3.10\nRUN {run}\n")
    assert facts(adoption) == {"torch": "2.1.2", "cuda": "11.8", "python": "3.10"}


def test_bash_without_c_is_a_script_not_read(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path, "FROM python:3.10\nRUN pip install torch==2.1.2\nRUN bash install.sh -c x\n"
    )
    assert "bash install.sh -c x" in said(adoption)


# --- the Python a conda installer or env states ----------------------------------------------------


def test_real_dockerfile_miniconda_py37_installer_states_python() -> None:
    """alibaba/TinyNeuralNetwork: Miniconda3-py37_4.10.3 then conda pytorch==1.9.0 cudatoolkit=11.1
    (before: Python 3.9, envkit's pick, over the 3.7 the installer brings)."""
    _, adoption = adopt_file(CORPUS / "tinynn-conda-pytorch190-cudatoolkit111.Dockerfile")
    assert facts(adoption) == {"torch": "1.9.0", "cuda": "11.1", "python": "3.7"}


@pytest.mark.parametrize(
    ("extra", "python"),
    [
        ("", "3.10"),
        ("RUN conda install -y python=3.9\n", "3.9"),  # a pin the file makes wins over the installer's
    ],
)
def test_miniconda_installer_hostile(tmp_path: Path, extra: str, python: str) -> None:
    adoption = adopt_text(
        tmp_path,
        "FROM ubuntu:22.04\n"
        "RUN wget -q https://repo.anaconda.com/miniconda/Miniconda3-py310_23.5.1-0-Linux-x86_64.sh "
        "&& bash Miniconda3-py310_23.5.1-0-Linux-x86_64.sh -b\n"
        f"{extra}RUN pip install torch==2.1.2+cpu -f {CPU_PAGE}\n",
    )
    assert facts(adoption) == {"torch": "2.1.2", "cuda": "cpu", "python": python}


def test_real_dockerfile_conda_env_never_used_is_not_the_python() -> None:
    """jasonkylelol/document-convert: ``conda create -n langchain python=3.11`` on a modelscope image,
    never activated (pip is the image's Python 3.8); the tag names torch 2.0.1 on CUDA 11.7 (before:
    torch lost, Python 3.11)."""
    _, adoption = adopt_file(CORPUS / "document-convert-modelscope-torch201.Dockerfile")
    assert facts(adoption) == {"torch": "2.0.1", "cuda": "11.7", "python": "3.8"}
    assert "creates the conda environment langchain, which nothing else" in said(adoption)


def test_a_conda_env_the_file_uses_is_read(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path,
        "FROM continuumio/miniconda3\n"
        "RUN conda create -y -n work python=3.9\n"
        'SHELL ["conda", "run", "-n", "work", "/bin/bash", "-c"]\n'
        f"RUN pip install torch==2.1.2+cpu -f {CPU_PAGE}\n",
    )
    assert facts(adoption) == {"torch": "2.1.2", "cuda": "cpu", "python": "3.9"}


# --- vendor image tags and torch images whose tag names no release ---------------------------------


@pytest.mark.parametrize(
    ("image", "framework", "version", "cuda", "python"),
    [
        (
            "registry.cn-hangzhou.aliyuncs.com/modelscope-repo/modelscope:"
            "ubuntu20.04-cuda11.7.1-py38-torch2.0.1-tf1.15.5-1.8.1",
            "torch",
            "2.0.1",
            "11.7",
            "3.8",
        ),
        ("runpod/pytorch:2.2.0-py3.10-cuda12.1.1-devel-ubuntu22.04", "torch", "2.2.0", "12.1", "3.10"),
        ("example.com/team/base:py310-cu121-torch2.3", "torch", "2.3", "12.1", "3.10"),
        ("registry.cn-shanghai.aliyuncs.com/magic_fan_made/python3.9:latest", None, None, None, "3.9"),
        ("bitnami/pytorch:latest", "torch", None, None, None),
        ("huggingface/transformers-pytorch-gpu", "torch", None, None, None),
        ("python:3.11-slim", None, None, None, "3.11"),
        ("example.com/ml/pytorch-gpu:stable-py311", "torch", None, None, "3.11"),  # torch, no release
    ],
)
def test_image_facts_of_vendor_tags(
    image: str, framework: str | None, version: str | None, cuda: str | None, python: str | None
) -> None:
    got = image_facts(image, read_releases(load_catalog(), image))
    assert (got.framework, got.version, got.cuda, got.python) == (framework, version, cuda, python)


@pytest.mark.parametrize("name", ["dhund-bitnami-latest.Dockerfile", "therabot-hf-untagged.Dockerfile"])
def test_real_torch_image_without_a_release_is_refused(name: str) -> None:
    """bitnami/pytorch:latest and huggingface/transformers-pytorch-gpu (untagged): before, a spec with no
    framework on CPU was written (exit 0)."""
    with pytest.raises(AdoptError, match="names no torch release"):
        adopt_file(CORPUS / name)


def test_torch_image_without_a_release_and_a_torch_pin_adopts_the_pin(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path, f"FROM bitnami/pytorch:latest\nRUN pip install torch==2.1.2+cpu -f {CPU_PAGE}\n"
    )
    assert adoption.detected["torch"] == "2.1.2" and adoption.detected["cuda"] == "cpu"


# --- uv sync on an image that brings torch ---------------------------------------------------------


def test_real_dockerfile_uv_sync_on_a_torch_image_is_refused() -> None:
    """mattmendivil/lda: ``uv sync --frozen`` on runpod/pytorch:2.4.0 (before: torch 2.4.0 written, the
    venv uv makes from the unread uv.lock ignored)."""
    with pytest.raises(AdoptError, match="into its own venv") as refused:
        adopt_file(CORPUS / "lda-runpod240-uv-sync.Dockerfile")
    assert "uv.lock" in str(refused.value.hint)


def test_uv_sync_beside_a_torch_pin_is_not_this_refusal(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path,
        "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\n"
        "RUN pip install torch==2.5.1 && uv sync --frozen\n",
    )
    assert adoption.detected["torch"] == "2.5.1"
    assert "uv sync --frozen" in said(adoption)


# --- paddlepaddle-gpu from PyPI ------------------------------------------------------------------


def test_real_dockerfile_unpinned_paddle_gpu_from_pypi_is_a_pypi_release() -> None:
    """Rykkura/paddleocr_vietnamese: an unpinned paddlepaddle-gpu with no Paddle index (before: paddle
    3.2.2, which PyPI has no GPU wheel of)."""
    _, adoption = adopt_file(CORPUS / "paddleocr-vi-runpod-torch-paddle-gpu.Dockerfile")
    assert adoption.detected["paddle"] == "2.6.2"
    assert "PyPI's paddlepaddle-gpu wheels end at 2.6.2" in adoption.how["paddle"]


@pytest.mark.parametrize(
    ("pip", "paddle", "cuda"),
    [
        ("paddlepaddle-gpu", "2.6.2", "11.8"),
        ("'paddlepaddle-gpu>=2.5' -i https://mirror.baidu.com/pypi/simple", "2.6.2", "11.8"),  # a PyPI mirror
        (
            "paddlepaddle-gpu==3.0.0 -i https://www.paddlepaddle.org.cn/packages/stable/cu126/",
            "3.0.0",
            "12.6",
        ),
    ],
)
def test_paddle_gpu_pypi_hostile(tmp_path: Path, pip: str, paddle: str, cuda: str) -> None:
    adoption = adopt_text(tmp_path, f"FROM python:3.10\nRUN pip install {pip}\n")
    assert (adoption.detected["paddle"], adoption.detected["cuda"]) == (paddle, cuda)


def test_paddle_gpu_from_paddles_index_is_not_bounded(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path,
        "FROM python:3.10\n"
        "RUN pip install paddlepaddle-gpu -i https://www.paddlepaddle.org.cn/packages/stable/cu126/\n",
    )
    assert adoption.detected["paddle"].startswith("3.")


# --- a branch envkit cannot decide that pins what a command prints ---------------------------------


def test_real_dockerfile_undecided_branch_with_command_substitution_reaches_the_rocm_refusal() -> None:
    """ROCm/torch_migraphx: ``if command -v rocm-sdk; then pip install "rocm[devel]==$(rocm-sdk
    version)"`` on a rocm/pytorch image (before: refused for the shell command, not for ROCm)."""
    with pytest.raises(AdoptError, match="ROCm"):
        adopt_file(CORPUS / "torch-migraphx-rocm714-arg-image.Dockerfile")


def test_undecided_command_substitution_hostile(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path,
        "FROM python:3.11\n"
        f"RUN pip install torch==2.1.2+cpu -f {CPU_PAGE}\n"
        'RUN if command -v tool; then pip install "plugin==$(tool version)"; fi\n',
    )
    assert adoption.detected["torch"] == "2.1.2"
    assert "installs what a command prints" in said(adoption)
    with pytest.raises(AdoptError, match="shell command"):  # a framework that way is still refused
        adopt_text(tmp_path, 'FROM python:3.11\nRUN if command -v t; then pip install "torch==$(t v)"; fi\n')


# --- the framework a shell branch not read installs ------------------------------------------------


def test_real_dockerfile_default_branch_installs_from_an_unread_file_is_refused() -> None:
    """jona-nakai/NEU-Hocker-Vision: ``ARG TORCH_VARIANT=cpu``; the cuda branch installs torch from
    whl/cu126, the branch read only ``-r requirements.txt`` (before: a no-framework CPU spec)."""
    with pytest.raises(AdoptError, match="the shell branch not read") as refused:
        adopt_file(CORPUS / "hocker-vision-torch-variant-default-cpu.Dockerfile")
    assert "whl/cu126" in refused.value.message


@pytest.mark.parametrize(
    ("variant", "refused"),
    [
        ("cpu", True),  # the default branch: only the unread file
        ("cuda", False),  # the branch with torch: adopted
    ],
)
def test_branch_not_read_hostile(tmp_path: Path, variant: str, refused: bool) -> None:
    text = (
        f"FROM python:3.12\nARG VARIANT={variant}\n"
        'RUN if [ "$VARIANT" = "cuda" ]; then pip install torch==2.6.0 --index-url '
        "https://download.pytorch.org/whl/cu126 && pip install -r requirements.txt; "
        "else pip install -r requirements.txt; fi\n"
    )
    if refused:
        with pytest.raises(AdoptError, match="the shell branch not read"):
            adopt_text(tmp_path, text)
    else:
        assert facts(adopt_text(tmp_path, text)) == {"torch": "2.6.0", "cuda": "12.6", "python": "3.12"}


def test_a_branch_not_read_without_a_framework_changes_nothing(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path,
        "FROM python:3.12\nARG DEV=0\n"
        'RUN if [ "$DEV" = "1" ]; then pip install pytest; fi && pip install -r requirements.txt\n',
    )
    assert facts(adoption) == {"cuda": "cpu", "python": "3.12"}


# --- a framework image whose tag an ARG without a default leaves empty ----------------------------


def test_real_dockerfile_ngc_tag_from_an_unset_arg_is_refused() -> None:
    """NERSC/nersc-ml-images: ``ARG nvc_tag`` (no default), ``FROM nvcr.io/nvidia/pytorch:$nvc_tag``
    (before: the reference was dropped as invalid and a no-framework CPU spec written, exit 0)."""
    with pytest.raises(AdoptError, match="NVIDIA's own torch build"):
        adopt_file(CORPUS / "nersc-ngc-unset-tag-arg.Dockerfile")


@pytest.mark.parametrize(
    "base",
    [
        "ARG TAG\nFROM pytorch/pytorch:${TAG}",
        "ARG V\nFROM registry.example.com/ml/pytorch:$V-cuda12.1",
    ],
)
def test_framework_image_with_an_unset_tag_hostile(tmp_path: Path, base: str) -> None:
    with pytest.raises(AdoptError, match="cannot tell which torch release"):
        adopt_text(tmp_path, f"{base}\nRUN pip install numpy==1.26.4\n")


# --- a PyG page for another torch than the image's ------------------------------------------------


def test_real_dockerfile_pyg_page_for_another_torch_keeps_the_images_torch() -> None:
    """Forbu/graphgenerator: pytorch/pytorch:2.0.1-cuda11.7 with PyG wheels from the
    torch-2.0.0+cu118 page (before: torch 2.0.0 on CUDA 11.8, the page's, was written)."""
    _, adoption = adopt_file(CORPUS / "graphgenerator-pytorch201-pyg-cu118-page.Dockerfile")
    assert (adoption.detected["torch"], adoption.detected["cuda"]) == ("2.0.1", "11.7")
    assert "built for torch 2.0.0" in said(adoption)


def test_pyg_page_on_an_image_without_torch_still_names_torch(tmp_path: Path) -> None:
    adoption = adopt_text(
        tmp_path,
        "FROM python:3.10\n"
        "RUN pip install torch_scatter -f https://data.pyg.org/whl/torch-2.1.0+cu121.html\n",
    )
    assert adoption.detected["torch"] == "2.1.0"
