"""normalize_image and compare_saved over docker-save archives made here (no engine: a fake ImageStore)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import BinaryIO

import pytest

from envkit.engine.protocol import ImageInfo
from envkit.engine.testing import FakeEngine, FakeImageStore
from envkit.errors import EngineError
from envkit.lock.epoch import EPOCH_LABEL
from envkit.reproduce.image_diff import compare_saved, saved_image
from envkit.reproduce.normalize import NormalizeResult, normalize_image, normalized_config

EPOCH = 1_700_000_000


def _layer(files: dict[str, bytes], now: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.uname = len(data), now, "root"
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


BASE = _layer({"etc/os-release": b"debian\n"}, 1_000)


def _config(diff_ids: list[str], now: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "architecture": "amd64", "os": "linux", "created": now, "docker_version": "20.10.24",
        "container": "f00d" * 16, "container_config": {"Hostname": "f00d"},
        "config": {"Hostname": "", "Image": "sha256:" + "1" * 64, "Labels": labels, "Cmd": ["python"]},
        "history": [
            {"created": "2020-01-01T00:00:00Z", "created_by": "debootstrap"},
            {"created": now, "created_by": "/bin/sh -c #(nop)  LABEL a=b", "empty_layer": True},
            {"created": now, "created_by": "/bin/sh -c #(nop) COPY dir:" + "ab" * 32 + " in /opt/env "},
        ],
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }  # fmt: skip


def _saved(layers: list[bytes], now: str, labels: dict[str, str]) -> tuple[bytes, list[str]]:
    diff_ids = [f"sha256:{hashlib.sha256(x).hexdigest()}" for x in layers]
    config = json.dumps(_config(diff_ids, now, labels)).encode()
    paths = [f"v1id{i}/layer.tar" for i in range(len(layers))]
    manifest = json.dumps([{"Config": "c.json", "RepoTags": ["envkit/x:1"], "Layers": paths}]).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in [*zip(paths, layers, strict=True), ("c.json", config), ("manifest.json", manifest)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), diff_ids


def _info(
    image_id: str, diff_ids: tuple[str, ...], history: int, labels: dict[str, str], tags: tuple[str, ...]
) -> ImageInfo:
    return ImageInfo(image_id, tags, labels, "", 0, diff_ids, history)


class FakeArchive(FakeImageStore):
    """An image store over an engine holding a base image and one built image, as docker save/load
    would see them."""

    def __init__(self, built: bytes, diff_ids: list[str], labels: dict[str, str]) -> None:
        super().__init__()
        self.engine = FakeEngine()
        self.engine.images_by_tag.update({
            "base": _info("sha256:base", (diff_ids[0],), 1, {}, ("base",)),
            "envkit/x:1": _info("sha256:built", tuple(diff_ids), 3, labels, ("envkit/x:1",)),
        })  # fmt: skip
        self.saves = {"envkit/x:1": built}
        self.loaded: list[bytes] = []
        self.held: set[str] = set()  # the hex of the normalized layers loaded

    @property
    def removed(self) -> list[str]:
        return self.engine.removed

    def save(self, image: str, path: Path) -> None:
        path.write_bytes(self.saves[image])

    def load(self, archive: Path | BinaryIO) -> tuple[str, ...]:
        data = archive.read_bytes() if isinstance(archive, Path) else archive.read()
        self.loaded.append(data)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            entry = json.loads(tar.extractfile("manifest.json").read())[0]  # type: ignore[union-attr]
            config = json.loads(tar.extractfile(entry["Config"]).read())  # type: ignore[union-attr]
            names = set(tar.getnames())
            for layer in entry["Layers"][1:]:  # the base layer's file is absent: the engine has it
                if layer not in names:  # a layer whose chain the engine has (its own images')
                    assert layer.split("/")[0] in self.held
                    continue
                assert hashlib.sha256(tar.extractfile(layer).read()).hexdigest() in layer  # type: ignore[union-attr]
                self.held.add(layer.split("/")[0])
        new_id = "sha256:" + entry["Config"].removesuffix(".json")
        tag = entry["RepoTags"][0]
        self.engine.images_by_tag[tag] = _info(new_id, tuple(config["rootfs"]["diff_ids"]), 3, {}, (tag,))
        self.saves[new_id] = _with_base(data, entry["Layers"][0])  # docker save gives every layer
        return (new_id,)


def _with_base(data: bytes, base_path: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data)) as src, tarfile.open(fileobj=buf, mode="w") as dst:
        info = tarfile.TarInfo(base_path)
        info.size = len(BASE)
        dst.addfile(info, io.BytesIO(BASE))
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member))
    return buf.getvalue()


def _build(now: int, content: bytes = b"print(1)\n", epoch: int = EPOCH) -> tuple[FakeArchive, str]:
    archive, result = _normalized(now, content, epoch)
    return archive, result.image_id


def _normalized(now: int, content: bytes, epoch: int) -> tuple[FakeArchive, NormalizeResult]:
    labels = {EPOCH_LABEL: str(epoch)}
    own = _layer({"opt/env/bin/tool": content, "etc/passwd": b"envkit:x:10001\n"}, now)
    saved, diff_ids = _saved([BASE, own], f"2026-12-01T08:{now % 60:02d}:00.1234Z", labels)
    archive = FakeArchive(saved, diff_ids, labels)
    return archive, normalize_image(archive.engine, archive, "envkit/x:1", "base", tag="envkit/x:1")


def test_a_layer_digest_follows_its_content_not_the_lock_date() -> None:
    """Issue 47: two locks (two image dates) with the same packages in a layer give that layer one
    digest; the image's date (config) still differs. Clamped to the lock's date, every layer of the
    image changed with any pin."""
    one = _normalized(1_800_000_000, b"print(1)\n", EPOCH)[1]
    two = _normalized(1_800_000_000, b"print(1)\n", EPOCH + 86_400)[1]
    assert one.diff_ids == two.diff_ids
    assert one.image_id != two.image_id  # created: the lock's date


def test_two_builds_at_different_times_give_one_image_id() -> None:
    first, one = _build(1_800_000_000)
    second, two = _build(1_800_000_777)
    assert one == two and first.loaded == second.loaded  # the load archive itself is byte-identical
    assert first.removed == ["sha256:built"]  # the engine's original is removed
    assert _build(1_800_000_000, b"print(2)\n")[1] != one


def test_the_normalized_config() -> None:
    config = _config(["sha256:" + "a" * 64, "sha256:" + "b" * 64], "2026-12-01T08:00:00.5Z", {"k": "v"})
    ids = ["sha256:" + "a" * 64, "sha256:" + "c" * 64]
    data = json.loads(normalized_config(config, base_history=1, base_layers=1, diff_ids=ids, epoch=EPOCH))
    assert data["created"] == "2023-11-14T22:13:20Z"
    assert not {"container", "container_config", "docker_version"} & set(data)
    assert data["config"]["Image"] == "" and data["config"]["Labels"] == {"k": "v"}
    assert data["history"][0] == {
        "created": "2020-01-01T00:00:00Z",
        "created_by": "debootstrap",
    }  # base: kept
    assert data["history"][1] == {"created": "2023-11-14T22:13:20Z", "empty_layer": True,
                                  "created_by": "/bin/sh -c #(nop)  LABEL a=b"}  # fmt: skip
    assert data["history"][2]["created_by"] == "/bin/sh -c #(nop) COPY dir:" + "c" * 64 + " in /opt/env "
    assert data["rootfs"]["diff_ids"][1] == "sha256:" + "c" * 64


def test_an_image_without_the_epoch_label_is_refused() -> None:
    saved, diff_ids = _saved([BASE, _layer({"f": b"x"}, 5)], "2026-12-01T00:00:00Z", {})
    with pytest.raises(EngineError, match=EPOCH_LABEL):
        archive = FakeArchive(saved, diff_ids, {})
        normalize_image(archive.engine, archive, "envkit/x:1", "base", tag="envkit/x:1")


def test_compare_names_the_changed_file_through_an_extra_layer(tmp_path: Path) -> None:
    archive, good = _build(1_800_000_000)
    own = list(archive.engine.images_by_tag["envkit/x:1"].diff_ids)
    with tarfile.open(fileobj=io.BytesIO(archive.saves[good])) as tar:
        layer = tar.extractfile(own[1].split(":")[1] + "/layer.tar").read()  # type: ignore[union-attr]
    commit = _layer({"opt/env/bin/tool": b"print('evil')\n"}, 1_900_000_000)  # what docker commit adds on top
    tampered, _ = _saved([BASE, layer, commit], "2026-12-02T00:00:00Z", {EPOCH_LABEL: str(EPOCH)})
    archive.saves["tampered"] = tampered
    with saved_image(archive, "tampered", tmp_path) as left, saved_image(archive, good, tmp_path) as right:
        diff = compare_saved(left, right)
    assert [(x.index, x.rebuilt) for x in diff.layers] == [(2, None)]
    assert [(f.path, f.change) for f in diff.files] == [("opt/env/bin/tool", "changed")]
    changed = diff.files[0]
    assert changed.image is not None and changed.rebuilt is not None
    assert {"size", "sha256", "mtime"} <= set(changed.fields)
    assert changed.rebuilt.sha256 == hashlib.sha256(b"print(1)\n").hexdigest()
    assert changed.image.sha256 == hashlib.sha256(b"print('evil')\n").hexdigest()
    assert not diff.equal and any("created" in c for c in diff.config)


def test_a_known_layer_is_not_rewritten_nor_loaded_again(tmp_path: Path) -> None:
    """Issue 47: a one-pin rebuild rewrote and loaded every own layer (the flagship's 6.5 GB) again.
    The engine's cache gives an unchanged layer the same raw diff_id: the memo knows its normalized
    diff_id, and a layer whose normalized chain the engine holds stays out of the load archive. The
    image ID is the one a normalization without the memo gives."""
    from envkit.reproduce.layer_memo import LayerMemo, chain_ids

    labels = {EPOCH_LABEL: str(EPOCH)}
    own = _layer({"opt/env/bin/tool": b"print(1)\n"}, 5)
    saved, diff_ids = _saved([BASE, own], "2026-12-01T08:05:00Z", labels)
    memo_path = tmp_path / "memo.json"
    archive = FakeArchive(saved, diff_ids, labels)
    first = normalize_image(
        archive.engine, archive, "envkit/x:1", "base", tag="envkit/x:1", memo=LayerMemo(memo_path)
    )
    assert first.layers_reused == 0 and first.bytes_loaded == first.layer_sizes[0]
    assert LayerMemo(memo_path).get(diff_ids[1]) == (first.diff_ids[1], first.layer_sizes[0])

    again = FakeArchive(saved, diff_ids, labels)  # the same raw layer, built again
    again.held = set(archive.held)
    present = frozenset(chain_ids(first.diff_ids))
    second = normalize_image(
        again.engine,
        again,
        "envkit/x:1",
        "base",
        tag="envkit/x:1",
        memo=LayerMemo(memo_path),
        present=present,
    )
    assert (second.image_id, second.diff_ids) == (first.image_id, first.diff_ids)
    assert (second.layers_reused, second.bytes_rewritten, second.bytes_loaded) == (1, 0, 0)
    with tarfile.open(fileobj=io.BytesIO(again.loaded[-1])) as tar:
        assert tar.getnames() == [f"{first.image_id.split(':')[1]}.json", "manifest.json"]

    elsewhere = FakeArchive(saved, diff_ids, labels)  # an engine without that chain: loaded, checked
    third = normalize_image(
        elsewhere.engine, elsewhere, "envkit/x:1", "base", tag="envkit/x:1", memo=LayerMemo(memo_path)
    )
    assert third.image_id == first.image_id and third.bytes_loaded == first.layer_sizes[0]

    memo_path.write_text(memo_path.read_text().replace(first.diff_ids[1].split(":")[1], "0" * 64))
    with pytest.raises(EngineError, match="the layer memo says sha256:0000"):
        hostile = FakeArchive(saved, diff_ids, labels)
        normalize_image(
            hostile.engine, hostile, "envkit/x:1", "base", tag="envkit/x:1", memo=LayerMemo(memo_path)
        )


def test_a_layer_memo_that_is_not_one_is_ignored(tmp_path: Path) -> None:
    from envkit.reproduce.layer_memo import LayerMemo

    path = tmp_path / "memo.json"
    for text in ("[1]", "{not json", '{"sha256:x": ["sha256:y", 1]}', json.dumps({"sha256:" + "a" * 64: 1})):
        path.write_text(text)
        assert len(LayerMemo(path)) == 0
    path.write_text(json.dumps({"sha256:" + "a" * 64: ["sha256:" + "b" * 64, 7]}))
    assert LayerMemo(path).get("sha256:" + "a" * 64) == ("sha256:" + "b" * 64, 7)
