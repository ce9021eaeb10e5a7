"""Runtime images without Python (nvidia/cuda): the pack carries the catalog installer for py-rattler."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from envkit.catalog import InstallerFile, load_catalog
from envkit.errors import PackError, PackMismatch, UsageError
from envkit.offline.archive import verify_against_lock
from envkit.offline.collect import PackRequest, collect
from envkit.offline.request import bootstrap_installers
from envkit.offline.testing import FakeFetcher
from envkit.spec.load import load_spec
from tests.unit.pack.conftest import InstallerPip, packing_catalog

BOOT = b"#!/bin/sh\n# a stand-in for a Miniconda installer\n"


def _spec(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "environments"
    folder.mkdir(exist_ok=True)
    path = folder / "g.yaml"
    path.write_text(f'name: g\npython: "3.11"\n{extra}')
    return path


def test_images_without_python_get_the_catalog_installer(tmp_path: Path) -> None:
    catalog = load_catalog()
    gpu = load_spec(_spec(tmp_path, 'cuda: "11.8"\nframeworks:\n  paddle: "2.6.2"\n'), catalog)
    found = bootstrap_installers(gpu.resolved)
    assert set(found) == {"linux-64"} and found["linux-64"].kind == "miniconda"  # nvidia/cuda has no Python
    assert found["linux-64"] == catalog.installer("miniconda", "x86_64", "3.11")
    cpu_default = load_spec(_spec(tmp_path, "cuda: cpu\n"), catalog)  # ubuntu:22.04: no Python either
    assert bootstrap_installers(cpu_default.resolved)["linux-64"].kind == "miniconda"
    with_python = load_spec(_spec(tmp_path, "cuda: cpu\nbase_image: python:3.11-slim-bookworm\n"), catalog)
    assert bootstrap_installers(with_python.resolved) == {}
    unknown = load_spec(_spec(tmp_path, "cuda: cpu\nbase_image: registry.example/team/img:1\n"), catalog)
    assert bootstrap_installers(unknown.resolved) == {}  # assumed to have python3; the build says so if not
    mamba = load_spec(_spec(tmp_path, 'cuda: "11.8"\ninstaller: micromamba\n'), catalog)
    with pytest.raises(UsageError, match="micromamba brings none"):
        bootstrap_installers(mamba.resolved)


def _request(boot: InstallerFile) -> PackRequest:
    catalog = packing_catalog()
    installer = catalog.offline_installer("x86_64")
    assert installer is not None
    return PackRequest("g", ("linux-64",), "0" * 64, {"linux-64": ()}, None, "3.11", {"linux-64": installer},
                       bootstraps={"linux-64": boot})  # fmt: skip


def test_the_installer_is_downloaded_checked_and_verified(tmp_path: Path) -> None:
    real = load_catalog().installer("miniconda", "x86_64", "3.11")
    assert real is not None
    boot = real.model_copy(update={"sha256": hashlib.sha256(BOOT).hexdigest()})
    fetcher = FakeFetcher({boot.url: BOOT})
    collected = collect(_request(boot), tmp_path / "cache", fetcher, pip_runner=InstallerPip())
    entry = collected.manifest.by_path()["installer/bootstrap-x86_64.sh"]
    assert (entry.kind, entry.url, entry.sha256) == ("installer", boot.url, boot.sha256)
    assert collected.sources[entry.path].read_bytes() == BOOT
    collect(_request(boot), tmp_path / "cache", fetcher, pip_runner=InstallerPip())
    assert fetcher.requests == [boot.url]  # cached the second time
    verify_against_lock(collected.manifest, _request(boot), "p.tar")
    other = boot.model_copy(update={"sha256": "1" * 64})
    with pytest.raises(PackMismatch, match=r"bootstrap-x86_64\.sh"):
        verify_against_lock(collected.manifest, _request(other), "p.tar")
    with pytest.raises(PackError, match="does not match"):
        collect(
            _request(other), tmp_path / "cache2", FakeFetcher({boot.url: BOOT}), pip_runner=InstallerPip()
        )
