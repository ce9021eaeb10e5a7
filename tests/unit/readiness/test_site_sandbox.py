"""`envkit check --site DIR` opens DIR's libraries on the host (security round 4, item 4): their
constructors run with an emptied environment, in a scratch directory, with no network where
``unshare`` allows, and the report says what held. A real shared library (built here with the C
compiler) records what its constructor saw."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.readiness.check import facts_on_host
from tests.unit.readiness.test_payload_site import make_site

CONSTRUCTOR = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

__attribute__((constructor)) static void spy(void) {
    FILE *out = fopen("%(record)s", "w");
    if (!out) return;
    const char *secret = getenv("ENVKIT_CANARY");
    char cwd[4096] = "";
    if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "?");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(%(port)d);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&addr, sizeof addr);
    fprintf(out, "{\"canary\": \"%%s\", \"cwd\": \"%%s\", \"connected\": %%s, \"home\": \"%%s\"}\n",
            secret ? secret : "", cwd, rc == 0 ? "true" : "false", getenv("HOME") ? getenv("HOME") : "");
    fclose(out);
}
int not_cuda(void) { return 0; }
"""


def _spy_site(tmp_path: Path, port: int) -> tuple[Path, Path]:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build a library with a constructor")
    site = make_site(tmp_path)
    record = tmp_path / "record.json"
    src = tmp_path / "spy.c"
    src.write_text(CONSTRUCTOR % {"record": record, "port": port})
    lib = site / "nvidia" / "cu13" / "lib" / "libcudart.so.13"
    lib.unlink()
    cmd = ["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.13", "-o", str(lib), str(src)]
    subprocess.run(cmd, check=True, capture_output=True)
    return site, record


@pytest.fixture
def listener() -> object:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    yield server
    server.close()


def test_library_constructors_run_without_the_users_environment_cwd_or_network(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, record = _spy_site(tmp_path, listener.getsockname()[1])
    monkeypatch.setenv("ENVKIT_CANARY", "s3cret-token")
    monkeypatch.chdir(tmp_path)
    facts = facts_on_host([str(site)], load_catalog())
    seen = json.loads(record.read_text())
    assert seen["canary"] == "" and seen["home"] == ""  # the environment was emptied
    assert seen["cwd"] != str(tmp_path) and "envkit-load-" in seen["cwd"]
    assert not Path(seen["cwd"]).exists()  # the scratch directory is removed after
    box = facts.load_sandbox
    assert box is not None and box["environment"].startswith("emptied")
    if box["network"].startswith("none"):
        assert seen["connected"] is False  # a new network namespace: the host's loopback is not there
    else:  # a host where unshare is refused says so (and the loads still run)
        assert box["network"].startswith("not isolated")


def test_without_unshare_the_report_says_the_network_was_not_isolated(
    tmp_path: Path,
    listener: socket.socket,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site, record = _spy_site(tmp_path, listener.getsockname()[1])
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-dir"))
    main(["check", "--site", str(site), "--gpu", "A100"])
    out = capsys.readouterr().out
    assert "network not isolated: no unshare command on this host" in out
    assert json.loads(record.read_text())["canary"] == ""


def test_help_says_site_libraries_run_on_this_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "runs their constructors on this host" in text and "unshare" in text


def test_inside_an_image_the_payload_opens_libraries_as_before(tmp_path: Path) -> None:
    # `check IMAGE` runs the payload without --sandbox: the container has no network already
    from envkit.payload import PAYLOAD_DIR

    argv = [sys.executable, str(PAYLOAD_DIR / "ready.py"), "--site", str(make_site(tmp_path))]
    doc = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    assert doc["load_sandbox"] is None
