"""Probe reports: the versioned JSON schema, loading with validation, and the report store.

A report is the payload's JSON (``schema`` 1) plus what the host adds (envkit version, label,
image). A truncated or corrupted file is a :class:`ReportError` naming the file (exit 2).
The store keeps ``<store>/<host>/<label>.json``; ``--store DIR`` or ``$ENVKIT_STORE`` choose it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envkit._atomic import write_text_atomic
from envkit.errors import ReportError

__all__ = [
    "KIND",
    "SCHEMA",
    "default_store",
    "dump_report",
    "load_report",
    "resolve_report",
    "save_to_store",
    "store_path",
    "validate_report",
]

SCHEMA = 1
KIND = "envkit-probe-report"
DEFAULT_LABEL = "latest"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")

Report = dict[str, Any]


def _need(cond: bool, source: str, what: str) -> None:
    if not cond:
        raise ReportError(
            f"{source}: not a valid probe report: {what}",
            hint="the file is truncated or was not written by `envkit probe`; rerun the probe",
        )


def validate_report(data: Any, source: str) -> Report:
    """Check the structure the compare step relies on; return ``data`` typed as a report."""
    _need(isinstance(data, dict), source, "the top level is not an object")
    _need(data.get("kind") == KIND, source, f"'kind' is not {KIND!r}")
    schema = data.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ReportError(
            f"{source}: 'schema' is {type(schema).__name__} {schema!r}, not an integer "
            f"(this envkit reads schema {SCHEMA})",
            hint="the report was edited or not written by `envkit probe`; rerun the probe",
        )
    if schema != SCHEMA:
        raise ReportError(
            f"{source}: probe report schema {schema!r}, this envkit reads schema {SCHEMA}",
            hint="rerun the probe with this envkit version, or compare with the envkit that wrote it",
        )
    for key in ("config", "fingerprint", "frameworks"):
        _need(isinstance(data.get(key), dict), source, f"{key!r} is missing or not an object")
    config = data["config"]
    for key in ("seed", "steps", "workloads", "mode", "dtype"):
        _need(key in config, source, f"config.{key} is missing")
    for fw, entry in data["frameworks"].items():
        _need(isinstance(entry, dict) and "status" in entry, source, f"frameworks.{fw} has no status")
        for wl, res in entry.get("workloads", {}).items():
            where = f"frameworks.{fw}.workloads.{wl}"
            _need(isinstance(res, dict) and "status" in res, source, f"{where} has no status")
            if res["status"] == "ok":
                _need(isinstance(res.get("steps"), list), source, f"{where}.steps is missing")
                _need(len(res["steps"]) == config["steps"], source, f"{where} has {len(res['steps'])} steps")
                for rec in res["steps"]:
                    _need(
                        isinstance(rec, dict) and "loss" in rec and "grad_norm" in rec,
                        source,
                        f"{where}.steps",
                    )
    result: Report = data
    return result


def load_report(path: Path) -> Report:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise ReportError(
            f"{path}: no such report", hint="give a report file or a host name in the store"
        ) from e
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: cannot read the report: {e}", hint="check the file") from e
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ReportError(
            f"{path}: truncated or corrupted report ({e})",
            hint="rerun `envkit probe` to write it again",
        ) from e
    return validate_report(data, str(path))


def dump_report(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=1, sort_keys=True, allow_nan=False) + "\n"


def default_store(root: Path, environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env["ENVKIT_STORE"]) if env.get("ENVKIT_STORE") else root / ".envkit" / "reports"


def safe_name(text: str) -> str:
    return _SAFE.sub("_", text).strip("._") or "unnamed"


def store_path(store: Path, host: str, label: str) -> Path:
    return store / safe_name(host) / f"{safe_name(label)}.json"


def save_to_store(report: Mapping[str, Any], store: Path, label: str) -> Path:
    host = str(report.get("fingerprint", {}).get("host") or "unknown")
    path = store_path(store, host, label)
    write_text_atomic(path, dump_report(report))
    return path


def resolve_report(ref: str, store: Path, label: str | None = None) -> Path:
    """A report file, ``HOST`` or ``HOST/LABEL`` in the store."""
    path = Path(ref)
    if path.is_file() or ref.endswith(".json"):
        return path
    host, _, given = ref.partition("/")
    directory = store / safe_name(host)
    if not directory.is_dir():
        raise ReportError(
            f"{ref}: neither a report file nor a host in the store {store}",
            hint="run `envkit probe` on that host with a shared --store / ENVKIT_STORE, or give a file",
        )
    wanted = given or label
    if wanted:
        return store_path(store, host, wanted)
    candidates = sorted(directory.glob("*.json"))
    default = directory / f"{DEFAULT_LABEL}.json"
    if default.is_file():
        return default
    if len(candidates) == 1:
        return candidates[0]
    labels = ", ".join(p.stem for p in candidates) or "none"
    raise ReportError(f"{ref}: several reports in the store ({labels})", hint=f"name one: {host}/LABEL")
