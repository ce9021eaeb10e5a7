"""Bit-reproducible images on two Docker engines; ``envkit verify`` names what changed (marker ``docker``).

A second ``dockerd`` (its own --data-root, --exec-root, pidfile and socket under /tmp, no bridge
or iptables: the builds have no network) is started for this module and stopped after it; the
base image made by ``envkit base-image``'s code is saved from the default engine and loaded into
it, so both engines start from the same layers. Then, for one venv spec and one conda spec (the
generated channel of real archives): a build on each engine with ``--no-cache`` gives the same
image ID and the same layer diff_ids. ``envkit verify`` of an honest image exits 0; of an image
changed by ``docker commit`` exits 1 naming the file (and diffoscope shows the line); after a
dependency bump it exits 1 naming the changed package files.
"""

from __future__ import annotations

import ensurepip
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import docker
import pytest

from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.offline.testing import make_real_channel, noarch_python, venv_python, wheel_as_package
from tests.integration.conftest import debian_base

pytestmark = pytest.mark.docker

BASE = "envkit/debian-python:bookworm"
RUN = os.getpid()


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    return DockerEngine()


@pytest.fixture(scope="module")
def base_image(engine: DockerEngine) -> str:
    return debian_base(engine)


def _unmount_below(root: Path) -> None:
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for point in sorted((m for m in mounts if m.startswith(str(root))), reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


@contextmanager
def _client(host: str | None) -> Iterator[docker.APIClient]:
    client = (
        docker.APIClient(base_url=host, version="auto", timeout=600)
        if host
        else docker.APIClient(version="auto", timeout=600)
    )
    try:
        yield client
    finally:
        client.close()


def _listening(socket_path: Path) -> bool:
    """Whether dockerd accepts connections (a socket of our own: docker-py's unix connection leaks its
    socket when connect() fails, a ResourceWarning at some later garbage collection)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(str(socket_path))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def second_engine(engine: DockerEngine, base_image: str) -> Iterator[str]:
    """``DOCKER_HOST`` of a second dockerd holding the same base image (stopped and removed after).

    It gets a bridge of its own (made here, removed after): with ``--bridge=none`` dockerd deletes
    the default ``docker0`` interface at start-up, which the first engine's containers need.
    """
    if shutil.which("dockerd") is None or shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("a second Docker engine needs dockerd, ip and root")
    root = Path(tempfile.mkdtemp(prefix="envkit-d2-", dir="/tmp"))  # short: socket paths are limited
    host = f"unix://{root}/docker.sock"
    bridge = f"ekd2-{RUN % 100000}"
    subprocess.run(["ip", "link", "add", bridge, "type", "bridge"], check=True)
    subprocess.run(["ip", "addr", "add", "172.31.254.1/24", "dev", bridge], check=True)
    argv = ["dockerd", "--data-root", f"{root}/data", "--exec-root", f"{root}/exec",
            "--pidfile", f"{root}/pid", "--host", host, f"--bridge={bridge}", "--iptables=false",
            "--ip-masq=false"]  # fmt: skip
    log = (root / "dockerd.log").open("wb")
    daemon = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(120):
            if _listening(root / "docker.sock"):
                break
            if daemon.poll() is not None:
                pytest.fail(f"the second dockerd exited: {(root / 'dockerd.log').read_text()[-2000:]}")
            time.sleep(0.5)
        with _client(host) as client:
            for _ in client.load_image(engine.api.get_image(base_image)):  # stream: save | load
                pass
            assert client.inspect_image(base_image)["Id"] == engine.api.inspect_image(base_image)["Id"]
        yield host
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        _unmount_below(root)
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["ip", "link", "delete", bridge], check=False)


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root: Path, *args: str,
         host: str | None = None) -> tuple[int, dict[str, Any]]:  # fmt: skip
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    if host is None:
        monkeypatch.delenv("DOCKER_HOST", raising=False)
    else:
        monkeypatch.setenv("DOCKER_HOST", host)
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _layers(host: str | None, image: str) -> list[str]:
    with _client(host) as client:
        return list(client.inspect_image(image)["RootFS"]["Layers"])


def _remove_images(host: str | None, name: str) -> None:
    with _client(host) as client:
        for image in client.images(filters={"label": f"io.envkit.name={name}"}):
            client.remove_image(image["Id"], force=True)


def _both_engines(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], spec: Path, text: str,
                  other: str) -> dict[str, Any]:  # fmt: skip
    """The spec ``text`` built with --no-cache on the default engine and on ``other``: one image, layer
    by layer."""
    spec.parent.mkdir(exist_ok=True)
    spec.write_text(text)
    root, name = spec.parent.parent, spec.stem
    code, first = _cli(monkeypatch, capsys, root, "build", name, "--offline", "--no-cache")
    assert code == 0, first
    code, second = _cli(
        monkeypatch, capsys, root, "build", name, "--offline", "--no-cache", "--frozen", host=other
    )
    assert code == 0, second
    a, b = first["result"], second["result"]
    assert a["image_id"] == b["image_id"] and a["normalized"]["image_id"] == a["image_id"]
    assert a["normalized"]["original_id"] != b["normalized"]["original_id"]  # what the engines built differed
    assert _layers(None, a["tag"]) == _layers(other, b["tag"]) == a["normalized"]["diff_ids"]
    return dict(a)


def _changed(verified: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["change"] for f in verified["diff"]["files"]}


def _bump_and_verify(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], spec: Path,
                     text: str, image: str) -> dict[str, str]:  # fmt: skip
    """Change the spec, lock it, verify the image built before: not reproduced, from another lock."""
    root, name = spec.parent.parent, spec.stem
    spec.write_text(text)
    code, locked = _cli(monkeypatch, capsys, root, "lock", name)
    assert code == 0, locked
    code, bumped = _cli(monkeypatch, capsys, root, "verify", image)
    assert code == 1, bumped
    assert bumped["result"]["image_lock_sha256"] != bumped["result"]["lock_sha256"]
    return _changed(bumped["result"])


def test_venv_image_is_reproducible_on_two_engines_and_verify_names_a_changed_file(
    engine: DockerEngine, base_image: str, second_engine: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = f"itest{RUN}-rvenv"
    spec = tmp_path / "environments" / f"{name}.yaml"
    text = f'name: {name}\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: {base_image}\npip:\n'
    try:
        built = _both_engines(monkeypatch, capsys, spec, text + "  - packaging==24.1\n  - six==1.16.0\n",
                              second_engine)  # fmt: skip
        code, verified = _cli(monkeypatch, capsys, tmp_path, "verify", name)
        assert code == 0 and verified["result"]["equal"] is True, verified  # a third build, the same image

        # one file changed in a container, committed and retagged as the environment's image
        six = "/opt/env/lib/python3.11/site-packages/six.py"
        change = ["bash", "-c", f"echo '# changed' >> {six}"]
        container = engine.api.create_container(built["tag"], user="0", command=change)
        engine.api.start(container)
        assert engine.api.wait(container)["StatusCode"] == 0
        engine.api.commit(container, repository=f"envkit/{name}", tag="latest")
        engine.api.remove_container(container)
        code, tampered = _cli(monkeypatch, capsys, tmp_path, "verify", name)
        assert code == 1, tampered
        result = tampered["result"]
        assert result["equal"] is False and result["rebuilt_id"] == built["image_id"]
        assert _changed(result) == {six.lstrip("/"): "changed"}
        entry = result["diff"]["files"][0]
        assert entry["image"]["size"] == entry["rebuilt"]["size"] + len("# changed\n")
        assert {"size", "sha256"} <= set(entry["fields"])
        assert result["diffoscope_missing"] is False, (
            "diffoscope is installed by .ci/run (diffoscope-minimal)"
        )
        assert result["diffoscope"] and "+# changed" in result["diffoscope"][0]["output"].replace(
            "-# changed", "+# changed"
        )
        # the same verify where diffoscope is not installed, as its user reads it: the file list
        # stands, no report, and one line saying diffoscope is missing and how to install it
        real_which = shutil.which
        with monkeypatch.context() as hidden:
            hidden.setattr(
                shutil,
                "which",
                lambda cmd, *a, **k: None if cmd == "diffoscope" else real_which(cmd, *a, **k),
            )
            hidden.setenv("ENVKIT_ROOT", str(tmp_path))
            code = main(["verify", name])
        shown = capsys.readouterr().out
        assert code == 1 and f"file {six.lstrip('/')}: changed" in shown, shown
        assert "diffoscope is not installed" in shown and "apt-get install diffoscope-minimal" in shown, shown
        assert "\ndiffoscope opt/" not in shown, shown  # no report of diffoscope's
        assert engine.inspect(f"envkit/{name}:latest").id == result["image_id"]  # type: ignore[union-attr]

        # a dependency bump: the old image is not what the new lock builds; verify names the files
        files = _bump_and_verify(monkeypatch, capsys, spec, text + "  - packaging==24.1\n  - six==1.17.0\n",
                                 built["tag"])  # fmt: skip
        assert files.get("opt/env/lib/python3.11/site-packages/six.py") == "changed"
        assert files.get("opt/env/lib/python3.11/site-packages/six-1.17.0.dist-info/METADATA") == "added"
        assert files.get("opt/env/lib/python3.11/site-packages/six-1.16.0.dist-info/METADATA") == "removed"
    finally:
        _remove_images(None, name)
        _remove_images(second_engine, name)


def test_conda_image_is_reproducible_on_two_engines_and_a_bump_is_named(
    engine: DockerEngine, base_image: str, second_engine: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = f"itest{RUN}-rconda"
    wheel = next((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"), None)
    if wheel is None:
        pytest.skip("this Python has no bundled pip wheel (ensurepip) to make the pip package from")
    pip = wheel_as_package(
        wheel, "pip", wheel.name.split("-")[1], entry_points=("pip = pip._internal.cli.main:main",)
    )
    url = make_real_channel(tmp_path / "channel", [
        venv_python("3.11.2"),
        noarch_python("tinylib", "1.2.0", {"tinylib/__init__.py": "__version__ = '1.2.0'\n"}),
        noarch_python("tinylib", "1.3.0", {"tinylib/__init__.py": "__version__ = '1.3.0'\n"}),
        pip,
    ])  # fmt: skip
    spec = tmp_path / "environments" / f"{name}.yaml"
    text = f'name: {name}\npython: "3.11"\ncuda: cpu\nchannels: [{url}]\nbase_image: {base_image}\n'
    try:
        first = text + "conda:\n  - tinylib 1.2.*\npip:\n  - six==1.16.0\n"
        built = _both_engines(monkeypatch, capsys, spec, first, second_engine)
        bump = text + "conda:\n  - tinylib 1.3.*\npip:\n  - six==1.16.0\n"
        files = _bump_and_verify(monkeypatch, capsys, spec, bump, built["tag"])
        site = "opt/env/lib/python3.11/site-packages"
        assert files.get(f"{site}/tinylib/__init__.py") == "changed", files
        assert files.get("opt/env/conda-meta/tinylib-1.3.0-pyh0_0.json") == "added", files
        assert files.get("opt/env/conda-meta/tinylib-1.2.0-pyh0_0.json") == "removed", files
    finally:
        _remove_images(None, name)
        _remove_images(second_engine, name)
