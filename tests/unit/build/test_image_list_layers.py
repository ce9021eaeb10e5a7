"""``envkit images``: the layers an image shares with the images of other environments (issue 47:
a cu11.8 and a cu12.x variant of one spec share every layer above the CUDA and framework ones)."""

from __future__ import annotations

from pathlib import Path

from envkit.build.image_list import list_images
from envkit.catalog import load_catalog
from envkit.engine.protocol import ImageInfo
from envkit.engine.testing import FakeEngine

BASE = ("sha256:base1", "sha256:base2")


def _image(engine: FakeEngine, name: str, image_id: str, own: tuple[str, ...]) -> None:
    engine.images_by_tag[f"envkit/{name}:latest"] = ImageInfo(
        image_id, (f"envkit/{name}:latest",), {"io.envkit.name": name}, "10001:10001", 1, (*BASE, *own)
    )


def test_variants_share_the_layers_above_cuda(tmp_path: Path) -> None:
    engine = FakeEngine()
    _image(
        engine,
        "app-cu118",
        "sha256:a",
        ("sha256:venv", "sha256:cuda11", "sha256:fw11", "sha256:native", "sha256:py"),
    )
    _image(
        engine,
        "app-cu124",
        "sha256:b",
        ("sha256:venv", "sha256:cuda12", "sha256:fw12", "sha256:native", "sha256:py"),
    )
    _image(engine, "other", "sha256:c", ("sha256:solo",))
    rows = {r.name: r for r in list_images(engine, tmp_path, load_catalog())}
    assert (rows["app-cu118"].layers, rows["app-cu118"].shared_layers) == (7, 5)  # base, venv, native, python
    assert rows["app-cu118"].shared_with == ("app-cu124", "other")
    assert (rows["other"].layers, rows["other"].shared_layers) == (3, 2)  # the base only
    assert rows["other"].to_json()["shared_with"] == ["app-cu118", "app-cu124"]


def test_an_image_alone_shares_nothing(tmp_path: Path) -> None:
    engine = FakeEngine()
    _image(engine, "solo", "sha256:a", ("sha256:x",))
    (row,) = list_images(engine, tmp_path, load_catalog())
    assert (row.layers, row.shared_layers, row.shared_with) == (3, 0, ())
