"""The one place envkit runs subprocesses: argv lists only, output captured, errors translated."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envkit.errors import EnvkitError

__all__ = ["ProcResult", "ProcessFailed", "Runner", "run", "spawn"]


@dataclass(frozen=True)
class ProcResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[..., ProcResult]
"""The type of :func:`run`, for code that takes a runner to inject a fake in tests."""


class ProcessFailed(EnvkitError):
    def __init__(self, result: ProcResult, *, hint: str | None = None) -> None:
        tail = "\n".join(result.stderr.strip().splitlines()[-15:])
        super().__init__(f"{result.argv[0]} exited with {result.returncode}:\n{tail}", hint=hint)
        self.result = result


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    check: bool = True,
    timeout: float | None = None,
    hint: str | None = None,
) -> ProcResult:
    try:
        done = subprocess.run(
            list(argv),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as e:
        raise EnvkitError(f"{argv[0]}: command not found", hint=hint or f"install {argv[0]}") from e
    except subprocess.TimeoutExpired as e:
        raise EnvkitError(f"{argv[0]} timed out after {timeout} s", hint=hint) from e
    result = ProcResult(tuple(argv), done.returncode, done.stdout, done.stderr)
    if check and done.returncode != 0:
        raise ProcessFailed(result, hint=hint)
    return result


def spawn(argv: Sequence[str], *, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in the background (its own session), stdout and stderr appended to ``log``.

    For the local fleet scheduler; the caller polls and ends it (``terminate``/``kill`` by handle).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    try:  # O_NOFOLLOW: never appended through a link planted at the log's name
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        raise EnvkitError(
            f"cannot write {log}: {e.strerror or e}", hint="is a link or another file in its place?"
        ) from e
    try:
        with os.fdopen(fd, "ab") as out:
            return subprocess.Popen(
                list(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
    except FileNotFoundError as e:
        raise EnvkitError(f"{argv[0]}: command not found", hint=f"install {argv[0]}") from e
