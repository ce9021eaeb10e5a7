"""Class 10 (issue 26), part: a torch newer than the flavour table is not silently CPU-only.

torch 2.15.0's PyPI wheel requires ``cuda-toolkit[cublas,...]==13.2.2`` (extras and a marker in the
requirement): when its metadata can be read, the plain wheel becomes the release's CUDA 13.2
flavour; when it cannot (the recorded pages got HTTP 404), the release says so in a note and
a refresh warning. ``tests/data/catalog/metadata/torch-2.15.0-cp311-requires-dist.txt`` holds the
header and Requires-Dist lines of the real wheel's METADATA (torch-2.15.0-cp311-cp311-
manylinux_2_28_x86_64, installed from PyPI in the envkit development venv).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from envkit.catalog.refresh import RecordedPages, refresh
from envkit.catalog.refresh.fallback import load_fallback
from envkit.catalog.refresh.readers import cuda_requirements, read_core_metadata

DATA = Path(__file__).resolve().parents[2] / "data" / "catalog"
METADATA = DATA / "metadata" / "torch-2.15.0-cp311-requires-dist.txt"
CP311 = (
    "https://pypi.org/packages/packages/06/7d/57b7f46934e1148b436889e385693bfcb94ae047b3fe0b6015922e3b66f7/"
    "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl.metadata"
)
FAMILIES = """
torch:
  floor: "2.15.0"
  projects: [torch]
  groups:
    - versions: ">=2.15"
      source: "no release matrix row read for 2.15"
      flavours:
        - {cuda: cpu, package: torch, pip: "{v}+cpu", index: "https://download.pytorch.org/whl/cpu",
           mode: extra-index-url, page: "https://download.pytorch.org/whl/cpu/torch/"}
"""


def _release(pages: Path) -> tuple[dict[str, Any], list[str]]:
    result = refresh(RecordedPages(pages), load_fallback(FAMILIES))
    releases = yaml.safe_load(result.text)["torch"]["releases"]
    return next(r for r in releases if r["version"] == "2.15.0"), result.warnings


def test_the_real_requirement_form_is_read() -> None:
    assert cuda_requirements(read_core_metadata(METADATA.read_bytes())) == ("13.2", "9.26")


def test_readable_metadata_makes_the_default_wheel_a_cuda_flavour(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    shutil.copytree(DATA / "pages", pages)
    shutil.copy(METADATA, pages / "torch-2.15.0-cp311.metadata")
    manifest = json.loads((pages / "manifest.json").read_text())
    manifest["pages"][CP311] = {
        "file": "torch-2.15.0-cp311.metadata",
        "fetched": "2026-12-01",
        "sha256": "ab" * 32,
    }
    (pages / "manifest.json").write_text(json.dumps(manifest))
    release, _ = _release(pages)
    assert release["pypi_cuda"] == "13.2" and release["cudnn"] == "9.26"
    plain = {"cuda": "13.2", "package": "torch", "pip_version": "2.15.0", "index": None, "index_mode": None}
    assert plain in release["wheels"] and "note" not in release


def test_unreadable_metadata_is_said_not_silently_cpu_only() -> None:
    release, warnings = _release(DATA / "pages")  # the recorded cp3xx metadata pages are HTTP 404
    assert [w["cuda"] for w in release["wheels"]] == ["cpu"]
    assert "the CUDA of the default PyPI wheel is unknown" in release["note"]
    assert any(w.startswith("torch 2.15.0: the CUDA of the default PyPI wheel is unknown") for w in warnings)
