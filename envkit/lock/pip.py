"""The pip part: ``uv pip compile`` for a target Python and platform, with hashes.

uv runs through :mod:`envkit._proc`. It writes PEP 751 ``pylock.toml`` (wheel URLs and their
sha256); the previous lock is handed over in the same format, which uv takes as preferences.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envkit import _proc
from envkit._pep503 import canonicalize_name
from envkit.errors import EnvkitError, SolverFailed, Unsatisfiable
from envkit.lock.solver import PipPackage, PipRequest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["UvResolver", "find_uv", "pylock_text", "read_pylock"]

# uv's wording for an index it cannot reach (not for a resolution that failed).
_NETWORK = re.compile(
    r"(?i)(failed to fetch|error sending request|dns error|connection (?:refused|reset|closed|error)|"
    r"connect error|timed out|network is unreachable|could not resolve host|"
    r"HTTP status (?:client|server) error)"
)


def find_uv() -> str:
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise EnvkitError("uv is not installed", hint="pip install uv (envkit depends on it)") from None
        return found


class UvResolver:
    """The :class:`~envkit.lock.solver.PipResolver` through ``uv pip compile`` (hashes, any platform)."""

    def __init__(self, uv: str | None = None, timeout_s: float = 600.0) -> None:
        self._uv = uv
        self._timeout_s = timeout_s

    def resolve(self, request: PipRequest) -> tuple[PipPackage, ...]:
        if not request.requirements:
            return ()
        with tempfile.TemporaryDirectory(prefix="envkit-uv-") as tmp:
            folder = Path(tmp)
            (folder / "requirements.in").write_text("".join(f"{r}\n" for r in request.requirements), "utf-8")
            output = folder / "pylock.toml"
            if request.preferred:
                output.write_text(pylock_text(request.preferred, request.python_version), "utf-8")
            argv = [self._uv or find_uv(), *_argv(request, folder / "requirements.in", output)]
            result = _proc.run(argv, check=False, timeout=self._timeout_s)
            if result.returncode != 0:
                raise _translate(result.stderr, request)
            return read_pylock(output.read_text("utf-8"))


def _argv(request: PipRequest, infile: Path, outfile: Path) -> list[str]:
    argv = [
        "pip", "compile", str(infile), "-o", str(outfile), "--format", "pylock.toml",
        "--python-version", request.python_version, "--python-platform", request.python_platform,
        "--no-config", "--no-header", "--quiet",
    ]  # fmt: skip
    if request.no_index:
        argv.append("--no-index")
    elif request.index_url:
        argv += ["--index-url", request.index_url]
    for url in request.extra_index_urls:
        argv += ["--extra-index-url", url]
    for link in request.find_links:
        argv += ["--find-links", link]
    for name in sorted(request.upgrade):
        argv += ["--upgrade-package", name]
    return argv


def _translate(stderr: str, request: PipRequest) -> EnvkitError:
    text = "\n".join(line for line in stderr.strip().splitlines() if line.strip())
    if "No solution found" in text or "unsatisfiable" in text:
        return Unsatisfiable(
            f"the pip requirements cannot all be satisfied for Python {request.python_version} on "
            f"{request.python_platform}: {'; '.join(request.requirements)}\nuv says:\n{text}",
            hint="relax one of the conflicting pip requirements in the spec",
        )
    if _NETWORK.search(text):
        return SolverFailed(
            f"uv could not reach the package index: {text}",
            hint="set mirrors.pypi in the spec to a reachable PyPI mirror, or a file:// directory of wheels",
        )
    return SolverFailed(
        f"uv pip compile failed: {text}", hint="rerun as `envkit --debug lock ...` and check the requirements"
    )


def read_pylock(text: str) -> tuple[PipPackage, ...]:
    """Packages from a PEP 751 ``pylock.toml``: version, first wheel (or sdist) URL, every sha256."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except (ValueError, RecursionError) as e:  # TOMLDecodeError, 4,300-digit integers, deep nesting
        raise SolverFailed(
            f"uv returned an unreadable pylock.toml: {type(e).__name__}: {str(e)[:160]}",
            hint="rerun as `envkit --debug lock ...`; check the uv version envkit uses",
        ) from e
    packages = []
    for entry in data.get("packages", []):
        files = [*entry.get("wheels", []), *([entry["sdist"]] if "sdist" in entry else [])]
        files = [f for f in files if f.get("hashes", {}).get("sha256")]
        if not files:
            raise SolverFailed(
                f"uv returned {entry.get('name')} without a sha256",
                hint="the index must publish hashes (or serve files uv can hash)",
            )
        url = str(files[0].get("url") or files[0].get("path", ""))
        first = files[0]["hashes"]["sha256"]
        rest = sorted({f["hashes"]["sha256"] for f in files[1:]} - {first})
        packages.append(
            PipPackage(canonicalize_name(entry["name"]), str(entry["version"]), url, (first, *rest))
        )
    return tuple(sorted(packages, key=lambda p: p.name))


def pylock_text(packages: Sequence[PipPackage], python_version: str) -> str:
    """A minimal ``pylock.toml`` holding previous pins (uv reads it as preferences)."""
    lines = [
        'lock-version = "1.0"',
        'created-by = "envkit"',
        f"requires-python = {json.dumps('>=' + python_version)}",
        "",
    ]
    for p in sorted(packages, key=lambda p: p.name):
        lines += [
            "[[packages]]",
            f"name = {json.dumps(p.name)}",
            f"version = {json.dumps(p.version)}",
            f"wheels = [{{ url = {json.dumps(p.url)}, hashes = {{ sha256 = {json.dumps(p.sha256)} }} }}]",
            "",
        ]
    return "\n".join(lines)
