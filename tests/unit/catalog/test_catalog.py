"""The catalog loads, every fact has a source, lookups behave."""

from __future__ import annotations

from typing import Any

from envkit.catalog import load_catalog


def test_every_fact_has_a_source() -> None:
    catalog = load_catalog()
    groups: list[tuple[Any, ...]] = [catalog.cuda, catalog.base_images, catalog.installers, catalog.known_bad]
    assert all(groups) and all(f.source for group in groups for f in group)
    assert all(family.source for family in catalog.frameworks.values())


def test_installer_prefers_verified_and_matching_python() -> None:
    catalog = load_catalog()
    chosen = catalog.installer("miniconda", "x86_64", "3.10")
    assert chosen is not None and chosen.verified and chosen.python == "3.10"
    assert catalog.installer("miniforge", "aarch64") is not None


def test_known_bad() -> None:
    catalog = load_catalog()
    assert [r.id for r in catalog.known_bad_hits({"torch": "2.1.2+cu118", "numpy": "2.0.1"})] == [
        "torch-numpy2"
    ]
    assert catalog.known_bad_hits({"torch": "2.4.1", "numpy": "2.0.1"}) == []
    assert catalog.known_bad_hits({"numpy": "2.0.1"}) == []


def test_wheel_lookup_and_closest_images() -> None:
    catalog = load_catalog()
    wheel = catalog.wheel("paddle", "2.6.2", "12.0")
    assert wheel is not None and wheel.requirement == "paddlepaddle-gpu==2.6.2.post120"
    assert catalog.wheel("paddle", "2.6.2", "12.4") is None
    assert "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime" in catalog.closest_images(
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-devel"
    )


def test_init_default_avoids_experimental_flavours() -> None:
    from envkit.init.starter import choose_starter

    catalog = load_catalog()
    choice = choose_starter(catalog, "torch")
    release = catalog.framework_release("torch", choice.version)
    assert release is not None
    wheel = release.wheel_for(choice.cuda)
    assert wheel is not None and not wheel.experimental
