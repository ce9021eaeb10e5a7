"""``envkit pack``: real archives from a generated channel, a fake pip (installer), a fake fetcher."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from envkit.catalog import Catalog
from envkit.errors import ExitCode, PackError, PackMismatch
from envkit.lock.fresh import EnvLocker, ensure_fresh_lock
from envkit.offline.archive import open_pack
from envkit.offline.fetch import UrlFetcher
from envkit.offline.pack_manifest import MANIFEST, PackManifest
from envkit.offline.request import pack_request
from envkit.offline.testing import FakeFetcher
from envkit.pack.packer import PackOptions, PackResult, pack_environment
from envkit.spec.load import LoadedSpec, image_dir, load_spec
from tests.unit.pack.conftest import INSTALLER, InstallerPip, write_conda_spec


def _pack(root: Path, loaded: LoadedSpec, catalog: Catalog, locker: EnvLocker, pip: InstallerPip,
          out: Path, fetcher: object = None) -> PackResult:  # fmt: skip
    return pack_environment(
        root, loaded, locker=locker, fetcher=fetcher or UrlFetcher(),  # type: ignore[arg-type]
        options=PackOptions(output=out), pip_runner=pip,
    )  # fmt: skip


def test_pack_twice_gives_identical_bytes_and_downloads_once(
    root: Path, loaded: LoadedSpec, catalog: Catalog, locker: EnvLocker, pip: InstallerPip
) -> None:
    first = _pack(root, loaded, catalog, locker, pip, root / "a.tar")
    assert first.lock == "locked" and first.conda_packages == 2 and first.downloaded == 2
    calls = len(pip.calls)
    second = _pack(root, loaded, catalog, locker, pip, root / "b.tar")
    assert second.lock == "fresh" and second.downloaded == 0 and second.reused == 2
    assert len(pip.calls) == calls  # the installer wheel came from the cache
    assert (root / "a.tar").read_bytes() == (root / "b.tar").read_bytes()
    assert first.sha256 == second.sha256
    with tarfile.open(root / "a.tar") as tar:
        names = tar.getnames()
        manifest = PackManifest.from_json(tar.extractfile(MANIFEST).read().decode(), "a.tar")  # type: ignore[union-attr]
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())
    assert names[0] == MANIFEST and names[1:] == sorted(names[1:])
    assert manifest.name == "ctiny" and manifest.platforms == ("linux-64",)
    assert manifest.lock_sha256 == first.lock_sha256
    kinds = {f.path: f.kind for f in manifest.files}
    assert kinds == {
        "channel/linux-64/python-3.11.2-h0_envkit.tar.bz2": "conda",
        "channel/noarch/tinylib-1.2.0-pyh0_0.conda": "conda",
        f"installer/{INSTALLER}": "installer",
    }
    assert all(len(f.sha256) == 64 for f in manifest.files)


def test_tampered_archive_is_refused_at_pack_time_naming_it(
    root: Path, loaded: LoadedSpec, catalog: Catalog, locker: EnvLocker, pip: InstallerPip, channel: Path
) -> None:
    ensure_fresh_lock(root, loaded, locker)
    archive = channel / "noarch" / "tinylib-1.2.0-pyh0_0.conda"
    archive.write_bytes(archive.read_bytes() + b"tampered")  # same name, other bytes, after locking
    out = root / "dist" / "ctiny.tar"
    out.parent.mkdir()
    with pytest.raises(PackError) as info:
        _pack(root, loaded, catalog, locker, pip, out)
    assert info.value.exit_code == ExitCode.FAILURE
    assert "tinylib 1.2.0" in info.value.message and archive.resolve().as_uri() in info.value.message
    assert not out.exists() and list(out.parent.iterdir()) == []  # no tarball, no temporary file
    cached = list((root / ".envkit" / "cache" / "conda").rglob("tinylib*"))
    assert cached == []  # the bad download was not kept


def test_download_mismatch_through_a_fake_fetcher(
    root: Path, loaded: LoadedSpec, catalog: Catalog, locker: EnvLocker, pip: InstallerPip
) -> None:
    lock, _ = ensure_fresh_lock(root, loaded, locker)
    request = pack_request(loaded, lock, image_dir(root, "ctiny"))
    urls = {p.url: b"other bytes" for p in request.conda["linux-64"]}
    with pytest.raises(PackError, match="does not match the lock"):
        _pack(root, loaded, catalog, locker, pip, root / "x.tar", FakeFetcher(urls))
    assert not (root / "x.tar").exists()


def _rewrite(
    pack: Path, out: Path, change: str, data: bytes | None = None, manifest: str | None = None
) -> None:
    with tarfile.open(pack) as src, tarfile.open(out, "w") as dst:
        for member in src.getmembers():
            content = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == change and data is not None:
                content = data
            if member.name == MANIFEST and manifest is not None:
                content = manifest.encode()
            member.size = len(content)
            dst.addfile(member, io.BytesIO(content))


def test_open_pack_verifies_against_the_lock(
    root: Path, loaded: LoadedSpec, catalog: Catalog, locker: EnvLocker, pip: InstallerPip, channel: Path
) -> None:
    result = _pack(root, loaded, catalog, locker, pip, root / "good.tar")
    lock, _ = ensure_fresh_lock(root, loaded, locker)
    request = pack_request(loaded, lock, image_dir(root, "ctiny"))
    cache = root / ".envkit" / "cache"
    opened = open_pack(root / "good.tar", request, cache)
    assert opened.manifest.lock_sha256 == result.lock_sha256 and len(opened.sources) == 3

    target = "channel/noarch/tinylib-1.2.0-pyh0_0.conda"
    _rewrite(root / "good.tar", root / "changed.tar", target, b"changed inside the pack")
    with pytest.raises(PackMismatch) as info:
        open_pack(root / "changed.tar", request, cache)
    assert info.value.exit_code == ExitCode.USAGE and target in info.value.message

    text = (root / "good.tar").read_bytes()
    with tarfile.open(root / "good.tar") as tar:
        manifest = json.loads(tar.extractfile(MANIFEST).read())  # type: ignore[union-attr]
    manifest["lock_sha256"] = "0" * 64
    _rewrite(root / "good.tar", root / "other-lock.tar", "", manifest=json.dumps(manifest))
    with pytest.raises(PackMismatch, match="another lock"):
        open_pack(root / "other-lock.tar", request, cache)
    _rewrite(root / "good.tar", root / "garbage.tar", "", manifest="{not json")
    with pytest.raises(PackMismatch, match="not a valid envkit pack manifest"):
        open_pack(root / "garbage.tar", request, cache)
    (root / "not-a-tar.tar").write_bytes(b"hello")
    with pytest.raises(PackMismatch, match="not a readable pack"):
        open_pack(root / "not-a-tar.tar", request, cache)
    assert (root / "good.tar").read_bytes() == text

    # a pack of the older lock no longer fits once the spec (and so the lock) changed
    write_conda_spec(root, channel.resolve().as_uri(), conda="tinylib 1.3.*")
    relocked, again = ensure_fresh_lock(
        root, load_spec(root / "environments" / "ctiny.yaml", catalog), locker
    )
    assert again is not None and again.status == "stale"
    newer = pack_request(
        load_spec(root / "environments" / "ctiny.yaml", catalog), relocked, image_dir(root, "ctiny")
    )
    with pytest.raises(PackMismatch, match="another lock"):
        open_pack(root / "good.tar", newer, cache)


def test_pack_carries_the_wheels_of_requirements_lock(
    root: Path, catalog: Catalog, locker: EnvLocker, pip: InstallerPip, channel: Path
) -> None:
    write_conda_spec(root, channel.resolve().as_uri(), pins=("six==1.16.0",))
    loaded = load_spec(root / "environments" / "ctiny.yaml", catalog)
    result = _pack(root, loaded, catalog, locker, pip, root / "w.tar")
    assert result.wheels == 1 and result.conda_packages == 3  # python, tinylib, pip
    with tarfile.open(root / "w.tar") as tar:
        assert "wheels/six-1.16.0-py3-none-any.whl" in tar.getnames()


def test_venv_specs_need_no_pack(
    tmp_path: Path, catalog: Catalog, locker: EnvLocker, pip: InstallerPip
) -> None:
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "v.yaml").write_text(
        'name: v\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: envkit/debian-python:bookworm\n'
    )
    loaded = load_spec(tmp_path / "environments" / "v.yaml", catalog)
    with pytest.raises(Exception, match="packs are for conda environments") as info:
        _pack(tmp_path, loaded, catalog, locker, pip, tmp_path / "v.tar")
    assert getattr(info.value, "exit_code", None) == ExitCode.USAGE
