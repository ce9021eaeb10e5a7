"""OS libraries the wheels need: installed with a network, checked (and named) offline."""

from __future__ import annotations

from pathlib import Path

from envkit.catalog import load_catalog
from envkit.render import DockerfileInputs, render_image
from envkit.render.dockerfile import os_library_step
from envkit.spec.load import LoadedSpec, load_spec


def _loaded(tmp_path: Path, framework: str, version: str) -> LoadedSpec:
    path = tmp_path / "environments" / "demo.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'name: demo\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: envkit/debian-python:bookworm\n'
        f'frameworks:\n  {framework}: "{version}"\n'
    )
    return load_spec(path)


def test_paddle_gets_libgomp_installed_with_network(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "paddle", "3.3.1")
    dockerfile = render_image(loaded).files["Dockerfile"].decode()
    runtime = dockerfile.split("AS runtime", 1)[1]
    assert "ldconfig -p | grep -qF 'libgomp.so.1 '" in runtime
    assert "apt-get install -y --no-install-recommends libgomp1" in runtime
    assert runtime.index("libgomp1") < runtime.index("USER 10001")  # installed as root


def test_offline_paddle_build_checks_and_names_the_library(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "paddle", "3.3.1")
    inputs = DockerfileInputs(spec_sha256="0" * 64, wheelhouse="wheels", offline=True)
    step = os_library_step(loaded.resolved, inputs)
    assert "apt-get" not in step
    assert "lacks libgomp.so.1 (Debian package libgomp1), which the paddle wheels need" in step
    assert "envkit base-image" in step and "exit 1" in step


def test_torch_needs_nothing_from_the_os(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "torch", "2.13.0")
    assert os_library_step(loaded.resolved, DockerfileInputs(spec_sha256="0" * 64)) == ""


def test_base_image_packages_come_from_the_catalog() -> None:
    catalog = load_catalog()
    assert catalog.os_packages() == ["libgomp1"]
    assert all(entry.source for entry in catalog.os_libraries.values())
