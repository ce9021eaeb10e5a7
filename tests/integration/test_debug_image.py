"""``envkit build NAME --debug-image`` on the CPU demo image: real Docker, real gdb, py-spy, Jupyter, sshd.

One debug image is built per module, FROM the session's demo image (``conftest.demo_torch_image``);
its .debs come from Debian's archive and its wheels from PyPI, fetched on the host (the build itself
has no network). The fixture of the demo image removes every image of the demo's name afterwards,
the debug image included (it carries the same ``io.envkit.name``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit.build.bootstrap import debian_mirror
from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.inventory.image_source import ImageSource
from envkit.inventory.snapshot import take_snapshot

docker = pytest.importorskip("docker")

pytestmark = [pytest.mark.docker, pytest.mark.frameworks, pytest.mark.slow]

TOKEN = "envkit-test-token-" + os.urandom(8).hex()  # never in any layer (checked below)
TRAIN = """
import sys, time, torch
def train_step(model, opt, x):
    loss = model(x).square().mean()
    opt.zero_grad(); loss.backward(); opt.step()
    return loss
def training_loop():
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 32); opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    print("training", flush=True)
    while True:
        train_step(model, opt, torch.randn(64, 32))
        time.sleep(0.01)
training_loop()
"""


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def debug_image(demo_torch_image: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The ``--json`` result of ``envkit build DEMO --offline --debug-image`` (runtime + ``debug``)."""
    if not (_reachable("https://pypi.org/simple/py-spy/") and _reachable(debian_mirror("bookworm") + "/")):
        pytest.skip("the debug tools come from PyPI and Debian's archive: neither is reachable here")
    engine = DockerEngine()
    before = engine.inspect(demo_torch_image["tag"])
    assert before is not None
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("ENVKIT_ROOT", demo_torch_image["root"])
        mp.setenv("ENVKIT_FIND_LINKS", demo_torch_image["find_links"])
        code = main(["build", demo_torch_image["name"], "--offline", "--debug-image", "--json"])
    built = json.loads(out.getvalue())
    assert code == 0, built
    result = {**built["result"], "runtime_before": before.id, "root": demo_torch_image["root"]}
    yield result


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    c = docker.from_env(timeout=600)
    yield c
    c.close()


@contextlib.contextmanager
def container(client: Any, image: str, command: list[str], **kw: Any) -> Iterator[Any]:
    box = client.containers.run(image, command, detach=True, cap_add=["SYS_PTRACE"], **kw)
    try:
        yield box
    finally:
        box.remove(force=True)


def wait_for(box: Any, text: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        logs = box.logs().decode("utf-8", "replace")
        if text in logs:
            return str(logs)
        box.reload()
        if box.status == "exited":
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not in the container's output: {box.logs().decode()[-2000:]}")


def run_in(box: Any, argv: list[str], **kw: Any) -> tuple[int, str]:
    code, output = box.exec_run(argv, **kw)
    return int(code), output.decode("utf-8", "replace")


def test_the_debug_image_is_built_from_the_runtime_images_digest(
    debug_image: dict[str, Any], client: Any
) -> None:
    debug = debug_image["debug"]
    runtime = client.images.get(debug_image["tag"])
    assert runtime.id == debug_image["image_id"] == debug_image["runtime_before"]  # the runtime is unchanged
    image = client.images.get(debug["tag"])
    assert image.labels["io.envkit.runtime-id"] == runtime.id == debug["runtime_id"]
    assert image.labels["io.envkit.variant"] == "debug"
    layers, base = image.attrs["RootFS"]["Layers"], runtime.attrs["RootFS"]["Layers"]
    assert layers[: len(base)] == base and len(layers) == len(base) + 1  # FROM it, one layer added
    assert "envkit/" + debug_image["name"] + ":latest" not in image.tags  # never the runtime's tag
    assert image.attrs["Config"]["User"] == runtime.attrs["Config"]["User"] != ""
    assert any(n.startswith("nsys: not added") for n in debug["notes"])
    listed = io.StringIO()
    with contextlib.redirect_stdout(listed), pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVKIT_ROOT", debug_image["root"])
        assert main(["images", debug_image["name"], "--json"]) == 0
    rows = json.loads(listed.getvalue())["result"]["images"]
    assert [r["variant"] for r in rows][:2] == ["runtime", "debug"]  # side by side: runtime first
    assert rows[1]["latest"] and rows[1]["runtime_id"] == runtime.id and debug["tag"] in rows[1]["tags"]


def test_the_environment_snapshot_equals_the_runtime_images(debug_image: dict[str, Any]) -> None:
    engine = DockerEngine()
    runtime = take_snapshot(ImageSource(engine, debug_image["tag"]))
    debug = take_snapshot(ImageSource(engine, debug_image["debug"]["tag"]))
    assert runtime["host"] != debug["host"]
    assert {**debug, "host": ""} == {**runtime, "host": ""}
    assert any(p["name"] == "torch" for p in debug["pip"])
    assert not any(p["name"] in ("jupyterlab", "py-spy", "ipykernel") for p in debug["pip"])


def test_a_diff_of_the_two_sboms_shows_only_the_debug_tools(
    debug_image: dict[str, Any], client: Any, tmp_path: Path
) -> None:
    runtime = client.containers.run(
        debug_image["tag"], ["cat", "/opt/env/share/envkit/sbom.cdx.json"], remove=True
    )
    debug = client.containers.run(
        debug_image["debug"]["tag"], ["cat", "/opt/envkit-debug/share/sbom.cdx.json"], remove=True
    )
    (tmp_path / "runtime.cdx.json").write_bytes(runtime)
    (tmp_path / "debug.cdx.json").write_bytes(debug)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diff", str(tmp_path / "runtime.cdx.json"), str(tmp_path / "debug.cdx.json"), "--json"])
    envelope = json.loads(out.getvalue())
    assert envelope["ok"], envelope["errors"]
    findings = envelope["result"]["findings"]
    lock = json.loads(Path(debug_image["debug"]["lock_path"]).read_text())
    wheels = {p["name"] for p in lock["pip"]["packages"]}
    assert code == 0 and findings
    assert {f["kind"] for f in findings} == {"added"}  # nothing of the runtime image changed or went
    assert {f["package"] for f in findings} <= wheels and {"jupyterlab", "py-spy"} <= wheels
    debs = [c for c in json.loads(debug)["components"] if c.get("purl", "").startswith("pkg:deb/")]
    assert {c["name"] for c in debs} == {p["name"] for p in lock["debian"]["packages"]}


def test_py_spy_and_gdb_read_a_running_training_loop(debug_image: dict[str, Any], client: Any) -> None:
    with container(client, debug_image["debug"]["tag"], ["python", "-c", TRAIN]) as box:
        wait_for(box, "training")
        pid = run_in(box, ["sh", "-c", "pgrep -o -f training_loop || echo 1"])[1].strip()
        code, dump = run_in(box, ["py-spy", "dump", "--pid", pid])
        assert code == 0, dump
        assert "training_loop" in dump and "<string>" in dump, dump
        code, bt = run_in(box, ["gdb", "-p", pid, "-batch", "-ex", "py-bt"])
        assert code == 0, bt
        assert re.search(r'File "<string>", line \d+, in training_loop', bt), bt[-3000:]


def test_jupyter_answers_on_the_loopback_only_and_only_with_the_token(
    debug_image: dict[str, Any], client: Any
) -> None:
    with container(
        client, debug_image["debug"]["tag"], ["envkit-jupyter"], environment={"JUPYTER_TOKEN": TOKEN}
    ) as box:
        wait_for(box, "Jupyter Server", timeout=180)
        probe = (
            "import json, socket, sys, urllib.request as u\n"
            "def get(h):\n"
            "    r = u.Request('http://127.0.0.1:8888/api/status', headers=h)\n"
            "    try: return u.urlopen(r, timeout=10).status\n"
            "    except u.HTTPError as e: return e.code\n"
            "ip = socket.gethostbyname(socket.gethostname())\n"
            "s = socket.socket(); s.settimeout(5)\n"
            "outside = s.connect_ex((ip, 8888))\n"
            f"print(json.dumps([get({{}}), get({{'Authorization': 'token {TOKEN}'}}), "
            f"get({{'Authorization': 'token wrong'}}), ip, outside]))\n"
        )
        code, out = run_in(box, ["python", "-c", probe])
        assert code == 0, out
        without, with_token, wrong, ip, outside = json.loads(out.strip().splitlines()[-1])
        assert (without, with_token, wrong) == (403, 200, 403)
        assert ip != "127.0.0.1" and outside != 0  # nothing listens on the container's address


def test_sshd_takes_the_key_and_refuses_passwords_and_root(
    debug_image: dict[str, Any], client: Any, tmp_path: Path
) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    mount = {str(key) + ".pub": {"bind": "/etc/envkit-debug/authorized_keys", "mode": "ro"}}
    with container(client, debug_image["debug"]["tag"], ["envkit-sshd"], volumes=mount) as box:
        wait_for(box, "Server listening")
        box.reload()
        ip = box.attrs["NetworkSettings"]["IPAddress"]
        base = ["ssh", "-p", "2222", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "ConnectTimeout=20", "-o", "IdentitiesOnly=yes"]  # fmt: skip

        def ssh(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=False)

        ok = ssh("-i", str(key), f"envkit@{ip}", "id -un; command -v py-spy gdb")
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.splitlines()[0] == "envkit" and "/py-spy" in ok.stdout
        methods = "PreferredAuthentications=password,keyboard-interactive"
        password = ssh("-o", "PubkeyAuthentication=no", "-o", methods, f"envkit@{ip}", "true")
        assert password.returncode == 255 and "Permission denied (publickey)" in password.stderr
        root = ssh("-i", str(key), f"root@{ip}", "true")
        assert root.returncode == 255 and "Permission denied" in root.stderr
        # the host key was made at this first start, in the user's state directory; /etc/ssh has none
        _, made = run_in(box, ["sh", "-c", "ls $HOME/.envkit-sshd/"])
        _, etc = run_in(box, ["ls", "/etc/ssh/"])
        assert "ssh_host_ed25519_key" in made.split() and not any(
            n.startswith("ssh_host_") for n in etc.split()
        )


# a whole PEM block (binaries such as sshd carry the header alone, as a string to parse)
PEM_KEY = re.compile(
    rb"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----\s+[A-Za-z0-9+/=:,\s-]{32,}?-----END \1PRIVATE KEY-----"
)
HOST_KEY = re.compile(r"(^|/)(ssh_host_[a-z0-9]+_key(\.pub)?|authorized_keys)$")


def _scan_layer(name: str, layer: Any, problems: list[str]) -> int:
    """Every file name and (below 64 MB) every file's bytes of one layer tar; the number of files."""
    count = 0
    with tarfile.open(fileobj=layer, mode="r|") as files:
        for entry in files:
            if HOST_KEY.search(entry.name):
                problems.append(f"{name}: {entry.name}")
            if not entry.isfile() or entry.size > 64 << 20:
                continue
            data = files.extractfile(entry)
            body = data.read() if data else b""
            count += 1
            # ELF binaries embed PEM text to parse or self-test keys (GnuTLS's FIPS tests): not secrets
            if not body.startswith(b"\x7fELF") and PEM_KEY.search(body):
                problems.append(f"{name}: {entry.name}: a private key")
            if TOKEN.encode() in body:
                problems.append(f"{name}: {entry.name}: the test token")
    return count


def test_no_private_key_token_or_host_key_is_in_any_layer(
    debug_image: dict[str, Any], client: Any, tmp_path: Path
) -> None:
    saved = tmp_path / "debug.tar"
    with saved.open("wb") as fh:
        for chunk in client.images.get(debug_image["debug"]["tag"]).save(named=False):
            fh.write(chunk)
    problems: list[str] = []
    with tarfile.open(saved) as image:
        manifest = image.extractfile("manifest.json")
        assert manifest is not None
        (entry,) = json.load(manifest)
        counts = []
        for name in entry["Layers"]:
            layer = image.extractfile(name)
            assert layer is not None
            counts.append(_scan_layer(name, layer, problems))
    assert counts[-1] > 1000  # the debug layer (the last) was read: gdb, sshd, JupyterLab
    assert problems == [], problems
