"""The CUDA-variant guard on real solves: py-rattler against generated file:// channels."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.cli import main
from envkit.lock.lockfile import parse_conda_lock_file
from envkit.lock.testing import Record, realistic_records, write_channel

SPEC = """name: demo
python: "3.11"
cuda: "{cuda}"
conda:
  - pytorch
channels: ["{channel}"]
"""


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cuda: str, records: list[Record]) -> Path:
    channel = write_channel(tmp_path / "channel", records)
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "demo.yaml").write_text(SPEC.format(cuda=cuda, channel=channel))
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    return tmp_path / "images" / "demo"


def test_cpu_build_solved_into_a_cuda_spec_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A channel that offers only the CPU build: the solver takes it; envkit refuses (exit 2)."""
    records = [r for r in realistic_records(("linux-64",)) if not r.build.startswith("cuda")]
    out = _project(tmp_path, monkeypatch, "12.1", records)
    assert main(["lock", "demo"]) == 2
    err = capsys.readouterr().err
    assert "pytorch 2.1.2" in err and "a CPU build (cpu_py311h_0)" in err and "CUDA 12.1 build" in err
    assert not (out / "conda-lock.yml").exists()


def test_cuda_build_solved_into_a_cpu_spec_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pytorch channel's shape: its CUDA build needs `pytorch-cuda`, not `__cuda`: a CPU spec gets it."""
    records = [r for r in realistic_records(("linux-64",)) if r.name != "pytorch"]
    pin, abi = "python >=3.11,<3.12.0a0", "python_abi 3.11.* *_cp311"
    records += [
        Record("pytorch-cuda", "12.1", "ha16c6d3_5", "linux-64"),
        Record(
            "pytorch",
            "2.1.2",
            "py3.11_cuda12.1_cudnn8.9.2_0",
            "linux-64",
            (pin, abi, "pytorch-cuda >=12.1,<12.2"),
        ),
    ]
    _project(tmp_path, monkeypatch, "cpu", records)
    assert main(["lock", "demo"]) == 2
    err = capsys.readouterr().err
    assert "a CUDA build (py3.11_cuda12.1_cudnn8.9.2_0)" in err and "needs a CPU build" in err


def test_cuda_lock_pins_cuda_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _project(tmp_path, monkeypatch, "12.1", realistic_records(("linux-64",)))
    assert main(["lock", "demo"]) == 0
    lock = parse_conda_lock_file(out / "conda-lock.yml")
    pins = {p.name: (p.version, p.build) for p in lock.package if p.manager == "conda"}
    assert pins["cuda-version"][0] == "12.1"
    assert pins["pytorch"][1].startswith("cuda120")
