"""Air-gapped conda build, for real: a generated channel of real archives, lock, pack, build with no network.

No conda channel is reachable here, so the test makes one: real ``.conda`` / ``.tar.bz2`` archives
(conda-package-handling), indexed by py-rattler, holding a ``python`` (the base image's interpreter,
the prefix made a venv), ``tinylib`` 1.2.0 / 1.3.0 (noarch python) and pip (ensurepip's own wheel as a
noarch package). ``envkit lock`` solves against it (uv locks ``six`` from the index), ``envkit pack``
downloads and checks everything (twice: identical bytes), the channel is then moved away, and
``envkit build --pack`` installs with py-rattler in a builder stage that has no network. The image
runs as uid 10001; installed files, ``conda-meta`` records, ``envkit probe --image`` and ``envkit
snapshot --image`` show the locked versions; a rebuild is up to date in under a second; a changed
pack (exit 2) and a changed channel archive (pack exit 3) are refused by name.
"""

from __future__ import annotations

import ensurepip
import io
import json
import os
import shutil
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.inventory._collect import channel_from_url
from envkit.lock import current_lock
from envkit.offline.testing import (
    ArchivePackage,
    make_real_channel,
    noarch_python,
    venv_python,
    wheel_as_package,
)
from envkit.probe.runner import ProbeOptions, run_in_image
from envkit.spec.load import load_spec
from tests.integration.conftest import debian_base, remove_images_of

pytestmark = pytest.mark.docker

BASE = "envkit/debian-python:bookworm"  # Debian bookworm: /usr/bin/python3.11 (3.11.2)
NAME = f"itest{os.getpid()}-conda"


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    return DockerEngine()


@pytest.fixture(scope="module")
def base_image(engine: DockerEngine) -> str:
    return debian_base(engine)


@pytest.fixture
def project(tmp_path: Path, engine: DockerEngine) -> Iterator[Path]:
    (tmp_path / "environments").mkdir()
    yield tmp_path
    remove_images_of(engine, NAME)


def _pip_package() -> ArchivePackage:
    wheel = next((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"), None)
    if wheel is None:
        pytest.skip("this Python has no bundled pip wheel (ensurepip) to make the pip package from")
    version = wheel.name.split("-")[1]
    return wheel_as_package(wheel, "pip", version, entry_points=("pip = pip._internal.cli.main:main",))


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root: Path,
         *args: str) -> tuple[int, dict[str, Any]]:  # fmt: skip
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _in_image(engine: DockerEngine, tag: str, code: str) -> Any:
    run = engine.run(tag, ["python", "-c", code])
    assert run.exit_code == 0, run.stderr
    return json.loads(run.stdout)


_INSPECT = """
import json, os, sys, tinylib, six
from pathlib import Path
meta = {p.name: json.loads(p.read_text()) for p in Path(sys.prefix, "conda-meta").glob("*.json")}
print(json.dumps({"uid": os.getuid(), "prefix": sys.prefix, "tinylib": tinylib.__version__,
    "tinylib_file": tinylib.__file__, "six": six.__version__,
    "meta": {k: {f: v[f] for f in ("name", "version", "url", "files")} for k, v in meta.items()}}))
"""


def test_pack_carry_build_offline_run(
    engine: DockerEngine, base_image: str, project: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    channel = project / "channel"
    pip = _pip_package()
    url = make_real_channel(channel, [
        venv_python("3.11.2"),
        noarch_python("tinylib", "1.2.0", {"tinylib/__init__.py": "__version__ = '1.2.0'\n"}),
        noarch_python("tinylib", "1.3.0", {"tinylib/__init__.py": "__version__ = '1.3.0'\n"}),
        pip,
    ])  # fmt: skip
    (project / "environments" / f"{NAME}.yaml").write_text(
        f'name: {NAME}\npython: "3.11"\ncuda: cpu\nchannels: [{url}]\nconda:\n  - tinylib 1.2.*\n'
        f"pip:\n  - six==1.16.0\nbase_image: {base_image}\n"
    )
    # -- the connected side: lock (by pack), pack twice -------------------------------------------
    start = time.monotonic()
    code, first = _cli(monkeypatch, capsys, project, "pack", NAME, "-o", str(project / "a.tar"))
    seconds = time.monotonic() - start
    assert code == 0, first
    packed = first["result"]
    assert packed["lock"] == "locked" and packed["conda_packages"] == 3 and packed["wheels"] == 1
    numbers = f"pack: {packed['size'] / 1e6:.1f} MB, {packed['files']} files, {seconds:.1f} s"
    print(f"\n{numbers}", file=sys.__stderr__)  # the closing note's numbers
    code, second = _cli(monkeypatch, capsys, project, "pack", NAME, "-o", str(project / "b.tar"))
    assert (
        code == 0 and second["result"]["sha256"] == packed["sha256"] and second["result"]["downloaded"] == 0
    )
    assert (project / "a.tar").read_bytes() == (project / "b.tar").read_bytes()
    lock = current_lock(load_spec(project / "environments" / f"{NAME}.yaml"), project / "images" / NAME)
    explicit = (project / "images" / NAME / "conda-linux-64.lock").read_text()
    assert f"{url}/noarch/tinylib-1.2.0-pyh0_0.conda#" in explicit  # url#md5: every catalog conda reads it

    # -- the air-gapped side: no channel, only the pack; the build has no network ------------------
    channel.rename(project / "channel.away")
    code, built = _cli(
        monkeypatch, capsys, project, "build", NAME, "--pack", str(project / "a.tar"), "--frozen"
    )
    assert code == 0, built
    result = built["result"]
    assert result["status"] == "built" and result["offline"] is True and result["user"] == "10001:10001"
    info = engine.inspect(result["tag"])
    assert info is not None
    assert (
        info.labels["io.envkit.offline"] == "true"
        and info.labels["io.envkit.lock-sha256"] == lock.lock_sha256
    )
    assert info.labels["io.envkit.installer"] == "miniconda"

    seen = _in_image(engine, result["tag"], _INSPECT)
    assert seen["uid"] == 10001 and seen["prefix"] == "/opt/env"
    assert (seen["tinylib"], seen["six"]) == ("1.2.0", "1.16.0")
    assert seen["tinylib_file"] == "/opt/env/lib/python3.11/site-packages/tinylib/__init__.py"
    meta = seen["meta"]
    assert set(meta) == {
        f"pip-{pip.version}-pyh0_0.json",
        "python-3.11.2-h0_envkit.json",
        "tinylib-1.2.0-pyh0_0.json",
    }
    tinylib = meta["tinylib-1.2.0-pyh0_0.json"]
    assert tinylib["version"] == "1.2.0" and tinylib["url"] == f"{url}/noarch/tinylib-1.2.0-pyh0_0.conda"
    assert "lib/python3.11/site-packages/tinylib/__init__.py" in tinylib["files"]

    # the probe's in-image runner (what `envkit probe --image` runs; the command itself then exits 3
    # because no framework is installed in this image, and writes no report)
    report = run_in_image(
        engine, result["tag"], ProbeOptions(frameworks=("torch",), steps=1), label="t", host="h"
    )
    fingerprint = report.to_json()["fingerprint"]
    assert isinstance(fingerprint, dict)
    assert (
        "tinylib=1.2.0=pyh0_0" in fingerprint["conda_meta"]
        and fingerprint["distributions"]["six"] == "1.16.0"
    )
    assert report.fact("distributions")["tinylib"] == "1.2.0"
    assert report.fact("python")["version"] == "3.11.2"
    code, probed = _cli(monkeypatch, capsys, project, "probe", "--image", NAME, "--no-store")
    assert code == 3 and "torch" in probed["errors"][0]["message"]  # it ran in the image: no framework there
    code, snap = _cli(
        monkeypatch, capsys, project, "snapshot", "--image", NAME, "-o", str(project / "snap.json")
    )
    assert code == 0, snap
    stored = json.loads((project / "snap.json").read_text())
    channel_name = channel_from_url(url)  # the name the lock's package URLs give (host path of file://)
    assert {"name": "tinylib", "version": "1.2.0", "build_string": "pyh0_0", "channel": channel_name,
            "platform": "noarch"} in stored["conda"]  # fmt: skip
    assert {"name": "six", "version": "1.16.0"} in stored["pip"]

    code, again = _cli(
        monkeypatch, capsys, project, "build", NAME, "--pack", str(project / "a.tar"), "--frozen"
    )
    assert code == 0 and again["result"]["status"] == "up-to-date" and again["result"]["tag"] == result["tag"]
    assert again["result"]["seconds"] < 1.0, again["result"]["seconds"]

    # -- tamper evidence: a changed file in the pack (exit 2), a changed channel archive (exit 3) ----
    tags = {t for i in engine.images(f"io.envkit.name={NAME}") for t in i.tags}
    with tarfile.open(project / "a.tar") as src, tarfile.open(project / "bad.tar", "w") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name.endswith("tinylib-1.2.0-pyh0_0.conda"):
                data = data[:-1] + bytes([data[-1] ^ 1])
            dst.addfile(member, io.BytesIO(data))
    code, refused = _cli(monkeypatch, capsys, project, "build", NAME, "--pack", str(project / "bad.tar"),
                         "--frozen", "--no-cache")  # fmt: skip
    assert code == 2 and "tinylib-1.2.0-pyh0_0.conda" in refused["errors"][0]["message"]
    assert {t for i in engine.images(f"io.envkit.name={NAME}") for t in i.tags} == tags  # no new tag

    (project / "channel.away").rename(channel)
    # --offline without a pack gathers the same files on the host: the same context, so the same image
    code, gathered = _cli(monkeypatch, capsys, project, "build", NAME, "--offline", "--frozen")
    assert code == 0 and gathered["result"]["status"] == "up-to-date", gathered
    assert gathered["result"]["tag"] == result["tag"] and gathered["result"]["pack"] == "collected"
    archive = channel / "noarch" / "tinylib-1.2.0-pyh0_0.conda"
    archive.write_bytes(archive.read_bytes() + b"\0")
    shutil.rmtree(project / ".envkit" / "cache" / "conda")  # force the download
    code, failed = _cli(monkeypatch, capsys, project, "pack", NAME, "-o", str(project / "c.tar"))
    assert code == 3 and not (project / "c.tar").exists()
    message = failed["errors"][0]["message"]
    assert "tinylib 1.2.0" in message and f"{url}/noarch/tinylib-1.2.0-pyh0_0.conda" in message
