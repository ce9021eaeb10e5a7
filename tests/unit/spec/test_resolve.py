"""The spec resolved once (envkit.spec.resolve): what it holds, when it raises, and the seam it keeps."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

import envkit
from envkit.catalog import load_catalog
from envkit.errors import UsageError
from envkit.render import render_image
from envkit.render.dockerfile import DockerfileInputs, dockerfile
from envkit.spec.images import runtime_base
from envkit.spec.load import load_spec
from envkit.spec.models import ARCHES, Spec
from envkit.spec.resolve import resolve_spec

REPO = Path(__file__).resolve().parents[3]
SPECS = sorted([*(REPO / "environments").glob("*.yaml"), *(REPO / "tests" / "golden").glob("*/*.yaml")])
PACKAGE = Path(envkit.__file__).parent


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_loading_resolves_what_the_catalog_answers(path: Path) -> None:
    catalog = load_catalog()
    loaded = load_spec(path, catalog)
    spec, resolved = loaded.spec, loaded.resolved
    assert resolved.spec == spec and resolved == resolve_spec(spec, catalog)
    assert resolved.runtime == runtime_base(spec, catalog)
    assert resolved.base == catalog.base_image(resolved.runtime_ref)
    for platform in spec.platforms:
        arch = ARCHES[platform]
        assert resolved.installer(platform) == catalog.installer(spec.installer.value, arch, spec.python)
        assert resolved.offline_installer(platform) == catalog.offline_installer(arch)
    assert resolved.installer("linux-s390x") is None  # not a platform of the spec
    assert resolved.cuda_release == catalog.cuda_release(spec.cuda)
    assert resolved.cuda_wheels == catalog.cuda_wheels(spec.cuda)
    assert list(resolved.libraries) == catalog.libraries_for(fw for fw, _ in spec.frameworks.items())
    assert [fw for fw, _ in resolved.wheels] == [fw for fw, _ in spec.frameworks.items()]


def test_the_builder_image_is_the_os_image_of_the_runtime_images_os() -> None:
    catalog = load_catalog()
    gpu = Spec.model_validate(
        {"name": "g", "python": "3.11", "cuda": "11.8", "frameworks": {"paddle": "2.6.2"}}
    )
    resolved = resolve_spec(gpu, catalog)
    assert resolved.base is not None and resolved.base.kind == "cuda-runtime"
    os_image = catalog.os_image(resolved.base.os)
    assert os_image is not None and resolved.builder_image == os_image.ref
    private = resolve_spec(gpu.model_copy(update={"base_image": "registry.example/team/img:1"}), catalog)
    assert private.base is None and private.builder_image == "registry.example/team/img:1"
    no_os = resolve_spec(
        gpu, replace(catalog, base_images=tuple(b for b in catalog.base_images if b.kind != "os"))
    )
    assert no_os.builder_image == no_os.runtime_ref  # no OS image with that glibc: the runtime image builds


def test_a_cuda_without_a_runtime_image_resolves_and_fails_where_it_is_used(tmp_path: Path) -> None:
    """Resolving never raises; the stage that needs the image raises what it always raised."""
    catalog = load_catalog()
    bare = replace(catalog, base_images=tuple(b for b in catalog.base_images if b.kind != "cuda-runtime"))
    spec = Spec.model_validate({"name": "g", "python": "3.11", "cuda": "12.4"})
    resolved = resolve_spec(spec, bare)  # no error here
    assert resolved.runtime_or_none is None
    for ask in (lambda: resolved.runtime, lambda: resolved.runtime_ref, lambda: resolved.base):
        with pytest.raises(UsageError, match=r"no CUDA 12\.4 runtime image is known"):
            ask()
    with pytest.raises(UsageError, match=r"no CUDA 12\.4 runtime image is known"):
        runtime_base(spec, bare)  # the same error as asking the catalog directly
    with pytest.raises(UsageError, match=r"no CUDA 12\.4 runtime image is known"):
        dockerfile(resolved, DockerfileInputs(spec_sha256="0" * 64), "")  # render raises it, as before
    # with the shipped catalog the same spec loads, resolves and renders
    path = tmp_path / "g.yaml"
    path.write_text('name: g\npython: "3.11"\ncuda: "12.4"\n')
    assert b"FROM nvidia/cuda:12.4" in render_image(load_spec(path, catalog)).files["Dockerfile"]


def _calls(name: str) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if called == name:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_the_runtime_image_is_resolved_in_one_place() -> None:
    """``runtime_base`` (was ``runtime_image_ref`` at six sites) is called from resolve_spec only."""
    assert [c.split(":")[0] for c in _calls("runtime_base")] == ["spec/resolve.py"]
    assert _calls("runtime_image_ref") == []
    assert [c.split(":")[0] for c in _calls("resolve_spec")] == ["spec/load.py"]


@pytest.mark.parametrize("package", ["render", "offline", "lock", "verify"])
def test_render_offline_lock_verify_do_not_take_the_catalog(package: str) -> None:
    """They read the resolved spec; only the catalog's value types (an installer row) may be imported."""
    offenders = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("envkit.catalog"):
                offenders += [
                    f"{path.name}: {a.name}" for a in node.names if a.name in ("Catalog", "load_catalog")
                ]
            elif isinstance(node, ast.Import):
                offenders += [
                    f"{path.name}: {a.name}" for a in node.names if a.name.startswith("envkit.catalog")
                ]
    assert offenders == []
