"""CUDA images built here with no GPU, no registry and no conda channel (issue 31; marker ``docker``).

The flagship ``cuda11.8-paddle2.6`` (the session's ``cuda_paddle_image``: NVIDIA's PyPI CUDA 11.8
wheels on the debootstrapped Debian) imports a CUDA-built Paddle, its loader finds every CUDA library
by the names Paddle's dynload opens, and its config carries the NVIDIA container contract. The torch
CUDA 13.2 image is built by a slow test. Loading a CUDA library needs no device; ``libcuda.so.1``
(the driver) is the host's, injected by the NVIDIA Container Toolkit, so it is absent here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.engine.docker_api import DockerEngine
from tests.integration.conftest import shipped_image

pytestmark = pytest.mark.docker

PADDLE_CHECK = """
import ctypes, json, paddle
from paddle.version import cuda, cudnn
for name in ("libcudnn.so.8", "libcudnn.so", "libcublas.so.11", "libcublas.so", "libcublasLt.so.11",
             "libcudart.so.11.0", "libcusolver.so.11", "libcusparse.so.11", "libcurand.so.10",
             "libcufft.so.10", "libnccl.so.2", "libnvrtc.so.11.2", "libcupti.so.11.8"):
    ctypes.CDLL(name)  # by name, as Paddle's dynload does: the loader's cache must know it
def out(lib, fn, *args):
    v = ctypes.c_int(-1); code = getattr(ctypes.CDLL(lib), fn)(*args, ctypes.byref(v)); return [code, v.value]
dnn = ctypes.CDLL("libcudnn.so.8"); dnn.cudnnGetVersion.restype = ctypes.c_size_t
print(json.dumps({"compiled_with_cuda": paddle.is_compiled_with_cuda(), "cuda": cuda(), "cudnn": cudnn(),
                  "cudnn_loaded": dnn.cudnnGetVersion(),
                  "cublas": [out("libcublas.so.11", "cublasGetProperty", i)[1] for i in range(3)],
                  "nccl": out("libnccl.so.2", "ncclGetVersion"),
                  "driver": out("libcudart.so.11.0", "cudaDriverGetVersion")}))
"""


# the torch CUDA images: ~10-35 min and ~20-25 GB of transient disk each here, beyond CI's budget beside
# the Paddle flagship
TORCH_CUDA_BUILD = pytest.mark.skipif(
    os.environ.get("ENVKIT_BUILD_TORCH_CUDA") != "1",
    reason="set ENVKIT_BUILD_TORCH_CUDA=1 to build the torch CUDA images",
)


def _run(image: str, *argv: str) -> str:
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image, *argv],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_flagship_paddle_is_cuda_built_and_finds_its_cuda_libraries(cuda_paddle_image: str) -> None:
    lines = [line for line in _run(cuda_paddle_image, "python", "-c", PADDLE_CHECK).splitlines() if line]
    report = json.loads(lines[-1])
    assert report["compiled_with_cuda"] is True
    assert report["cuda"] == "11.8" and report["cudnn"] == "8.6.0"
    # the versions as loaded, no device needed (CUDA 11.8's cudaRuntimeGetVersion needs a driver:
    # it returns cudaErrorInsufficientDriver here, so the runtime is read from the wheel's cuBLAS/NCCL)
    assert report["cudnn_loaded"] == 8600  # cudnnGetVersion: cuDNN 8.6.0
    assert report["cublas"] == [11, 11, 3]  # cublasGetProperty(MAJOR, MINOR, PATCH): cuBLAS 11.11.3
    assert report["nccl"] == [0, 21903]  # ncclGetVersion: NCCL 2.19.3
    assert report["driver"] == [0, 0]  # cudaDriverGetVersion: no driver in the image (the host's, at run)


def test_flagship_config_carries_the_nvidia_contract_and_no_driver(cuda_paddle_image: str) -> None:
    info = DockerEngine().api.inspect_image(cuda_paddle_image)
    env = dict(item.split("=", 1) for item in info["Config"]["Env"])
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert env["NVIDIA_REQUIRE_CUDA"] == "cuda>=11.8 driver>=450.80.02"
    assert info["Config"]["Labels"]["io.envkit.cuda-runtime"] == "pypi"
    cache = _run(cuda_paddle_image, "bash", "-c", "ldconfig -p")
    assert "libcudnn.so.8 " in cache and "/opt/env/lib/cuda/libcudnn.so.8" in cache
    assert "libcuda.so.1" not in cache  # the driver is the host's (NVIDIA Container Toolkit)


@pytest.mark.slow
@TORCH_CUDA_BUILD
def test_torch_cuda_13_2_image_builds_with_no_registry(tmp_path: Path) -> None:
    """``cuda13.2-torch2.15``: torch 2.15.0 and the CUDA 13 wheels it pins, on the Debian base."""
    check = (
        "import ctypes, json, torch; ctypes.CDLL('libcudnn.so.9'); ctypes.CDLL('libcublas.so.13'); "
        "print(json.dumps({'cuda': torch.version.cuda, 'cudnn': torch.backends.cudnn.version(), "
        "'archs': torch.cuda.get_arch_list()}))"
    )
    with shipped_image(tmp_path, "cuda13.2-torch2.15") as built:
        report = json.loads(_run(str(built["tag"]), "python", "-c", check).splitlines()[-1])
    assert report["cuda"] == "13.2"
    assert report["cudnn"] == 92600  # cuDNN 9.26 loaded by torch without a device
    # the SASS targets it was built for (measured here: sm_75, sm_80, sm_86, sm_90, sm_100, sm_120)
    assert {"sm_80", "sm_90", "sm_120"} <= set(report["archs"])


@pytest.mark.slow
@TORCH_CUDA_BUILD
def test_torch_cuda_12_4_image_builds_and_check_names_the_rtx_50xx_failure(tmp_path: Path) -> None:
    """``cuda12.4-torch2.5``: PyPI's torch 2.5.1 (its cu124 build) and the cu12 wheels it pins. That torch
    carries SASS up to sm_90 and no PTX: ``envkit check`` says an RTX 5090 (sm_120) has no kernel image."""
    check = (
        "import ctypes, json, torch; ctypes.CDLL('libcudnn.so.9'); ctypes.CDLL('libcublas.so.12'); "
        "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, "
        "'cudnn': torch.backends.cudnn.version()}))"
    )
    with shipped_image(tmp_path, "cuda12.4-torch2.5") as built:
        tag = str(built["tag"])
        report = json.loads(_run(tag, "python", "-c", check).splitlines()[-1])
        done = subprocess.run(
            [sys.executable, "-m", "envkit", "check", tag, "--gpu", "RTX5090", "--gpu", "H100", "--json"],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
    assert report == {"torch": "2.5.1+cu124", "cuda": "12.4", "cudnn": 90100}  # measured here, no device
    assert done.returncode == 1, done.stderr[-2000:]  # a target will fail
    verdicts = {v["target"]["gpu"]: v for v in json.loads(done.stdout)["result"]["verdicts"]}
    rtx = verdicts["RTX5090"]
    assert rtx["status"] == "will-fail"
    messages = [f["message"] for f in rtx["findings"]]
    assert any("no kernel image for sm_120 in libtorch_cuda.so" in m for m in messages), messages
