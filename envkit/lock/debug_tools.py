"""The debug image's own lock: which Debian packages and wheels it adds, each pinned (fetched by
:mod:`envkit.offline.debug_fetch`).

``images/NAME/debug.lock.json`` is resolved against one runtime image (its ID is in the lock): the
Debian closure of gdb, OpenSSH and the Python debug symbols comes from ``apt-get -s`` inside that
image (:func:`envkit.lock.debian.simulate_install`), exact versions and sha256 from the index; the
wheels (JupyterLab, ipykernel, py-spy) from ``uv pip compile --generate-hashes`` for the
environment's Python. A lock for another runtime image, or another tool list, is resolved again.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from envkit import _proc
from envkit._io import load_json_bounded, read_text_bounded
from envkit.engine.protocol import ContainerEngine
from envkit.errors import EnvkitError, LockError
from envkit.lock.debian import AptState, deb_records, simulate_install
from envkit.lock.debug_lock import DebugLock, parse_debug_lock
from envkit.lock.solver import PipRequest, PipResolver

__all__ = [
    "DEBIAN_TOOLS",
    "DEBUG_LOCK",
    "DEBUG_REQUIREMENTS",
    "WHEEL_TOOLS",
    "DebugLock",
    "DebugRequest",
    "ImagePython",
    "image_python",
    "read_debug_lock",
    "resolve_debug_lock",
]

DEBUG_LOCK = "debug.lock.json"
DEBUG_REQUIREMENTS = "debug-requirements.lock"
MAX_LOCK_BYTES = 4 << 20
DEBIAN_TOOLS = ("gdb", "openssh-server")
WHEEL_TOOLS = ("jupyterlab>=4.2,<5", "ipykernel>=6.29,<8", "py-spy>=0.4,<0.5")
NSYS_PACKAGE = "nsight-systems-target"  # Debian non-free: the nsys CLI (the GUI is nsight-systems)
_PY = re.compile(r"^(\d+\.\d+)[ \t]+(\S+)[ \t]*(\S*)\Z")


@dataclass(frozen=True)
class ImagePython:
    """The environment's interpreter in the runtime image: version, real path, Debian's version of it."""

    version: str  # "3.11"
    path: str  # /usr/bin/python3.11 (the venv's python, resolved)
    debian: str | None  # dpkg's version of python3.X when the interpreter is Debian's, else None

    @property
    def dbg_package(self) -> str | None:
        return f"python{self.version}-dbg" if self.debian else None

    def dbg_pins(self) -> list[str]:
        """The debug symbols of exactly this interpreter (and the debug libpython they need)."""
        if not self.debian:
            return []
        v = self.version
        # one source package: every binary of it at the installed version, or apt upgrades python
        return [f"{p}={self.debian}" for p in (f"python{v}-dbg", f"libpython{v}-dbg", f"libpython{v}")]


def image_python(engine: ContainerEngine, image: str, prefix: str = "/opt/env") -> ImagePython:
    """Which Python the environment runs, and whether Debian ships its debug symbols."""
    script = (
        f'py="$(readlink -f {prefix}/bin/python)"; '
        f'v="$({prefix}/bin/python -c "import sys; print(\'%d.%d\' % sys.version_info[:2])")"; '
        'd=""; case "$py" in /usr/bin/*) '
        'd="$(dpkg-query -W -f=\'${Version}\' "python$v" 2>/dev/null)";; esac; '
        'echo "$v $py $d"'
    )
    result = engine.run(image, ["sh", "-c", script])
    found = _PY.match(result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "")
    if result.exit_code != 0 or not found:
        raise EnvkitError(
            f"cannot find the environment's Python in {image}: {result.stderr.strip()[-300:]}",
            hint=f"the runtime image should have {prefix}/bin/python",
        )
    version, path, debian = found.groups()
    return ImagePython(version, path, debian or None)


@dataclass(frozen=True)
class DebugRequest:
    """What the debug layer asks for: the tools, for one runtime image and its Python."""

    runtime_id: str
    suite: str
    python: ImagePython
    python_platform: str  # uv's, e.g. x86_64-manylinux_2_36
    cuda: bool
    debian_tools: tuple[str, ...] = DEBIAN_TOOLS
    wheel_tools: tuple[str, ...] = WHEEL_TOOLS

    @property
    def key(self) -> str:
        data = [
            self.runtime_id,
            self.suite,
            self.python.__dict__,
            self.python_platform,
            self.cuda,
            list(self.debian_tools),
            list(self.wheel_tools),
        ]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()


def read_debug_lock(path: Path) -> DebugLock | None:
    """The lock in ``path``; None when there is none. A damaged one is an error naming the file."""
    try:
        text = read_text_bounded(path, MAX_LOCK_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise LockError(f"cannot read {path}: {e}", hint="check the file (or delete it)") from e
    try:
        return parse_debug_lock(load_json_bounded(text, 8))
    except ValueError as e:
        raise LockError(
            f"{path} is not a readable debug lock: {e}",
            hint=f"delete {path.name}: the next `envkit build NAME --debug-image` resolves it again",
        ) from e


def resolve_debug_lock(
    engine: ContainerEngine,
    image: str,
    request: DebugRequest,
    state: AptState,
    resolver: PipResolver,
    *,
    run: _proc.Runner = _proc.run,
) -> DebugLock:
    """Pin every Debian package (closure inside ``image``) and wheel the debug layer adds."""
    state.update(run)
    wanted = list(request.debian_tools)
    dbg = request.python.dbg_package
    wanted += request.python.dbg_pins()  # the image's interpreter's: never an upgrade of it
    closure = simulate_install(engine, image, state, wanted)
    debs = tuple(deb_records(state, closure, run))
    pip = PipRequest(request.wheel_tools, request.python.version, request.python_platform)
    wheels = resolver.resolve(pip)
    notes = [nsys_note(state, request, run)]
    if not dbg:
        notes.append(
            f"py-bt: {request.python.path} is not Debian's Python: no debug symbols are added "
            "(gdb's `bt` works; `py-spy dump` shows the Python stack)"
        )
    return DebugLock(
        request.key,
        request.runtime_id,
        request.suite,
        request.python.version,
        dbg,
        debs,
        wheels,
        tuple(notes),
    )


def nsys_note(state: AptState, request: DebugRequest, run: _proc.Runner = _proc.run) -> str:
    """One line on Nsight Systems: where a source was looked for and why it is (not) in the image."""
    if not request.cuda:
        return "nsys: not added: a CPU environment has no CUDA kernels to profile"
    version = state.candidate(NSYS_PACKAGE, run)
    if version is None:
        return f"nsys: not added: no {NSYS_PACKAGE} in Debian {state.suite} (non-free) and no NVIDIA wheel"
    return (
        f"nsys: not added: Debian {state.suite} non-free has {NSYS_PACKAGE} {version}, but it depends on "
        "the driver's libcuda1, which the host provides at run time; mount the host's nsys instead "
        "(docs/guides/debug.md)"
    )
