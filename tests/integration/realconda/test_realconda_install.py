"""Every file ``envkit lock`` writes for conda, installed by real conda 23.5.2, 24.3.0 and 26.7.1.

- ``conda create -p P --file conda-linux-64.lock`` installs exactly the locked records: name,
  version, build, url and md5 in ``conda-meta`` equal the lock's; the env's python imports them;
- one archive changed on the server: conda refuses it (``ChecksumMismatchError``), installs nothing;
- ``conda env create -p P -f environment.yml`` (the pinned file) solves to the same set;
- ``conda-lock install`` of envkit's ``conda-lock.yml`` with the real conda installs the same set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.lock.solver import CondaPackage
from tests.conda_bundle import VERSIONS, RealConda, conda_meta
from tests.integration.realconda.conftest import ExplicitInstalls, Locked, changed_copy

pytestmark = pytest.mark.conda


def _locked_records(locked: Locked) -> dict[str, tuple[str, str, str, str]]:
    packages: tuple[CondaPackage, ...] = locked.contents.conda["linux-64"]
    return {p.name: (p.version, p.build, p.url, p.md5) for p in packages}


def _installed(prefix: Path) -> dict[str, tuple[str, str, str, str]]:
    return {
        name: (str(r["version"]), str(r["build"]), str(r["url"]), str(r["md5"]))
        for name, r in conda_meta(prefix).items()
    }


def _imports(prefix: Path) -> str:
    run = subprocess.run(
        [str(prefix / "bin" / "python"), "-c", "import sys, tinylib; print(sys.prefix, tinylib.__version__)"],
        capture_output=True, text=True, check=False, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


@pytest.mark.parametrize("version", VERSIONS)
def test_explicit_lock_installs_exactly_the_locked_records(
    explicit_installs: ExplicitInstalls, locked: Locked, version: str
) -> None:
    prefix = explicit_installs.prefix(version)  # conda create -y -q -p P --file conda-linux-64.lock
    wanted = _locked_records(locked)
    assert set(wanted) == {"pip", "python", "tinylib"}
    assert _installed(prefix) == wanted
    sha256 = {p.name: p.sha256 for p in locked.contents.conda["linux-64"]}
    for name, record in conda_meta(prefix).items():  # conda-meta has the sha256 it computed (if any)
        assert record.get("sha256") in (None, sha256[name]), (name, record.get("sha256"))
    assert _imports(prefix) == f"{prefix} 1.2.0"


@pytest.mark.parametrize("version", VERSIONS)
def test_changed_archive_on_the_server_is_refused(
    condas: dict[str, RealConda], locked: Locked, tmp_path: Path, version: str
) -> None:
    conda = condas[version]
    original = locked.server.root
    locked.server.root = changed_copy(locked.channel, tmp_path / "changed", "tinylib-1.2.0-pyh0_0.conda")
    try:
        prefix = tmp_path / "env"
        done = conda.run(
            ["create", "-y", "-q", "-p", str(prefix), "--file", str(locked.out / "conda-linux-64.lock")],
            tmp_path,
        )
    finally:
        locked.server.root = original
    assert done.returncode != 0
    assert "ChecksumMismatchError" in done.stderr + done.stdout, done.stderr
    assert "tinylib-1.2.0-pyh0_0.conda" in done.stderr + done.stdout
    assert not (prefix / "conda-meta").is_dir() or "tinylib" not in conda_meta(prefix)


@pytest.mark.parametrize("version", VERSIONS)
def test_pinned_environment_yml_solves_to_the_locked_set(
    condas: dict[str, RealConda], locked: Locked, tmp_path: Path, version: str
) -> None:
    conda = condas[version]
    text = (locked.out / "environment.yml").read_text()
    assert "nodefaults" not in text  # 26.7.1 fetches a channel named so (conda.anaconda.org/nodefaults)
    prefix = tmp_path / "env"
    conda.ok(["env", "create", "-q", "-p", str(prefix), "-f", str(locked.out / "environment.yml")], tmp_path)
    assert _installed(prefix) == _locked_records(locked)
    assert _imports(prefix) == f"{prefix} 1.2.0"


@pytest.mark.parametrize("version", VERSIONS)
def test_conda_lock_install_of_envkits_conda_lock_yml(
    condas: dict[str, RealConda], locked: Locked, tmp_path: Path, version: str
) -> None:
    conda = condas[version]
    prefix = tmp_path / "env"
    env = conda.env(tmp_path)
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    run = subprocess.run(
        [sys.executable, "-m", "conda_lock", "install", "--conda", str(conda.exe), "-p", str(prefix),
         str(locked.out / "conda-lock.yml")],
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert _installed(prefix) == _locked_records(locked)
