"""Offline conda builds on the FakeEngine: the packed local channel in the context, labels as online."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from envkit.build.builder import Builder, BuildOptions
from envkit.catalog import Catalog
from envkit.engine.testing import FakeEngine
from envkit.errors import ExitCode, PackMismatch
from envkit.lock.fresh import EnvLocker
from envkit.offline.fetch import UrlFetcher
from envkit.pack.packer import PackOptions, pack_environment
from envkit.spec.load import LoadedSpec, load_spec
from tests.unit.pack.conftest import INSTALLER, InstallerPip, write_conda_spec


def _with_base() -> FakeEngine:
    """An engine holding the spec's base (made by `envkit base-image`: a build without it stops)."""
    engine = FakeEngine()
    engine.add_image("envkit/debian-python:bookworm")
    return engine


def _files(context: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _builder(engine: FakeEngine, root: Path, locker: EnvLocker, pip: InstallerPip) -> Builder:
    return Builder(engine, root, locker=locker, pip_runner=pip, fetcher=UrlFetcher())


def _labels(dockerfile: str) -> str:
    return re.search(r"^LABEL io\.envkit\.cuda.*?\n(?=\S)", dockerfile, re.M | re.S).group(0)  # type: ignore[union-attr]


def test_offline_conda_build_context_labels_and_rebuild(
    root: Path, loaded: LoadedSpec, catalog: Catalog, locker: EnvLocker, pip: InstallerPip
) -> None:
    engine = _with_base()
    builder = _builder(engine, root, locker, pip)
    events: list[object] = []
    result = builder.build(loaded, BuildOptions(offline=True), events.append)
    assert result.status == "built" and result.offline and result.pack == "collected"
    (build,) = engine.builds
    assert build.network is False
    files = _files(build.context)
    assert {"channel/noarch/tinylib-1.2.0-pyh0_0.conda", "channel/linux-64/python-3.11.2-h0_envkit.tar.bz2",
            f"installer/{INSTALLER}", "installer/conda_install.py", "installer/packages.json",
            "conda-linux-64.lock"} <= set(files)  # fmt: skip
    dockerfile = files["Dockerfile"].decode()
    assert "conda_install.py" in dockerfile and "curl" not in dockerfile  # nothing downloaded in the build
    known = json.loads(files["installer/packages.json"])
    assert {v["path"] for v in known.values()} == {n for n in files if n.startswith("channel/")}
    # label for label the same as the online build of the same lock
    online = Builder(_with_base(), root, locker=locker, pip_runner=pip).prepare(loaded, BuildOptions())
    online_data = {e.path: e.data for e in online.context.entries}["Dockerfile"]
    assert online_data is not None
    online_dockerfile = online_data.decode()
    assert _labels(dockerfile) == _labels(online_dockerfile)
    assert dockerfile.split("FROM ")[-1] == online_dockerfile.split("FROM ")[-1]  # the whole runtime stage
    assert {
        k: v for k, v in build.labels.items() if k not in {"io.envkit.offline", "io.envkit.context-sha256"}
    } == {
        k: v for k, v in online.labels.items() if k not in {"io.envkit.offline", "io.envkit.context-sha256"}
    }
    again = builder.build(loaded, BuildOptions(offline=True))
    assert again.status == "up-to-date" and len(engine.builds) == 1


def test_build_from_a_pack_and_refuse_a_changed_one(
    root: Path, loaded: LoadedSpec, catalog: Catalog, locker: EnvLocker, pip: InstallerPip, channel: Path
) -> None:
    packed = pack_environment(root, loaded, locker=locker, fetcher=UrlFetcher(),
                              options=PackOptions(output=root / "p.tar"), pip_runner=pip)  # fmt: skip
    shutil.rmtree(channel)  # the air-gapped side has no channel: only the pack
    engine = _with_base()
    builder = _builder(engine, root, locker, pip)
    result = builder.build(loaded, BuildOptions(pack=root / "p.tar", frozen=True))
    assert (
        result.status == "built" and result.pack == str(root / "p.tar") and result.pack_files == packed.files
    )
    assert engine.builds[0].network is False
    again = builder.build(loaded, BuildOptions(pack=root / "p.tar", frozen=True))
    assert again.status == "up-to-date" and again.tag == result.tag and len(engine.builds) == 1

    with tarfile.open(root / "p.tar") as src, tarfile.open(root / "bad.tar", "w") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name.endswith("tinylib-1.2.0-pyh0_0.conda"):
                data = data[:-1] + bytes([data[-1] ^ 1])
            dst.addfile(member, io.BytesIO(data))
    with pytest.raises(PackMismatch) as info:
        builder.build(loaded, BuildOptions(pack=root / "bad.tar", frozen=True))
    assert info.value.exit_code == ExitCode.USAGE and "tinylib-1.2.0-pyh0_0.conda" in info.value.message
    assert len(engine.builds) == 1  # refused before the engine was called


def test_offline_conda_dockerfile_passes_hadolint(
    root: Path,
    loaded: LoadedSpec,
    catalog: Catalog,
    locker: EnvLocker,
    pip: InstallerPip,
    tmp_path: Path,
    channel: Path,
) -> None:
    write_conda_spec(root, channel.resolve().as_uri(), pins=("six==1.16.0",))
    loaded = load_spec(root / "environments" / "ctiny.yaml", catalog)
    prepared = _builder(FakeEngine(), root, locker, pip).prepare(loaded, BuildOptions(offline=True))
    dockerfile = next(e.data for e in prepared.context.entries if e.path == "Dockerfile")
    assert dockerfile is not None and b"COPY wheels/ /tmp/envkit/wheels/" in dockerfile
    path = tmp_path / "Dockerfile"
    path.write_bytes(dockerfile)
    exe = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    done = subprocess.run(
        [exe, "--no-color", "--format", "json", str(path)], capture_output=True, text=True, check=False
    )
    errors = [f for f in json.loads(done.stdout or "[]") if f["level"] == "error"]
    assert not errors, errors
