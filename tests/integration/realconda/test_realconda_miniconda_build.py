"""The rendered Dockerfile's Miniconda path, for real: its own RUN lines, a real conda, a real build.

A spec (``installer: miniconda``) is locked against a channel of real archives and a simple index
of wheels, both served over http on 127.0.0.1 with a stand-in Miniconda installer made from the
conda bundle (standin.py: conda 24.3.0, the conda of the catalog's py311 Miniconda). A test
catalog entry carries the stand-in's URL and sha256. The Dockerfile ``envkit render`` writes from
it is built unchanged with the host network (to reach the loopback): ``apt-get install curl``,
``curl`` of the installer, ``sha256sum -c``, ``bash installer.sh -b -p /opt/conda``, ``conda create
--file conda-linux-64.lock``, ``conda clean -afy``, ``pip install --require-hashes``, ``/opt/env``
copied into the runtime stage. The image runs as 10001 and imports the env's packages; ``envkit
snapshot --image`` of it diffed against the lock finds nothing at warning or above. The same
Dockerfile with a wrong sha256 in the catalog stops at the checksum line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
import pytest

from envkit.catalog import Catalog, InstallerFile, load_catalog
from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.lock import current_lock
from envkit.lock.testing import make_wheel
from envkit.offline.testing import make_real_channel, noarch_python, venv_python
from envkit.render import render_image
from envkit.render.dockerfile import DockerfileInputs
from envkit.spec.load import load_spec
from tests.conda_bundle import RealConda
from tests.integration.realconda.conftest import serving
from tests.integration.realconda.standin import standin_installer
from tests.integration.test_pack_offline_conda import BASE, base_image, engine
from tests.integration.test_pack_offline_conda import _pip_package as pip_package

pytestmark = [pytest.mark.conda, pytest.mark.docker, pytest.mark.slow]
SHARED_FIXTURES = (engine, base_image)  # the offline-conda test's: pytest finds them here by name

NAME = f"itest{os.getpid()}-miniconda"
CONDA = "24.3.0"  # the catalog's Miniconda3-py311_24.3.0-0 ships conda 24.3.0


@pytest.fixture
def cleanup(engine: DockerEngine) -> Iterator[list[str]]:
    tags: list[str] = []
    yield tags
    for tag in tags:
        if engine.inspect(tag) is not None:
            engine.remove(tag)
    client = docker.from_env()
    try:
        filters = {"dangling": True, "label": ["io.envkit.stage=builder", f"io.envkit.builder-of={NAME}"]}
        for image in client.api.images(filters=filters):
            client.api.remove_image(image["Id"], force=True)
    finally:
        client.close()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _simple_index(root: Path, wheels: list[Path]) -> None:
    """A PEP 503 simple index under ``root/simple`` of the wheels in ``root/wheels``."""
    names = sorted({w.name.split("-")[0] for w in wheels})
    (root / "simple").mkdir()
    (root / "simple" / "index.html").write_text(
        "<html><body>" + "".join(f'<a href="{n}/">{n}</a>' for n in names) + "</body></html>\n"
    )
    for name in names:
        links = "".join(
            f'<a href="../../wheels/{w.name}#sha256={_sha256(w)}">{w.name}</a>'
            for w in wheels
            if w.name.split("-")[0] == name
        )
        (root / "simple" / name).mkdir()
        (root / "simple" / name / "index.html").write_text(f"<html><body>{links}</body></html>\n")


def _catalog(url: str, sha256: str) -> Catalog:
    standin = InstallerFile(
        kind="miniconda", version=f"{CONDA}-standin", python="3.11", arch="x86_64", url=url, sha256=sha256,
        tool_version=CONDA, tool_version_source="tests/integration/realconda/standin.py (conda from source)",
        source="tests/integration/realconda/standin.py", verified=True,
    )  # fmt: skip
    catalog = load_catalog()
    return replace(
        catalog,
        installers=(standin, *(i for i in catalog.installers if i.kind != "miniconda")),
        # unknown base image: the builder stage is FROM it too (no registry here for debian:bookworm-slim)
        base_images=tuple(b for b in catalog.base_images if b.ref != BASE),
    )


def _build(context: Path, tag: str) -> tuple[bool, str]:
    """``docker build --network host`` of ``context`` (the legacy builder, as envkit's engine uses)."""
    client = docker.APIClient(timeout=1800)
    log: list[str] = []
    ok = True
    try:
        for chunk in client.build(path=str(context), tag=tag, network_mode="host", rm=True, forcerm=True,
                                  decode=True):  # fmt: skip
            if "stream" in chunk:
                log.append(str(chunk["stream"]))
            if "error" in chunk:
                ok = False
                log.append(str(chunk["error"]))
    finally:
        client.close()
    return ok, "".join(log)


def _context(project: Path, catalog: Catalog, dest: Path) -> str:
    spec_path = project / "environments" / f"{NAME}.yaml"
    loaded = load_spec(spec_path, catalog)
    folder = project / "images" / NAME
    # the lock was made (`envkit lock`) against the shipped catalog: its freshness is judged by that one;
    # only the render takes the test's catalog (the stand-in installer, the base image unknown)
    lock = current_lock(load_spec(spec_path), folder)
    assert lock.fresh and lock.conda_locks == ("conda-linux-64.lock",) and lock.pip_lock
    rendered = render_image(loaded, DockerfileInputs.from_lock(loaded.sha256, lock))
    dest.mkdir()
    for name, data in rendered.files.items():
        (dest / name).write_bytes(data)
    for name in (*lock.conda_locks, lock.pip_lock):
        shutil.copy(folder / name, dest / name)
    return rendered.files["Dockerfile"].decode()


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root: Path,
         *args: str) -> tuple[int, dict[str, Any]]:  # fmt: skip
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    capsys.readouterr()
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


_INSPECT = """
import json, os, sys, tinylib, alpha
print(json.dumps({"uid": os.getuid(), "prefix": sys.prefix, "tinylib": tinylib.__version__,
                  "alpha": alpha.__version__, "python": sys.version.split()[0]}))
"""


def test_rendered_miniconda_dockerfile_builds_and_runs(
    condas: dict[str, RealConda], engine: DockerEngine, base_image: str, tmp_path: Path,
    cleanup: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    served = tmp_path / "served"
    make_real_channel(served / "channel", [
        venv_python("3.11.2"),  # the image's /usr/bin/python3.11, the prefix made a venv
        noarch_python("tinylib", "1.2.0", {"tinylib/__init__.py": "__version__ = '1.2.0'\n"}),
        noarch_python("tinylib", "1.3.0", {"tinylib/__init__.py": "__version__ = '1.3.0'\n"}),
        pip_package(),
    ])  # fmt: skip
    wheels = [make_wheel(served / "wheels", "alpha", "1.0")]
    _simple_index(served, wheels)
    installer, sha256 = standin_installer(condas[CONDA], served / "Miniconda3-standin-Linux-x86_64.sh")
    with serving(served) as server:
        url = server.url
        project = tmp_path / "project"
        (project / "environments").mkdir(parents=True)
        (project / "environments" / f"{NAME}.yaml").write_text(
            f'name: {NAME}\npython: "3.11"\ncuda: cpu\ninstaller: miniconda\nbase_image: {base_image}\n'
            f'channels: ["{url}/channel"]\nconda:\n  - tinylib 1.2.*\npip:\n  - alpha==1.0\n'
            f'mirrors:\n  pypi: "{url}/simple/"\nplatforms: [linux-64]\n'
        )
        code, locked = _cli(monkeypatch, capsys, project, "lock", NAME)
        assert code == 0, locked
        catalog = _catalog(f"{url}/{installer.name}", sha256)
        dockerfile = _context(project, catalog, tmp_path / "context")
        for line in (  # the Miniconda path's own lines, unchanged
            f'x86_64) url="{url}/{installer.name}"; sha256={sha256}',
            'curl -fsSL --retry 3 -o /tmp/installer.sh "$url"',
            'echo "$sha256  /tmp/installer.sh" | sha256sum -c -',
            "RUN bash /tmp/installer.sh -b -p /opt/conda && rm -f /tmp/installer.sh",
            "/opt/conda/bin/conda create -y -p /opt/env --file",
            "/opt/conda/bin/conda clean -afy",
            "--require-hashes",
            "COPY --from=builder /opt/env /opt/env",
        ):
            assert line in dockerfile, line
        tag = f"envkit/{NAME}:test"
        cleanup.append(tag)
        ok, log = _build(tmp_path / "context", tag)
        assert ok, log[-6000:]
        assert "/tmp/installer.sh: OK" in log and "installation finished." in log, log[-6000:]

        # a wrong sha256 in the catalog: the same Dockerfile stops at the checksum line
        wrong = _context(project, _catalog(f"{url}/{installer.name}", "0" * 64), tmp_path / "wrong")
        assert wrong.replace("0" * 64, sha256) == dockerfile
        cleanup.append(f"envkit/{NAME}:wrong")
        ok, log = _build(tmp_path / "wrong", f"envkit/{NAME}:wrong")
        assert not ok and "/tmp/installer.sh: FAILED" in log, log[-3000:]

        # without a lock: `conda env create -f environment.yml` solves; the installer's own channels
        # (none set: conda's implicit `defaults`, unreachable here) must not join the file's
        unlocked = tmp_path / "unlocked"
        unlocked.mkdir()
        loaded = load_spec(project / "environments" / f"{NAME}.yaml", catalog)
        for name, data in render_image(loaded, DockerfileInputs(spec_sha256=loaded.sha256)).files.items():
            (unlocked / name).write_bytes(data)
        assert (
            "conda env create -p /opt/env -f /tmp/envkit/environment.yml"
            in (unlocked / "Dockerfile").read_text()
        )
        assert "nodefaults" not in (unlocked / "environment.yml").read_text()
        cleanup.append(f"envkit/{NAME}:unlocked")
        ok, log = _build(unlocked, f"envkit/{NAME}:unlocked")
        assert ok and "repo.anaconda.com" not in log, log[-6000:]
        run = engine.run(f"envkit/{NAME}:unlocked", ["python", "-c", _INSPECT])
        assert run.exit_code == 0, run.stderr
        assert json.loads(run.stdout)["tinylib"] == "1.2.0" and json.loads(run.stdout)["alpha"] == "1.0"

    run = engine.run(tag, ["python", "-c", _INSPECT])  # the server is gone: nothing is fetched at run time
    assert run.exit_code == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen == {
        "uid": 10001,
        "prefix": "/opt/env",
        "tinylib": "1.2.0",
        "alpha": "1.0",
        "python": "3.11.2",
    }

    snap = tmp_path / "snap.json"
    code, taken = _cli(monkeypatch, capsys, project, "snapshot", "--image", tag, "-o", str(snap))
    assert code == 0, taken
    lock_file = project / "images" / NAME / "conda-lock.yml"
    code, diffed = _cli(
        monkeypatch, capsys, project, "diff", str(lock_file), str(snap), "--min-severity", "warning"
    )
    assert code == 0 and diffed["result"]["findings"] == [], diffed["result"]["findings"]
    stored = json.loads(snap.read_text())
    names = {c["name"]: c["version"] for c in stored["conda"]}
    assert names == {p["name"]: p["version"] for p in _locked_conda(lock_file)}


def _locked_conda(lock_file: Path) -> list[dict[str, str]]:
    from envkit.lock.lockfile import read_conda_lock

    return [{"name": p.name, "version": p.version} for p in read_conda_lock(lock_file).conda["linux-64"]]
