"""Real conda (../shared/conda-bundle, offline) makes an environment from a generated channel; its
`conda env export --from-history`, `conda env export`, `conda list` and `conda list --explicit` are
adopted; the full export round-trips through `envkit lock` with no version differences."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.lock.testing import make_channel, make_wheel
from envkit.spec.load import load_spec
from tests.conda_bundle import RealConda

VERSION = "26.7.1"


pytestmark = pytest.mark.conda


@pytest.fixture(scope="module")
def conda_env(condas: dict[str, RealConda]) -> Iterator[dict[str, Path]]:
    # its own folder: a conda environment outlives pytest's rotation of numbered temporary folders
    with tempfile.TemporaryDirectory(prefix="envkit-init-conda-") as tmp:
        yield _make(condas[VERSION], Path(tmp))


def _make(real: RealConda, root: Path) -> dict[str, Path]:
    channel = make_channel(root / "channel", ("linux-64",))
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "CONDA_PKGS_DIRS": str(root / "pkgs"),
        "CONDA_ENVS_DIRS": str(root / "envs"),
        "CONDA_SOLVER": "classic",  # measured: a first run from Python otherwise asks for libmamba (absent)
    }
    (root / "home").mkdir()
    conda = str(real.exe)  # installed once per bundle content into the test cache (tests/conda_bundle.py)
    prefix = root / "envs" / "worked"
    subprocess.run(
        [conda, "create", "-y", "-q", "-p", str(prefix), "--offline", "--override-channels", "-c", channel,
         "python=3.11", "numpy=1.26.4", "pytorch=2.1.2=cpu*", "pip"],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    files: dict[str, Path] = {}
    for name, args in {
        "history.yml": ["env", "export", "-p", str(prefix), "--from-history"],
        "export.yml": ["env", "export", "-p", str(prefix)],
        "list.txt": ["list", "-p", str(prefix)],
        "explicit.txt": ["list", "--explicit", "-p", str(prefix)],
    }.items():
        done = subprocess.run([conda, *args], check=True, capture_output=True, text=True, env=env)
        files[name] = root / name
        files[name].write_text(done.stdout)
    files["channel"] = root / "channel"
    return files


def _init(root: Path, source: Path, name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["init", "--from", str(source), "--name", name, "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)["result"]
    assert main(["validate", name]) == 0
    return result


def test_from_history_export(conda_env: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    text = conda_env["history.yml"].read_text()
    assert "pytorch=2.1.2[build=cpu*]" in text  # what conda writes for `pytorch=2.1.2=cpu*`
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    result = _init(tmp_path, conda_env["history.yml"], "history", capsys)
    assert result["detected"] == {"python": "3.11", "cuda": "cpu", "torch": "2.1.2"}
    assert sorted(result["conda"]) == ["numpy=1.26.4", "pip", "python=3.11"]  # in conda's history order


@pytest.mark.parametrize("source", ["list.txt", "explicit.txt"])
def test_conda_list_outputs(conda_env: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str], source: str) -> None:  # fmt: skip
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    result = _init(tmp_path, conda_env[source], "listed", capsys)
    assert result["detected"] == {"python": "3.11", "cuda": "cpu", "torch": "2.1.2"}
    assert "numpy==1.26.4=py311h64a7726_0" in result["conda"]  # exact pin, build kept (its channel is kept)


def test_full_export_round_trip(conda_env: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    result = _init(tmp_path, conda_env["export.yml"], "worked", capsys)
    assert "numpy=1.26.4=py311h64a7726_0" in result["conda"] and result["not_carried"] == []
    spec_path = tmp_path / "environments" / "worked.yaml"
    assert load_spec(spec_path).spec.channels == (conda_env["channel"].resolve().as_uri(),)
    wheel = make_wheel(tmp_path / "wheels", "torch", "2.1.2+cpu")  # the framework wheel the spec asks for
    with spec_path.open("a") as fh:
        fh.write(f'mirrors:\n  pypi: "{wheel.parent.as_uri()}"\n')
    assert main(["lock", "worked"]) == 0
    capsys.readouterr()
    lock = tmp_path / "images" / "worked" / "conda-lock.yml"
    main(["diff", str(conda_env["export.yml"]), str(lock), "--json", "--platform", "linux-64"])
    findings = json.loads(capsys.readouterr().out)["result"]["findings"]
    assert [f for f in findings if f["kind"] == "version"] == []
    assert [f for f in findings if f["kind"] in ("added", "removed")] == []
