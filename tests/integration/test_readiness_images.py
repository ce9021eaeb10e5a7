"""``envkit check`` on the real Paddle flagship image and on faults planted in images derived from it.

The flagship is ``cuda_paddle_image`` (tests/integration/conftest.py: ``envkit build
cuda11.8-paddle2.6`` from NVIDIA's PyPI wheels) or, to reuse one already built, the image named by
``ENVKIT_CUDA_PADDLE_IMAGE``. Each planted fault is a two-line Dockerfile over it (removed after the
module). No GPU: the verdicts for H100/A100/RTX 5090 and for host drivers are predictions.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.readiness.check import CheckResult, check, facts_in_image
from envkit.readiness.facts import ReadinessFacts
from envkit.readiness.targets import Target, gpu_target, host_targets
from tests.conftest import docker_available

pytestmark = [pytest.mark.docker, pytest.mark.slow]
CPU_TORCH = sorted(Path(os.environ.get("ENVKIT_TORCH_WHEELS", "/opt/wheels")).glob("torch-2.13.0+cpu-*.whl"))
TAG = f"envkit-itest{os.getpid()}/readiness"


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    if not docker_available():
        pytest.skip("no Docker engine reachable")
    return DockerEngine()


@pytest.fixture(scope="module")
def flagship(request: pytest.FixtureRequest, engine: DockerEngine) -> str:
    named = os.environ.get("ENVKIT_CUDA_PADDLE_IMAGE")
    if named:
        if engine.inspect(named) is None:
            pytest.skip(f"ENVKIT_CUDA_PADDLE_IMAGE={named} is not in the engine")
        return named
    try:
        return str(request.getfixturevalue("cuda_paddle_image"))
    except pytest.FixtureLookupError:
        pytest.skip("no cuda_paddle_image fixture (the CUDA image build) and no ENVKIT_CUDA_PADDLE_IMAGE")


@pytest.fixture(scope="module")
def flagship_facts(engine: DockerEngine, flagship: str) -> ReadinessFacts:
    return facts_in_image(engine, flagship, load_catalog())


@pytest.fixture(scope="module")
def derived(engine: DockerEngine) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for tag in made:
        engine.remove(tag)


def derive(
    engine: DockerEngine, made: list[str], base: str, name: str, steps: str, files: dict[str, bytes]
) -> str:
    """``FROM base`` + ``steps`` (root, then the image's user again), with ``files`` in the context."""
    user = engine.api.inspect_image(base)["Config"].get("User") or "root"
    dockerfile = f"FROM {base}\nUSER root\n{steps}\nUSER {user}\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in {"Dockerfile": dockerfile.encode(), **files}.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    tag = f"{TAG}-{name}"
    for chunk in engine.api.build(
        fileobj=buf, custom_context=True, tag=tag, rm=True, forcerm=True, decode=True
    ):
        assert "error" not in chunk, chunk
    made.append(tag)
    return tag


def site(facts: ReadinessFacts) -> str:
    return facts.frameworks["paddle"].directory.rsplit("/", 1)[0]


def verdicts(facts: ReadinessFacts, *targets: Target) -> CheckResult:
    return check(facts, list(targets), load_catalog(), where="image")


def messages(result: CheckResult, severity: str = "error", i: int = 0) -> list[str]:
    return [f.message for f in result.verdicts[i].findings if f.severity == severity]


def test_flagship_resolves_every_library_and_names_what_loads(flagship_facts: ReadinessFacts) -> None:
    paddle = flagship_facts.frameworks["paddle"]
    assert (paddle.version, paddle.cuda, paddle.cudnn) == ("2.6.2", "11.8", "8.6.0")
    assert paddle.loaded.versions["cudnn"] == 8600  # cuDNN 8.6.0, as loaded
    assert str(paddle.loaded.versions["cublas"]).startswith("11.11.")
    result = verdicts(flagship_facts)
    assert messages(result) == [], "every library resolves and loads"
    assert all(o.to for o in paddle.opened), paddle.opened


def test_flagship_on_h100_names_sm90_and_on_a100_is_ready(flagship_facts: ReadinessFacts) -> None:
    catalog = load_catalog()
    result = verdicts(flagship_facts, gpu_target("H100", catalog), gpu_target("A100", catalog))
    assert result.verdicts[0].status == "will-fail"
    assert any(
        m.startswith("no kernel image for sm_90 in libphi.so (665 of 666 fatbins)") for m in messages(result)
    )
    assert result.verdicts[1].status == "ready"


def test_a_newer_gpu_without_ptx_fails_and_ptx_only_libraries_warn(flagship_facts: ReadinessFacts) -> None:
    result = verdicts(flagship_facts, gpu_target("RTX5090", load_catalog()))
    assert any(m.startswith("no kernel image for sm_120 in libphi.so (666 of 666") for m in messages(result))
    jit = messages(result, "warning")
    assert any(
        m.startswith("libcublasLt.so.11: no SASS for sm_120") and "PTX compute_90 only" in m for m in jit
    )


def test_host_reports_below_the_floor_and_between_floors(
    flagship_facts: ReadinessFacts, tmp_path: Path
) -> None:
    old = tmp_path / "old-smi.txt"
    old.write_text(
        "| NVIDIA-SMI 418.87.01    Driver Version: 418.87.01    CUDA Version: 10.1 |\n"
        "|   0  NVIDIA A100-SXM4-40GB     On   | 00000000:07:00.0 Off |\n"
    )
    mid = tmp_path / "mid-smi.txt"
    mid.write_text("name, driver_version\nNVIDIA A100-SXM4-80GB, 470.82.01\n")
    catalog = load_catalog()
    result = verdicts(flagship_facts, *host_targets(old, catalog), *host_targets(mid, catalog))
    assert result.verdicts[0].status == "will-fail"
    assert any(
        m.startswith("driver 418.87.01 on a CUDA 11.x runtime: below the 450.80.02 floor")
        for m in messages(result)
    )
    assert result.verdicts[1].status == "ready"
    assert any(
        "at or above 450.80.02, the floor of CUDA 11 minor-version" in m for m in messages(result, "note", 1)
    )


def test_cudnn_removed(
    engine: DockerEngine, flagship: str, flagship_facts: ReadinessFacts, derived: list[str]
) -> None:
    tag = derive(engine, derived, flagship, "no-cudnn", f"RUN rm -rf {site(flagship_facts)}/nvidia/cudnn", {})
    result = verdicts(facts_in_image(engine, tag, load_catalog()), gpu_target("A100", load_catalog()))
    assert result.verdicts[0].status == "will-fail"
    assert any(
        m.startswith("libcudnn.so.8 missing: Paddle's dynload fails at the first conv")
        for m in messages(result)
    )


def test_paddle_cu118_without_cuda11_cublas(
    engine: DockerEngine, flagship: str, flagship_facts: ReadinessFacts, derived: list[str]
) -> None:
    # what a CUDA 12 runtime base lacks for this cu11.8 build: CUDA 11's cuBLAS (libcublas.so.11)
    tag = derive(
        engine, derived, flagship, "no-cublas11", f"RUN rm -rf {site(flagship_facts)}/nvidia/cublas", {}
    )
    found = messages(verdicts(facts_in_image(engine, tag, load_catalog())))
    assert any(
        m.startswith("libcublas.so.11 missing: Paddle's dynload fails at the first matmul") for m in found
    )


@pytest.mark.skipif(not CPU_TORCH, reason="no torch 2.13.0+cpu wheel in ENVKIT_TORCH_WHEELS")
def test_a_cpu_torch_in_the_cuda_image(
    engine: DockerEngine, flagship: str, flagship_facts: ReadinessFacts, derived: list[str]
) -> None:
    with zipfile.ZipFile(CPU_TORCH[0]) as z:  # the CPU wheel's own files: its version module and a library
        files = {
            n: z.read(n)
            for n in ("torch/version.py", "torch/lib/libc10.so", "torch/lib/libtorch_global_deps.so")
        }
    tag = derive(engine, derived, flagship, "cpu-torch", f"COPY torch {site(flagship_facts)}/torch", files)
    found = messages(verdicts(facts_in_image(engine, tag, load_catalog())))
    assert any(m.startswith("CPU-only torch 2.13.0+cpu in a CUDA image") for m in found)


def test_the_cli_on_the_image(flagship: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", flagship, "--gpu", "A100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["result"]["verdicts"][0]["status"] == "ready"
    assert out["result"]["summary"]["frameworks"]["paddle"]["loaded"]["cudnn"] == "8.6.0"


def test_a_probe_of_the_flagship_carries_its_readiness_facts(
    flagship: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`envkit probe --image` of a CUDA image: its fingerprint names what loads and the GPU code."""
    argv = ["probe", "--image", flagship, "--frameworks", "paddle", "--workloads", "rnn", "--steps", "2"]
    assert main([*argv, "--no-store", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["result"]["report"]
    facts = report["fingerprint"]["cuda_readiness"]
    paddle = facts["frameworks"]["paddle"]
    assert paddle["cuda_build"] == "11.8" and paddle["cudnn_build"] == "8.6.0"
    assert paddle["loaded"]["cudnn"] == "8.6.0" and paddle["loaded"]["cublas"] == "11.11.3"
    assert any(p.endswith("/nvidia/cudnn/lib/libcudnn.so.8") for p in paddle["loaded_files"])
    phi = facts["gpu_code"]["libphi.so"]
    assert phi["fatbins"] == 666 and phi["ptx"] == [] and {"sm_61", "sm_86"} <= set(phi["sass"])
    assert report["driver"]["min_driver"] and report["driver"]["compat_driver"]  # the floors


def test_the_flagship_sbom_with_its_readiness_facts(flagship: str, tmp_path: Path) -> None:
    """`envkit check IMAGE --sbom FILE`: the image's own SBOM (label-checked) plus the facts."""
    out = tmp_path / "sbom.cdx.json"
    assert main(["check", flagship, "--sbom", str(out)]) == 0
    doc = json.loads(out.read_text("utf-8"))
    props = {p["name"]: p.get("value") for p in doc["metadata"]["component"]["properties"]}
    assert props["envkit:gpu:paddle:loaded:cudnn"] == "8.6.0"
    assert props["envkit:gpu:code:libphi.so:ptx"] == "none"
    assert props["envkit:cuda:driver-floor:minor-version"] == "450.80.02"
    assert doc["version"] == 2 and any(c["name"] == "nvidia-cudnn-cu11" for c in doc["components"])
