"""Class 10 (issue 26), part: a CUDA whose images NVIDIA deleted is a hint naming the closest tag."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.catalog import load_catalog
from envkit.errors import SpecError
from envkit.spec.load import load_spec
from envkit.spec.missing_image import deleted_image, removed_cudas


def _problems(tmp_path: Path, cuda: str, torch: str, python: str = "3.10") -> str:
    path = tmp_path / "t.yaml"
    path.write_text(
        f'name: t\npython: "{python}"\ncuda: "{cuda}"\nframeworks:\n  torch: "{torch}"\n', "utf-8"
    )
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return str(info.value) + " " + " ".join(f"{p.message} (hint: {p.hint})" for p in info.value.problems)


def test_cuda_11_7_builds_on_the_patch_nvidia_kept(tmp_path: Path) -> None:
    """torch 2.0.1's default CUDA 11.7: NVIDIA deleted the 11.7.0 tags in 2023 and kept 11.7.1."""
    path = tmp_path / "t.yaml"
    path.write_text('name: t\npython: "3.10"\ncuda: "11.7"\nframeworks:\n  torch: "2.0.1"\n', "utf-8")
    assert load_spec(path).spec.cuda == "11.7"
    image = load_catalog().runtime_image("11.7")
    assert image is not None and image.ref == "nvidia/cuda:11.7.1-cudnn8-runtime-ubuntu22.04"


def test_no_catalog_image_is_a_deleted_tag() -> None:
    """Every minor that lost tags and still has a catalog image has it on a tag NVIDIA kept."""
    catalog = load_catalog()
    nvidia = [b.ref for b in catalog.base_images if b.ref.startswith("nvidia/cuda:")]
    assert nvidia and not [ref for ref in nvidia if deleted_image(ref)]
    kept = {c for c in removed_cudas() if catalog.runtime_image(c) is not None}
    assert kept == {"11.2", "11.3", "11.6", "11.7"}  # 10.2 lost every tag


def test_every_removed_cuda_is_sourced() -> None:
    removed = removed_cudas()
    assert {"11.7", "11.6", "11.2"} <= set(removed)
    assert all("PR #" in source or "issue #" in source for source in removed.values())


def test_cuda_13_2_with_the_torch_pip_installs_today_validates(tmp_path: Path) -> None:
    """torch 2.15.0 (PyPI) requires cuda-toolkit 13.2.2: the catalog has CUDA 13.2, its image, the wheel."""
    catalog = load_catalog()
    release = catalog.framework_release("torch", "2.15.0")
    assert release is not None and release.pypi_cuda == "13.2"
    plain = release.wheel_for("13.2")
    assert plain is not None and plain.pip_version == "2.15.0" and plain.index is None
    assert catalog.runtime_image("13.2") is not None
    path = tmp_path / "t.yaml"
    path.write_text('name: t\npython: "3.12"\ncuda: "13.2"\nframeworks:\n  torch: "2.15.0"\n', "utf-8")
    assert load_spec(path).spec.cuda == "13.2"


def test_every_cuda_a_catalog_wheel_is_built_for_is_in_the_cuda_table() -> None:
    catalog = load_catalog()
    table = {r.version for r in catalog.cuda}
    wheels = {w.cuda for f in catalog.frameworks.values() for r in f.releases for w in r.wheels}
    assert wheels - {"cpu"} <= table  # 10.2 too (torch 1.8-1.12's PyPI default), since issue 26


def test_cuda_10_2_is_known_and_its_deleted_images_are_a_hint(tmp_path: Path) -> None:
    """torch 1.11.0's PyPI wheel is the CUDA 10.2 build: the catalog knows 10.2 (driver >= 440.33), and
    NVIDIA deleted its images, so the hint names the closest CUDA with an image."""
    catalog = load_catalog()
    row = catalog.cuda_release("10.2")
    assert row is not None and row.min_driver == "440.33" and "10.2" in removed_cudas()
    text = _problems(tmp_path, "10.2", "1.11.0", python="3.9")
    assert "NVIDIA deleted the CUDA 10.2 images from Docker Hub and NGC" in text
    assert "closest CUDA with an image" in text and "catalog does not know" not in text


@pytest.mark.parametrize(
    ("ref", "deleted"),
    [
        ("nvidia/cuda:10.2-cudnn7-devel-ubuntu18.04", True),
        ("docker.io/nvidia/cuda:11.7.0-cudnn8-runtime-ubuntu22.04", True),
        ("nvcr.io/nvidia/cuda:11.2.1-runtime-ubuntu20.04", True),
        # the newest patch of a minor stayed (sources in removed_images.yaml)
        ("nvidia/cuda:11.7.1-cudnn8-runtime-ubuntu22.04", False),
        ("nvidia/cuda:11.6.2-cudnn8-devel-ubuntu20.04", False),
        ("nvidia/cuda:11.8.0-runtime-ubuntu22.04", False),
        ("myregistry/nvidia/cuda:10.2-devel-ubuntu18.04", False),  # a copy in one's own registry
        ("nvidia/cuda:10.2\n-devel", False),
    ],
)
def test_which_nvidia_cuda_tags_were_deleted(ref: str, deleted: bool) -> None:
    assert deleted_image(ref) is deleted
