"""Issue 45 (adopt, round 4): the classes of wrong answers, each on hostile variants written here;
the real files of each class are corpus records (tests/corpus/init, klass 45.N) graded by
tests/unit/test_corpus_init.py. Every adoption goes through `envkit.adopt.adopt`, the use case the
CLI calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from envkit.adopt import Adopted, AdoptOptions, adopt
from envkit.adopt.evidence import AdoptError
from envkit.catalog import load_catalog

CATALOG = load_catalog()


def adopted(tmp_path: Path, name: str, text: str, **options: str) -> Adopted:
    source = tmp_path / "src" / name
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(text, encoding="utf-8")
    return adopt(str(source), tmp_path, AdoptOptions(**options), catalog=CATALOG)  # type: ignore[arg-type]


def refused(tmp_path: Path, name: str, text: str) -> str:
    with pytest.raises(AdoptError) as err:
        adopted(tmp_path, name, text)
    assert not (tmp_path / "environments").exists() or not list((tmp_path / "environments").iterdir())
    return err.value.message


def facts(a: Adopted) -> tuple[str | None, str, str]:
    d = a.adoption.detected
    return d.get("torch") or d.get("paddle"), d["cuda"], d["python"]


# -- 2: ROCm, Ascend, XPU stacks are refused (exit 2), never written as CPU specs ---------------------
@pytest.mark.parametrize(
    ("name", "text", "stack"),
    [
        ("requirements.txt", "torch==2.4.1+rocm6.1\ntorchvision==0.19.1+rocm6.1\n", "ROCm"),
        ("requirements.txt", "--index-url https://download.pytorch.org/whl/rocm6.2\ntorch==2.5.1\n", "ROCm"),
        (
            "requirements.txt",
            "--extra-index-url https://download.pytorch.org/whl/nightly/rocm6.3\ntorch\n",
            "ROCm",
        ),
        (
            "Dockerfile",
            "FROM rocm/pytorch:rocm6.2_ubuntu22.04_py3.10_pytorch_release_2.3.0\nRUN pip install timm\n",
            "ROCm",
        ),
        (
            "Dockerfile",
            "FROM python:3.10\nRUN pip install torch==2.1.2+rocm5.6 -f https://repo.radeon.com/rocm/manylinux/rocm-rel-5.6/\n",
            "ROCm",
        ),
        ("requirements.txt", "torch==2.1.0\ntorch-npu==2.1.0.post3\n", "Ascend"),
        ("requirements.txt", "torch==2.1.0\ntorch_npu==2.1.0\n", "Ascend"),
        (
            "Dockerfile",
            "FROM ascendai/cann:8.0.rc1-910b-ubuntu22.04-py3.9\nRUN pip install torch==2.1.0\n",
            "Ascend",
        ),
        (
            "Dockerfile",
            "FROM swr.cn-south-1.myhuaweicloud.com/ascendhub/ascend-pytorch:24.0.RC1-A2-2.1.0\n",
            "Ascend",
        ),
        (
            "requirements.txt",
            "--index-url https://download.pytorch.org/whl/xpu\ntorch==2.5.1+xpu\n",
            "Intel XPU",
        ),
        ("requirements.txt", "torch==2.1.0.post0\nintel-extension-for-pytorch==2.1.10+xpu\n", "Intel XPU"),
        ("requirements.txt", "paddlepaddle-xpu==2.6.1\n", "Kunlun XPU"),
        (
            "environment.yml",
            "name: r\ndependencies:\n  - python=3.10\n  - pip\n  - pip:\n    - torch==2.4.1+rocm6.1\n",
            "ROCm",
        ),
    ],
)
def test_a_non_cuda_accelerator_stack_is_refused_with_its_evidence(
    tmp_path: Path, name: str, text: str, stack: str
) -> None:
    message = refused(tmp_path, name, text)
    assert stack in message and "CUDA and CPU" in message and "nothing was written" in message


@pytest.mark.parametrize(
    "text",
    [
        "torch==2.4.1+cpu\n",  # a CPU build is not another accelerator
        "torch==2.4.1+cpu\nintel-extension-for-pytorch==2.4.0\n",  # IPEX for CPU
        "FROM rockylinux:9\nRUN pip install torch==2.4.1+cpu\n",
    ],
)
def test_cpu_builds_are_not_taken_for_another_accelerator(tmp_path: Path, text: str) -> None:
    name = "Dockerfile" if text.startswith("FROM") else "requirements.txt"
    assert facts(adopted(tmp_path, name, text))[1] == "cpu"


# -- 6: shell semantics in RUN ----------------------------------------------------------------------
def test_a_variable_set_earlier_in_the_same_run_is_expanded(tmp_path: Path) -> None:
    a = adopted(tmp_path, "Dockerfile", "FROM python:3.10\nRUN CU=121 && pip install torch==2.2.0+cu${CU}\n")
    assert facts(a) == ("2.2.0", "12.1", "3.10")
    a = adopted(
        tmp_path / "b", "Dockerfile", "FROM python:3.10\nRUN export V=2.1.2; pip install torch==$V+cpu\n"
    )
    assert facts(a) == ("2.1.2", "cpu", "3.10")


def test_a_literal_condition_is_decided_and_the_branch_read_is_said(tmp_path: Path) -> None:
    text = (
        "FROM python:3.10\n"
        "RUN if [ false == true ]; then pip install torch==2.0.0+cu117; \\\n"
        "    else pip install torch==2.1.2+cu121; fi\n"
    )
    a = adopted(tmp_path, "Dockerfile", text)
    assert facts(a) == ("2.1.2", "12.1", "3.10")
    assert any("read the shell branch `else`" in n for n in a.adoption.notes)
    assert "2.0.0" not in a.adoption.text.split("name:", 1)[1]


@pytest.mark.parametrize(
    ("arg", "expected"), [("1", ("2.1.2", "11.8")), ("0", ("2.1.2", "cpu")), ("", ("2.1.2", "cpu"))]
)
def test_an_arg_default_decides_the_branch(tmp_path: Path, arg: str, expected: tuple[str, str]) -> None:
    text = (
        f"ARG USE_GPU={arg}\nFROM python:3.11\n"
        'RUN if [ "$USE_GPU" = "1" ]; then \\\n'
        "      pip install torch==2.1.2+cu118 --index-url https://download.pytorch.org/whl/cu118; \\\n"
        '    elif [ -n "$USE_GPU" ]; then pip install torch==2.1.2+cpu; \\\n'
        "    else pip install torch==2.1.2+cpu; fi\n"
    )
    assert facts(adopted(tmp_path, "Dockerfile", text))[:2] == expected


def test_nested_ifs_under_a_false_branch_are_not_read(tmp_path: Path) -> None:
    text = (
        "FROM python:3.10\n"
        "RUN if [ a = b ]; then if [ x = x ]; then pip install torch==2.0.1+cu118; fi; \\\n"
        "    else pip install torch==2.1.2+cpu; fi\n"
    )
    assert facts(adopted(tmp_path, "Dockerfile", text)) == ("2.1.2", "cpu", "3.10")


def test_a_condition_that_cannot_be_decided_refuses_a_framework_and_reports_the_rest(tmp_path: Path) -> None:
    text = "FROM python:3.10\nRUN if [ -f /opt/gpu ]; then pip install torch==2.1.2+cu121; fi\n"
    message = refused(tmp_path, "Dockerfile", text)
    assert "-f /opt/gpu" in message and "torch==2.1.2+cu121" in message
    text = (
        "FROM python:3.10\nRUN if command -v nvidia-smi; then pip install pynvml==11.5.0; fi && "
        "pip install torch==2.1.2+cpu\n"
    )
    a = adopted(tmp_path / "b", "Dockerfile", text)
    assert facts(a) == ("2.1.2", "cpu", "3.10")
    assert any("pynvml" in x.item and "cannot decide" in x.why for x in a.adoption.lost)


# -- 1: the framework named in an image tag, a wheel's file name, a find-links page -----------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # a framework's own wheel by URL: its file name is the pin
            "https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp310-cp310-linux_x86_64.whl\n",
            ("2.0.1", "11.8", "3.10"),
        ),
        (  # a wheel built against torch 2.6 on cu126 for cp312 beside an unpinned torch
            "torch\nhttps://github.com/Dao-AILab/flash-attention/releases/download/v2.7.4.post1/"
            "flash_attn-2.7.4.post1+cu126torch2.6cxx11abiFALSE-cp312-cp312-linux_x86_64.whl\n",
            ("2.6.0", "12.6", "3.12"),
        ),
        (  # a find-links page of PyG wheels for torch 2.1.0 + cu121, torch itself not pinned
            "-f https://data.pyg.org/whl/torch-2.1.0+cu121.html\ntorch_scatter==2.1.2+pt21cu121\n",
            ("2.1.0", "12.1", None),
        ),
        (  # mmcv's find-links page: cu117/torch1.13
            "-f https://download.openmmlab.com/mmcv/dist/cu117/torch1.13/index.html\nmmcv==2.0.1\ntorch\n",
            ("1.13.1", "11.7", None),
        ),
    ],
)
def test_a_wheel_name_or_find_links_page_names_the_framework(
    tmp_path: Path, text: str, expected: tuple[str, str, str | None]
) -> None:
    torch, cuda, python = facts(adopted(tmp_path, "requirements.txt", text))
    assert (torch, cuda) == expected[:2]
    assert expected[2] is None or python == expected[2]


def test_a_wheel_built_for_another_torch_than_the_pin_is_reported(tmp_path: Path) -> None:
    text = (
        "torch==2.5.1\n"
        "https://github.com/Dao-AILab/flash-attention/releases/download/v2.7.4.post1/"
        "flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl\n"
    )
    a = adopted(tmp_path, "requirements.txt", text)
    assert facts(a)[0] == "2.5.1"
    assert any("built for torch 2.6" in x.why for x in a.adoption.lost)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("paddlex/paddlex:paddlex3.1.2-paddlepaddle3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6", ("3.0.0", "11.8")),
        (
            "ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddle:3.1.0-gpu-cuda12.6-cudnn9.5",
            ("3.1.0", "12.6"),
        ),
        ("someone/torch-env:torch2.4.1-cu124-py3.11", ("2.4.1", "12.4")),
        ("pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime", ("2.5.1", "12.1")),
    ],
)
def test_the_framework_named_in_a_base_image_tag(
    tmp_path: Path, image: str, expected: tuple[str, str]
) -> None:
    a = adopted(tmp_path, "Dockerfile", f"FROM {image}\nRUN pip install numpy==1.26.4\n")
    assert facts(a)[:2] == expected


# -- 5: a Python the source states is carried -------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "text", "python"),
    [
        ("requirements.txt", "python==3.10.14\ncuda==12.1\ntorch==2.1.2+cu121\n", "3.10"),
        (
            "requirements.txt",
            "#\n# This file is autogenerated by pip-compile with Python 3.11\n"
            "# by the following command:\n#\n"
            "#    pip-compile requirements.in\n#\ntorch==2.1.2\n    # via -r requirements.in\n",
            "3.11",
        ),
        (
            "requirements.txt",
            "# This file was autogenerated by uv via the following command:\n"
            "#    uv pip compile requirements.in --python-version 3.12 -o requirements.txt\ntorch==2.5.1\n",
            "3.12",
        ),
        (
            "Dockerfile",
            "FROM ghcr.io/astral-sh/uv:python3.12-bookworm\nRUN uv pip install torch==2.5.1\n",
            "3.12",
        ),
        ("Dockerfile", "FROM someone/torch-env:torch2.4.1-cu124-py3.11\n", "3.11"),
    ],
)
def test_a_stated_python_is_carried(tmp_path: Path, name: str, text: str, python: str) -> None:
    a = adopted(tmp_path, name, text)
    assert facts(a)[2] == python
    assert not [p for p in a.adoption.pins["pip"] if p.startswith(("python", "cuda"))]


def test_cuda_in_a_requirements_list_is_reported_not_pinned(tmp_path: Path) -> None:
    a = adopted(tmp_path, "requirements.txt", "python==3.10.14\ncuda==12.1\ntorch==2.1.2+cu121\n")
    assert any(x.item == "cuda==12.1" and "no pip package" in x.why for x in a.adoption.lost)


# -- 3: the CPU paddlepaddle beside a CUDA torch is a package, not the framework's CUDA choice -------
@pytest.mark.parametrize(
    ("name", "text", "cuda"),
    [
        (
            "requirements.txt",
            "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.2+cu121\npaddlepaddle==2.6.1\n",
            "12.1",
        ),
        ("requirements.txt", "torch==2.4.1\npaddlepaddle==2.6.1\nnumpy==1.26.4\n", "12.1"),
        (
            "environment.yml",
            "name: x\nchannels: [pytorch, nvidia]\ndependencies:\n  - python=3.10\n  - pytorch=2.1.2\n"
            "  - pytorch-cuda=11.8\n  - pip\n  - pip:\n    - paddlepaddle==2.5.2\n",
            "11.8",
        ),
        (
            "Dockerfile",
            "FROM pytorch/pytorch:2.1.2-cuda12.1-cudnn8-runtime\nRUN pip install paddlepaddle==2.6.1\n",
            "12.1",
        ),
    ],
)
def test_a_cpu_paddle_beside_a_cuda_torch_is_a_package_with_a_finding(
    tmp_path: Path, name: str, text: str, cuda: str
) -> None:
    a = adopted(tmp_path, name, text)
    assert "paddle" not in a.adoption.detected and a.adoption.detected["cuda"] == cuda
    assert any(p.startswith("paddlepaddle==") for p in a.adoption.pins["pip"])
    assert any("mixes CPU and GPU builds" in n for n in a.adoption.notes)


@pytest.mark.parametrize(
    ("text", "paddle_cuda"),
    [
        ("torch==2.1.2+cpu\npaddlepaddle==2.6.1\n", "cpu"),  # both CPU: both frameworks
        ("torch==2.1.2+cu118\npaddlepaddle-gpu==2.6.1.post118\n", "11.8"),  # both CUDA
    ],
)
def test_paddle_stays_a_framework_when_the_builds_agree(tmp_path: Path, text: str, paddle_cuda: str) -> None:
    a = adopted(tmp_path, "requirements.txt", text)
    assert a.adoption.detected["paddle"] == "2.6.1" and a.adoption.detected["cuda"] == paddle_cuda


# -- 4: "carried from" is true of the rendered files --------------------------------------------------
def test_a_paddle_index_is_never_called_the_torch_index(tmp_path: Path) -> None:
    text = (
        "-i https://www.paddlepaddle.org.cn/packages/stable/cu118/\ntorch==2.1.2\npaddlepaddle-gpu==2.6.1\n"
    )
    with pytest.raises(AdoptError) as err:
        adopted(tmp_path, "requirements.txt", text)
    assert "torch index" not in err.value.message
    text = (
        "-i https://www.paddlepaddle.org.cn/packages/stable/cu118/\npaddlepaddle-gpu==2.6.1\ntimm==0.9.12\n"
    )
    a = adopted(tmp_path / "b", "requirements.txt", text)
    assert a.adoption.detected["cuda"] == "11.8"
    assert "the paddle index cu118" in a.adoption.how["cuda"]


# -- 11: a file name with pypi- in it is no token ------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    ["pypi-freeze-host-a-2024-01-01.txt", "pypi-requirements-gpu-node-17.txt", "pypi-only_packages_list.txt"],
)
def test_a_file_name_with_pypi_in_it_is_not_redacted(tmp_path: Path, name: str) -> None:
    from envkit._safe import redact

    assert redact(name) == name
    a = adopted(tmp_path, name, "torch==2.1.2+cpu\n")
    assert name in a.adoption.source and "***" not in a.adoption.text


def test_a_pypi_token_is_still_redacted() -> None:
    from envkit._safe import redact

    token = "pypi-AgEIcHlwaS5vcmcCJDU3ZDZkMjQ1LWE0YjktNDZhZS1hZmNkLTEyM2Y0NWM2ZjAwMgACKlszLCJ"
    assert token not in redact(f"twine upload -p {token} dist/*") and "pypi-Ag" not in redact(token)


# -- 10: explanations that are true ------------------------------------------------------------------
def test_newest_is_never_said_of_a_release_when_the_catalog_lists_newer(tmp_path: Path) -> None:
    a = adopted(tmp_path, "requirements.txt", "torch>=2.1\n")
    why = a.adoption.how["torch"]
    family = CATALOG.frameworks["torch"].releases
    newer = [r.version for r in family if r.version != a.adoption.detected["torch"] and r.python]
    chosen = a.adoption.detected["torch"]
    if any(Version(v) > Version(chosen) for v in newer):
        assert "newest verified" in why and "newer, unverified" in why, why
    else:
        assert "newest release" in why, why


def test_a_python_range_explanation_names_the_newer_pythons_the_frameworks_support(tmp_path: Path) -> None:
    text = "name: x\ndependencies:\n  - python>=3.9\n  - pip\n  - pip:\n    - torch==2.5.1\n"
    a = adopted(tmp_path, "environment.yml", text)
    release = CATALOG.framework_release("torch", "2.5.1")
    assert release is not None
    why = a.adoption.how["python"]
    chosen = a.adoption.detected["python"]
    newer = [p for p in release.python if Version(p) > Version(chosen)]
    assert ("the newest" not in why) if newer else ("the newest" in why), why
    assert all(p in why for p in newer), why


# -- validate reads the provenance header ------------------------------------------------------------
def _validate_warnings(path: Path) -> list[str]:
    from envkit.spec.load import load_spec

    return [w for w in load_spec(path, CATALOG).warnings if w.startswith("the source named")]


SOURCE = "python==3.10.14\n--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.2+cu121\n"


def test_an_adopted_spec_records_what_the_source_named_and_validate_is_quiet(tmp_path: Path) -> None:
    a = adopted(tmp_path, "requirements.txt", SOURCE)
    text = a.path.read_text()
    assert "#   source framework: torch 2.1.2 (" in text
    assert "#   source cuda: 12.1 (" in text and "#   source python: 3.10 (" in text
    assert _validate_warnings(a.path) == []


@pytest.mark.parametrize(
    ("edit", "warned"),
    [
        (('cuda: "12.1"', 'cuda: "cpu"'), "the source named CUDA 12.1"),
        (('python: "3.10"', 'python: "3.11"'), "the source named Python 3.10"),
        (('torch: "2.1.2"', 'torch: "2.1.1"'), "the spec has torch 2.1.1"),
    ],
)
def test_validate_warns_when_the_spec_lost_what_the_source_named(
    tmp_path: Path, edit: tuple[str, str], warned: str
) -> None:
    a = adopted(tmp_path, "requirements.txt", SOURCE)
    a.path.write_text(a.path.read_text().replace(*edit))
    assert any(warned in w for w in _validate_warnings(a.path))


def test_validate_warns_when_the_framework_is_gone(tmp_path: Path) -> None:
    a = adopted(tmp_path, "requirements.txt", SOURCE)
    a.path.write_text(a.path.read_text().replace('frameworks:\n  torch: "2.1.2"\n', ""))
    assert any("the spec has no torch" in w for w in _validate_warnings(a.path))


def test_a_chosen_cuda_other_than_the_sources_is_kept_in_the_header(tmp_path: Path) -> None:
    text = "torch==2.1.2+cu118\n"
    a = adopted(tmp_path, "requirements.txt", text, cuda="12.1")
    assert a.adoption.detected["cuda"] == "12.1"
    assert any("the source named CUDA 11.8" in w for w in _validate_warnings(a.path))


def test_a_spec_without_the_header_has_no_provenance_warnings(tmp_path: Path) -> None:
    a = adopted(tmp_path, "requirements.txt", SOURCE)
    body = "\n".join(line for line in a.path.read_text().splitlines() if not line.startswith("#"))
    a.path.write_text(body.replace('cuda: "12.1"', 'cuda: "cpu"') + "\n")
    assert _validate_warnings(a.path) == []


# -- 7: uv.lock registry sources on an explicit index: read as envkit diff reads them ---------------
UV_LOCK = """version = 1
requires-python = ">=3.12"

[[package]]
name = "numpy"
version = "2.1.3"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "proj"
version = "0.1.0"
source = { virtual = "." }
dependencies = [
    { name = "numpy" },
    { name = "torch" },
]

[[package]]
name = "torch"
version = "2.5.1+cu124"
source = { registry = "https://download.pytorch.org/whl/cu124" }
wheels = [
    { url = "https://download.pytorch.org/whl/cu124/torch-2.5.1%2Bcu124-cp312-cp312-linux_x86_64.whl" },
]
"""


def test_a_uv_lock_registry_on_an_explicit_index_is_an_index_not_a_direct_url(tmp_path: Path) -> None:
    from envkit.inventory import parse_inventory

    a = adopted(tmp_path, "uv.lock", UV_LOCK)
    assert facts(a) == ("2.5.1", "12.4", "3.12")
    assert "numpy==2.1.3" in a.adoption.pins["pip"]
    assert not any("direct URL" in x.why for x in a.adoption.lost)
    listed = {p.name: p.version for p in parse_inventory(UV_LOCK, path="uv.lock", label="uv").packages}
    assert listed["torch"] == "2.5.1+cu124"  # the one reader, as envkit diff reads it


def test_a_uv_lock_direct_url_source_is_still_reported(tmp_path: Path) -> None:
    text = UV_LOCK.replace(
        'source = { registry = "https://pypi.org/simple" }',
        'source = { url = "https://example.org/numpy-2.1.3-cp312-cp312-linux_x86_64.whl" }',
    )
    a = adopted(tmp_path, "uv.lock", text)
    assert any("numpy" in x.item and "direct URL" in x.why for x in a.adoption.lost)


# -- 8: pixi.toml ------------------------------------------------------------------------------------
PIXI = """[project]
name = "train"
channels = ["conda-forge", "pytorch"]
platforms = ["linux-64", "osx-arm64"]

[dependencies]
python = "3.11.*"
numpy = ">=1.26,<2"

[pypi-dependencies]
timm = "==0.9.16"
mylib = { git = "https://github.com/example/mylib.git" }

[feature.cuda.dependencies]
pytorch = { version = "2.3.1", channel = "pytorch" }
pytorch-cuda = "12.1.*"

[feature.cpu.dependencies]
pytorch = { version = "2.3.1", channel = "pytorch" }
cpuonly = "*"

[environments]
default = ["cuda"]
cpu = ["cpu"]
"""


def test_a_pixi_manifest_is_read_default_environment_and_features(tmp_path: Path) -> None:
    a = adopted(tmp_path, "pixi.toml", PIXI)
    assert facts(a) == ("2.3.1", "12.1", "3.11")
    assert "timm==0.9.16" in a.adoption.pins["pip"]
    assert any("mylib" in x.item and "VCS" in x.why for x in a.adoption.lost)
    assert any("read environment default" in n and "not read: cpu" in n for n in a.adoption.notes)


def test_a_pixi_environment_is_chosen_with_environment(tmp_path: Path) -> None:
    a = adopted(tmp_path, "pixi.toml", PIXI, environment="cpu")
    assert facts(a) == ("2.3.1", "cpu", "3.11")
    with pytest.raises(AdoptError, match="no environment 'gpu'"):
        adopted(tmp_path / "b", "pixi.toml", PIXI, environment="gpu")


@pytest.mark.parametrize("requirement", ['cuda = "12"', 'cuda = "12.0"', 'cuda = { version = "12.4" }'])
def test_a_cuda_system_requirement_asks_for_the_builds_cuda(tmp_path: Path, requirement: str) -> None:
    text = (
        '[workspace]\nname = "x"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n\n'
        f'[system-requirements]\n{requirement}\n\n[dependencies]\npytorch = ">=2.4,<3"\npython = "3.12.*"\n'
    )
    with pytest.raises(AdoptError) as err:
        adopted(tmp_path, "pixi.toml", text)
    assert "system requirement cuda" in err.value.message and "--cuda" in (err.value.hint or "")
    a = adopted(tmp_path / "b", "pixi.toml", text, cuda="12.6")
    assert facts(a) == (a.adoption.detected["torch"], "12.6", "3.12")


def test_pyproject_tool_pixi_and_pypi_torch_on_its_index(tmp_path: Path) -> None:
    text = (
        '[project]\nname = "p"\nrequires-python = ">=3.10"\n\n[tool.pixi.workspace]\n'
        'channels = ["conda-forge"]\nplatforms = ["linux-64"]\n\n'
        '[tool.pixi.dependencies]\npython = "3.10.*"\n\n'
        "[tool.pixi.pypi-dependencies]\n"
        'torch = { version = "==2.5.1", index = "https://download.pytorch.org/whl/cu121" }\n'
    )
    a = adopted(tmp_path, "pyproject.toml", text)
    assert facts(a) == ("2.5.1", "12.1", "3.10")


def test_a_pixi_manifest_whose_default_environment_has_no_framework_asks_which(tmp_path: Path) -> None:
    text = PIXI.replace('default = ["cuda"]\n', 'gpu = ["cuda"]\n')
    with pytest.raises(AdoptError, match="default environment has no framework") as err:
        adopted(tmp_path, "pixi.toml", text)
    assert "--environment gpu" in (err.value.hint or "")


# -- 1: NGC images: the catalog's table (envkit/catalog/data/ngc_pytorch.yaml) ----------------------
def test_an_ngc_image_is_refused_with_what_the_table_says_it_holds(tmp_path: Path) -> None:
    message = refused(tmp_path, "Dockerfile", "FROM nvcr.io/nvidia/pytorch:24.01-py3\nRUN pip install timm\n")
    assert "torch 2.2.0a0+81ea7a4" in message and "CUDA 12.3" in message and "Python 3.10" in message
    assert "unverified" in message  # 24.01's row is not from its release notes


def test_every_ngc_row_names_its_source_and_verified_rows_cite_the_release_notes() -> None:
    from envkit.catalog.ngc import _table

    rows = _table()
    assert rows and all(r.source for r in rows.values())
    for row in rows.values():
        assert not row.verified or "pytorch-release-notes" in row.source, row


def test_a_pip_torch_on_an_ngc_image_keeps_the_images_python(tmp_path: Path) -> None:
    text = "FROM nvcr.io/nvidia/pytorch:24.01-py3\nRUN pip install torch==2.2.2\n"
    a = adopted(tmp_path, "Dockerfile", text)
    assert facts(a) == ("2.2.2", "12.1", "3.10")
    assert _validate_warnings(a.path) == []


# -- found on the new real Dockerfiles (tests/corpus/init/dockerfile, klass 45.x) --------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "FROM paddlepaddle/paddle:2.6.1\nRUN python3 -m pip install paddlepaddle -i https://mirror.baidu.com/pypi/simple\n",
            ("2.6.1", "cpu"),
        ),
        (
            "FROM paddlepaddle/paddle:2.6.1-gpu-cuda11.7-cudnn8.4-trt8.4\nRUN pip install paddlepaddle-gpu\n",
            ("2.6.1", "11.7"),
        ),
        (
            "FROM pytorch/pytorch:2.1.2-cuda12.1-cudnn8-runtime\nRUN pip install torch timm==0.9.12\n",
            ("2.1.2", "12.1"),
        ),
    ],
)
def test_an_unpinned_install_of_the_images_framework_keeps_the_images_release(
    tmp_path: Path, text: str, expected: tuple[str, str]
) -> None:
    a = adopted(tmp_path, "Dockerfile", text)
    assert facts(a)[:2] == expected
    assert any("pip keeps it" in n for n in a.adoption.notes)


@pytest.mark.parametrize(
    "text",
    [
        # a local project installed beside a torch index: torch is in the project's dependencies
        "FROM python:3.12-bookworm\nCOPY . /app\nWORKDIR /app\n"
        'RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu ".[api]"\n',
        # a script installs torch from ARGs
        "FROM ubuntu:22.04\nARG torch\nCOPY install-torch.py /tmp/\n"
        "RUN python3 /tmp/install-torch.py --torch=${torch}\n",
        "FROM ubuntu:22.04\nCOPY install_paddle.sh /\nRUN bash /install_paddle.sh\n",
    ],
)
def test_a_framework_installed_by_what_envkit_does_not_read_is_refused(tmp_path: Path, text: str) -> None:
    assert "names no framework" in refused(tmp_path, "Dockerfile", text)


def test_a_python_verification_command_is_not_a_framework_install(tmp_path: Path) -> None:
    text = (
        "FROM python:3.11\n"
        'RUN pip install torch==2.1.2+cpu && python -c "import torch; print(torch.__version__)"\n'
    )
    assert facts(adopted(tmp_path, "Dockerfile", text)) == ("2.1.2", "cpu", "3.11")


def test_from_an_arg_without_default_is_reported(tmp_path: Path) -> None:
    text = "ARG BASE\nFROM ${BASE}\nRUN pip3 install torch==2.1.2 --index-url https://download.pytorch.org/whl/cu118\n"
    a = adopted(tmp_path, "Dockerfile", text)
    assert facts(a)[:2] == ("2.1.2", "11.8")
    assert any(x.item == "FROM ${BASE}" for x in a.adoption.lost)


def test_ubuntu_24_10_brings_python_3_12(tmp_path: Path) -> None:
    text = (
        "FROM ubuntu:24.10\nRUN apt install -y python3 python3-pip\n"
        "RUN pip install --break-system-packages torch==2.5.1+cpu\n"
    )
    assert facts(adopted(tmp_path, "Dockerfile", text)) == ("2.5.1", "cpu", "3.12")


@pytest.mark.parametrize(
    ("deps", "channels"),
    [
        ("  - pytorch\n  - pytorch-cuda=11.8\n", "[pytorch, nvidia]"),
        ("  - pytorch>=1.13\n  - pytorch-cuda=11.8\n", "[pytorch, nvidia, conda-forge]"),
        ("  - pytorch::pytorch>=2.0\n  - cudatoolkit=11.8\n", "[conda-forge]"),
    ],
)
def test_a_conda_pytorch_from_the_pytorch_channel_is_at_most_its_last_release(
    tmp_path: Path, deps: str, channels: str
) -> None:
    text = f"name: x\nchannels: {channels}\ndependencies:\n  - python=3.10\n{deps}"
    a = adopted(tmp_path, "environment.yml", text)
    assert Version(a.adoption.detected["torch"]) < Version("2.6"), a.adoption.how["torch"]


def test_intels_cpu_extension_index_is_not_an_xpu_stack(tmp_path: Path) -> None:
    text = (
        "torch==2.8.0+cpu\nintel_extension_for_pytorch==2.8.0\n"
        "--extra-index-url https://pytorch-extension.intel.com/release-whl/stable/cpu/us/\n"
    )
    assert facts(adopted(tmp_path, "requirements.txt", text))[:2] == ("2.8.0", "cpu")
    xpu = text.replace("2.8.0\n--", "2.8.10+xpu\n--").replace("/cpu/us/", "/xpu/us/")
    assert "Intel XPU" in refused(tmp_path / "b", "requirements.txt", xpu)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("requirements.txt", "--pre\n--index-url https://download.pytorch.org/whl/nightly/cu121\ntorch\n"),
        ("requirements.txt", "torch==2.5.0.dev20240912\n"),
        (
            "environment.yml",
            "name: x\nchannels: [pytorch-nightly, nvidia]\n"
            "dependencies:\n  - pytorch\n  - pytorch-cuda=12.1\n",
        ),
        (
            "Dockerfile",
            "FROM python:3.10\n"
            "RUN pip install --pre paddlepaddle-gpu -i https://www.paddlepaddle.org.cn/packages/nightly/cu123/\n",
        ),
    ],
)
def test_a_nightly_framework_build_is_refused_never_read_as_the_newest_release(
    tmp_path: Path, name: str, text: str
) -> None:
    assert "nightly build" in refused(tmp_path, name, text)


def test_a_nightly_index_beside_a_released_framework_pin_is_not_a_nightly_framework(tmp_path: Path) -> None:
    text = "torch==2.1.2+cpu\n-f https://download.pytorch.org/whl/nightly/torchrec_nightly/index.html\ntorchrec\n"
    assert facts(adopted(tmp_path, "requirements.txt", text))[:2] == ("2.1.2", "cpu")


@pytest.mark.parametrize(
    ("comment", "python"),
    [
        ("# Python version: 3.11.7 (please specify this in your README or virtual environment)\n", "3.11"),
        ("# requirements file\n# python 3.10\n", "3.10"),
        ("# python>=3.8 required\n", None),  # a floor, not the Python the author ran
    ],
)
def test_a_python_stated_in_a_requirements_comment_is_carried(
    tmp_path: Path, comment: str, python: str | None
) -> None:
    a = adopted(tmp_path, "requirements.txt", comment + "torch==2.1.2+cpu\n")
    if python:
        assert facts(a)[2] == python and "a comment stating it" in a.adoption.how["python"]
    else:
        assert "not stated" in a.adoption.how["python"]


def test_a_python_named_by_a_base_image_variable_runs_pip(tmp_path: Path) -> None:
    text = (
        "FROM hub.example.org/runner/gpu:python3.11_cuda11.8_opencv\n"
        "RUN ${DL_PYTHON_EXECUTABLE} -m pip install --no-cache-dir --user 'torch==2.4.1' 'torchvision'\n"
    )
    assert facts(adopted(tmp_path, "Dockerfile", text)) == ("2.4.1", "12.1", "3.11")
