"""`envkit check` over every shared object of an environment, on real PyPI wheels with CUDA code
(torchvision 0.29.2, torchaudio 2.11.0, xformers 0.0.35, bitsandbytes 0.50.2: 56 MB, pinned by sha256
in ``cuda_wheels.py``) installed beside a crafted CUDA torch (the framework's own rules are tested on
the real torch wheel in ``test_readiness_real_wheels.py``). Skipped when the wheels are absent.

What the wheels carry (read by the payload, checked against the counts below): torchvision's
``_C_stable.so`` and torchaudio's libraries sm_75 ... sm_120 + PTX compute_120 (cu13: no Volta);
xformers' ``_C.so`` sm_75, sm_80, sm_90a + PTX compute_80; bitsandbytes one library per CUDA release,
``_cuda118`` ... ``_cuda126`` sm_60 ... sm_90 without PTX, ``_cuda130``/``_cuda132`` sm_75 ... sm_120.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from tests.integration.cuda_wheels import wheel
from tests.unit.readiness.test_payload_site import make_site

pytestmark = pytest.mark.slow
EXTENSIONS = ("torchvision==0.29.2", "torchaudio==2.11.0", "xformers==0.0.35", "bitsandbytes==0.50.2")


CUDART = "int cudaRuntimeGetVersion(int *v) { *v = %d; return 0; }\n"


def _loadable_cudart(site: Path, cuda: str) -> None:
    """A real (tiny) libcudart in place of the crafted one, so the environment loads cleanly and a
    target can be READY: it answers cudaRuntimeGetVersion as the runtime of ``cuda`` would."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler for a loadable libcudart stub")
    major, minor = (int(p) for p in cuda.split("."))
    src = site.parent / "cudart.c"
    src.write_text(CUDART % (major * 1000 + minor * 10))
    lib = site / "nvidia" / "cu13" / "lib" / "libcudart.so.13"
    lib.unlink()
    cmd = ["cc", "-shared", "-fPIC", f"-Wl,-soname,{lib.name}", "-o", str(lib), str(src)]
    subprocess.run(cmd, check=True, capture_output=True)


def _site(root: Path, cuda: str) -> Path:
    site = make_site(root)
    _loadable_cudart(site, cuda)
    tag = cuda.replace(".", "")
    (site / "torch" / "version.py").write_text(f"__version__ = '2.15.0+cu{tag}'\ncuda = '{cuda}'\n")
    for requirement in EXTENSIONS:
        with zipfile.ZipFile(wheel(requirement)) as z:
            z.extractall(site)
    return site


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)["result"]


def _packages(verdict: dict[str, Any]) -> dict[str, list[tuple[str, str, str]]]:
    out: dict[str, list[tuple[str, str, str]]] = {}
    for f in verdict["findings"]:
        if f["package"]:
            out.setdefault(f["package"], []).append((f["severity"], f["code"], Path(f["file"]).name))
    return out


@pytest.fixture(scope="module")
def cu132(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _site(tmp_path_factory.mktemp("cu132"), "13.2")


def test_a_volta_on_cu13_wheels_names_every_extension_without_sm_70(
    cu132: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, result = _check(capsys, "--site", str(cu132), "--gpu", "V100")
    found = _packages(result["verdicts"][0])
    assert found == {
        # bitsandbytes: the library of torch's CUDA 13.2 only (its cu118..cu126 builds carry sm_70)
        "bitsandbytes 0.50.2": [("error", "package-no-kernel-image", "libbitsandbytes_cuda132.so")],
        "torchaudio 2.11.0": [
            ("error", "package-no-kernel-image", "libtorchaudio.abi3.so"),
            ("error", "package-no-kernel-image", "torchaudio_prefixctc.abi3.so"),
        ],
        "torchvision 0.29.2": [("error", "package-no-kernel-image", "_C_stable.so")],
        "xformers 0.0.35": [("error", "package-no-kernel-image", "_C.so")],
    }
    messages = [f["message"] for f in result["verdicts"][0]["findings"]]
    assert (
        "xformers 0.0.35: no kernel image for sm_70 in _C.so (carries sm_75, sm_80, sm_90a, PTX compute_80)"
        in messages
    )


def test_an_rtx5090_on_cu13_wheels_jit_compiles_xformers_and_runs_the_rest(
    cu132: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result = _check(capsys, "--site", str(cu132), "--gpu", "RTX5090", "--gpu", "H100")
    rtx, h100 = result["verdicts"]
    assert _packages(rtx) == {"xformers 0.0.35": [("warning", "package-ptx-jit", "_C.so")]}
    assert _packages(h100) == {}  # xformers' sm_90a runs on 9.0 exactly; the rest carry sm_90
    assert (code, rtx["status"], h100["status"]) == (0, "ready", "ready")  # a warning is no failure


def test_an_rtx5090_on_a_cu126_torch_fails_in_bitsandbytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _site(tmp_path, "12.6")
    code, result = _check(capsys, "--site", str(site), "--gpu", "RTX5090", "--gpu", "H100")
    assert (code, [v["status"] for v in result["verdicts"]]) == (1, ["will-fail", "ready"])
    found = _packages(result["verdicts"][0])
    assert found["bitsandbytes 0.50.2"] == [
        ("error", "package-no-kernel-image", "libbitsandbytes_cuda126.so")
    ]
    owners = {Path(p).name: o for p, o in result["packages"].items()}
    assert owners["libbitsandbytes_cuda126.so"] == {
        "name": "bitsandbytes",
        "version": "0.50.2",
        "via": "RECORD",
    }
    assert owners["_C.so"]["name"] == "xformers" and "libtorch_cuda.so" not in owners  # no RECORD


def test_a_jit_cache_entry_is_named_by_its_directory(
    cu132: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "torch_extensions"
    entry = cache / "py311_cu132" / "fused_thing"
    entry.mkdir(parents=True)
    shutil.copyfile(cu132 / "xformers" / "_C.so", entry / "fused_thing.so")
    _, result = _check(capsys, "--site", str(cu132), "--cache", str(cache), "--gpu", "V100")
    found = _packages(result["verdicts"][0])
    assert found["fused_thing"] == [("error", "package-no-kernel-image", "fused_thing.so")]


def test_envkit_lock_reads_the_real_wheels_without_installing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from envkit.cli._services import Services
    from envkit.lock import PipPackage
    from envkit.lock.testing import FakeCondaSolver, FakePipResolver
    from tests.integration.cuda_wheels import PINNED

    paths = {r: wheel(r) for r in EXTENSIONS}
    pins = tuple(
        PipPackage(r.split("==")[0], r.split("==")[1], f"https://files.example/{p.name}", (PINNED[r],))
        for r, p in paths.items()
    )
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    (tmp_path / "environments").mkdir()
    spec = 'name: team\npython: "3.11"\ncuda: "13.2"\ninstaller: miniforge\npip: [x]\ngpus: [{}]\n'
    services = Services(solver_factory=lambda: (FakeCondaSolver(), FakePipResolver(pins)))
    dirs = sorted({str(p.parent) for p in paths.values()})
    argv = ["lock", "team", *[a for d in dirs for a in ("--archives", d)], "--json"]
    (tmp_path / "environments" / "team.yaml").write_text(spec.format("H100"))
    assert main(argv, services=services) == 0
    capsys.readouterr()
    (tmp_path / "environments" / "team.yaml").write_text(spec.format("V100"))
    assert main(argv, services=services) == 1
    (verdict,) = json.loads(capsys.readouterr().out)["result"]["gpu_code"]["verdicts"]
    errors = sorted(
        (f["package"], f["file"].rsplit(":", 1)[-1]) for f in verdict["findings"] if f["severity"] == "error"
    )
    assert errors == [
        ("bitsandbytes 0.50.2", "bitsandbytes/libbitsandbytes_cuda132.so"),
        ("torchaudio 2.11.0", "torchaudio/lib/libtorchaudio.abi3.so"),
        ("torchaudio 2.11.0", "torchaudio/lib/torchaudio_prefixctc.abi3.so"),
        ("torchvision 0.29.2", "torchvision/_C_stable.so"),
        ("xformers 0.0.35", "xformers/_C.so"),
    ]
