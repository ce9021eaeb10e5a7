"""The debug context: FROM the runtime ID, one COPY into the final stage, sshd and Jupyter locked down."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.render.debug import DebugInputs, debug_files
from tests.unit.render.test_render import hadolint

RUNTIME = "sha256:" + "ab" * 32


def _inputs(**kw: Any) -> DebugInputs:
    values: dict[str, Any] = {
        "name": "tiny",
        "runtime_id": RUNTIME,
        "debs": (("gdb", "13.1-3"), ("openssh-server", "1:9.2p1-2+deb12u10")),
        "wheels": True,
        "user": "10001:10001",
        "labels": {"io.envkit.variant": "debug", "io.envkit.runtime-id": RUNTIME},
        "epoch": 1_700_000_000,
    }
    return DebugInputs(**{**values, **kw})


def _files(**kw: Any) -> dict[str, str]:
    inputs = _inputs(**kw)
    return {k: v.decode() for k, v in debug_files(inputs, "# header\n").items()}


def test_both_stages_start_from_the_runtime_image_and_the_final_one_runs_nothing() -> None:
    text = _files()["Dockerfile"]
    assert [line for line in text.splitlines() if line.startswith("FROM")] == [
        f"FROM {RUNTIME} AS tools",
        f"FROM {RUNTIME}",
    ]
    final = text.split(f"\nFROM {RUNTIME}\n", 1)[1]
    assert "RUN" not in final and final.count("COPY") == 1 and "USER 10001:10001" in final
    assert "ENV " not in final  # PATH, WORKDIR, CMD: the runtime image's own
    assert _files()["debs.txt"] == "gdb 13.1-3\nopenssh-server 1:9.2p1-2+deb12u10\n"


def test_the_build_never_keeps_a_host_key_and_never_writes_the_environment() -> None:
    install = _files()["files/install.sh"]
    assert "rm -f /usr/sbin/policy-rc.d /etc/ssh/ssh_host_*" in install
    assert install.index("ssh_host_*") < install.index("find / -xdev")  # deleted before the collection
    assert "-path /tmp" in install  # the .debs and wheels (under /tmp) are never collected
    writes = re.findall(r"(?:>|install -m \S+ \S+(?: \S+)*|mkdir -p|ln -sf \S+) (/opt/env\S*)", install)
    assert not [w for w in writes if w.startswith("/opt/env/") or w == "/opt/env"], writes
    assert '[ "$have" = "$version" ]' in install  # each installed version checked against the lock


def test_sshd_is_key_only_without_root_or_passwords() -> None:
    config = dict(
        line.split(" ", 1) for line in _files()["files/sshd_config"].splitlines() if line and line[0] != "#"
    )
    assert config["PasswordAuthentication"] == "no"
    assert config["KbdInteractiveAuthentication"] == "no"
    assert config["PermitRootLogin"] == "no"
    assert config["AuthenticationMethods"] == "publickey"
    assert config["AllowUsers"] == "envkit" and config["PermitEmptyPasswords"] == "no"
    start = _files()["files/envkit-sshd"]
    assert "ssh-keygen -q -t ed25519" in start and '"$state/ssh_host_ed25519_key"' in start
    assert "exit 2" in start  # no key mounted: refuses to start


def test_jupyter_listens_on_the_loopback_with_a_token() -> None:
    files = _files()
    config = json.loads(files["files/jupyter_server_config.json"])["ServerApp"]
    assert config["ip"] == "127.0.0.1" and config["allow_remote_access"] is False
    start = files["files/envkit-jupyter"]
    assert 'if [ -z "${JUPYTER_TOKEN:-}" ]' in start and "secrets.token_hex" in start
    kernel = json.loads(files["files/kernel.json"])
    assert kernel["argv"][0] == "/opt/env/bin/python" and "sys.path.append" in kernel["argv"][2]
    assert "token" not in files["files/jupyter_server_config.json"].lower()  # never a fixed token


@pytest.mark.parametrize(
    "bad",
    [
        {"name": 'x" \\\nRUN rm -rf / #'},
        {"name": "../x"},
        {"runtime_id": "ubuntu:latest\nRUN id"},
        {"runtime_id": "sha256:abc"},
        {"user": "0:0\nRUN id"},
        {"user": ""},
        {"labels": {"io.envkit.x": "a\nRUN id"}},
        {"labels": {"": "x"}},
        {"debs": (("gdb", "1\nRUN id"),)},
    ],
)
def test_hostile_values_never_reach_the_dockerfile(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"not an? |line break"):
        _inputs(**bad)


def test_hadolint_finds_no_error(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text(_files()["Dockerfile"])
    done = subprocess.run(
        [hadolint(), "--no-color", "--format", "json", str(path)], capture_output=True, text=True, check=False
    )
    assert not [f for f in json.loads(done.stdout or "[]") if f["level"] == "error"]


def test_the_debug_image_is_never_pushed(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["build", "tiny", "--debug-image", "--push", "127.0.0.1:5000"])
    assert code == 2
    assert "the debug image is never pushed" in capsys.readouterr().err


def test_build_help_says_sys_ptrace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--help"]) == 0
    assert "--cap-add SYS_PTRACE" in " ".join(capsys.readouterr().out.split())
