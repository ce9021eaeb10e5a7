"""`envkit lock` with `gpus:` on PyPI's real torch CUDA wheel: torch 2.15.0+cu132 (539 MB, sha256-pinned
in ``cuda_wheels.py``; the wheel the readiness cache already holds, so CI downloads nothing more).

What the wheel carries (envkit's reader; equal to NVIDIA's cuobjdump in
``test_readiness_real_wheels.py::test_archs_equal_cuobjdumps`` and, for 2.15.0 and 2.14.1+cu130, to a
separate readelf + fatbin-header parse made by hand when this test was written): ``libtorch_cuda.so``
476 fatbins, every one sm_75, sm_80, sm_86, sm_90, sm_100, sm_120 (sm_103 in 59, sm_90a in 4), no PTX;
``libtorch_nvshmem.so`` the same six; ``libtorch_cuda_linalg.so`` (opened on first use, not linked by
the import) sm_80 ... sm_120 (sm_75 in 1 of 33). So no Volta: torch's CUDA 12.8+ builds start at sm_75
(pytorch/pytorch#172352, the 2026 architecture RFC: cu126 5.0-9.0, cu128 and cu130 7.5-12.0) and
CUDA 13 cannot compile for capability < 7.5 (quoted in mudler/LocalAI#9948); 2.14.1+cu130 is the same
(its linalg library: not even sm_75). A V100 fails at lock time naming the wheel and file, an H100
passes, and the image's NVIDIA_REQUIRE_ARCH is derived from the two libraries the import loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.cli._services import Services
from envkit.lock import PipPackage
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from tests.integration.cuda_wheels import PINNED, wheel

pytestmark = pytest.mark.slow
SPEC = 'name: team\npython: "3.11"\ncuda: "13.2"\ninstaller: miniforge\npip: [torch]\ngpus: [{gpus}]\n'


def _lock(root: Path, gpus: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    torch = wheel("torch==2.15.0")
    (root / "environments").mkdir(exist_ok=True)
    (root / "environments" / "team.yaml").write_text(SPEC.format(gpus=gpus))
    pin = PipPackage(
        "torch", "2.15.0", f"https://files.pythonhosted.org/x/{torch.name}", (PINNED["torch==2.15.0"],)
    )
    services = Services(solver_factory=lambda: (FakeCondaSolver(), FakePipResolver((pin,))))
    code = main(["lock", "team", "--archives", str(torch.parent), "--json"], services=services)
    return code, json.loads(capsys.readouterr().out)["result"]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    return tmp_path


def test_a_volta_fails_at_lock_time_on_the_real_torch_wheel_and_an_h100_passes(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result = _lock(root, "V100", capsys)
    assert code == 1
    (verdict,) = result["gpu_code"]["verdicts"]
    errors = [(f["package"], f["file"], f["code"]) for f in verdict["findings"] if f["severity"] == "error"]
    name = wheel("torch==2.15.0").name
    assert errors == [
        ("torch 2.15.0", f"{name}:torch/lib/libtorch_cuda.so", "wheel-no-kernel-image"),
        ("torch 2.15.0", f"{name}:torch/lib/libtorch_nvshmem.so", "wheel-no-kernel-image"),
        (None, "gpu-code.json", "toolkit-requirement-unmet"),
    ]
    messages = [f["message"] for f in verdict["findings"]]
    assert any(
        m.startswith(
            "torch 2.15.0: no kernel image for sm_70 in libtorch_cuda.so (476 of 476 fatbins; carries"
        )
        for m in messages
    )
    record = json.loads((root / "images" / "team" / "gpu-code.json").read_text())
    (torch,) = record["wheels"]
    assert torch["linked"] == ["torch/lib/libtorch_cuda.so", "torch/lib/libtorch_nvshmem.so"]
    assert {lib["member"]: lib["fatbins"] for lib in torch["libraries"]} == {
        "torch/lib/libtorch_cuda.so": 476,
        "torch/lib/libtorch_cuda_linalg.so": 33,
        "torch/lib/libtorch_nvshmem.so": 1,
    }
    main_archs = {a for lib in torch["libraries"] for g in lib["groups"] for a in g["archs"]}
    assert "sm_70" not in main_archs and not any(a.startswith("compute_") for a in main_archs)

    code, result = _lock(root, "H100", capsys)
    assert code == 0 and result["gpu_code"]["verdicts"][0]["status"] == "ready"
    assert main(["render", "team"]) == 0
    dockerfile = (root / "images" / "team" / "Dockerfile").read_text()
    assert 'NVIDIA_REQUIRE_ARCH="arch>=7.5,arch<11.0 arch>=12.0,arch<13.0"' in dockerfile
    assert (
        "# NVIDIA_REQUIRE_ARCH: the fatbins of torch 2.15.0: libtorch_cuda.so, libtorch_nvshmem.so"
        in dockerfile
    )
