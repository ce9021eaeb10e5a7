"""Fakes and generated test data for locking, shipped so tests and benchmarks need no network.

- :class:`FakeCondaSolver` / :class:`FakePipResolver`: return canned packages, record requests.
- :func:`make_channel`: a local ``file://`` conda channel with realistic records (python 3.10/3.11,
  numpy 1.x and 2.x per Python, pytorch cpu / cuda118 / cuda12x builds with ``__cuda`` and
  ``cuda-version`` constraints, libblas openblas/mkl variants, noarch packages) and real, tiny
  ``.tar.bz2`` archives whose md5/sha256 are in the repodata.
- :func:`make_wheel`: a tiny pure-Python wheel, for a local wheel directory.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envkit.lock.solver import CondaPackage, CondaRequest, CondaSolution, PipPackage, PipRequest

__all__ = [
    "FakeCondaSolver",
    "FakePipResolver",
    "Record",
    "make_channel",
    "make_wheel",
    "realistic_records",
    "write_channel",
]

_TIMESTAMP = 1_700_000_000_000  # fixed: generated channels are byte-stable


@dataclass
class FakeCondaSolver:
    """Returns ``packages[platform]`` (renamed to the platform); records every request."""

    packages: dict[str, tuple[CondaPackage, ...]] = field(default_factory=dict)
    requests: list[CondaRequest] = field(default_factory=list)
    error: Exception | None = None

    def solve(self, request: CondaRequest) -> CondaSolution:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return CondaSolution(self.packages.get(request.platform, ()))


@dataclass
class FakePipResolver:
    """A :class:`~envkit.lock.solver.PipResolver` that pins what it is given, recording requests."""

    packages: tuple[PipPackage, ...] = ()
    requests: list[PipRequest] = field(default_factory=list)

    def resolve(self, request: PipRequest) -> tuple[PipPackage, ...]:
        self.requests.append(request)
        return self.packages if request.requirements else ()


@dataclass(frozen=True)
class Record:
    """A package record of the fake conda channel."""

    name: str
    version: str
    build: str
    subdir: str
    depends: tuple[str, ...] = ()
    constrains: tuple[str, ...] = ()
    build_number: int = 0
    noarch: str | None = None

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}-{self.build}.tar.bz2"

    def index_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "version": self.version,
            "build": self.build,
            "build_number": self.build_number,
            "depends": list(self.depends),
            "constrains": list(self.constrains),
            "subdir": self.subdir,
            "license": "BSD-3-Clause",
            "timestamp": _TIMESTAMP,
        }
        if self.noarch:
            data["noarch"] = self.noarch
        return data


def _archive(record: Record) -> bytes:
    """A real, tiny conda package: info/index.json in a bzip2 tarball with fixed metadata."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:bz2") as tar:
        payload = json.dumps(record.index_json(), sort_keys=True, indent=2).encode()
        info = tarfile.TarInfo("info/index.json")
        info.size, info.mtime, info.mode = len(payload), 0, 0o644
        tar.addfile(info, io.BytesIO(payload))
    return raw.getvalue()


def write_channel(root: Path, records: Iterable[Record], *, archives: bool = True) -> str:
    """Write ``repodata.json`` per subdir (and the archives); return the channel's ``file://`` URL.

    Without ``archives`` each package file holds a placeholder (its own file name) instead of a
    tarball: much faster for large synthetic channels whose packages are never installed.
    """
    subdirs: dict[str, dict[str, dict[str, object]]] = {"noarch": {}}
    for record in records:
        folder = root / record.subdir
        entry = record.index_json()
        data = _archive(record) if archives else record.filename.encode()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / record.filename).write_bytes(data)
        entry |= {
            "md5": hashlib.md5(data, usedforsecurity=False).hexdigest(),
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
        }
        subdirs.setdefault(record.subdir, {})[record.filename] = entry
    for subdir, packages in subdirs.items():
        (root / subdir).mkdir(parents=True, exist_ok=True)
        repodata = {
            "info": {"subdir": subdir},
            "packages": packages,
            "packages.conda": {},
            "repodata_version": 1,
        }
        (root / subdir / "repodata.json").write_text(json.dumps(repodata, sort_keys=True, indent=1), "utf-8")
    return root.resolve().as_uri()


def realistic_records(subdirs: Sequence[str] = ("linux-64", "linux-aarch64")) -> list[Record]:
    """A small conda-forge-like world with the variants envkit must choose between."""
    records = [
        Record("pip", "24.0", "pyhd8ed1ab_0", "noarch", ("python >=3.7",), noarch="python"),
        Record("packaging", "24.1", "pyhd8ed1ab_0", "noarch", ("python >=3.8",), noarch="python"),
        Record("typing_extensions", "4.12.2", "pyha770c72_0", "noarch", ("python >=3.8",), noarch="python"),
    ]
    for subdir in subdirs:
        records += _platform_records(subdir)
    return records


def _platform_records(subdir: str) -> list[Record]:
    r = [
        Record("libgcc-ng", "13.2.0", "h77fa898_7", subdir, ("__glibc >=2.17,<3.0.a0",)),
        Record(
            "cuda-version", "11.8", "h70ddcb2_3", subdir, (), ("__cuda >=11.8", "cudatoolkit 11.8|11.8.*")
        ),
        Record("cuda-version", "12.1", "h1d6eff3_3", subdir, (), ("__cuda >=12.1",)),
        Record("cuda-version", "12.4", "h3060b56_3", subdir, (), ("__cuda >=12.4",)),
        Record("libblas", "3.9.0", "22_openblas", subdir, ("libopenblas >=0.3.27,<1.0a0",), build_number=22),
        Record("libblas", "3.9.0", "22_mkl", subdir, ("mkl >=2024.0,<2025.0a0",), build_number=22),
        Record("libopenblas", "0.3.27", "pthreads_h413a1c8_0", subdir, ("libgcc-ng >=12",)),
        Record("mkl", "2024.0.0", "ha957f24_49657", subdir, ("libgcc-ng >=12",)),
    ]
    for py in ("3.10", "3.11"):
        tag = py.replace(".", "")
        pin = f"python >={py},<{py[:2]}{int(py[2:]) + 1}.0a0"
        abi = f"python_abi {py}.* *_cp{tag}"
        r += [
            Record("python", f"{py}.14" if py == "3.10" else "3.11.9", "hd12c33a_0_cpython", subdir,
                   ("libgcc-ng >=12", "__glibc >=2.17,<3.0.a0")),
            Record("python_abi", py, f"4_cp{tag}", subdir, (), (f"python {py}.* *_cpython",)),
            Record("numpy", "1.26.4", f"py{tag}h64a7726_0", subdir, ("libblas >=3.9.0,<4.0a0", pin, abi)),
            Record("numpy", "2.1.3", f"py{tag}h4bf6692_0", subdir, ("libblas >=3.9.0,<4.0a0", pin, abi)),
            Record("pytorch", "2.1.2", f"cpu_py{tag}h_0", subdir, (pin, abi, "numpy >=1.21,<2")),
            Record("pytorch", "2.1.2", f"cuda118_py{tag}h_0", subdir,
                   (pin, abi, "numpy >=1.21,<2", "__cuda", "cuda-version >=11.8,<12")),
            Record("pytorch", "2.1.2", f"cuda120_py{tag}h_0", subdir,
                   (pin, abi, "numpy >=1.21,<2", "__cuda", "cuda-version >=12.0,<13")),
        ]  # fmt: skip
    return r


def make_channel(root: Path, subdirs: Sequence[str] = ("linux-64", "linux-aarch64")) -> str:
    """Write :func:`realistic_records` as a local channel; return its ``file://`` URL."""
    return write_channel(root, realistic_records(subdirs))


def make_wheel(folder: Path, name: str, version: str, requires: Sequence[str] = ()) -> Path:
    """A tiny pure-Python wheel with a valid RECORD, byte-stable."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}"
    files = {
        f"{module}/__init__.py": f"__version__ = {version!r}\n",
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{dist}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: envkit-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}.dist-info/RECORD"] = "\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(files):
            archive.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), files[path])
    return wheel
