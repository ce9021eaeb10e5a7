"""Base images without a registry: debootstrap + import, through a fake engine and a fake runner."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from envkit import _proc
from envkit.build.bootstrap import BASE_LABEL, bootstrap_image, debian_mirror
from envkit.engine.testing import FakeEngine
from envkit.errors import EngineError, UsageError


def fake_debootstrap(calls: list[list[str]]) -> Any:
    def run(argv: list[str], **_: Any) -> _proc.ProcResult:
        calls.append(list(argv))
        rootfs = Path(argv[-2])
        (rootfs / "usr" / "bin").mkdir(parents=True)
        (rootfs / "usr" / "bin" / "python3").write_text("#!/bin/sh\n")
        (rootfs / "etc").mkdir()
        (rootfs / "etc" / "os-release").write_text("ID=debian\n")
        return _proc.ProcResult(tuple(argv), 0, "", "")

    return run


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("envkit.build.bootstrap.shutil.which", lambda name: f"/usr/sbin/{name}")
    monkeypatch.setattr("envkit.build.bootstrap.os.geteuid", lambda: 0)


def test_bootstrap_imports_the_rootfs_with_a_label(as_root: None) -> None:
    engine, calls = FakeEngine(), []  # type: tuple[FakeEngine, list[Any]]
    result = bootstrap_image(
        engine, "local/base:bookworm", mirror="http://mirror/debian", run=fake_debootstrap(calls)
    )
    assert result.created and result.image.labels[BASE_LABEL] == "debootstrap:bookworm"
    # python3, venv, pip and the OS libraries the framework wheels need (libgomp1: Paddle)
    assert calls[0][:3] == [
        "debootstrap",
        "--variant=minbase",
        "--include=libgomp1,python3,python3-pip,python3-venv",
    ]
    assert result.image.labels["io.envkit.base-packages"] == "libgomp1,python3,python3-pip,python3-venv"
    assert calls[0][3] == "bookworm" and calls[0][-1] == "http://mirror/debian"
    data, tag, changes = engine.imports[0]
    assert tag == "local/base:bookworm" and 'CMD ["python3"]' in changes
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = tar.getnames()
    assert "usr/bin/python3" in names and "etc/os-release" in names
    assert not any(n.startswith(("/", "rootfs")) for n in names)


def test_existing_image_is_reused(as_root: None) -> None:
    engine, calls = FakeEngine(), []  # type: tuple[FakeEngine, list[Any]]
    engine.add_image("local/base:bookworm")
    assert not bootstrap_image(engine, "local/base:bookworm", run=fake_debootstrap(calls)).created
    assert calls == []
    assert bootstrap_image(engine, "local/base:bookworm", force=True, run=fake_debootstrap(calls)).created


def test_an_image_made_without_a_needed_package_is_remade(as_root: None) -> None:
    """An older `envkit base-image` (no libgomp1) is remade once; one with every package is reused."""
    engine, calls = FakeEngine(), []  # type: tuple[FakeEngine, list[Any]]
    engine.add_image("local/base:bookworm", labels={BASE_LABEL: "debootstrap:bookworm"})
    assert bootstrap_image(engine, "local/base:bookworm", run=fake_debootstrap(calls)).created
    assert not bootstrap_image(engine, "local/base:bookworm", run=fake_debootstrap(calls)).created
    assert len(calls) == 1


def test_names_are_validated_before_anything_runs(as_root: None) -> None:
    with pytest.raises(UsageError):
        bootstrap_image(FakeEngine(), "t:1", suite="bookworm; rm -rf /", run=fake_debootstrap([]))
    with pytest.raises(UsageError):
        bootstrap_image(FakeEngine(), "t:1", packages=("python3", "x && id"), run=fake_debootstrap([]))


def test_needs_debootstrap_and_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("envkit.build.bootstrap.shutil.which", lambda name: None)
    with pytest.raises(EngineError, match="debootstrap is not installed"):
        bootstrap_image(FakeEngine(), "t:1", run=fake_debootstrap([]))
    monkeypatch.setattr("envkit.build.bootstrap.shutil.which", lambda name: "/usr/sbin/debootstrap")
    monkeypatch.setattr("envkit.build.bootstrap.os.geteuid", lambda: 1000)
    with pytest.raises(EngineError, match="needs root"):
        bootstrap_image(FakeEngine(), "t:1", run=fake_debootstrap([]))


def test_debian_mirror_from_apt_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENVKIT_DEBIAN_MIRROR", raising=False)
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n")
    classic = tmp_path / "sources.list"
    classic.write_text("deb [arch=amd64] http://other.example/debian bookworm main\n")
    assert debian_mirror("bookworm", [deb822]) == "http://mirror.example/debian"
    assert debian_mirror("bookworm", [classic]) == "http://other.example/debian"
    assert debian_mirror("bookworm", [tmp_path / "none"]) == "http://deb.debian.org/debian"
    monkeypatch.setenv("ENVKIT_DEBIAN_MIRROR", "file:///srv/debian")
    assert debian_mirror("bookworm", [deb822]) == "file:///srv/debian"
