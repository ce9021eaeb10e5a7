"""A minimal, private inventory reader for the audit (stand-in).

The full readers (``envkit.inventory.read_inventory(path, format=None)`` and
``envkit.inventory.names.project_of(name, installer)``) are written in parallel;
:func:`load_inventory` uses them when present and falls back to this module,
which reads only what the audit needs: ``pip freeze`` / requirements / lock lines
(``name==version``), ``pip list --format=json``, ``conda env export`` YAML,
conda-lock.yml and ``@EXPLICIT`` conda locks. Delete it once the readers land.

conda packages are mapped to a PyPI project only when their build string says
they are Python packages (``py39h...``, ``pyhd8ed1ab_0``); C libraries such as
openssl, zstd or cudnn become ``conda:<name>`` and are never matched by name.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import yaml
from packaging.utils import canonicalize_name

from envkit.errors import InventoryError
from envkit.inventory.models import Installer, Inventory, Package

__all__ = ["load_inventory", "parse_pip_list_json", "project_of", "read_inventory"]

# conda names that differ from the PyPI project of the same software.
_CONDA_TO_PYPI = {
    "pytorch": "torch",
    "pytorch-cpu": "torch",
    "pytorch-gpu": "torch",
    "py-opencv": "opencv-python",
}
_PY_BUILD = re.compile(r"^py(\d|h|_)")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*===?\s*([^\s;\\#]+)")
_URL_REQ = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*@\s*\S+")
_EXPLICIT = re.compile(r"/([^/]+)-([^-/]+)-([^-/]+)\.(?:conda|tar\.bz2)(?:#.*)?$")


def project_of(name: str, installer: Installer, build: str | None = None) -> str:
    """PyPI canonical name when the package is a Python project, else ``conda:<name>``."""
    if installer == "pip":
        return str(canonicalize_name(name))
    lowered = name.lower()
    if lowered in _CONDA_TO_PYPI:
        return _CONDA_TO_PYPI[lowered]
    if build and _PY_BUILD.match(build):
        return str(canonicalize_name(name))
    return f"conda:{lowered}"


def _pip(name: str, version: str, line: int | None) -> Package:
    canonical = str(canonicalize_name(name))
    return Package(project=canonical, name=canonical, version=version, installer="pip", line=line)


def _conda(
    name: str, version: str, build: str | None, line: int | None, channel: str | None = None
) -> Package:
    return Package(
        project=project_of(name, "conda", build),
        name=name.lower(),
        version=version,
        installer="conda",
        build=build,
        channel=channel,
        line=line,
    )


def parse_pip_lines(text: str) -> list[Package]:
    """``name==version`` lines; URL and editable requirements come back with an empty version."""
    found: list[Package] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if (
            not line
            or line.startswith(("#", "--", "\\"))
            or (line.startswith("-") and not line.startswith("-e"))
        ):
            continue
        if line.startswith("-e"):
            egg = re.search(r"#egg=([A-Za-z0-9._-]+)", line)
            if egg:
                found.append(_pip(egg.group(1), "", number))
            continue
        if match := _PIN.match(line):
            found.append(_pip(match.group(1), match.group(2), number))
        elif match := _URL_REQ.match(line):
            found.append(_pip(match.group(1), "", number))
    return found


def parse_pip_list_json(text: str) -> list[Package]:
    try:
        rows = json.loads(text)
    except ValueError as e:
        raise InventoryError(
            f"pip list output is not JSON: {e}", hint="run `python -m pip list --format=json`"
        ) from e
    if not isinstance(rows, list):
        raise InventoryError(
            "pip list output is not a JSON list", hint="run `python -m pip list --format=json`"
        )
    return [
        _pip(str(r["name"]), str(r["version"]), None) for r in rows if isinstance(r, dict) and "name" in r
    ]


def _line_numbers(text: str) -> dict[str, int]:
    numbers: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        item = line.strip()
        if item.startswith("- "):
            numbers.setdefault(item[2:].strip(), number)
    return numbers


def _env_export(data: dict[str, Any], text: str) -> list[Package]:
    lines = _line_numbers(text)
    found: list[Package] = []
    for dep in data.get("dependencies") or []:
        if isinstance(dep, dict):
            for pip_line in dep.get("pip") or []:
                found += [
                    Package(p.project, p.name, p.version, "pip", line=lines.get(str(pip_line)))
                    for p in parse_pip_lines(str(pip_line))
                ]
            continue
        spec = str(dep)
        channel, _, spec = spec.rpartition("::")
        parts = spec.split("=")
        version = parts[1] if len(parts) > 1 else ""
        build = parts[2] if len(parts) > 2 else None
        found.append(_conda(parts[0], version, build, lines.get(str(dep)), channel or None))
    return found


def _conda_lock(data: dict[str, Any]) -> list[Package]:
    found = []
    for entry in data.get("package") or []:
        name, version = str(entry.get("name", "")), str(entry.get("version", ""))
        if entry.get("manager") == "pip":
            found.append(_pip(name, version, None))
        else:
            url = str(entry.get("url", ""))
            match = _EXPLICIT.search(url)
            found.append(_conda(name, version, match.group(3) if match else None, None))
    return found


def _explicit(text: str) -> list[Package]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _EXPLICIT.search(line.strip())
        if match and "://" in line:
            found.append(_conda(match.group(1), match.group(2), match.group(3), number))
    return found


def read_inventory(path: Path, format: str | None = None) -> Inventory:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InventoryError(f"{path}: cannot read: {e}", hint="check the path") from e
    fmt = format or _sniff(path, text)
    if fmt == "pip-list-json":
        packages = parse_pip_list_json(text)
    elif fmt == "conda-explicit":
        packages = _explicit(text)
    elif fmt in ("env-export", "conda-lock"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InventoryError(f"{path}: invalid YAML: {e}", hint="pass a `conda env export` file") from e
        packages = _env_export(data, text) if fmt == "env-export" else _conda_lock(data)
    else:
        packages = parse_pip_lines(text)
    return Inventory(label=path.stem, path=str(path), format=fmt, packages=tuple(packages))


def _sniff(path: Path, text: str) -> str:
    head = text.lstrip()[:2000]
    if head.startswith("["):
        return "pip-list-json"
    if "@EXPLICIT" in head:
        return "conda-explicit"
    if path.suffix in (".yml", ".yaml"):
        return "conda-lock" if re.search(r"^package:", text, re.MULTILINE) else "env-export"
    return "pip-freeze"


def load_inventory(path: Path) -> Inventory:
    """The project's reader when it exists (``envkit.inventory.read_inventory``), else this one."""
    module = importlib.import_module("envkit.inventory")
    reader = getattr(module, "read_inventory", None)
    if callable(reader):
        result = reader(path)
        if isinstance(result, Inventory):
            return result
    return read_inventory(path)
