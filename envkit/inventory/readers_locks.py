"""The lock files teams commit, read as inventories for one platform (and environment).

- ``pixi.lock`` (v4-v6): an environment's packages for one platform, conda and PyPI.
- ``uv.lock``: what ``uv sync`` installs by default on one platform: the project's
  dependencies and its ``dev`` group, following the dependency graph and its markers.
- ``pylock.toml`` (PEP 751): the packages whose ``marker`` holds on one platform.
- ``poetry.lock``: what ``poetry install`` installs: groups, extras, markers (:mod:`readers_poetry`).

The platform is a conda subdir (``linux-64``, ``osx-arm64``, ``win-64``): ``--platform``, else
this machine's. Markers are evaluated for that platform and a Python version (this
interpreter's when the lock allows it, else the lowest the lock allows). ``meta["selected"]``
says what was read.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envkit.inventory._collect import Collector, channel_from_url, split_conda_filename, vcs_version
from envkit.inventory.platforms import marker_env, marker_holds, this_platform
from envkit.inventory.readers_poetry import read_poetry_lock_installed

__all__ = ["read_pixi_lock", "read_poetry_lock", "read_pylock", "read_uv_lock"]

_PYTHONS = [f"3.{minor}" for minor in range(6, 16)]


def _python(requires: object, chosen: str | None = None) -> str:
    """The chosen ``major.minor`` (``--python``), else this interpreter's when ``requires`` allows it,
    else the lowest it allows."""
    if chosen is not None:
        return chosen
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not isinstance(requires, str) or not requires.strip():
        return here
    try:
        spec = SpecifierSet(requires)
    except InvalidSpecifier:
        return here
    if spec.contains(f"{here}.0", prereleases=True):
        return here
    return next((p for p in _PYTHONS if spec.contains(f"{p}.0", prereleases=True)), here)


def _record_python(c: Collector, requires: object, python: str) -> str:
    """``meta["python"]`` only when the lock admits one Python minor; else the minor used for its
    markers is ``python_assumed``: a lock for ">=3.10" is not a Python 3.11 environment, and saying
    so would make ``python-minor-differs`` report a difference nobody installed. Returns the text
    for ``selected``."""
    try:
        spec = SpecifierSet(requires) if isinstance(requires, str) and requires.strip() else None
    except InvalidSpecifier:
        spec = None
    minors = [p for p in _PYTHONS if spec is not None and spec.contains(f"{p}.0", prereleases=True)]
    if isinstance(requires, str) and requires.strip():
        c.meta["requires_python"] = requires.strip()
    c.meta["python_used"] = python
    if spec is not None and not spec.contains(f"{python}.0", prereleases=True):
        c.warnings.append(f"{c.path}: Python {python} is outside the lock's requires-python {requires}")
    if len(minors) == 1:
        c.meta["python"] = python
        return f"Python {python}"
    c.meta["python_assumed"] = python
    if c.python is not None:
        return f"Python {python} (chosen with --python; the lock allows {requires or 'any'})"
    allowed = (
        f"the lock allows {requires}"
        if isinstance(requires, str) and requires.strip()
        else "no Python stated"
    )
    return f"Python {python} assumed for markers ({allowed})"


def _platform(c: Collector, available: Sequence[str] | None = None) -> str:
    chosen = c.platform or this_platform()
    if available is not None and chosen not in available:
        if c.platform is None and "linux-64" in available:
            return "linux-64"
        raise c.error(
            None,
            f"no packages for platform {chosen!r} in this lock",
            hint=f"choose one with --platform: {', '.join(available)}",
        )
    return chosen


def _marker(c: Collector, marker: object, env: dict[str, str], what: str) -> bool:
    holds = marker_holds(marker if isinstance(marker, str) else None, env)
    if holds is None:
        c.warnings.append(f"{c.path}: {what}: cannot evaluate marker {marker!r}; kept")
        return True
    return holds


# ---------------------------------------------------------------- pixi.lock


def read_pixi_lock(data: Mapping[str, object], c: Collector) -> None:
    envs = data.get("environments")
    table = data.get("packages")
    if not isinstance(envs, Mapping) or not isinstance(table, list):
        raise c.error(None, "pixi.lock without 'environments' and 'packages'")
    env_name = c.environment or "default"
    env = envs.get(env_name)
    if not isinstance(env, Mapping):
        raise c.error(
            None, f"no environment {env_name!r}", hint=f"choose one with --environment: {', '.join(envs)}"
        )
    per_platform = env.get("packages")
    if not isinstance(per_platform, Mapping):
        raise c.error(None, f"environment {env_name!r} lists no packages")
    platform = _platform(c, sorted(per_platform))
    by_url: dict[str, Mapping[str, object]] = {}
    for entry in table:
        if isinstance(entry, Mapping):
            # v6: conda:/pypi:; v4-v5: url: or, for a path (editable) PyPI package, path:
            url = entry.get("conda") or entry.get("pypi") or entry.get("url") or entry.get("path")
            if isinstance(url, str):
                by_url.setdefault(_pixi_key(url), entry)
    for item in per_platform.get(platform) or []:
        if isinstance(item, Mapping):
            _pixi_package(item, by_url, c)
    c.meta["platform"] = platform
    c.meta["environment"] = env_name
    platforms = ", ".join(sorted(per_platform))
    c.meta["selected"] = f"environment {env_name} of {', '.join(envs)}; platform {platform} of {platforms}"


def _pixi_key(url: str) -> str:
    """A package's key in the table: a URL as it is, a local path normalized (``./``, ``.`` and ``./x/``
    name the same project directory in the environment list and the package table)."""
    if "://" in url:
        return url
    path = url.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") or "."


def _pixi_package(
    item: Mapping[str, object], by_url: Mapping[str, Mapping[str, object]], c: Collector
) -> None:
    if "conda" in item:
        url = str(item["conda"])
        entry = by_url.get(_pixi_key(url), {})
        parts = split_conda_filename(url.rsplit("/", 1)[-1])
        name = str(entry.get("name") or (parts[0] if parts else ""))
        version = str(entry.get("version") or (parts[1] if parts else ""))
        build = str(entry.get("build") or (parts[2] if parts else "")) or None
        channel = channel_from_url(url) if "://" in url else None
        c.add(name, version, "conda", line=None, build=build, channel=channel, url=url)
        return
    url = str(item.get("pypi", ""))
    entry = by_url.get(_pixi_key(url), {})
    if entry.get("name"):
        c.add(str(entry["name"]), str(entry.get("version") or ""), "pip", line=None, url=url)
    else:
        c.skip(None, f"PyPI package {url[:100]!r} is not in the lock's package table")


# ---------------------------------------------------------------- uv.lock


def read_uv_lock(data: Mapping[str, Any], c: Collector) -> None:
    """The default install (``uv sync``): workspace members' dependencies and dev groups."""
    packages = [
        p for p in data.get("package") or [] if isinstance(p, Mapping) and isinstance(p.get("name"), str)
    ]
    if not packages:
        raise c.error(None, "uv.lock without [[package]] entries")
    platform = _platform(c)
    python = _python(data.get("requires-python"), c.python)
    env = marker_env(platform, python)
    by_name: dict[str, list[Mapping[str, object]]] = {}
    for package in packages:
        by_name.setdefault(package["name"], []).append(package)
    roots = [p for p in packages if _uv_local(p)]
    extras = _uv_chosen_extras(roots, c)
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        package = todo.pop()
        if id(package) in seen:
            continue
        seen.add(id(package))
        for dep in _uv_edges(package, root=package in roots, extras=extras):
            if not isinstance(dep, Mapping) or not _marker(c, dep.get("marker"), env, str(dep.get("name"))):
                continue
            target = _uv_target(dep, by_name)
            if target is not None:
                todo.append(target)
                todo.extend(_uv_extras(target, dep, by_name, env, c))
    for package in packages:
        if id(package) in seen and not _uv_local(package):
            _uv_add(package, c)
        elif _uv_editable_member(package):
            _uv_add(package, c)  # uv sync installs workspace members and path dependencies editable
    c.meta["platform"] = platform
    shown = _record_python(c, data.get("requires-python"), python)
    offered = sorted({str(e) for r in roots for e in _uv_optional(r)})
    chosen = f" and extras {', '.join(extras)}" if extras else ""
    left = sorted(set(offered) - set(extras))
    note = f"; extras not read: {', '.join(left)} (choose with --environment EXTRA[,EXTRA])" if left else ""
    c.meta["selected"] = (
        f"platform {platform}, {shown}: the project's dependencies{chosen} and dev group{note}"
    )


def _uv_local(package: Mapping[str, object]) -> bool:
    source = package.get("source")
    return isinstance(source, Mapping) and bool({"editable", "virtual"} & set(source))


def _uv_editable_member(package: Mapping[str, object]) -> bool:
    """An editable package of the workspace other than the project itself (``editable = "."``):
    installed by ``uv sync``; a ``virtual`` one is not installed at all. Its version may be absent
    (a dynamic version)."""
    source = package.get("source")
    return isinstance(source, Mapping) and "editable" in source and source.get("editable") != "."


def _uv_optional(package: Mapping[str, Any]) -> Mapping[str, Any]:
    optional = package.get("optional-dependencies")
    return optional if isinstance(optional, Mapping) else {}


def _uv_chosen_extras(roots: list[Mapping[str, object]], c: Collector) -> tuple[str, ...]:
    """The workspace extras ``--environment`` names (``cu126``, ``cpu,viz``), as ``uv sync --extra``."""
    if not c.environment:
        return ()
    chosen = tuple(e.strip() for e in c.environment.split(",") if e.strip())
    offered = {str(e) for r in roots for e in _uv_optional(r)}
    unknown = [e for e in chosen if e not in offered]
    if unknown:
        raise c.error(
            None,
            f"no extra {unknown[0]!r} in this uv.lock",
            hint=f"its extras: {', '.join(sorted(offered)) or 'none'} (--environment EXTRA[,EXTRA])",
        )
    return chosen


def _uv_edges(package: Mapping[str, Any], *, root: bool, extras: tuple[str, ...] = ()) -> list[Any]:
    edges = list(package.get("dependencies") or [])
    groups = package.get("dev-dependencies")
    if root and isinstance(groups, Mapping):
        edges += list(groups.get("dev") or [])
    if root:
        optional = _uv_optional(package)
        for extra in extras:
            edges += list(optional.get(extra) or [])
    return edges


def _uv_target(
    dep: Mapping[str, object], by_name: Mapping[str, list[Mapping[str, object]]]
) -> Mapping[str, object] | None:
    candidates = by_name.get(str(dep.get("name")), [])
    if "version" in dep:
        candidates = [p for p in candidates if p.get("version") == dep["version"]] or candidates
    if "source" in dep:
        candidates = [p for p in candidates if p.get("source") == dep["source"]] or candidates
    return candidates[0] if candidates else None


def _uv_extras(
    target: Mapping[str, object],
    dep: Mapping[str, Any],
    by_name: Mapping[str, list[Mapping[str, object]]],
    env: dict[str, str],
    c: Collector,
) -> list[Mapping[str, object]]:
    """``{ name = "x", extra = ["y"] }``: x's optional dependencies for y come along."""
    optional = target.get("optional-dependencies")
    found = []
    for extra in dep.get("extra") or []:
        for sub in (optional or {}).get(extra, []) if isinstance(optional, Mapping) else []:
            if isinstance(sub, Mapping) and _marker(c, sub.get("marker"), env, str(sub.get("name"))):
                more = _uv_target(sub, by_name)
                if more is not None:
                    found.append(more)
    return found


def _uv_add(package: Mapping[str, Any], c: Collector) -> None:
    source = package.get("source")
    source = source if isinstance(source, Mapping) else {}
    version = str(package.get("version") or "")
    url = source.get("registry") or source.get("url") or source.get("path")
    git = source.get("git")
    if isinstance(git, str):
        url = git
        sha = git.rsplit("#", 1)[-1] if "#" in git else ""
        version = version or vcs_version(sha)
    c.add(package["name"], version, "pip", line=None, url=str(url) if url else None)


# ---------------------------------------------------------------- pylock.toml (PEP 751)


def read_pylock(data: Mapping[str, object], c: Collector) -> None:
    packages = data.get("packages")
    if not isinstance(packages, list):
        raise c.error(None, "pylock.toml without [[packages]]")
    platform = _platform(c)
    python = _python(data.get("requires-python"), c.python)
    env: dict[str, Any] = marker_env(platform, python)
    groups = data.get("default-groups")
    env["dependency_groups"] = frozenset(groups) if isinstance(groups, list) else frozenset()
    env["extras"] = frozenset()
    for index, package in enumerate(packages):
        if not isinstance(package, Mapping) or not isinstance(package.get("name"), str):
            c.skip(None, f"[[packages]] entry {index} has no name")
            continue
        if not _marker(c, package.get("marker"), env, package["name"]):
            continue
        version = str(package.get("version") or "")
        vcs = package.get("vcs")
        url = package.get("index")
        if isinstance(vcs, Mapping):
            url = vcs.get("url")
            commit = str(vcs.get("commit-id") or "")
            version = version or vcs_version(commit)
        c.add(package["name"], version, "pip", line=None, url=str(url) if url else None)
    c.meta["platform"] = platform
    shown = _record_python(c, data.get("requires-python"), python)
    c.meta["selected"] = f"platform {platform}, {shown}: packages whose marker holds"


# ---------------------------------------------------------------- poetry.lock


def read_poetry_lock(data: Mapping[str, object], c: Collector) -> None:
    """What ``poetry install`` installs on one platform (:mod:`envkit.inventory.readers_poetry`)."""
    packages = data.get("package")
    if not isinstance(packages, list):
        raise c.error(None, "poetry.lock without [[package]] entries")
    metadata = data.get("metadata")
    platform = _platform(c)
    requires = metadata.get("python-versions") if isinstance(metadata, Mapping) else None
    python = _python(requires, c.python)
    chosen = read_poetry_lock_installed(data, c, platform, python)
    c.meta["platform"] = platform
    shown = _record_python(c, requires, python)
    c.meta["selected"] = f"platform {platform}, {shown}: {chosen}"
