"""``envkit snapshot``: capture the current environment as a JSON inventory.

The environment is read through :class:`EnvironmentSource` (conda list --json when in a
conda env, pip's view via importlib.metadata, Python, platform, host);
:class:`envkit.inventory.testing.FakeSource` serves tests. The snapshot is byte-stable: sorted, no timestamps.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypedDict

from envkit import _proc, payload
from envkit._atomic import write_text_atomic
from envkit._safe import redact
from envkit.errors import EnvkitError
from envkit.inventory._collect import channel_from_url

__all__ = [
    "SNAPSHOT_KIND",
    "EnvironmentSource",
    "LocalSource",
    "Snapshot",
    "take_snapshot",
    "write_snapshot",
]

SNAPSHOT_KIND = "envkit-snapshot"


class Snapshot(TypedDict):
    """``envkit snapshot``'s document: what ``envkit diff`` and ``init --from`` read back."""

    kind: str  # SNAPSHOT_KIND
    schema: int
    host: str
    python: str
    platform: str
    conda: list[dict[str, object]] | None  # None: not a conda environment
    pip: list[dict[str, str]]
    facts: dict[str, str]


class EnvironmentSource(Protocol):
    """Where ``envkit snapshot`` reads the environment from (the running one, or a fake)."""

    def host(self) -> str: ...
    def python(self) -> str: ...
    def platform(self) -> str: ...
    def conda_records(self) -> list[dict[str, Any]] | None: ...
    def distributions(self) -> list[tuple[str, str]]: ...
    def facts(self) -> dict[str, str]: ...


class LocalSource:
    """The running interpreter's environment."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self.environ = dict(os.environ if environ is None else environ)

    def host(self) -> str:
        return socket.gethostname()

    def python(self) -> str:
        return platform.python_version()

    def platform(self) -> str:
        return f"{sys.platform}-{platform.machine()}"

    def conda_records(self) -> list[dict[str, object]] | None:
        prefix = self.environ.get("CONDA_PREFIX")
        if not prefix:
            return None
        conda = self.environ.get("CONDA_EXE", "conda")
        try:
            result = _proc.run([conda, "list", "--json", "-p", prefix], timeout=120, hint="is conda on PATH?")
            data = json.loads(result.stdout)
        except (EnvkitError, json.JSONDecodeError) as e:
            # conda failing is a tool failure (exit 3), not an unreadable input file.
            raise EnvkitError(
                f"conda list --json failed in {prefix}: {e}",
                hint="unset CONDA_PREFIX to snapshot pip's view only",
            ) from e
        return data if isinstance(data, list) else None

    def distributions(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = _facts_script().distributions()
        return found

    def facts(self) -> dict[str, str]:
        found: dict[str, str] = _facts_script().host_facts()
        return found


@functools.cache
def _facts_script() -> ModuleType:
    """The payload's ``snapshot.py``: the same functions this host and an image run."""
    return payload.load("snapshot")


def take_snapshot(source: EnvironmentSource) -> Snapshot:
    conda = source.conda_records()
    keep = ("name", "version", "build_string", "channel", "platform")
    return {
        "kind": SNAPSHOT_KIND,
        "schema": 1,
        "host": source.host(),
        "python": source.python(),
        "platform": source.platform(),
        "conda": None if conda is None else sorted((_record(r, keep) for r in conda), key=_key),
        "pip": [{"name": n, "version": v} for n, v in sorted(source.distributions())],
        "facts": dict(sorted(source.facts().items())),
    }


def _record(raw: Any, keep: tuple[str, ...]) -> dict[str, object]:
    """The fields kept of one conda record; credentials in channel URLs redacted (snapshots are shared)."""
    if not isinstance(raw, dict):
        raise EnvkitError(
            "conda list --json returned a non-object entry", hint="check the conda installation"
        )
    record = {k: redact(v) if isinstance(v, str) else v for k, v in ((k, raw.get(k)) for k in keep)}
    channel = record.get("channel")
    if isinstance(channel, str) and "://" in channel:
        # conda-meta's channel is a URL: real conda writes <channel>/<subdir>, py-rattler <channel>;
        # the name is the one the lock's package URLs give (conda-forge, pkgs/main, host[:port]/path)
        record["channel"] = channel_from_url(channel)
    return record


def _key(record: dict[str, object]) -> tuple[str, str]:
    return (str(record.get("name")), str(record.get("version")))


def write_snapshot(snapshot: Mapping[str, object], path: Path) -> bool:
    """Write atomically (every string redacted once more); False when the file already held it."""
    return write_text_atomic(path, json.dumps(_redacted(snapshot), indent=2, sort_keys=True) + "\n")


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value
