"""Bounds on a container run: how long envkit waits for it and how many bytes of its output it reads.

An image can be anyone's (``envkit check IMAGE``, ``snapshot --image``, ``init --from image:``), and
its command decides how much it prints and whether it ever ends: without a bound, 1 GiB of output
cost 3.2 GB of memory (a ``MemoryError`` traceback under a cap) and a command that sleeps was
waited on for the build's 3 hours. A run now ends within :func:`run_timeout` seconds
(``$ENVKIT_RUN_TIMEOUT``, default 300; the probe and a replay ask for their own, longer) and at most
:data:`MAX_RUN_OUTPUT_BYTES` of each stream is read; past either, the container is stopped and
removed and the error says which bound it met.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from envkit.errors import ContainerOutputTooLarge, ContainerTimedOut, UsageError

__all__ = [
    "DEFAULT_RUN_TIMEOUT_S",
    "MAX_RUN_OUTPUT_BYTES",
    "RUN_TIMEOUT_ENV",
    "env_seconds",
    "output_too_large",
    "read_output",
    "run_timeout",
    "timed_out",
]

RUN_TIMEOUT_ENV = "ENVKIT_RUN_TIMEOUT"
DEFAULT_RUN_TIMEOUT_S = 300  # a few minutes: every report envkit asks an image for takes seconds
MAX_RUN_OUTPUT_BYTES = 64 << 20  # per stream; an image's SBOM or pip list is a few MB at most
_MAX_SECONDS = 24 * 3600


def run_timeout(environ: Mapping[str, str] = os.environ) -> int:
    """Seconds a run may take: ``$ENVKIT_RUN_TIMEOUT`` (1 to 86400), else 300."""
    return env_seconds(environ, RUN_TIMEOUT_ENV, DEFAULT_RUN_TIMEOUT_S)


def env_seconds(environ: Mapping[str, str], name: str, default: int) -> int:
    """A whole number of seconds (1 to 86400) from ``$name``, else ``default``; UsageError otherwise."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= _MAX_SECONDS:
        shown = raw if len(raw) <= 40 and raw.isprintable() else repr(raw[:40])
        raise UsageError(
            f"${name} is {shown!s}: not a number of seconds",
            hint=f"a whole number from 1 to {_MAX_SECONDS} (default {default}), or unset it",
        )
    return int(raw)


def _command(argv: Sequence[str]) -> str:
    shown = " ".join(argv)
    return repr(shown if len(shown) <= 80 else shown[:77] + "...")


def timed_out(image: str, argv: Sequence[str], seconds: float) -> ContainerTimedOut:
    return ContainerTimedOut(
        f"{image}: the command {_command(argv)} did not finish within {seconds:g} s; "
        "its container was stopped and removed",
        hint=f"the image's command hangs or waits for input; if it needs longer, set ${RUN_TIMEOUT_ENV}="
        "SECONDS",
    )


def output_too_large(image: str, argv: Sequence[str], stream: str, limit: int) -> ContainerOutputTooLarge:
    return ContainerOutputTooLarge(
        f"{image}: the command {_command(argv)} wrote more than {limit} bytes to {stream}; "
        "not read further, its container was removed",
        hint="envkit asks an image for a short report: is this the image you meant?",
    )


def read_output(chunks: Iterable[bytes], limit: int) -> bytes | None:
    """The chunks joined, or None as soon as they hold more than ``limit`` bytes (the rest unread)."""
    data = bytearray()
    for chunk in chunks:
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)
