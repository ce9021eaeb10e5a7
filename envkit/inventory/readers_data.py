"""Readers for structured inventories: JSON (conda/mamba list --json, pip list --format=json,
envkit probe reports and snapshots) and YAML (conda env export, conda-lock.yml).

Probe reports are read loosely, because the probe's schema evolves on its own: any JSON
object with ``"kind": "envkit-probe-report"`` or a ``fingerprint`` object. Packages come
from ``fingerprint.distributions`` (or a top-level ``distributions``), either a map
``{name: version}`` or a list of ``{"name", "version"}``; scalar fields of the
fingerprint (one level of nesting, dotted) become the inventory's ``meta``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envkit.inventory._collect import (
    EGG,
    REQUIREMENT,
    Collector,
    channel_from_url,
    requirement_version,
    split_conda_filename,
    version_from_url,
)
from envkit.inventory.platforms import this_platform

__all__ = [
    "read_conda_json",
    "read_conda_lock",
    "read_env_export",
    "read_pip_json",
    "read_probe_report",
    "read_readiness",
    "read_snapshot",
    "yaml_item_lines",
]

_DEP = re.compile(
    r"^(?:(?P<channel>[^:\s]+)::)?(?P<name>[^\s=<>!]+)(?:[=\s]+(?P<version>[^\s=]+))?(?:=(?P<build>\S+))?\Z"
)


def yaml_item_lines(text: str) -> dict[str, list[int]]:
    """Line numbers of ``- item`` entries, to point at the line of a bad YAML list item."""
    found: dict[str, list[int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("- "):
            found.setdefault(stripped[2:].strip().strip("'\""), []).append(number)
    return found


def _line(lines: dict[str, list[int]], item: str) -> int | None:
    numbers = lines.get(item)
    return numbers.pop(0) if numbers else None


def _record(c: Collector, entry: Any, index: int) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise c.error(None, f"entry {index} is not an object with a 'name'")
    if not isinstance(entry.get("version"), str | int | float):
        raise c.error(None, f"entry {index} ({entry['name']}) has no version")
    return entry


def read_conda_json(data: Any, c: Collector) -> None:
    """``conda list --json`` / ``micromamba list --json`` (also micromamba 2.0's mangled channels)."""
    for index, raw in enumerate(data):
        entry = _record(c, raw, index)
        channel = str(entry.get("channel") or "") or None
        platform = entry.get("platform")
        if channel and isinstance(platform, str) and f"/{platform}/" in channel:
            channel = channel.split(f"/{platform}/", 1)[0]  # micromamba 2.0.0 (mamba-org/mamba#3480)
        build = entry.get("build_string") or entry.get("build")
        c.add(entry["name"], str(entry["version"]), "conda", line=None, build=build, channel=channel)
        if isinstance(platform, str) and platform != "noarch":
            c.meta.setdefault("platform", platform)


def read_pip_json(data: Any, c: Collector) -> None:
    """``pip list --format=json``."""
    for index, raw in enumerate(data):
        entry = _record(c, raw, index)
        c.add(
            entry["name"], str(entry["version"]), "pip", line=None, url=entry.get("editable_project_location")
        )


def _flatten(data: Mapping[str, object], prefix: str = "", depth: int = 0) -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in data.items():
        if key == "distributions":
            continue
        if isinstance(value, bool):
            flat[f"{prefix}{key}"] = str(value).lower()
        elif isinstance(value, str | int | float):
            flat[f"{prefix}{key}"] = str(value)
        elif isinstance(value, Mapping) and depth == 0:
            flat.update(_flatten(value, f"{prefix}{key}.", depth + 1))
    return flat


def read_probe_report(data: Mapping[str, Any], c: Collector) -> None:
    fingerprint = data.get("fingerprint")
    fingerprint = fingerprint if isinstance(fingerprint, Mapping) else data
    dists = fingerprint.get("distributions", data.get("distributions"))
    if isinstance(dists, Mapping):
        items = [(str(k), str(v)) for k, v in dists.items()]
    elif isinstance(dists, list):
        items = [(str(_record(c, d, i)["name"]), str(d["version"])) for i, d in enumerate(dists)]
    else:
        raise c.error(None, "probe report without fingerprint.distributions", hint="rerun `envkit probe`")
    for name, version in items:
        c.add(name, version, "pip", line=None)
    c.meta.update(_flatten(fingerprint))
    for key in ("host", "hostname"):
        if isinstance(data.get(key), str):
            c.meta.setdefault("host", data[key])


_FRAMEWORK_DIST = {"torch": "torch", "paddle": "paddlepaddle-gpu"}


def read_readiness(data: Mapping[str, object], c: Collector) -> None:
    """``envkit check --json``: the frameworks (as packages), the CUDA libraries they load and the GPU
    code of each library (host facts ``loaded`` and ``gpu_code``, compared by ``envkit diff``)."""
    result = data.get("result")
    summary = result.get("summary") if isinstance(result, Mapping) else None
    if not isinstance(summary, Mapping) or not isinstance(summary.get("frameworks"), Mapping):
        raise c.error(
            None, "envkit check output without result.summary.frameworks", hint="rerun `envkit check --json`"
        )
    loaded: list[str] = []
    for name, fw in sorted(summary["frameworks"].items()):
        if not isinstance(fw, Mapping):
            continue
        if isinstance(fw.get("version"), str):
            c.add(_FRAMEWORK_DIST.get(str(name), str(name)), fw["version"].split("+")[0], "pip", line=None)
        raw = fw.get("loaded")
        libs: Mapping[str, object] = raw if isinstance(raw, Mapping) else {}
        loaded.extend(f"{lib} {v}" for lib, v in sorted(libs.items()) if isinstance(v, str | int))
        for key, fact in (("cuda_runtime", "cuda_runtime"), ("cudnn", "cudnn")):
            value = fw.get(key) if key == "cuda_runtime" else libs.get("cudnn")
            if isinstance(value, str):
                c.meta.setdefault(fact, value)
    code = summary.get("gpu_code")
    shown = []
    for lib, entry in sorted(code.items()) if isinstance(code, Mapping) else ():
        if isinstance(entry, Mapping):
            where = f"result.summary.gpu_code.{str(lib)[:80]!r}"
            sass = ",".join(_architectures(c, entry.get("sass", []), f"{where}.sass"))
            ptx = ",".join(_architectures(c, entry.get("ptx", []), f"{where}.ptx")) or "no PTX"
            shown.append(f"{lib}: {sass} | {ptx}")
    c.meta["loaded"] = "; ".join(loaded) or "none"
    c.meta["gpu_code"] = "; ".join(shown) or "none"
    if isinstance(result, Mapping) and isinstance(result.get("where"), str):
        c.meta["host"] = result["where"]


def _architectures(c: Collector, value: object, where: str) -> list[str]:
    """A ``sass`` or ``ptx`` list of ``envkit check --json``: architectures (``sm_90``, ``90``) only."""
    if not isinstance(value, list) or not all(
        isinstance(a, str | int) and not isinstance(a, bool) for a in value
    ):
        found = type(value).__name__ if not isinstance(value, list) else "a list holding other values"
        raise c.error(
            None,
            f"{where}: expected a list of GPU architectures (sm_90, ...), found {found}",
            hint="rerun `envkit check --json` (the file was edited or is not envkit's)",
        )
    return [str(a) for a in value]


def read_snapshot(data: Mapping[str, Any], c: Collector) -> None:
    """An ``envkit snapshot`` file: conda records (when taken in a conda env) + pip's view."""
    conda = data.get("conda")
    conda_projects: set[str] = set()
    if isinstance(conda, list):
        read_conda_json(conda, c)
        conda_projects = {p.project for p in c.packages}
    pip = data.get("pip")
    if not isinstance(pip, list):
        raise c.error(None, "snapshot without a 'pip' list", hint="retake it with `envkit snapshot`")
    extra = Collector(c.path, c.format)
    read_pip_json(pip, extra)
    c.packages.extend(p for p in extra.packages if p.project not in conda_projects)
    for key in ("host", "python", "platform", "machine", "prefix"):
        if isinstance(data.get(key), str):
            c.meta[key] = data[key]
    facts = data.get("facts")
    if isinstance(facts, Mapping):  # os, libc, cpu, driver, gpu: compared as host findings
        c.meta.update({f"facts.{k}": str(v) for k, v in facts.items() if isinstance(v, str | int | float)})


def read_env_export(data: Mapping[str, Any], text: str, c: Collector) -> None:
    """``conda env export`` (with/without builds, ``pip:`` section, ``prefix:``)."""
    deps = data.get("dependencies")
    if not isinstance(deps, list):
        raise c.error(None, "'dependencies' is not a list")
    lines = yaml_item_lines(text)
    for dep in deps:
        if isinstance(dep, Mapping) and isinstance(dep.get("pip"), list):
            for req in dep["pip"]:
                _env_pip(str(req), _line(lines, str(req)), c)
            continue
        if not isinstance(dep, str):
            raise c.error(None, f"unexpected dependency entry {dep!r}")
        line = _line(lines, dep)
        match = _DEP.match(dep.strip())
        if not match:
            raise c.error(line, f"expected 'name=version=build', got {dep[:80]!r}")
        c.add(
            match["name"],
            match["version"] or "",
            "conda",
            line=line,
            build=match["build"],
            channel=match["channel"],
        )
    for key in ("name", "prefix"):
        if isinstance(data.get(key), str):
            c.meta[key] = data[key]


def _env_pip(req: str, line: int | None, c: Collector) -> None:
    if req.startswith("-e "):
        egg = EGG.search(req)
        if egg:
            c.add(egg[1], version_from_url(req), "pip", line=line, url=req[3:])
        return
    if req.startswith("-"):
        return
    match = REQUIREMENT.match(req)
    if not match:
        raise c.error(line, f"not a pip requirement: {req[:80]!r}")
    c.add(match["name"], requirement_version(match), "pip", line=line, url=match["url"])


def read_conda_lock(data: Mapping[str, object], c: Collector) -> None:
    """``conda-lock.yml`` (v1): one platform's packages (``c.platform``, else this machine's,
    else linux-64, else the first); ``meta["selected"]`` names it among the lock's platforms.

    Parsed by the lock stage's own reader (:func:`envkit.lock.lockfile.contents_from_data`), so
    the inventory, the audit and ``envkit lock`` agree on what a conda-lock file says.
    """
    from envkit.errors import LockError
    from envkit.lock.lockfile import contents_from_data

    try:
        contents = contents_from_data(data, c.path)
    except LockError as e:
        raise c.error(None, e.message.removeprefix(f"{c.path}: ")) from e
    platforms = sorted({*contents.conda, *contents.pip})
    chosen = _conda_lock_platform(c, platforms)
    c.meta["platform"] = chosen or ""
    if len(platforms) > 1:
        c.meta["selected"] = f"platform {chosen} of {', '.join(platforms)}"
    for pip in contents.pip.get(chosen or "", ()):
        c.add(pip.name, pip.version, "pip", line=None, url=pip.url or None)
    for conda in contents.conda.get(chosen or "", ()):
        parts = split_conda_filename(conda.url.rsplit("/", 1)[-1]) if conda.url else None
        c.add(
            conda.name,
            conda.version,
            "conda",
            line=None,
            build=conda.build or (parts[2] if parts else None),
            channel=channel_from_url(conda.url) if conda.url else None,
            url=conda.url or None,
        )


def _conda_lock_platform(c: Collector, platforms: list[str]) -> str | None:
    if c.platform is not None:
        if c.platform not in platforms:
            raise c.error(
                None,
                f"no packages for platform {c.platform!r} in this lock",
                hint=f"choose one with --platform: {', '.join(platforms)}",
            )
        return c.platform
    for candidate in (this_platform(), "linux-64"):
        if candidate in platforms:
            return candidate
    return platforms[0] if platforms else None
