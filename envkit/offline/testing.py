"""Real conda channels for tests and the demo: archives made by ``conda-package-handling``.

No conda channel is reachable from the machines envkit is tested on, so the install path needs
its own packages. These are *real* ``.conda`` / ``.tar.bz2`` archives (``info/index.json``,
``info/paths.json``, ``info/files``, ``info/link.json`` for noarch python, and the files), indexed
by py-rattler's own channel indexer into ``repodata.json``; ``envkit lock`` solves against them and
py-rattler installs them, as it would packages from conda-forge.

- :func:`venv_python`: a ``python`` package whose interpreter is the base image's
  (``bin/python`` links to ``/usr/bin/python3.X``, a ``pyvenv.cfg`` makes the prefix a venv), so
  that noarch python packages, ``envkit probe`` and ``envkit snapshot`` run in the image.
- :func:`noarch_python`: a noarch python package with modules and a ``.dist-info``.
- :func:`wheel_as_package`: a pure-Python wheel (e.g. pip's, from ``ensurepip``) as a noarch package.
- :func:`make_real_channel`: write the archives and index the channel; returns its ``file://`` URL.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envkit.errors import PackError
from envkit.offline.fetch import CHUNK

__all__ = [
    "ArchivePackage",
    "FakeFetcher",
    "Symlink",
    "make_real_channel",
    "noarch_python",
    "venv_python",
    "wheel_as_package",
    "write_archive",
]

_MTIME = 1_577_836_800  # 2020-01-01: archives of the same package are byte-stable where the format allows
_TIMESTAMP = 1_700_000_000_000


@dataclass(frozen=True)
class Symlink:
    """A symbolic link inside a test conda archive."""

    target: str


@dataclass(frozen=True)
class ArchivePackage:
    """A real conda package to write for tests: its files, dependencies, noarch kind."""

    name: str
    version: str
    build: str
    subdir: str  # "noarch", "linux-64", ...
    files: Mapping[str, bytes | Symlink]
    depends: tuple[str, ...] = ()
    noarch: str | None = None  # "python" for noarch python packages
    entry_points: tuple[str, ...] = ()  # "name = module:function" (noarch python)
    extension: str = ".conda"  # or ".tar.bz2"
    extra_index: Mapping[str, object] = field(default_factory=dict)

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}-{self.build}{self.extension}"


def venv_python(
    version: str = "3.11.2", interpreter: str | None = None, subdir: str = "linux-64"
) -> ArchivePackage:
    """``python``: the base image's interpreter, the prefix made a venv by ``pyvenv.cfg``."""
    minor = ".".join(version.split(".")[:2])
    target = interpreter or f"/usr/bin/python{minor}"
    home = str(Path(target).parent)
    files: dict[str, bytes | Symlink] = {
        f"bin/python{minor}": Symlink(target),
        "bin/python3": Symlink(f"python{minor}"),
        "bin/python": Symlink(f"python{minor}"),
        "pyvenv.cfg": f"home = {home}\ninclude-system-site-packages = false\nversion = {version}\n".encode(),
        f"lib/python{minor}/site-packages/README.envkit": b"base image python\n",
    }
    return ArchivePackage("python", version, "h0_envkit", subdir, files, extension=".tar.bz2")


def noarch_python(
    name: str, version: str, modules: Mapping[str, str], depends: Sequence[str] = ("python >=3.8",)
) -> ArchivePackage:
    """A noarch python package: ``modules`` (path under site-packages -> source) plus a dist-info."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    files: dict[str, bytes | Symlink] = {f"site-packages/{p}": s.encode() for p, s in modules.items()}
    files[f"site-packages/{dist}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    )
    files[f"site-packages/{dist}/INSTALLER"] = b"conda\n"
    return ArchivePackage(name, version, "pyh0_0", "noarch", files, tuple(depends), noarch="python")


def wheel_as_package(
    wheel: Path, name: str, version: str, entry_points: Sequence[str] = ()
) -> ArchivePackage:
    """A pure-Python wheel's files under ``site-packages/``, as conda-forge packages pip itself."""
    files: dict[str, bytes | Symlink] = {}
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if not info.is_dir():
                files[f"site-packages/{info.filename}"] = zf.read(info)
    return ArchivePackage(
        name, version, "pyh0_0", "noarch", files, ("python >=3.8",), noarch="python",
        entry_points=tuple(entry_points),
    )  # fmt: skip


def _index_json(pkg: ArchivePackage) -> dict[str, object]:
    data: dict[str, object] = {
        "name": pkg.name,
        "version": pkg.version,
        "build": pkg.build,
        "build_number": 0,
        "depends": list(pkg.depends),
        "subdir": pkg.subdir,
        "license": "BSD-3-Clause",
        "timestamp": _TIMESTAMP,
        **pkg.extra_index,
    }
    if pkg.noarch:
        data["noarch"] = pkg.noarch
        data["arch"] = data["platform"] = None
    return data


def _paths_entry(path: str, content: bytes | Symlink) -> dict[str, object]:
    if isinstance(content, Symlink):
        raw = content.target.encode()
        return {"_path": path, "path_type": "softlink", "sha256": hashlib.sha256(raw).hexdigest(),
                "size_in_bytes": len(raw)}  # fmt: skip
    return {"_path": path, "path_type": "hardlink", "sha256": hashlib.sha256(content).hexdigest(),
            "size_in_bytes": len(content)}  # fmt: skip


def write_archive(pkg: ArchivePackage, channel: Path) -> Path:
    """Write ``channel/<subdir>/<filename>`` with conda-package-handling; return its path."""
    import conda_package_handling.api as cph  # test extra: only tests and the demo make channels

    out = channel.resolve() / pkg.subdir
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="envkit-pkg-") as tmp:
        prefix = Path(tmp)
        for rel, content in sorted(pkg.files.items()):
            path = prefix / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, Symlink):
                path.symlink_to(content.target)
            else:
                path.write_bytes(content)
        info = prefix / "info"
        info.mkdir()
        paths = [_paths_entry(rel, content) for rel, content in sorted(pkg.files.items())]
        (info / "index.json").write_text(json.dumps(_index_json(pkg), indent=2, sort_keys=True) + "\n")
        (info / "paths.json").write_text(json.dumps({"paths": paths, "paths_version": 1}, indent=2) + "\n")
        (info / "files").write_text("".join(f"{rel}\n" for rel in sorted(pkg.files)))
        if pkg.noarch == "python":
            link = {"noarch": {"type": "python", "entry_points": list(pkg.entry_points)},
                    "package_metadata_version": 1}  # fmt: skip
            (info / "link.json").write_text(json.dumps(link, indent=2) + "\n")
        members = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*") if not p.is_dir())
        for p in prefix.rglob("*"):
            os.utime(p, (_MTIME, _MTIME), follow_symlinks=False)
        # zstd level 3, not conda-forge's 19: the same format, ~1 s less per archive on a busy machine
        extra = {"compression_level": 3} if pkg.extension == ".conda" else {}
        cph.create(str(prefix), members, pkg.filename, out_folder=str(out), **extra)
    return out / pkg.filename


def make_real_channel(
    root: Path, packages: Iterable[ArchivePackage], subdirs: Sequence[str] = ("linux-64",)
) -> str:
    """Write every archive under ``root`` and index it with py-rattler; return ``root``'s ``file://`` URL."""
    import rattler.index

    root.mkdir(parents=True, exist_ok=True)
    for subdir in ("noarch", *subdirs):
        (root / subdir).mkdir(exist_ok=True)
    for pkg in packages:
        write_archive(pkg, root)
    asyncio.run(rattler.index.index_fs(root, write_zst=False, write_shards=False, force=True))
    return root.resolve().as_uri()


@dataclass
class FakeFetcher:
    """Serves ``files[url]``; records every URL asked for (tests count downloads with it)."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def fetch(self, url: str, sink: Callable[[bytes], None]) -> None:
        self.requests.append(url)
        if url not in self.files:
            raise PackError(f"cannot download {url}: 404", hint="(fake fetcher: no such file)")
        data = self.files[url]
        for start in range(0, len(data), CHUNK):
            sink(data[start : start + CHUNK])
