"""`envkit init --from` on real files from public repositories (tests/data/init/README.md) and the
real inventories beside the project (../shared/inventories): the spec validates, every pin of the
source is in it (as written, or as a framework, or named in a note or a not-carried line)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envkit.adopt import AdoptOptions, plan_adoption
from envkit.adopt.adoption import Adoption
from envkit.adopt.evidence import AdoptError, Collected
from envkit.adopt.facts import FRAMEWORK_CONDA, FRAMEWORK_PIP
from envkit.adopt.sources.read import read_source
from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.spec.load import load_spec

DATA = Path(__file__).resolve().parents[2] / "data" / "init"


def adopt(path: Path, cuda: str | None = None, *, keep_defaults: bool = False) -> tuple[Collected, Adoption]:
    found, _ = read_source(str(path))
    return found, plan_adoption(found, load_catalog(), AdoptOptions(cuda=cuda, keep_defaults=keep_defaults))


def assert_nothing_silently_dropped(found: Collected, adoption: Adoption) -> None:
    """Each source pin is in the spec (as written, or version-exact when its build was dropped),
    is a framework, or is named by a note or a not-carried line."""
    conda, pip = set(adoption.pins["conda"]), set(adoption.pins["pip"])
    said = " | ".join([*adoption.notes, *(f"{x.item} {x.why}" for x in adoption.lost)])
    for c in found.conda:
        assert (
            c.spec in conda
            or f"{c.name}=={c.version}" in conda
            or (c.name in FRAMEWORK_CONDA and FRAMEWORK_CONDA[c.name] in adoption.detected)
            or c.spec in said
        ), c
    for p in found.pip:
        assert p.spec in pip or (FRAMEWORK_PIP.get(p.name) in adoption.detected) or p.spec in said, p
    assert len(adoption.pins["conda"]) + len(adoption.pins["pip"]) > 0 or adoption.detected.get("torch")


def written_spec_validates(tmp_path: Path, adoption: Adoption) -> None:
    path = tmp_path / f"{adoption.name}.yaml"
    path.write_text(adoption.text)
    loaded = load_spec(path)
    assert tuple(loaded.spec.conda) == adoption.pins["conda"]
    assert tuple(loaded.spec.pip) == adoption.pins["pip"]


def test_stable_diffusion_environment_yaml(tmp_path: Path) -> None:
    # pytorch 1.11.0 on cudatoolkit 11.3: the cu113 wheel on nvidia/cuda:11.3.1 (the patch NVIDIA kept)
    _, gpu = adopt(DATA / "envyml-stable-diffusion-00d2d0e.yaml")
    assert gpu.detected == {"python": "3.10", "cuda": "11.3", "torch": "1.11.0"}
    written_spec_validates(tmp_path, gpu)
    found, a = adopt(DATA / "envyml-stable-diffusion-00d2d0e.yaml", cuda="cpu")
    assert a.detected == {"python": "3.10", "cuda": "cpu", "torch": "1.11.0"}
    assert a.how["cuda"] == "--cuda cpu"
    assert "numpy=1.19.2" in a.pins["conda"] and "python>=3.9" in a.pins["conda"]
    assert "torchvision==0.12.0" in a.pins["pip"]  # conda's torchvision moves beside the torch wheel
    assert "test-tube>=0.7.5" in a.pins["pip"] and "eventlet" in a.pins["pip"]
    assert not any(c.startswith(("pytorch", "cudatoolkit")) for c in a.pins["conda"])
    lost = {x.item: x.why for x in a.lost}
    assert "editable" in lost["-e git+https://github.com/openai/CLIP.git@main#egg=clip"]
    assert "editable" in lost["-e ."]
    assert "licence" in lost["channel defaults"]
    assert a.spec.channels == ("pytorch", "conda-forge")
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


def test_stylegan3_environment_yml(tmp_path: Path) -> None:
    # pytorch 1.9.1 on cudatoolkit 11.1: no CUDA 11.1 image in the catalog -> a clear refusal naming cpu
    with pytest.raises(AdoptError, match=r"torch 1\.9\.1 on CUDA 11\.1.*for cpu only") as refused:
        adopt(DATA / "envyml-stylegan3-0f52883.yml")
    assert "--cuda one of cpu" in (refused.value.hint or "")
    found, a = adopt(DATA / "envyml-stylegan3-0f52883.yml", cuda="cpu")
    assert (
        a.detected["torch"] == "1.9.1" and a.detected["python"] == "3.9"
    )  # `python >= 3.8`, torch 1.9.1's newest
    assert {"pillow=8.3.1", "scipy=1.7.1", "numpy>=1.20", "python >= 3.8"} <= set(a.pins["conda"])
    assert {"imgui==1.3.0", "pyspng", "psutil==5.9.0"} <= set(a.pins["pip"])
    # --cuda cpu overrides the source's CUDA 11.1: reported, never claimed as carried (issue 34, class 5)
    assert any(x.item == "cudatoolkit=11.1" and "spec's CUDA is cpu" in x.why for x in a.lost)
    assert a.spec.channels == ("pytorch", "nvidia")
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


def test_gpt4nlg_export_with_build_strings(tmp_path: Path) -> None:
    found, a = adopt(DATA / "envyml-gpt4nlg-4d86557.yml", cuda="cpu")
    assert a.detected["torch"] == "1.7.0" and a.detected["python"] == "3.7"
    # channels: pytorch + defaults; defaults' builds are not conda-forge's: versions kept, builds dropped
    assert "numpy==1.19.2" in a.pins["conda"] and "python==3.7.9" in a.pins["conda"]
    assert any("builds of the defaults channel" in n for n in a.notes)
    assert "torchvision==0.8.1" in a.pins["pip"] and "transformers==3.3.1" in a.pins["pip"]
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)
    _, kept = adopt(DATA / "envyml-gpt4nlg-4d86557.yml", cuda="cpu", keep_defaults=True)
    assert "numpy=1.19.2=py37h54aff64_0" in kept.pins["conda"] and "defaults" in kept.spec.channels


def test_hand_written_with_pip_includes(tmp_path: Path) -> None:
    found, a = adopt(DATA / "envyml-neural-amp-modeler-gpu-043cce4.yml")
    assert a.detected == {"python": "3.11", "cuda": "cpu"}
    assert a.pins["conda"] == ("python>=3.9", "pip", "wheel")
    why = {x.item: x.why for x in a.lost}
    assert "not beside the source" in why["-r ./requirements_gpu.txt"]
    assert "editable" in why["-e .."]
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


def test_paddle_dev_environment(tmp_path: Path) -> None:
    # cudatoolkit=10.2: a CUDA the catalog knows (issue 26) whose images NVIDIA deleted: a clear refusal
    with pytest.raises(
        AdoptError, match=r"CUDA 10\.2 \(.*\), whose nvidia/cuda images NVIDIA deleted"
    ) as err:
        adopt(DATA / "envyml-mynotes-py37-paddle-1e2d9a9.yaml")
    assert "--cuda one of cpu, " in (err.value.hint or "") and "11.8" in (err.value.hint or "")
    found, a = adopt(DATA / "envyml-mynotes-py37-paddle-1e2d9a9.yaml", cuda="cpu")
    assert a.detected["python"] == "3.7"
    assert {"cudatoolkit=10.2", "cudnn=7.6", "llvmdev=10.0", "opencv"} <= set(a.pins["conda"])
    assert "anaconda" in {x.item.removeprefix("channel ") for x in a.lost} or a.spec.channels == (
        "conda-forge",
    )
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


@pytest.mark.parametrize(
    ("name", "torch", "cuda"),
    [("req-pytorch-serve-torch_cu121_linux-155b2bb.txt", "2.2.0", "12.1"),
     ("req-pytorch-serve-torch_cu118_linux-2b4dd09.txt", "2.3.1", "11.8")],
)  # fmt: skip
def test_pytorch_serve_requirements(tmp_path: Path, name: str, torch: str, cuda: str) -> None:
    found, a = adopt(DATA / name)
    assert a.detected["torch"] == torch and a.detected["cuda"] == cuda
    # the included torch_common.txt is read; markers are kept as written
    assert "cython==3.0.5" in a.pins["pip"] and "numpy==1.24.3; sys_platform != 'win32'" in a.pins["pip"]
    assert any(
        "framework's index" in n for n in a.notes
    )  # --extra-index-url .../cuXYZ: carried by frameworks
    assert a.spec.mirrors.pypi is None
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


def test_paddleocr_requirements(tmp_path: Path) -> None:
    found, a = adopt(DATA / "req-paddleocr-03802c7.txt")
    assert a.detected == {"python": "3.11", "cuda": "cpu"}
    assert a.pins["pip"][-2:] == ("lanms-neo==1.0.2", "PyMuPDF==1.18.7") and len(a.pins["pip"]) == 19
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


def test_pytorch_project_dockerfile(tmp_path: Path) -> None:
    _, a = adopt(DATA / "mteb-383340d.Dockerfile")
    assert a.detected == {"python": "3.11", "cuda": "12.1", "torch": "2.1.0",
                          "base_image": "pytorch/pytorch:2.1.0-cuda12.1-cudnn8-devel"}  # fmt: skip
    items = [x.item for x in a.lost]
    assert items == [
        "-r requirements.txt",
        "COPY requirements.txt ./",
        'ENTRYPOINT [ "python" ]',
        "COPY . ./",
    ]
    written_spec_validates(tmp_path, a)


def test_paddle_project_dockerfile(tmp_path: Path) -> None:
    found, a = adopt(DATA / "paddleocr-aarch64-325f4f2.Dockerfile")
    assert a.detected["paddle"] == a.spec.frameworks.paddle and a.detected["cuda"] == "cpu"
    assert a.detected["python"] == "3.12" and a.spec.base_image == "python:3.12-slim-bookworm"
    assert {"onnxruntime", "paddle2onnx"} <= set(a.pins["pip"])
    assert a.spec.env["OMP_NUM_THREADS"] == "4" and "WITH_GPU" not in a.spec.env  # the builder stage's ENV
    why = " | ".join(f"{x.item}: {x.why}" for x in a.lost)
    assert "a build stage" in why and "OS packages" in why and "local build" in why
    assert "git clone" not in why  # the builder stage's commands are the build stage's, reported once
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


@pytest.mark.parametrize(("tag", "kept"), [("11.7.1", True), ("11.7.0", False)])
def test_only_the_deleted_cuda_tags_are_refused(tmp_path: Path, tag: str, kept: bool) -> None:
    """NVIDIA deleted nvidia/cuda:11.7.0-* and kept 11.7.1-* (sources in removed_images.yaml)."""
    ref = f"nvidia/cuda:{tag}-cudnn8-runtime-ubuntu22.04"
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"FROM {ref}\nRUN pip install torch==1.13.1\n", "utf-8")
    if kept:
        _, a = adopt(dockerfile)
        assert a.spec.base_image == ref and a.spec.cuda == "11.7"
    else:
        with pytest.raises(AdoptError, match=r"is a CUDA 11\.7 image, and NVIDIA deleted it"):
            adopt(dockerfile)


def test_paddle_fleetx_dockerfile_expands_args(tmp_path: Path) -> None:
    # paddle 2.0.0 (${PADDLE_PKG}${PADDLE_VER:+==${PADDLE_VER}}) predates the catalog (2.4.0 on): refused
    # unless --cuda/--python choose; paddle 2.0.0 on CUDA 11.8 cannot exist (issue 34, class 7)
    with pytest.raises(AdoptError, match=r"paddle 2\.0\.0 is older than every paddle release"):
        adopt(DATA / "paddlefleetx-gpu-026b341.Dockerfile")
    with pytest.raises(AdoptError, match=r"newest CUDA is 11\.7: no paddle 2\.0\.0 wheel for CUDA 11\.8"):
        adopt(DATA / "paddlefleetx-gpu-026b341.Dockerfile", cuda="11.8")
    found, _ = read_source(str(DATA / "paddlefleetx-gpu-026b341.Dockerfile"))
    a = plan_adoption(found, load_catalog(), AdoptOptions(cuda="cpu", python="3.8"))
    assert a.detected["paddle"] == "2.0.0"
    assert a.spec.base_image is None  # a CUDA 10.2 image under --cuda cpu: reported, not kept
    assert "a CUDA 10.2 image under a CUDA cpu spec" in " ".join(x.why for x in a.lost)
    assert a.spec.mirrors.pypi == "http://mirrors.aliyun.com/pypi/simple/"
    why = {x.item: x.why for x in a.lost}
    assert "one PyPI mirror" in why["--index-url https://mirror.baidu.com/pypi/simple"]
    assert "installer tooling" in why["pip<20.3"]
    assert any("OS packages" in w for w in why.values())
    assert "ENV LANG" not in why and a.spec.env == {"LANG": "C.UTF-8"}
    written_spec_validates(tmp_path, a)


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name
        for p in (
            Path(os.environ.get("ENVKIT_SHARED", Path(__file__).resolve().parents[4] / "shared"))
            / "inventories"
        ).glob("*")
        if p.suffix in (".txt", ".yml", ".json", ".lock") and "collectenv-windows" not in p.name
    ),
)
def test_shared_inventories(shared_dir: Path, tmp_path: Path, name: str) -> None:
    path = shared_dir / "inventories" / name
    found, _ = read_source(str(path))
    try:
        a = plan_adoption(found, load_catalog())
    except AdoptError as e:  # an old CUDA: said clearly, with the --cuda that works
        assert "--cuda" in (e.hint or "") or "--python" in (e.hint or ""), e
        a = plan_adoption(found, load_catalog(), AdoptOptions(cuda="cpu", python=_python_hint(e.hint or "")))
    assert_nothing_silently_dropped(found, a)
    written_spec_validates(tmp_path, a)


def _python_hint(hint: str) -> str | None:
    return hint.rsplit(" ", 1)[-1] if "--python" in hint else None


def test_cli_writes_validating_spec_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    source = str(DATA / "req-pytorch-serve-torch_cu121_linux-155b2bb.txt")
    assert main(["init", "--from", source, "--name", "serve", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["result"]["detected"] == {"python": "3.11", "cuda": "12.1", "torch": "2.2.0"}
    assert out["result"]["spec"] == "environments/serve.yaml"
    assert main(["validate", "serve"]) == 0
    before = (tmp_path / "environments" / "serve.yaml").read_bytes()
    capsys.readouterr()
    assert main(["init", "--from", source, "--name", "serve"]) == 2  # never clobbers
    assert "never replaces a spec" in capsys.readouterr().err
    assert (tmp_path / "environments" / "serve.yaml").read_bytes() == before
