"""The CUDA-variant guard: what each locked framework build is, and the refusal (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.errors import ExitCode, UsageError
from envkit.lock import CondaPackage, PipPackage, lock_environment
from envkit.lock.inputs import lock_inputs
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from envkit.lock.variant import check_variants, conda_variant, pip_variant
from envkit.spec.load import load_spec

SHA = "ab" * 32


def conda(name: str, build: str, depends: tuple[str, ...] = ()) -> CondaPackage:
    url = f"https://example.org/ch/linux-64/{name}-2.1.2-{build}.conda"
    return CondaPackage(name, "2.1.2", build, url, "cd" * 16, SHA, "linux-64", "linux-64", depends)


def pip(name: str, version: str) -> PipPackage:
    return PipPackage(name, version, f"https://example.org/{name}-{version}.whl", (SHA,))


@pytest.mark.parametrize(
    ("package", "kind"),
    [
        (conda("pytorch", "cuda120_py311h_0"), "cuda"),  # conda-forge
        (conda("pytorch", "cpu_mkl_py311h_101"), "cpu"),
        (conda("pytorch", "py3.11_cuda12.1_cudnn8.9.2_0"), "cuda"),  # pytorch channel
        (conda("pytorch", "py3.11_cpu_0"), "cpu"),
        (conda("pytorch", "h0", ("pytorch-cuda 12.1.*",)), "cuda"),
        (conda("pytorch", "h0", ("cpuonly",)), "cpu"),
        (conda("pytorch-cpu", "h0"), "cpu"),
        (conda("paddlepaddle-gpu", "h0"), "cuda"),
        (conda("paddlepaddle", "h0"), "cpu"),
        (conda("pytorch", "h0"), None),  # says nothing: not judged
        (conda("numpy", "cuda120_h0"), None),  # not a framework
    ],
)
def test_conda_variants(package: CondaPackage, kind: str | None) -> None:
    variant = conda_variant(package)
    assert (variant.kind if variant else None) == kind


@pytest.mark.parametrize(
    ("package", "names", "kind"),
    [
        (pip("torch", "2.1.2+cpu"), (), "cpu"),
        (pip("torch", "2.1.2+cu121"), (), "cuda"),
        (pip("torch", "2.6.0"), ("nvidia-cuda-runtime-cu12",), "cuda"),
        (pip("torch", "2.13.0"), ("cuda-toolkit",), "cuda"),
        (pip("torch", "2.6.0"), (), None),
        (pip("paddlepaddle", "2.6.2"), (), "cpu"),
        (pip("paddlepaddle-gpu", "2.6.2.post120"), (), "cuda"),
    ],
)
def test_pip_variants(package: PipPackage, names: tuple[str, ...], kind: str | None) -> None:
    variant = pip_variant(package, names)
    assert (variant.kind if variant else None) == kind


def test_cpu_build_in_a_cuda_spec_names_package_got_and_needed() -> None:
    with pytest.raises(UsageError) as info:
        check_variants("12.1", {"linux-64": (conda("pytorch", "cpu_mkl_py311h_101"),)}, {})
    message = info.value.message
    assert info.value.exit_code == ExitCode.USAGE
    assert "pytorch 2.1.2" in message and "a CPU build (cpu_mkl_py311h_101)" in message
    assert "needs a CUDA 12.1 build" in message
    check_variants("12.1", {"linux-64": (conda("pytorch", "cuda120_py311h_0"),)}, {})


def test_cuda_build_in_a_cpu_spec_is_refused() -> None:
    with pytest.raises(
        UsageError, match=r"torch 2\.1\.2\+cu121 to a CUDA build \(\+cu121\).*needs a CPU build"
    ):
        check_variants("cpu", {}, {"linux-64": (pip("torch", "2.1.2+cu121"),)})
    with pytest.raises(UsageError, match="nvidia-"):
        pkgs = (pip("torch", "2.6.0"), pip("nvidia-cudnn-cu12", "9.1.0.70"))
        check_variants("cpu", {}, {"linux-64": pkgs})
    check_variants("cpu", {}, {"linux-64": (pip("torch", "2.1.2+cpu"),)})


def test_lock_refuses_and_writes_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "environments" / "demo.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text('name: demo\npython: "3.11"\ncuda: "12.1"\nconda:\n  - pytorch\n')
    loaded = load_spec(spec)
    solver = FakeCondaSolver({"linux-64": (conda("pytorch", "cpu_mkl_py311h_101"),)})
    with pytest.raises(UsageError, match="CPU build"):
        lock_environment(loaded, tmp_path / "out", solver, FakePipResolver())
    assert not (tmp_path / "out").exists()


def test_conda_lock_of_a_cuda_spec_pins_cuda_version(tmp_path: Path) -> None:
    spec = tmp_path / "environments" / "demo.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text('name: demo\npython: "3.11"\ncuda: "12.1"\nconda:\n  - pytorch\n')
    request = lock_inputs(load_spec(spec).resolved).conda_request("linux-64", ())
    assert request is not None and "cuda-version 12.1.*" in request.specs
    spec.write_text('name: demo\npython: "3.11"\ncuda: cpu\nconda:\n  - pytorch\n')
    request = lock_inputs(load_spec(spec).resolved).conda_request("linux-64", ())
    assert request is not None and not any(s.startswith("cuda-version") for s in request.specs)
