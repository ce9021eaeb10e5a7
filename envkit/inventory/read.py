"""Detect an inventory's format from its content and read it into an :class:`Inventory`."""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envkit._io import TooLarge, read_text_bounded
from envkit.errors import EnvkitError, InventoryError
from envkit.inventory import readers_table as rp
from envkit.inventory import readers_text as rt
from envkit.inventory._collect import REQUIREMENT, Collector
from envkit.inventory.collect_env import SECTION, read_collect_env
from envkit.inventory.models import Inventory, Package
from envkit.inventory.not_inventory import instead, not_an_inventory

__all__ = ["FORMATS", "MAX_INVENTORY_BYTES", "detect_format", "parse_inventory", "read_inventory"]

# The largest real listing beside the project is 120 KB; a 2,000-package conda-lock.yml is ~3 MB.
MAX_INVENTORY_BYTES = 64 * 1024 * 1024
_JSON_ERRORS = (ValueError, RecursionError)  # also a 5,000-digit number, nesting beyond the recursion limit

FORMATS: dict[str, str] = {
    "conda-list": "conda list (classic or wide columns; pypi rows; prompt/comment lines)",
    "mamba-list": "mamba list / micromamba list table",
    "conda-export": "conda list --export (name=version=build)",
    "conda-json": "conda list --json / micromamba list --json",
    "conda-explicit": "conda list --explicit (@EXPLICIT URLs, #md5 / #sha256)",
    "env-export": "conda env export (with or without builds, pip: section, prefix:)",
    "pip-freeze": "pip freeze (==, name @ url, -e git+...#egg=, editable comments)",
    "requirements-lock": "requirements.lock (pins with --hash lines)",
    "pip-json": "pip list --format=json",
    "pip-list": "pip list (the Package/Version columns, with or without Build and Editable location)",
    "collect-env": "python -m torch.utils.collect_env output",
    "probe-report": "envkit probe report (JSON with fingerprint.distributions)",
    "snapshot": "envkit snapshot (JSON)",
    "gpu-readiness": "envkit check --json (the CUDA libraries a framework loads, the GPU code it carries)",
    "conda-lock": "conda-lock.yml (v1; one platform: --platform, default this machine's)",
    "pixi-lock": "pixi.lock (one environment and platform: --environment, --platform)",
    "uv-lock": "uv.lock (what `uv sync` installs on one platform)",
    "pylock": "pylock.toml (PEP 751; packages whose marker holds on one platform)",
    "poetry-lock": "poetry.lock (what `poetry install` installs: --environment EXTRA,with=GROUP,...)",
    "cyclonedx": "CycloneDX JSON SBOM (syft, trivy, pip-audit, envkit build): pypi and conda purls",
    "spdx": "SPDX 2.x JSON SBOM (syft, trivy): pypi and conda purls",
}

_YAML_KEY = re.compile(r"^(name|channels|dependencies|prefix|version|metadata|package|variables):")
_EXPORT_LINE = re.compile(r"^[A-Za-z0-9_][^\s=]*=[^\s=]+(=[^\s=]+)?\Z")


def _first_data_line(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped
    return ""


def _detect_json(data: Any) -> str | None:
    if isinstance(data, Mapping):
        from envkit.inventory import readers_sbom as rs

        if rs.is_cyclonedx(data):
            return "cyclonedx"
        if rs.is_spdx(data):
            return "spdx"
        if data.get("kind") == "envkit-snapshot":
            return "snapshot"
        if data.get("command") == "check" and isinstance(data.get("result"), Mapping):
            return "gpu-readiness"
        if data.get("kind") == "envkit-probe-report" or "fingerprint" in data or "distributions" in data:
            return "probe-report"
        return None
    if isinstance(data, list):
        first = data[0] if data else {}
        if not isinstance(first, Mapping):
            return None
        conda_keys = {"build_string", "channel", "dist_name", "base_url", "platform", "build_number"}
        return "conda-json" if conda_keys & set(first) else "pip-json"
    return None


def detect_format(text: str) -> str | None:
    """The format of ``text`` judged from its content, or None when unrecognized."""
    body = text.lstrip("\ufeff")
    head = body.lstrip()
    lines = [line.strip() for line in body.splitlines()]
    # Before JSON: a paste of collect_env's package rows starts with "[pip3] ...".
    maybe_rows = "[pip" in body or "[conda]" in body
    if (maybe_rows and any(SECTION.match(line) for line in lines)) or (
        "Collecting environment information..." in lines
        or ("PyTorch version:" in body and any(line.startswith("PyTorch version:") for line in lines))
        or _collect_env_keys(lines)
    ):
        return "collect-env"
    if head.startswith("{") or (head.startswith("[") and not _toml_table(head)):
        try:
            return _detect_json(json.loads(body))
        except _JSON_ERRORS:
            partial = _partial_json_list(body)
            if partial is not None:
                return _detect_json(partial[0])
            return "conda-json" if head.startswith("[") else "probe-report"
    if _json_scalar(head):
        return None  # `null`, `42`, `"text"`: JSON, but not a listing
    if "@EXPLICIT" in lines:
        return "conda-explicit"
    return _detect_text(body, lines)


def _collect_env_keys(lines: list[str]) -> bool:
    """A collect_env pasted without its first lines: two of its own keys at line starts."""
    keys = (
        "Python platform:",
        "Is CUDA available:",
        "GPU models and configuration:",
        "CUDA runtime version:",
    )
    return sum(any(line.startswith(k) for line in lines[:200]) for k in keys) >= 2


def _toml_table(head: str) -> bool:
    """``[[package]]`` / ``[metadata]``: a TOML table header, not a JSON list."""
    return re.match(r"\[\[?[A-Za-z_][\w.-]*\]", head) is not None


def _mostly_pins(lines: list[str]) -> bool:
    """Lines that are mostly ``name==version`` / ``name @ url`` pins, under a few lines of prose."""
    rows = [line for line in lines if line and not line.startswith("#")]
    pins = [line for line in rows if ("==" in line or " @ " in line) and REQUIREMENT.match(line)]
    return len(rows) >= 3 and len(pins) >= 0.7 * len(rows)


def _detect_toml(lines: list[str]) -> str | None:
    """uv.lock, pylock.toml and poetry.lock by their own keys."""
    if "[[packages]]" in lines and any(line.startswith("lock-version =") for line in lines):
        return "pylock"
    if "[[package]]" not in lines:
        return None
    if "[metadata]" in lines or any(
        line.startswith("# This file is automatically @generated by Poetry") for line in lines
    ):
        return "poetry-lock"
    if any(line.startswith(("version = ", "revision = ", "requires-python = ")) for line in lines[:10]):
        return "uv-lock"
    return None


def _detect_text(body: str, lines: list[str]) -> str | None:
    toml = _detect_toml(lines)
    if toml is not None:
        return toml
    first = _first_data_line(body)
    if _YAML_KEY.match(first) or first.startswith("environments:"):
        # by the top-level keys: parsing a 3 MB lock twice (detect, then read) costs seconds
        keys = {line.split(":", 1)[0] for line in body.splitlines() if line[:1].isalpha() and ":" in line}
        if {"package", "metadata"} <= keys:
            return "conda-lock"
        if {"environments", "packages"} <= keys:
            return "pixi-lock"
        return "env-export"
    if ("# packages in environment at" in body or "List of packages in environment:" in body) and any(
        line.startswith(("# packages in environment at", "List of packages in environment:"))
        for line in lines
    ):
        return "mamba-list" if any(line.startswith("List of packages") for line in lines) else "conda-list"
    if not first:
        return None
    if rp.is_pip_list(lines):
        return "pip-list"
    if "==" in first or " @ " in first or first.startswith("-") or _mostly_pins(lines):
        return "pip-freeze"
    if re.fullmatch(r"[A-Za-z0-9._-]+", first):
        # a bare name is a pip freeze line only among real pins: one word alone is not a listing
        pinned = any("==" in line or " @ " in line for line in lines)
        return "pip-freeze" if pinned else None
    if _EXPORT_LINE.match(first):
        return "conda-export"
    if len(first.split()) >= 2 and first.split()[1][:1].isdigit():
        return "conda-list"  # `name 1.2.3 ...`: a version starts with a digit; prose does not
    return None


def _partial_json_list(text: str) -> tuple[list[Any], int] | None:
    """The complete entries of a JSON list cut off part-way, and the line where it breaks."""
    body = text.lstrip("\ufeff").lstrip()
    if not body.startswith("["):
        return None
    decoder = json.JSONDecoder()
    entries: list[Any] = []
    index = 1
    while True:
        while index < len(body) and body[index] in " \t\r\n,":
            index += 1
        if index >= len(body) or body[index] == "]":
            break
        try:
            entry, index = decoder.raw_decode(body, index)
        except _JSON_ERRORS:
            break
        entries.append(entry)
    if not entries:
        return None
    offset = len(text) - len(body)
    return entries, text.count("\n", 0, offset + index) + 1


def _json_scalar(head: str) -> bool:
    if len(head) > 4096 or "\n" in head.strip():
        return False
    try:
        json.loads(head)
    except _JSON_ERRORS:
        return False
    return True


def _load_json(text: str, c: Collector) -> Any:
    try:
        return json.loads(text.lstrip("\ufeff"))
    except RecursionError as e:
        raise c.error(None, "invalid JSON: nested too deeply") from e
    except json.JSONDecodeError as e:
        partial = _partial_json_list(text)
        if partial is None:
            raise c.error(e.lineno, f"invalid JSON: {e.msg}") from e
        entries, line = partial
        c.warnings.append(
            f"{c.path}:{line}: the JSON list is cut off here ({e.msg}); "
            f"read its {len(entries)} complete entries"
        )
        return entries
    except ValueError as e:  # integers beyond Python's 4,300-digit limit
        raise c.error(None, f"invalid JSON: {(str(e).splitlines() or ['?'])[0]}") from e


def _load_yaml(text: str, c: Collector) -> Mapping[str, object]:
    from envkit._yaml import YamlProblem, load_bounded_fast

    try:
        data = load_bounded_fast(text, max_bytes=MAX_INVENTORY_BYTES)
    except YamlProblem as e:
        raise c.error(e.line, f"invalid YAML: {e.message}") from e
    if not isinstance(data, Mapping):
        raise c.error(1, "expected a YAML mapping")
    return data


def _load_toml(text: str, c: Collector) -> Mapping[str, object]:
    from envkit import _toml

    try:
        data: dict[str, object] = _toml.loads(text)
    except _toml.TOMLDecodeError as e:
        line = re.search(r"line (\d+)", str(e))
        raise c.error(int(line[1]) if line else None, f"invalid TOML: {str(e).split(' (at')[0]}") from e
    except RecursionError as e:  # arrays or inline tables nested thousands deep
        raise c.error(None, "invalid TOML: nested too deeply") from e
    except ValueError as e:  # integers beyond Python's 4,300-digit limit
        raise c.error(None, "invalid TOML: an integer of more than 4,300 digits") from e
    return data


def _json_list(text: str, c: Collector) -> list[Any]:
    data = _load_json(text, c)
    if not isinstance(data, list):
        raise c.error(1, "expected a JSON list")
    return data


def _json_obj(text: str, c: Collector) -> Mapping[str, object]:
    data = _load_json(text, c)
    if not isinstance(data, Mapping):
        raise c.error(1, "expected a JSON object")
    return data


# The reader modules of the JSON, YAML and TOML formats (and tomllib) load only when such a listing
# is read: a pip freeze or a conda list needs only readers_text (tests/unit/audit/test_audit_startup.py).
def _lazy(
    module: str, reader: str, load: Callable[[str, Collector], Any]
) -> Callable[[str, Collector], None]:
    """``envkit.inventory.MODULE.READER(load(text), collector)``, the module imported at the first call."""

    def read(text: str, c: Collector) -> None:
        getattr(importlib.import_module(f"envkit.inventory.{module}"), reader)(load(text, c), c)

    return read


def _env_export(t: str, c: Collector) -> None:
    from envkit.inventory import readers_data

    readers_data.read_env_export(_load_yaml(t, c), t, c)  # the text too: the line of each item


_READERS: dict[str, Callable[[str, Collector], None]] = {
    "conda-list": rt.read_conda_list,
    "mamba-list": rt.read_conda_list,
    "conda-export": rt.read_conda_export,
    "conda-explicit": rt.read_conda_explicit,
    "pip-freeze": rt.read_requirements,
    "requirements-lock": rt.read_requirements,
    "collect-env": read_collect_env,
    "conda-json": _lazy("readers_data", "read_conda_json", _json_list),
    "pip-json": _lazy("readers_data", "read_pip_json", _json_list),
    "pip-list": rp.read_pip_list,
    "probe-report": _lazy("readers_data", "read_probe_report", _json_obj),
    "gpu-readiness": _lazy("readers_data", "read_readiness", _json_obj),
    "snapshot": _lazy("readers_data", "read_snapshot", _json_obj),
    "env-export": _env_export,
    "conda-lock": _lazy("readers_data", "read_conda_lock", _load_yaml),
    "pixi-lock": _lazy("readers_locks", "read_pixi_lock", _load_yaml),
    "uv-lock": _lazy("readers_locks", "read_uv_lock", _load_toml),
    "pylock": _lazy("readers_locks", "read_pylock", _load_toml),
    "poetry-lock": _lazy("readers_locks", "read_poetry_lock", _load_toml),
    "cyclonedx": _lazy("readers_sbom", "read_cyclonedx", _json_obj),
    "spdx": _lazy("readers_sbom", "read_spdx", _json_obj),
}


def parse_inventory(
    text: str,
    *,
    path: str,
    label: str,
    format: str | None = None,
    platform: str | None = None,
    environment: str | None = None,
    python: str | None = None,
) -> Inventory:
    """Read an inventory from text; ``format`` forces a reader (see :data:`FORMATS`).

    ``platform`` (a conda subdir) and ``environment`` choose what to read from a lock that has
    several (conda-lock.yml, pixi.lock, uv.lock, pylock.toml, poetry.lock); default: this
    machine's platform, the ``default`` environment. ``python`` (``3.10``) is the Python a lock's
    markers are evaluated for when the lock allows several (default: this interpreter's when allowed,
    else the lowest allowed); the inventory says which in ``meta["python_used"]``.
    """
    text = text.removeprefix("\ufeff")  # a UTF-8 BOM (Windows editors, PowerShell redirection)
    if len(text) > MAX_INVENTORY_BYTES:
        raise InventoryError(
            f"{path}: larger than {MAX_INVENTORY_BYTES} bytes: not an environment listing",
            hint="check the path",
        )
    if python is not None and not re.fullmatch(r"[23]\.\d{1,2}", python):
        raise InventoryError(
            f"--python {python!r} is not a Python version", hint="give major.minor, e.g. 3.11"
        )
    if format is not None and format not in _READERS:
        raise InventoryError(f"unknown inventory format {format!r}", hint=f"use one of: {', '.join(FORMATS)}")
    if len(text) <= _SAME_TEXT_BYTES:
        try:
            chosen, packages, meta = _read_once(text, format, platform, environment, python)
        except _Uncached:
            pass  # warnings or an error name the file: read it under its own path below
        else:
            return Inventory(label, path, chosen, packages, dict(meta))
    return _read(
        text, path=path, label=label, format=format, platform=platform, environment=environment, python=python
    )


# A fleet's listings repeat: one image, many hosts. A text read cleanly once gives the same packages.
_SAME_TEXT_BYTES = 256 * 1024
_NO_PATH = "\0"


class _Uncached(Exception):
    pass


@functools.lru_cache(maxsize=64)
def _read_once(
    text: str, format: str | None, platform: str | None, environment: str | None, python: str | None
) -> tuple[str, tuple[Package, ...], tuple[tuple[str, str], ...]]:
    """``_read``'s packages for ``text``, when it reads without a warning (they name no file)."""
    try:
        inv = _read(
            text,
            path=_NO_PATH,
            label="",
            format=format,
            platform=platform,
            environment=environment,
            python=python,
        )
    except EnvkitError as e:  # the message would name no file: the caller reads it again
        raise _Uncached from e
    if inv.warnings:
        raise _Uncached
    return inv.format, inv.packages, tuple(inv.meta.items())


def _read(
    text: str,
    *,
    path: str,
    label: str,
    format: str | None,
    platform: str | None,
    environment: str | None,
    python: str | None = None,
) -> Inventory:
    if format is None:
        what = not_an_inventory(text)
        if what is not None:
            other = instead(what)
            raise InventoryError(
                f"{path}: this is {what}"
                + ("" if "not a package listing" in what else ", not a list of packages"),
                hint=(f"{other}; " if other else "") + f"envkit reads: {'; '.join(FORMATS.values())}",
            )
    chosen = format or detect_format(text)
    if chosen is None:
        raise InventoryError(
            f"{path}:1: not a recognized environment listing",
            hint=f"pass --format with one of: {', '.join(FORMATS)}",
        )
    collector = Collector(path, chosen, platform=platform, environment=environment, python=python)
    _READERS[chosen](text, collector)
    facts = {"torch", "python", "os", "platform", "gpu", "driver", "cuda_runtime"} & set(collector.meta)
    return collector.inventory(label, facts_only=chosen == "collect-env" and bool(facts))


def read_inventory(
    path: str | Path,
    format: str | None = None,
    *,
    label: str | None = None,
    platform: str | None = None,
    environment: str | None = None,
    python: str | None = None,
) -> Inventory:
    """Read the inventory file at ``path`` (format detected from content unless given)."""
    file = Path(path)
    try:
        text = read_text_bounded(file, MAX_INVENTORY_BYTES)
    except TooLarge as e:
        raise InventoryError(
            f"{file}: larger than {e.limit} bytes: not an environment listing", hint="check the path"
        ) from e
    except UnicodeDecodeError as e:
        raise InventoryError(f"{file}: not UTF-8 text (byte {e.start})", hint="is this a binary file?") from e
    except OSError as e:
        raise InventoryError(f"{file}: cannot read: {e.strerror}", hint="check the path") from e
    return parse_inventory(
        text,
        path=str(file),
        label=label or file.stem,
        format=format,
        platform=platform,
        environment=environment,
        python=python,
    )
