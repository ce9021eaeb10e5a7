"""Issue 24, class 4: an image tar from the store is checked before ``docker load`` sees it.

The tars are built here in the layout ``docker save`` writes (Docker 20.10: ``<config>.json``,
``<layer>/layer.tar``, ``manifest.json``; a tagged save adds ``RepoTags`` and ``repositories``).
The real engine is exercised by ``tests/integration/test_fleet_slurm.py``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from envkit.engine.testing import FakeImageStore
from envkit.errors import FleetError
from envkit.fleet.image_tar import check_image_tar, load_checked_tar
from tests.unit.hardening.hostile import make_foreign


def _config(seed: str) -> bytes:
    layer = hashlib.sha256(seed.encode()).hexdigest()
    return json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["sh"]},
                       "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer}"]}}).encode()  # fmt: skip


def _id(config: bytes) -> str:
    return "sha256:" + hashlib.sha256(config).hexdigest()


def _tar(members: list[tuple[str, bytes]], *, extra: list[tarfile.TarInfo] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra or []:
            tar.addfile(info)
    return buf.getvalue()


def _image(
    seed: str = "a", tags: list[str] | None = None
) -> tuple[str, list[tuple[str, bytes]], dict[str, Any]]:
    config = _config(seed)
    hexid = _id(config)[7:]
    entry = {"Config": f"{hexid}.json", "RepoTags": tags, "Layers": [f"{seed * 64}/layer.tar"]}
    return _id(config), [(f"{hexid}.json", config), (f"{seed * 64}/layer.tar", b"\0" * 1024)], entry


def _saved(*images: tuple[str, list[tuple[str, bytes]], dict[str, Any]], **more: bytes) -> bytes:
    members = [m for _, ms, _ in images for m in ms]
    manifest = json.dumps([entry for _, _, entry in images]).encode()
    return _tar([*members, ("manifest.json", manifest), *more.items()])


GOOD_ID, *_ = _image()


def _check(data: bytes, image_id: str = GOOD_ID) -> None:
    check_image_tar(io.BytesIO(data), "STORE/images/x.tar", image_id)


def test_a_tar_as_docker_save_writes_it_for_an_image_id_passes() -> None:
    _check(_saved(_image()))


def test_a_second_image_tagged_like_the_nodes_application_is_refused() -> None:
    app = _image("b", tags=["company/app:latest"])
    with pytest.raises(FleetError, match="lists 2 images, not exactly one"):
        _check(_saved(_image(), app))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (_saved(_image(tags=["company/app:latest"])), "would tag images on this node"),
        (_saved(_image(), repositories=b'{"company/app": {"latest": "x"}}'), "repositories"),
        (_saved(_image("c")), "holds image sha256:"),
        (_tar([("manifest.json", b"[]")]), "lists 0 images"),
        (_tar([("manifest.json", b'{"Config": "x"}')]), "no list of images"),
        (_tar([("manifest.json", b"[" * 100_000)]), "manifest.json"),
        (_tar([("x/layer.tar", b"")]), "no regular file 'manifest.json'"),
        (b"this is not a tar at all" * 100, "not an uncompressed"),
        (gzip.compress(_saved(_image())), "not an uncompressed"),
    ],
)
def test_hostile_tars_are_refused_with_the_reason(data: bytes, says: str) -> None:
    with pytest.raises(FleetError, match=says) as caught:
        _check(data)
    assert "STORE/images/x.tar" in caught.value.message and caught.value.hint


def test_a_manifest_listed_twice_or_an_escaping_entry_is_refused() -> None:
    _, members, entry = _image()
    twice = _tar([*members, ("manifest.json", json.dumps([entry]).encode()), ("./manifest.json", b"[]")])
    with pytest.raises(FleetError, match="appears twice"):
        _check(twice)
    escaping = _tar([*members, ("../manifest.json", b"[]"), ("manifest.json", json.dumps([entry]).encode())])
    with pytest.raises(FleetError, match="outside the tar"):
        _check(escaping)


def test_an_oci_index_naming_the_image_is_refused() -> None:
    index = {
        "manifests": [{"digest": "sha256:" + "0" * 64, "annotations": {"io.containerd.image.name": "app:1"}}]
    }
    with pytest.raises(FleetError, match=r"index\.json names the image"):
        _check(_saved(_image(), **{"index.json": json.dumps(index).encode()}))
    plain = {"manifests": [{"digest": "sha256:" + "0" * 64}]}
    _check(_saved(_image(), **{"index.json": json.dumps(plain).encode()}))


def test_a_config_that_is_a_link_is_refused() -> None:
    image_id, members, entry = _image()
    link = tarfile.TarInfo(entry["Config"])
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    data = _tar([members[1], ("manifest.json", json.dumps([entry]).encode())], extra=[link])
    with pytest.raises(FleetError, match="no regular file"):
        _check(data, image_id)


@dataclass
class _Loader(FakeImageStore):
    """An image store that records the bytes it is given to load, and answers ``answer``."""

    answer: tuple[str, ...] | None = None
    loaded: list[bytes] = field(default_factory=list)

    def load(self, archive: Path | BinaryIO) -> tuple[str, ...]:
        assert not isinstance(archive, Path), "the open file that was checked is loaded, never the path again"
        self.loaded.append(archive.read())
        return self.answer if self.answer is not None else (GOOD_ID,)


def _store_tar(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "store" / "images" / "x.tar"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    path.chmod(0o644)
    return path


def test_the_same_open_file_that_was_checked_is_loaded(tmp_path: Path) -> None:
    data = _saved(_image())
    loader = _Loader()
    load_checked_tar(loader, _store_tar(tmp_path, data), GOOD_ID)
    assert loader.loaded == [data]


def test_a_load_giving_other_images_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="loaded sha256:b"):
        load_checked_tar(
            _Loader(answer=("sha256:" + "b" * 64,)), _store_tar(tmp_path, _saved(_image())), GOOD_ID
        )


@pytest.mark.parametrize("how", ["other user", "group-writable", "symlink", "fifo"])
def test_a_tar_another_user_could_have_written_is_never_loaded(tmp_path: Path, how: str) -> None:
    path = _store_tar(tmp_path, _saved(_image()))
    make_foreign(path, how)
    loader = _Loader()
    with pytest.raises(FleetError, match=r"user id|writable by others|symbolic link|not a regular file"):
        load_checked_tar(loader, path, GOOD_ID)
    assert loader.loaded == []
