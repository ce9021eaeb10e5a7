"""`envkit lock` with `gpus:` reads the locked wheels' GPU code without installing them, fails naming
the wheel and file where a GPU cannot run it, and records it for `envkit check --lock`."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.cli._services import Services
from envkit.lock import PipPackage
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from tests.unit.readiness.crafted import Library, sm

SPEC = 'name: team\npython: "3.11"\ncuda: "13.2"\ninstaller: miniforge\npip: [torch, ext]\ngpus: [{gpus}]\n'
TORCH = "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl"
EXT = "ext-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"


def _wheel(path: Path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    (tmp_path / "environments").mkdir()
    return tmp_path


def _lock(
    project: Path, gpus: str, capsys: pytest.CaptureFixture[str], *extra: str, swap: bool = False
) -> tuple[int, Any]:
    (project / "environments" / "team.yaml").write_text(SPEC.format(gpus=gpus))
    wheels = project / "downloads"
    wheels.mkdir(exist_ok=True)
    torch_lib = Library("libtorch_cuda.so", fatbins=[sm(75, 80, 86, 90, 100, 120)] * 5).encode()
    torch_sha = _wheel(wheels / TORCH, {"torch/lib/libtorch_cuda.so": torch_lib, "torch/__init__.py": b""})
    ext_sha = _wheel(wheels / EXT, {"ext/_k.so": Library(fatbins=[sm(80, 90)]).encode()})
    if swap:  # the file at hand is not the one the lock pins (same name, other bytes)
        _wheel(wheels / EXT, {"ext/_k.so": Library(fatbins=[sm(70)]).encode()})
    pins = (
        PipPackage("torch", "2.15.0", f"https://files.example/{TORCH}", (torch_sha,)),
        PipPackage("ext", "1.0", f"https://files.example/{EXT}", (ext_sha,)),
        PipPackage("absent", "2.0", "https://files.example/absent-2.0-py3-none-any.whl", ("ab" * 32,)),
    )
    services = Services(solver_factory=lambda: (FakeCondaSolver(), FakePipResolver(pins)))
    code = main(["lock", "team", "--archives", str(wheels), "--json", *extra], services=services)
    return code, json.loads(capsys.readouterr().out)


def _errors(result: Any) -> list[tuple[str, str, str]]:
    return [
        (v["target"]["label"], f["package"], f["file"].rsplit(":", 1)[-1])
        for v in result["gpu_code"]["verdicts"]
        for f in v["findings"]
        if f["severity"] == "error"
    ]


def test_a_volta_fails_at_lock_time_naming_wheel_and_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _lock(project, "V100", capsys)
    assert code == 1
    assert _errors(out["result"]) == [
        ("V100 (sm_70)", "torch 2.15.0", "torch/lib/libtorch_cuda.so"),
        ("V100 (sm_70)", "ext 1.0", "ext/_k.so"),
        ("V100 (sm_70)", None, "gpu-code.json"),  # the image's NVIDIA_REQUIRE_ARCH, from torch's fatbins
    ]
    assert (project / "images" / "team" / "requirements.lock").is_file()  # the lock itself is written
    record = json.loads((project / "images" / "team" / "gpu-code.json").read_text())
    assert [w["name"] for w in record["wheels"]] == ["torch", "ext"]
    assert record["not_scanned"][0]["name"] == "absent"


def test_an_h100_passes_and_an_rtx5090_names_only_the_extension(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _lock(project, "H100", capsys)
    assert code == 0 and _errors(out["result"]) == []
    code, out = _lock(project, "H100, RTX5090", capsys)
    assert code == 1 and _errors(out["result"]) == [("RTX5090 (sm_120)", "ext 1.0", "ext/_k.so")]


def test_check_lock_answers_for_a_lock_made_elsewhere(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _lock(project, "H100", capsys)
    images = project / "images" / "team"
    assert main(["check", "--lock", str(images), "--gpu", "RTX5090", "--json"]) == 1
    (verdict,) = json.loads(capsys.readouterr().out)["result"]["verdicts"]
    assert [f["package"] for f in verdict["findings"] if f["severity"] == "error"] == ["ext 1.0"]
    assert main(["check", "--lock", str(images / "gpu-code.json")]) == 0  # the spec's own GPUs: H100
    assert "H100 (sm_90): READY" in capsys.readouterr().out


def test_a_wheel_file_whose_sha256_the_lock_does_not_pin_is_not_read(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = _lock(project, "V100", capsys, swap=True)
    assert ("V100 (sm_70)", "ext 1.0", "ext/_k.so") not in _errors(out["result"])
    record = json.loads((project / "images" / "team" / "gpu-code.json").read_text())
    assert [w["name"] for w in record["wheels"]] == ["torch"]
    assert {m["name"]: m["why"] for m in record["not_scanned"]}["ext"].endswith(
        "is not at hand with a pinned sha256"
    )


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d["wheels"][0].update(sha256="0" * 64), "is not a package requirements.lock pins"),
        (lambda d: d.update(wheels=5), "wheels is not a list"),
        (lambda d: d["wheels"][0].update(libraries=[{"member": 1}]), "has no member name"),
        (lambda d: d["wheels"][0]["libraries"][0].update(sass=[1]), "is not an object"),
        (lambda d: d.update(kind="other"), "not an envkit-gpu-code"),
        (lambda d: d["wheels"][0].update(name=None), "must be strings"),
    ],
)
def test_a_hostile_gpu_code_file_is_an_error_naming_what(
    project: Path, capsys: pytest.CaptureFixture[str], edit: Any, words: str
) -> None:
    _lock(project, "H100", capsys)
    path = project / "images" / "team" / "gpu-code.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    assert main(["check", "--lock", str(path), "--gpu", "H100"]) in (2, 3)
    assert words in capsys.readouterr().err


def test_scan_wheel_on_hostile_archives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envkit.readiness import wheels

    good = Library(fatbins=[sm(80)] * 40).encode()
    path = tmp_path / "w-1-py3-none-any.whl"
    _wheel(path, {"w/_k.so": good, "w/script.so": b"#!/bin/sh\n", "w/dir.so/x": b""})
    code = wheels.scan_wheel(path, "w", "1", "x")
    assert code.problem is None and [lib.path for lib in code.libraries] == ["w/_k.so"]
    monkeypatch.setattr(wheels, "MAX_MEMBER", 1000)  # the member is larger: read to the bound only
    (lib,) = wheels.scan_wheel(path, "w", "1", "x").libraries
    assert lib.problem and "not read" in lib.problem
    monkeypatch.setattr(wheels, "MAX_MEMBERS", 1)
    _wheel(path, {"a.so": good, "b.so": good})
    assert "2 shared objects" in (wheels.scan_wheel(path, "w", "1", "x").problem or "")
    path.write_bytes(b"PK\x03\x04 not a zip at all")
    assert "BadZipFile" in (wheels.scan_wheel(path, "w", "1", "x").problem or "")
    _wheel(path, {"w/_k.so": good})
    data = bytearray(path.read_bytes())
    data[60:80] = b"\xff" * 20  # damage inside the deflated member
    path.write_bytes(bytes(data))
    damaged = wheels.scan_wheel(path, "w", "1", "x")
    assert damaged.problem is not None or all(lib.problem for lib in damaged.libraries)


def _tar_bz2(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> str:
    import io
    import tarfile

    with tarfile.open(path, "w:bz2") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dot_conda(path: Path, members: dict[str, bytes]) -> str:
    import io
    import tarfile

    import zstandard

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.json", b'{"conda_pkg_format_version": 2}')
        z.writestr(f"pkg-{path.name[:-6]}.tar.zst", zstandard.ZstdCompressor().compress(raw.getvalue()))
        z.writestr(f"info-{path.name[:-6]}.tar.zst", zstandard.ZstdCompressor().compress(b""))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_conda_packages_at_hand_are_read_too(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from envkit.lock import CondaPackage

    archives = tmp_path / "pkgs"
    archives.mkdir()
    lib = Library("libk.so", fatbins=[sm(80, 86)] * 3).encode()
    bz2 = "kernels-1.0-h0.tar.bz2"
    conda = "fused-2.0-h0.conda"
    bz2_sha = _tar_bz2(archives / bz2, {"lib/libk.so": lib}, {"lib/libk.so.1": "libk.so"})
    conda_sha = _dot_conda(archives / conda, {"lib/libfused.so": lib, "info/index.json": b"{}"})
    spec = 'name: team\npython: "3.11"\ncuda: "12.6"\ninstaller: miniforge\n'
    spec += "conda: [kernels, fused]\ngpus: [H100]\n"
    (project / "environments" / "team.yaml").write_text(spec)
    pins = {
        "linux-64": tuple(
            CondaPackage(
                n, v, "h0", f"https://conda.example/linux-64/{f}", "0" * 32, sha, "linux-64", "linux-64"
            )
            for n, v, f, sha in (("kernels", "1.0", bz2, bz2_sha), ("fused", "2.0", conda, conda_sha))
        )
    }
    services = Services(solver_factory=lambda: (FakeCondaSolver(pins), FakePipResolver()))
    code = main(["lock", "team", "--archives", str(archives), "--json"], services=services)
    out = json.loads(capsys.readouterr().out)["result"]
    assert code == 1
    assert sorted(_errors(out)) == [
        ("H100 (sm_90)", "fused 2.0", "lib/libfused.so"),
        ("H100 (sm_90)", "kernels 1.0", "lib/libk.so"),  # once: the link to it is not a second file
    ]
    assert main(["check", "--lock", str(project / "images" / "team"), "--gpu", "A100"]) == 0


def test_hostile_conda_archives_are_problems_not_tracebacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envkit.readiness import wheels

    lib = Library(fatbins=[sm(80)] * 30).encode()
    bad = tmp_path / "x-1-h0.tar.bz2"
    bad.write_bytes(b"BZh9 not really")
    assert wheels.scan_conda(bad, "x", "1", "s").problem
    _tar_bz2(bad, {"lib/a.so": lib, "lib/b.so": lib})
    monkeypatch.setattr(wheels, "MAX_TAR_BYTES", len(lib) + 10)
    assert "not read further" in (wheels.scan_conda(bad, "x", "1", "s").problem or "")
    empty = tmp_path / "y-1-h0.conda"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("metadata.json", b"{}")
    assert "no pkg-" in (wheels.scan_conda(empty, "y", "1", "s").problem or "")


def test_spec_drivers_apply_checks_driver_rules_at_lock_time(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _lock(project, "H100]\ndrivers: [535.104.05, 595.45.04", capsys)
    verdicts = out["result"]["gpu_code"]["verdicts"]
    assert [(v["target"]["label"], v["status"]) for v in verdicts] == [
        ("H100 (sm_90)", "will-fail"),
        ("H100 (sm_90)", "ready"),
    ]
    (old,) = [f for f in verdicts[0]["findings"] if f["severity"] == "error"]
    assert old["code"] == "driver-too-old" and "below the 580.65.06 floor" in old["message"]
    assert code == 1
    images = project / "images" / "team"
    assert main(["check", "--lock", str(images), "--gpu", "H100", "--driver", "580.65.06"]) == 0
    capsys.readouterr()
    (project / "environments" / "team.yaml").write_text(SPEC.format(gpus="H100]\ndrivers: [latest"))
    assert main(["lock", "team"]) == 2
    assert "is not a driver version" in capsys.readouterr().err


def _dockerfile_arch(project: Path) -> tuple[str, str]:
    """(the comment saying where NVIDIA_REQUIRE_ARCH came from, its value) of the rendered Dockerfile."""
    text = (project / "images" / "team" / "Dockerfile").read_text()
    (comment,) = [line for line in text.splitlines() if line.startswith("# NVIDIA_REQUIRE_ARCH: ")]
    (value,) = [line.split('"')[1] for line in text.splitlines() if "NVIDIA_REQUIRE_ARCH=" in line]
    return comment, value


def test_render_writes_the_arch_constraint_the_locked_fatbins_give(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _lock(project, "H100", capsys)
    assert main(["render", "team"]) == 0
    assert _dockerfile_arch(project) == (
        "# NVIDIA_REQUIRE_ARCH: the fatbins of torch 2.15.0: libtorch_cuda.so (gpu-code.json)",
        "arch>=7.5,arch<11.0 arch>=12.0,arch<13.0",  # the crafted torch: sm_75 ... sm_120, no sm_110
    )
    path = project / "images" / "team" / "gpu-code.json"
    doc = json.loads(path.read_text())
    doc["wheels"][0]["sha256"] = "0" * 64  # a file from another lock: the release's bound, said so
    path.write_text(json.dumps(doc))
    assert main(["render", "team"]) == 0
    comment, value = _dockerfile_arch(project)
    assert value == "arch>=7.5" and "CUDA 13.2's oldest target, not the framework's fatbins" in comment
    assert "torch 2.15.0 with a sha256 the lock does not pin" in comment
    path.unlink()
    assert main(["render", "team"]) == 0
    assert "no gpu-code.json (`envkit lock NAME --archives DIR` records" in _dockerfile_arch(project)[0]


def test_render_refuses_a_malformed_gpu_code_file_naming_the_field(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _lock(project, "H100", capsys)
    path = project / "images" / "team" / "gpu-code.json"
    doc = json.loads(path.read_text())
    doc["wheels"][0]["libraries"][0]["fatbins"] = "five"
    path.write_text(json.dumps(doc))
    assert main(["render", "team"]) == 2
    err = capsys.readouterr().err
    assert "gpu-code.json: wheels[0].libraries[0].fatbins is not an int" in err and "Traceback" not in err
    for text in ("{", "[" * 5000 + "]" * 5000, '{"kind": "envkit-gpu-code", "version": 2}'):
        path.write_text(text)
        assert main(["render", "team"]) == 2
        err = capsys.readouterr().err
        assert "gpu-code.json: " in err and "Traceback" not in err


def test_archives_named_record_the_gpu_code_without_gpus(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _lock(project, "", capsys)  # `gpus: []`, --archives DIR named
    assert code == 0 and out["result"]["gpu_code"]["verdicts"] == []
    record = json.loads((project / "images" / "team" / "gpu-code.json").read_text())
    assert [w["name"] for w in record["wheels"]] == ["torch", "ext"]
    assert main(["render", "team"]) == 0
    assert _dockerfile_arch(project)[1] == "arch>=7.5,arch<11.0 arch>=12.0,arch<13.0"
