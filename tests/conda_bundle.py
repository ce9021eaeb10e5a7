"""Real conda for tests: the offline bundle in ``../shared/conda-bundle``, installed once into a cache.

The bundle holds the source of conda 23.5.2 and 24.3.0 (the condas of the catalog's Miniconda
installers) and 26.7.1 (the newest), every dependency as a cp311 wheel and ``install.sh DEST``
(no network, ~20-40 s for all three). :func:`installed_condas` installs it into
``~/.cache/envkit-tests/conda-bundle/<key>`` where ``key`` is a digest of the bundle's bytes, so a
changed bundle installs afresh and an unchanged one is reused by every later run and checkout.

:class:`RealConda` runs one of them isolated (``HOME``, ``CONDA_PKGS_DIRS``, ``CONDA_ENVS_DIRS``
in a scratch folder) with a clean environment: importing conda-lock's vendored conda sets
``CONDA_ROOT`` in the test process, which would hide the install's own ``.condarc``
(``solver: classic``, ``channels: []``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import shared_path

VERSIONS = ("23.5.2", "24.3.0", "26.7.1")
_KEY_VERSION = "1"  # bump when the layout under the cache changes


def bundle_dir() -> Path:
    return shared_path() / "conda-bundle"


def bundle_python() -> str | None:
    """The interpreter the bundle's cp311 wheels need (``$ENVKIT_CONDA_PYTHON`` or python3.11)."""
    return os.environ.get("ENVKIT_CONDA_PYTHON") or shutil.which("python3.11")


def bundle_available() -> bool:
    return (bundle_dir() / "install.sh").is_file() and bundle_python() is not None


def bundle_missing_reason() -> str:
    if not (bundle_dir() / "install.sh").is_file():
        return f"no conda bundle at {bundle_dir()} (real conda for tests lives beside the project)"
    return "no python3.11 to install the conda bundle with (set ENVKIT_CONDA_PYTHON)"


def bundle_key(bundle: Path, python: str) -> str:
    """A digest of every file of the bundle (path and bytes) and of the interpreter: the cache key."""
    digest = hashlib.sha256(f"{_KEY_VERSION}\0{os.path.realpath(python)}\0".encode())
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(bundle)}\0".encode())
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    if os.environ.get("ENVKIT_TEST_CACHE"):
        return Path(os.environ["ENVKIT_TEST_CACHE"]) / "conda-bundle"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "envkit-tests" / "conda-bundle"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # two test runs at once: one installs, the other waits
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install_bundle(bundle: Path, python: str, cache: Path) -> Path:
    """Install every conda of ``bundle`` under ``cache/<key>`` unless a complete install is there."""
    dest = cache / bundle_key(bundle, python)
    done = dest / "complete.json"
    with _locked(cache / f"{dest.name}.lock"):
        if done.is_file():
            return dest
        shutil.rmtree(dest, ignore_errors=True)  # a half install (killed run): start again
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(dest / "home"), "PYTHON": python}
        run = subprocess.run(
            ["bash", str(bundle / "install.sh"), str(dest), *VERSIONS],
            env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        if run.returncode != 0:
            raise RuntimeError(f"{bundle}/install.sh failed ({run.returncode}):\n{run.stderr[-3000:]}")
        done.write_text(json.dumps({"versions": list(VERSIONS), "stdout": run.stdout.split()}) + "\n")
    return dest


@dataclass(frozen=True)
class RealConda:
    """One installed conda release, run isolated in a scratch folder."""

    version: str
    root: Path  # the venv whose bin/conda is conda's real entry point

    @property
    def exe(self) -> Path:
        return self.root / "bin" / "conda"

    def env(self, scratch: Path) -> dict[str, str]:
        for sub in ("home", "pkgs", "envs"):
            (scratch / sub).mkdir(parents=True, exist_ok=True)
        return {
            "PATH": f"{self.root / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(scratch / "home"),
            "CONDA_PKGS_DIRS": str(scratch / "pkgs"),
            "CONDA_ENVS_DIRS": str(scratch / "envs"),
            "CONDARC": str(self.root / ".condarc"),
            "LANG": "C.UTF-8",
        }

    def run(
        self, args: Sequence[str], scratch: Path, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.exe), *args], env=dict(env or self.env(scratch)), capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip

    def ok(self, args: Sequence[str], scratch: Path, env: Mapping[str, str] | None = None) -> str:
        """Run ``args``; fail the test with conda's own output when it exits non-zero."""
        done = self.run(args, scratch, env)
        if done.returncode != 0:
            raise AssertionError(
                f"conda {self.version} {' '.join(args)} exited {done.returncode}:\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            )
        return done.stdout


def installed_condas(cache: Path | None = None) -> dict[str, RealConda]:
    python = bundle_python()
    assert python is not None
    dest = install_bundle(bundle_dir(), python, cache or cache_root())
    return {v: RealConda(v, dest / f"conda-{v}") for v in VERSIONS}


def conda_meta(prefix: Path) -> dict[str, dict[str, object]]:
    """The ``conda-meta/*.json`` records of an environment, by package name."""
    records = (json.loads(p.read_text()) for p in (prefix / "conda-meta").glob("*.json"))
    return {str(r["name"]): r for r in records}
