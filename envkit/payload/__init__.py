"""What runs inside an image or on a node, and the one way to launch it.

``scripts/`` holds the files that run there (the probe, the readiness scan, the fingerprint):
standard library only, importing each other by name, mounted read-only into an image at
:data:`CONTAINER_PAYLOAD` (or shipped in a Kubernetes ConfigMap) and never imported by envkit
as a package. Every caller launches them through :func:`run` (or, for the scripts a scheduler
runs, :func:`find_python`), so the interpreter-finding line is written once: :data:`FIND_PYTHON`.

This package is the bottom layer: it imports no stage (only ``envkit._proc``, the one subprocess door).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol, TypeAlias

from envkit import _proc

__all__ = [
    "CONTAINER_PAYLOAD",
    "FIND_PYTHON",
    "PAYLOAD_DIR",
    "Host",
    "Ran",
    "Where",
    "container_path",
    "find_python",
    "load",
    "payload_files",
    "run",
]

PAYLOAD_DIR = Path(__file__).resolve().parent / "scripts"
CONTAINER_PAYLOAD = "/opt/envkit-probe"  # where an image sees PAYLOAD_DIR (read-only)
FIND_PYTHON = (
    "command -v python3 || command -v python"  # an image's interpreter: a Debian base has only python3
)
_EXEC = f'exec "$({FIND_PYTHON})" "$0" "$@"'

Script: TypeAlias = str | tuple[str, str]
"""A file of :data:`PAYLOAD_DIR` (``"run.py"``), or ``("-m", MODULE)`` / ``("-c", CODE)``."""


@dataclass(frozen=True)
class Ran:
    """What a payload process left: its exit code and its output."""

    code: int
    stdout: str
    stderr: str


class Where(Protocol):
    """A place a payload runs: this host (``python`` is the interpreter) or an image (``python`` None:
    the image's own, found by :data:`FIND_PYTHON`); ``execute`` runs an argv with ``(host, container)``
    directories mounted read-only."""

    @property
    def python(self) -> str | None: ...

    def execute(self, argv: Sequence[str], mounts: Sequence[tuple[str, str]], cwd: str | None) -> Ran: ...


@dataclass(frozen=True)
class Host:
    """This host: ``python`` (default this interpreter) runs the payload from envkit's own directory."""

    python: str = sys.executable
    env: Mapping[str, str] | None = None
    timeout_s: float | None = None
    runner: _proc.Runner = _proc.run

    def execute(self, argv: Sequence[str], mounts: Sequence[tuple[str, str]], cwd: str | None) -> Ran:
        del mounts  # the host reads the files where they are
        where = {"cwd": cwd} if cwd is not None else {}
        done = self.runner(list(argv), env=self.env, check=False, timeout=self.timeout_s, **where)
        return Ran(done.returncode, done.stdout, done.stderr)


def _file(name: str) -> str:
    if "/" in name or not (PAYLOAD_DIR / name).is_file():
        raise ValueError(f"{name!r} is not a file of {PAYLOAD_DIR}")
    return name


def container_path(name: str, root: str = CONTAINER_PAYLOAD) -> str:
    """The payload file ``name`` as a script run in an image sees it (``root``: a shell word may stand
    for the mount point)."""
    return f"{root}/{_file(name)}"


def find_python(var: str = "py") -> str:
    """The shell assignment of the image's interpreter to ``var``, for a scheduler's script."""
    return f"{var}=$({FIND_PYTHON})"


def run(
    where: Where,
    script: Script,
    argv: Sequence[str],
    mounts: Sequence[tuple[str, str]] = (),
    *,
    cwd: str | None = None,
) -> Ran:
    """Launch ``script`` with ``argv`` at ``where``; in an image :data:`PAYLOAD_DIR` is mounted read-only
    (for a payload file) beside ``mounts``, and ``cwd`` is the directory it starts in."""
    if isinstance(script, str):
        target = [str(PAYLOAD_DIR / _file(script))] if where.python else [container_path(script)]
        mounts = [(str(PAYLOAD_DIR), CONTAINER_PAYLOAD), *mounts]
    else:
        target = list(script)
    if where.python:
        return where.execute([where.python, *target, *argv], mounts, cwd)
    line = _EXEC if cwd is None else f'cd "$1" && shift && {_EXEC}'
    head = [target[0], cwd] if cwd is not None else target[:1]
    return where.execute(["sh", "-c", line, *head, *target[1:], *argv], mounts, None)


def payload_files() -> dict[str, str]:
    """Every payload file's text by name (what a Kubernetes ConfigMap ships)."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(PAYLOAD_DIR.glob("*.py"))}


def load(name: str) -> ModuleType:
    """The payload file ``name`` imported on this host (a reader the image runs too, e.g. ``elfscan``),
    under a private module name."""
    path = PAYLOAD_DIR / _file(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"envkit_payload_{name}", path)
    if spec is None or spec.loader is None:  # pragma: no cover - the file ships with envkit
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
