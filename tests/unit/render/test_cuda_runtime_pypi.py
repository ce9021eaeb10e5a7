"""``cuda_runtime: pypi`` (issue 31): NVIDIA's PyPI runtime wheels on a base with no CUDA, no registry.

The catalog's wheel sets, the lock inputs they add (pinned for Paddle, names only for torch, which
pins them itself), the render (base and why, loader links, the NVIDIA container contract) and the
spec checks that refuse what cannot work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.errors import SpecError
from envkit.lock.inputs import cuda_runtime_requirements, framework_requirements, lock_inputs
from envkit.render import render_image
from envkit.render.dockerfile import CUDA_LIB_DIR, nvidia_contract
from envkit.spec.load import LoadedSpec, load_spec, spec_hash

REPO = Path(__file__).resolve().parents[3]

PADDLE = """\
name: t
python: "3.11"
cuda: "11.8"
installer: venv
cuda_runtime: pypi
frameworks:
  paddle: "2.6.2"
"""


def _load(tmp_path: Path, text: str) -> LoadedSpec:
    path = tmp_path / "t.yaml"
    path.write_text(text, "utf-8")
    return load_spec(path)


def _problems(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as info:
        _load(tmp_path, text)
    return " ".join(f"{p.message} (hint: {p.hint})" for p in info.value.problems)


def test_every_wheel_set_names_its_cudnn_and_sources() -> None:
    catalog = load_catalog()
    assert {s.cuda for s in catalog.cuda_wheel_sets} >= {"11.8", "12.4", "13.2"}
    for found in catalog.cuda_wheel_sets:
        assert catalog.cuda_release(found.cuda) is not None, found.cuda  # driver floors come from there
        components = {w.component for w in found.wheels}
        assert {"cudart", "cublas", "cufft", "curand", "cusolver", "cusparse", "nccl", "nvrtc"} <= components
        assert ("nvjitlink" in components) == (Version(found.cuda) >= Version("12"))  # new in CUDA 12
        assert found.cudnn and all(w.package == found.cudnn_package for w in found.cudnn)
        assert all(w.version in found.cudnn_on_pypi for w in found.cudnn), found.cuda
        assert found.sources and all(s.url.startswith("https://pypi.org/pypi/") for s in found.sources)


def test_the_flagship_pair_is_what_paddle_was_built_for() -> None:
    """paddlepaddle-gpu 2.6.2: cuda_version '11.8', cudnn_version '8.6.0' (its paddle/version)."""
    found = load_catalog().cuda_wheels("11.8")
    assert found is not None
    cudnn = found.cudnn_for("8.6")
    assert cudnn is not None and cudnn.requirement == "nvidia-cudnn-cu11==8.6.0.163"
    assert "libcudnn.so.8" in cudnn.libraries
    assert found.cudnn_for("8.60") is None  # a minor is matched whole, not as a prefix
    assert found.cudnn_for("7.6") is None
    cudart = next(w for w in found.wheels if w.component == "cudart")
    assert cudart.requirement == "nvidia-cuda-runtime-cu11==11.8.89"


def test_paddle_gets_pinned_runtime_wheels(tmp_path: Path) -> None:
    loaded = _load(tmp_path, PADDLE)
    lines = cuda_runtime_requirements(loaded.resolved)
    assert "nvidia-cudnn-cu11==8.6.0.163" in lines
    assert "nvidia-cublas-cu11==11.11.3.6" in lines
    assert all("==" in line for line in lines)
    assert not any("nvjitlink" in line for line in lines)  # CUDA 11 has none
    requirements = lock_inputs(loaded.resolved).platform("linux-64").pip.requirements
    assert "paddlepaddle-gpu==2.6.2" in requirements and "nvidia-cudnn-cu11==8.6.0.163" in requirements


def test_torch_pins_its_own_wheels_so_the_set_only_names_them(tmp_path: Path) -> None:
    text = PADDLE.replace('cuda: "11.8"', 'cuda: "13.2"').replace('paddle: "2.6.2"', 'torch: "2.15.0"')
    lines = cuda_runtime_requirements(_load(tmp_path, text).resolved)
    assert "nvidia-cudnn-cu13" in lines and "nvidia-nvjitlink" in lines
    assert [line for line in lines if "==" in line] == ["nvidia-curand==10.4.2.66"]  # torch pins no cuRAND


def test_pypi_runtime_takes_pypis_own_torch_not_the_framework_index(tmp_path: Path) -> None:
    """torch 2.5.1 on PyPI is CUDA 12.4: no ``+cu124`` from an index this site cannot reach."""
    text = PADDLE.replace('cuda: "11.8"', 'cuda: "12.4"').replace('paddle: "2.6.2"', 'torch: "2.5.1"')
    loaded = _load(tmp_path, text)
    assert framework_requirements(loaded.resolved) == ["torch==2.5.1"]
    image = _load(tmp_path, text.replace("cuda_runtime: pypi\n", "base_image: python:3.11-slim-bookworm\n"))
    assert framework_requirements(image.resolved) == ["torch==2.5.1+cu124"]


def test_the_default_runtime_is_still_nvidia_cuda_and_the_hash_is_unchanged(tmp_path: Path) -> None:
    text = 'name: t\npython: "3.10"\ncuda: "11.8"\nframeworks:\n  paddle: "2.6.2"\n'
    loaded = _load(tmp_path, text)
    base = loaded.resolved.runtime
    assert base.ref.startswith("nvidia/cuda:11.8") and not base.pypi_cuda
    assert "cuda_runtime: image (the default)" in base.reason
    assert cuda_runtime_requirements(loaded.resolved) == []
    explicit = _load(tmp_path, text + "cuda_runtime: image\n")
    assert spec_hash(explicit.spec) == spec_hash(loaded.spec)  # a new field at its default hashes as before
    assert spec_hash(_load(tmp_path, text + "cuda_runtime: pypi\n").spec) != spec_hash(loaded.spec)


def test_render_says_which_base_and_why_and_carries_the_nvidia_contract(tmp_path: Path) -> None:
    loaded = _load(tmp_path, PADDLE)
    text = render_image(loaded).files["Dockerfile"].decode()
    assert "FROM envkit/debian-python:bookworm AS builder" in text
    assert "# runtime base: envkit/debian-python:bookworm: cuda_runtime: pypi" in text
    assert "FROM envkit/debian-python:bookworm AS runtime" in text
    assert 'NVIDIA_VISIBLE_DEVICES="all"' in text
    assert 'NVIDIA_DRIVER_CAPABILITIES="compute,utility"' in text
    assert 'NVIDIA_REQUIRE_CUDA="cuda>=11.8 driver>=450.80.02"' in text  # toolkit floor or MVC floor
    assert f"printf '%s\\n' {CUDA_LIB_DIR} > /etc/ld.so.conf.d/envkit-cuda.conf" in text
    assert "ldconfig && rm -f /var/cache/ldconfig/aux-cache" in text
    assert "for lib in libcublas.so.11 libcublasLt.so.11 libcudart.so.11.0 libcudnn.so.8 " in text
    assert "python3.11/site-packages/nvidia/*/lib/lib*.so*" in text
    assert 'io.envkit.cuda-runtime="pypi"' in text
    assert "nvcr.io" not in text and "nvidia/cuda" not in text


def test_the_require_cuda_floors_come_from_the_catalog(tmp_path: Path) -> None:
    catalog = load_catalog()
    for cuda in ("11.8", "12.4", "13.2"):
        release = catalog.cuda_release(cuda)
        assert release is not None
        text = PADDLE.replace('cuda: "11.8"', f'cuda: "{cuda}"').replace(
            'frameworks:\n  paddle: "2.6.2"\n', ""
        )
        contract = nvidia_contract(_load(tmp_path, text).resolved)
        assert contract["NVIDIA_REQUIRE_CUDA"] == f"cuda>={cuda} driver>={release.compat_driver}"


def test_cpu_spec_with_pypi_runtime_is_refused(tmp_path: Path) -> None:
    text = 'name: t\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: envkit/debian-python:bookworm\n'
    assert "cuda_runtime: pypi is for CUDA specs" in _problems(tmp_path, text + "cuda_runtime: pypi\n")


def test_a_cuda_without_pypi_wheels_is_refused_naming_those_that_have_them(tmp_path: Path) -> None:
    text = PADDLE.replace('cuda: "11.8"', 'cuda: "11.2"').replace('paddle: "2.6.2"', 'torch: "1.9.0"')
    found = _problems(tmp_path, text.replace('python: "3.11"', 'python: "3.8"'))
    assert "no NVIDIA runtime wheels on PyPI for CUDA 11.2" in found and "11.8" in found


def test_a_cudnn_the_catalog_does_not_pin_is_refused(tmp_path: Path) -> None:
    """Paddle 2.6.2 for CUDA 12.0 wants cuDNN 8.9: no 12.0 wheel set, so the CUDA is named first."""
    text = PADDLE.replace('cuda: "11.8"', 'cuda: "12.0"')
    assert "CUDA 12.0" in _problems(tmp_path, text)


def test_shipped_flagship_uses_the_pypi_runtime() -> None:
    loaded = load_spec(REPO / "environments" / "cuda11.8-paddle2.6.yaml")
    assert loaded.resolved.runtime.pypi_cuda
    lock = (REPO / "images" / "cuda11.8-paddle2.6" / "requirements.lock").read_text("utf-8")
    for pin in (
        "paddlepaddle-gpu==2.6.2",
        "nvidia-cudnn-cu11==8.6.0.163",
        "nvidia-cuda-runtime-cu11==11.8.89",
    ):
        assert f"\n{pin} \\\n    --hash=sha256:" in lock, pin  # pinned and hashed like every package


@pytest.mark.parametrize("value", ["conda", "PyPI", "''", "[pypi]", "pypi; rm -rf /"])
def test_a_cuda_runtime_that_is_not_image_or_pypi_is_refused(tmp_path: Path, value: str) -> None:
    text = PADDLE.replace("cuda_runtime: pypi", f"cuda_runtime: {value}")
    with pytest.raises(SpecError) as info:
        _load(tmp_path, text)
    assert [p.line for p in info.value.problems if p.field == "cuda_runtime"] == [5]  # file:line of the key


def test_envkit_render_names_the_runtime_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "t.yaml").write_text(PADDLE, "utf-8")
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    assert main(["render", "t", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["runtime_base"]["image"] == "envkit/debian-python:bookworm"
    assert result["runtime_base"]["cuda_from_pypi"] is True
    assert "no container registry needed" in result["runtime_base"]["reason"]
    assert main(["render", "t"]) == 0
    assert "runtime base: envkit/debian-python:bookworm (cuda_runtime: pypi" in capsys.readouterr().out
