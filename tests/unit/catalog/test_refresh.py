"""`envkit catalog refresh`: the shipped data regenerates from the recorded pages byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from envkit.catalog.refresh import (
    HttpPages,
    PageUnreachable,
    RecordedPages,
    Recorder,
    recording_trim,
    refresh,
)
from envkit.catalog.refresh.fallback import load_fallback
from envkit.catalog.refresh.readers import (
    cuda_requirements,
    read_core_metadata,
    read_link_page,
    read_pypi_project,
    trim_page,
)
from envkit.cli import main

DATA = Path(__file__).resolve().parents[2] / "data" / "catalog"
PAGES = DATA / "pages"
INDEX_PAGES = DATA / "index-pages"
SHIPPED = Path(__file__).resolve().parents[3] / "envkit" / "catalog" / "data" / "frameworks.yaml"


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(SHIPPED.read_text("utf-8"), Loader=yaml.CSafeLoader)
    return data


def test_shipped_frameworks_regenerate_byte_for_byte() -> None:
    """A hand edit of frameworks.yaml (or of the fallback table without a refresh) fails here."""
    regenerated = refresh(RecordedPages(PAGES)).text
    assert regenerated == SHIPPED.read_text("utf-8"), (
        "envkit/catalog/data/frameworks.yaml differs from what the recorded pages give: "
        "run `envkit catalog refresh --pages tests/data/catalog/pages`"
    )


def test_refresh_is_idempotent() -> None:
    assert refresh(RecordedPages(PAGES)).text == refresh(RecordedPages(PAGES)).text


def test_coverage_every_final_release_with_sources(shipped: dict[str, Any]) -> None:
    data = shipped
    torch = [r["version"] for r in data["torch"]["releases"]]
    paddle = [r["version"] for r in data["paddle"]["releases"]]
    assert torch[0] == "1.8.0" and {"1.13.1", "2.0.1", "2.10.0", "2.15.0"} <= set(torch)
    assert len(torch) == 40
    assert paddle[0] == "2.4.0" and {"2.6.0", "2.6.1", "3.3.1"} <= set(paddle)
    assert len(paddle) == 17
    for release in [*data["torch"]["releases"], *data["paddle"]["releases"]]:
        assert release["sources"] and all(len(s["sha256"]) == 64 and s["fetched"] for s in release["sources"])
        assert release["flavours"] in {"index", "fallback"} and release["source"]


def test_index_only_releases_are_marked(shipped: dict[str, Any]) -> None:
    data = shipped
    by_version = {r["version"]: r for r in data["paddle"]["releases"]}
    cpu_261 = next(w for w in by_version["2.6.1"]["wheels"] if w["cuda"] == "cpu")
    assert cpu_261["index_only"] is True and "paddlepaddle.org.cn" in cpu_261["index"]
    cpu_262 = next(w for w in by_version["2.6.2"]["wheels"] if w["cuda"] == "cpu")
    assert cpu_262["index"] is None and "index_only" not in cpu_262  # still on PyPI
    gpu_30 = next(w for w in by_version["3.0.0"]["wheels"] if w["cuda"] == "11.8")
    assert gpu_30["index_only"] is True  # paddlepaddle-gpu has no 3.x on PyPI


def test_default_wheel_cuda_comes_from_wheel_metadata(shipped: dict[str, Any]) -> None:
    data = shipped
    by_version = {r["version"]: r for r in data["torch"]["releases"]}
    assert (by_version["2.6.0"]["pypi_cuda"], by_version["2.6.0"]["cudnn"]) == ("12.4", "9.1")
    assert by_version["2.13.0"]["pypi_cuda"] == "13.0"  # cuda-toolkit==13.0.x
    assert by_version["1.8.0"]["pypi_cuda"] == "10.2"  # no nvidia-* pins: the fallback says


def test_reader_keeps_build_tags_and_linux_wheels_only() -> None:
    url = "https://pypi.org/pypi/torch/json"
    releases = read_pypi_project(url, (PAGES / "pypi.org_pypi_torch_json").read_bytes())
    files = [f.wheel for v, fs in releases.items() if str(v) == "2.10.0" for f in fs]
    assert files and all(w.is_linux for w in files)
    assert "3" in {w.build for w in files}  # torch-2.10.0-3-cp312-...: re-uploaded with a build tag
    assert all(
        f.metadata_url and f.metadata_url.startswith("https://pypi.org/")
        for fs in releases.values()
        for f in fs
    )


def test_metadata_reader_finds_cuda_and_cudnn() -> None:
    body = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0\nRequires-Dist: filelock\n"
    linux = b' ; platform_system == "Linux" and platform_machine == "x86_64"\n'
    body += b"Requires-Dist: nvidia-cuda-runtime-cu12 (==12.4.127)" + linux
    body += b"Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70)" + linux
    body += b"Requires-Dist: nvidia-cudnn-cu11 (==8.5.0.96) ; platform_machine == 'aarch64'\n"
    assert cuda_requirements(read_core_metadata(body)) == ("12.4", "9.1")
    toolkit = b'Name: torch\nRequires-Dist: cuda-toolkit[cudart]==13.0.3; platform_system == "Linux"\n'
    assert cuda_requirements(read_core_metadata(toolkit)) == ("13.0", None)
    assert cuda_requirements(read_core_metadata(b"Name: torch\nRequires-Dist: numpy\n")) == (None, None)


def test_pep503_pages_of_the_real_shape() -> None:
    url = "https://download.pytorch.org/whl/cu118/torch/"
    wheels = read_link_page(url, (INDEX_PAGES / "download.pytorch.org_whl_cu118_torch.html").read_bytes())
    assert [str(w.version) for w in wheels] == ["2.0.1+cu118"] * 4
    assert wheels[0].url.startswith("https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp310")
    url = "https://www.paddlepaddle.org.cn/packages/stable/cu118/paddlepaddle-gpu/"
    page = INDEX_PAGES / "www.paddlepaddle.org.cn_packages_stable_cu118_paddlepaddle-gpu.html"
    paddle = read_link_page(url, page.read_bytes())
    assert len(paddle) == 3 and all(w.project == "paddlepaddle-gpu" for w in paddle)  # win_amd64 dropped
    assert paddle[0].url == url + "paddlepaddle_gpu-3.3.1-cp311-cp311-linux_x86_64.whl"


def _snapshot_with_index_pages(tmp_path: Path) -> Path:
    snap = tmp_path / "pages"
    shutil.copytree(PAGES, snap)
    manifest = json.loads((snap / "manifest.json").read_text())
    for url, name in [
        ("https://download.pytorch.org/whl/cu118/torch/", "download.pytorch.org_whl_cu118_torch.html"),
        ("https://download.pytorch.org/whl/cu121/torch/", "download.pytorch.org_whl_cu121_torch.html"),
        (
            "https://www.paddlepaddle.org.cn/packages/stable/cu118/paddlepaddle-gpu/",
            "www.paddlepaddle.org.cn_packages_stable_cu118_paddlepaddle-gpu.html",
        ),
    ]:
        shutil.copy(INDEX_PAGES / name, snap / name)
        manifest["pages"][url] = {"file": name, "fetched": "2026-11-30", "sha256": "ab" * 32}
    (snap / "manifest.json").write_text(json.dumps(manifest))
    return snap


FAMILIES = """
torch:
  floor: "2.0.0"
  projects: [torch]
  groups:
    - versions: ">=2.0,<2.2"
      source: test
      flavours:
        - cuda: "11.8"
          package: torch
          pip: "{v}+cu118"
          index: "https://download.pytorch.org/whl/cu118"
          mode: extra-index-url
          page: "https://download.pytorch.org/whl/cu118/torch/"
        - cuda: "12.1"
          package: torch
          pip: "{v}+cu121"
          index: "https://download.pytorch.org/whl/cu121"
          mode: extra-index-url
          page: "https://download.pytorch.org/whl/cu121/torch/"
"""


def test_flavours_read_from_the_index_pages(tmp_path: Path) -> None:
    result = refresh(RecordedPages(_snapshot_with_index_pages(tmp_path)), load_fallback(FAMILIES))
    data = yaml.safe_load(result.text)
    by_version = {r["version"]: r for r in data["torch"]["releases"]}
    assert set(by_version) == {"2.0.1", "2.1.2"}  # the pages list no other release: they are left out
    assert [w["cuda"] for w in by_version["2.0.1"]["wheels"]] == ["11.8"]
    assert [w["cuda"] for w in by_version["2.1.2"]["wheels"]] == ["12.1"]
    assert by_version["2.1.2"]["flavours"] == "index"
    urls = [s["url"] for s in by_version["2.1.2"]["sources"]]
    assert "https://download.pytorch.org/whl/cu121/torch/" in urls
    assert result.fallback == {}
    assert any("2.1.2: no torch==2.1.2+cu118 wheel found" in w for w in result.warnings)


def test_unreachable_index_falls_back_and_pypi_is_required(tmp_path: Path) -> None:
    result = refresh(RecordedPages(PAGES), load_fallback(FAMILIES))
    assert result.fallback["torch"][0] == "2.0.0"
    assert "https://download.pytorch.org/whl/cu118/torch/" in result.unreachable
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "manifest.json").write_text('{"pages": {}}')
    with pytest.raises(PageUnreachable, match=r"pypi\.org/pypi/torch/json"):
        refresh(RecordedPages(empty), load_fallback(FAMILIES))


def test_http_source_reports_unreachable_hosts() -> None:
    with pytest.raises(PageUnreachable, match="host unreachable"):
        HttpPages(timeout=2).get("http://127.0.0.1:9/simple/torch/")


def test_recorder_round_trip(tmp_path: Path) -> None:
    recorder = Recorder(RecordedPages(PAGES), tmp_path / "rec", recording_trim(), "2026-12-01")
    first = refresh(recorder).text
    recorder.save()
    assert refresh(RecordedPages(tmp_path / "rec")).text == first == SHIPPED.read_text("utf-8")


def test_trim_is_stable() -> None:
    url = "https://pypi.org/pypi/paddlepaddle/json"
    body = (PAGES / "pypi.org_pypi_paddlepaddle_json").read_bytes()
    assert trim_page(url, body) == body


def test_cli_refresh_check_offline_and_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "frameworks.yaml"
    assert main(["catalog", "refresh", "--pages", str(PAGES), "-o", str(out), "--check"]) == 1
    assert not out.exists()
    assert main(["catalog", "refresh", "--pages", str(PAGES), "-o", str(out)]) == 0
    assert out.read_bytes() == SHIPPED.read_bytes()
    assert main(["catalog", "refresh", "--pages", str(PAGES), "-o", str(out), "--check"]) == 0
    assert main(["catalog", "refresh", "--pages", str(PAGES), "-o", str(out), "--strict"]) == 3
    assert "download.pytorch.org" in capsys.readouterr().err
    assert main(["catalog", "refresh", "--offline", "--json"]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["result"]["kept"] is True and len(envelope["result"]["releases"]["torch"]) == 40


def test_catalog_view_groups_patch_releases(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--section", "frameworks"]) == 0
    out = capsys.readouterr().out
    assert "2.1.0, 2.1.1, 2.1.2" in out
    assert "3.2.0, 3.2.1, 3.2.2" in out
    assert len(out.splitlines()) < 60
