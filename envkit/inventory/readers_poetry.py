"""``poetry.lock``: what ``poetry install`` installs on one platform, for the chosen groups and extras.

How Poetry decides (python-poetry/poetry ``src/poetry/installation/installer.py``,
``puzzle/transaction.py``, ``packages/locker.py``, ``utils/extras.py``):

- **lock-version 2.1** (Poetry 2): no re-resolution. A package is installed when one of its
  ``groups`` is chosen and its marker for those groups holds, the marker evaluated with the
  chosen extras as ``extra`` (``markers = "extra == \\"cuda\\""``; Poetry 2 writes per-group markers
  as a table; one extra at a time here, see :func:`_holds`). Anything else is not installed
  (optional packages: "Not required").
- **older locks** (Poetry 1.x, lock-version 1.1/2.0): Poetry re-resolves from pyproject.toml against
  the lock; from the lock alone the reading is its own: every non-optional package whose marker
  holds, plus the optional packages the chosen extras need (``[extras]`` and the dependency graph,
  as ``get_extra_package_names``). Groups exist there only as ``category = "main" | "dev"``
  (Poetry < 1.5); lock-version 2.0 without categories cannot choose groups.

Choosing, as ``poetry install`` does: ``--environment`` holds comma-separated items, an extra by
name (``-E cuda``), ``with=GROUP``, ``without=GROUP``, ``only=GROUP``. By default every group in
the lock is read: which groups pyproject.toml marks optional is not in the lock.

``[package.source]``: a ``legacy`` index (``https://download.pytorch.org/whl/cu126``: the torch
flavour and the mirror) is the package's URL; ``directory`` / ``file`` sources are path packages
(``develop = true``: editable), ``git`` sources are URL@commit. One name locked several times with
markers that hold together (PyPI torch beside the index's torch): Poetry installs each, in parallel,
so which one stays is not determined; the one from the project's own source is read, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envkit._pep503 import canonicalize_name
from envkit.inventory._collect import Collector
from envkit.inventory.platforms import marker_env, marker_holds

__all__ = ["PoetryChoice", "fits_platform", "poetry_choice", "read_poetry_lock_installed"]

_ITEM = re.compile(r"(?:(?P<op>with|without|only)=)?(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class PoetryChoice:
    """What ``--environment`` asked of a poetry.lock: extras and the group options of ``poetry install``."""

    extras: tuple[str, ...] = ()
    with_groups: frozenset[str] = frozenset()
    without: frozenset[str] = frozenset()
    only: frozenset[str] = frozenset()

    def groups(self, in_lock: set[str]) -> set[str]:
        """The groups installed: ``only`` if given (``with``/``without`` then ignored, as
        ``GroupCommand.activated_groups``), else the lock's groups with ``with``, less ``without``."""
        return set(self.only) if self.only else (in_lock | self.with_groups) - self.without

    @property
    def names_groups(self) -> bool:
        return bool(self.with_groups or self.without or self.only)


def poetry_choice(text: str | None, c: Collector) -> PoetryChoice:
    """Parse ``cuda,without=dev`` (``--environment``); a malformed item is a clear error."""
    extras: list[str] = []
    groups: dict[str, set[str]] = {"with": set(), "without": set(), "only": set()}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        match = _ITEM.fullmatch(item)
        if match is None:
            raise c.error(
                None,
                f"cannot read {item[:60]!r} as a poetry.lock choice",
                hint="--environment EXTRA[,with=GROUP][,without=GROUP][,only=GROUP] (as poetry install)",
            )
        name = canonicalize_name(match["name"])
        if match["op"]:
            groups[match["op"]].add(name)
        else:
            extras.append(name)
    return PoetryChoice(
        tuple(dict.fromkeys(extras)),
        frozenset(groups["with"]),
        frozenset(groups["without"]),
        frozenset(groups["only"]),
    )


def _lock_extras(data: Mapping[str, object]) -> dict[str, list[str]]:
    """``[extras]``: extra -> package names (``"torch"``, older locks ``"torch (>=2.0)"``)."""
    table = data.get("extras")
    if not isinstance(table, Mapping):
        return {}
    found: dict[str, list[str]] = {}
    for extra, names in table.items():
        if isinstance(extra, str) and isinstance(names, list):
            found[canonicalize_name(extra)] = [
                canonicalize_name(m[0]) for n in names if isinstance(n, str) and (m := _EXTRA_NAME.match(n))
            ]
    return found


def _groups_of(package: Mapping[str, object], new_lock: bool) -> set[str]:
    if new_lock:
        groups = package.get("groups")
        if isinstance(groups, list) and groups:
            return {canonicalize_name(str(g)) for g in groups}
        return {"main"}
    category = package.get("category")
    return {canonicalize_name(category) if isinstance(category, str) and category else "main"}


def _holds(marker: object, env: dict[str, str], extras: tuple[str, ...]) -> bool | None:
    """The marker evaluated once per chosen extra as ``extra`` (no extra chosen: ``""``): True when
    one holds (``extra != "cpu"`` with cpu chosen does not, as in Poetry).

    Poetry 2 evaluates once with ``extra`` the set of chosen extras (``extras=set(self._extras)``),
    so the two differ for a marker that names two chosen extras at once: ``extra == "cpu" and
    extra != "cuda"`` with both chosen holds here and not in Poetry (packaging >= 26.4 evaluates an
    ``extra`` set as Poetry does)."""
    if marker is None or marker == "":
        return True
    if not isinstance(marker, str):
        return None
    results = [marker_holds(marker, {**env, "extra": e}) for e in extras or ("",)]
    if any(r is True for r in results):
        return True
    return None if all(r is None for r in results) else False


def _dependency_names(package: Mapping[str, object]) -> list[str]:
    """The non-optional dependencies of a locked package (``[package.dependencies]``)."""
    deps = package.get("dependencies")
    if not isinstance(deps, Mapping):
        return []
    names: list[str] = []
    for name, spec in deps.items():
        specs = spec if isinstance(spec, list) else [spec]
        if any(not (isinstance(s, Mapping) and s.get("optional") is True) for s in specs):
            names.append(canonicalize_name(str(name)))
    return names


def _extra_closure(
    by_name: Mapping[str, list[Mapping[str, object]]],
    extras: Mapping[str, list[str]],
    chosen: tuple[str, ...],
) -> set[str]:
    """The packages the chosen extras need: the walk of ``get_extra_package_names``, less each package's
    own optional dependencies (Poetry walks ``package.requires``, which keeps them, so it can also
    install an optional package that only another extra asked for)."""
    seen: set[str] = set()
    stack = [name for extra in chosen for name in extras.get(extra, [])]
    while stack:
        name = stack.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        for package in by_name[name]:
            stack += _dependency_names(package)
    return seen


def _source_url(package: Mapping[str, object]) -> tuple[str | None, str | None]:
    """(URL to record, source type) of ``[package.source]``."""
    source = package.get("source")
    if not isinstance(source, Mapping):
        return None, None
    kind = str(source.get("type") or "")
    url = source.get("url")
    if not isinstance(url, str) or not url:
        return None, kind or None
    if kind == "git":
        commit = source.get("resolved_reference") or source.get("reference")
        return (f"{url}@{commit}" if isinstance(commit, str) and commit else url), kind
    return url, kind


def _own_markers(packages: list[Mapping[str, object]]) -> bool:
    return any("markers" in p or "marker" in p for p in packages)


def edge_reach(by_name: Mapping[str, list[Mapping[str, object]]], env: dict[str, str]) -> set[str]:
    """The packages of an old lock whose packages carry no marker of their own that Poetry installs here:
    all but those every dependency edge to which carries a marker (or ``python``) that fails here (issue
    34, class 19: ``pywin32``, reached only under ``platform_system == "Windows"``, is not installed on
    Linux). The lock does not say the project's own dependencies (a package depended on only by triton
    may be one: torch), so a package with an edge that holds, or without a marker on one, is kept."""
    incoming: dict[str, list[tuple[str, str | None]]] = {}
    for name, entries in by_name.items():
        for package in entries:
            deps = package.get("dependencies")
            for dep, spec in deps.items() if isinstance(deps, Mapping) else ():
                target = canonicalize_name(str(dep))
                for one in spec if isinstance(spec, list) else [spec]:
                    if isinstance(one, Mapping) and one.get("optional") is True:
                        continue  # an extra's edge: followed only when the extra is chosen
                    incoming.setdefault(target, []).append((name, _edge_marker(one)))
    gated = {
        target
        for target, edges in incoming.items()
        if all(marker is not None and marker_holds(marker, env) is False for _, marker in edges)
    }
    return set(by_name) - gated


def _edge_marker(spec: object) -> str | None:
    """An edge's marker: ``markers``, and ``python = "<3.0"`` (Poetry's constraint) as python_version."""
    if not isinstance(spec, Mapping):
        return None
    parts = [f"({spec['markers']})"] if isinstance(spec.get("markers"), str) else []
    python = spec.get("python")
    if isinstance(python, str):
        for clause in python.split(","):
            clause = clause.strip()
            op = next((o for o in ("<=", ">=", "!=", "==", "<", ">") if clause.startswith(o)), None)
            if op is not None and clause[len(op) :].strip()[:1].isdigit():
                parts.append(f'python_version {op} "{clause[len(op) :].strip()}"')
    return " and ".join(parts) or None


def read_poetry_lock_installed(data: Mapping[str, Any], c: Collector, platform: str, python: str) -> str:
    """Add what ``poetry install`` installs; returns the text for ``meta["selected"]`` after the platform."""
    packages = [p for p in data["package"] if isinstance(p, Mapping) and isinstance(p.get("name"), str)]
    for index, package in enumerate(data["package"]):
        if not (isinstance(package, Mapping) and isinstance(package.get("name"), str)):
            c.skip(None, f"[[package]] entry {index} has no name")
    metadata = data.get("metadata")
    lock_version = str(metadata.get("lock-version", "")) if isinstance(metadata, Mapping) else ""
    new_lock = _at_least(lock_version, "2.1")
    choice = poetry_choice(c.environment, c)
    extras = _lock_extras(data)
    in_lock = {g for p in packages for g in _groups_of(p, new_lock)}
    _check_choice(choice, extras, in_lock, new_lock, packages, lock_version, c)
    groups = choice.groups(in_lock)
    env = marker_env(platform, python)
    by_name: dict[str, list[Mapping[str, object]]] = {}
    for package in packages:
        by_name.setdefault(canonicalize_name(package["name"]), []).append(package)
    needed = set() if new_lock else _extra_closure(by_name, extras, choice.extras)
    reach = None if new_lock or _own_markers(packages) else edge_reach(by_name, env)
    installed: dict[str, list[Mapping[str, object]]] = {}
    optional_left = 0
    for package in packages:
        chosen = _groups_of(package, new_lock) & groups
        if not chosen:
            continue
        markers = package.get("markers", package.get("marker"))  # Poetry < 1.0 wrote "marker"
        if isinstance(markers, Mapping):  # Poetry 2: one marker per group; a group without one: any
            holds = any(_marker(c, markers.get(g), env, choice.extras, package["name"]) for g in chosen)
        else:
            holds = _marker(c, markers, env, choice.extras, package["name"])
        optional = package.get("optional") is True
        if optional and not new_lock and canonicalize_name(package["name"]) not in needed:
            holds = False
        if reach is not None and canonicalize_name(package["name"]) not in reach:
            holds = False  # an edge-marker lock: no dependency edge that holds here reaches it
        if not holds:
            optional_left += optional
            continue
        installed.setdefault(canonicalize_name(package["name"]), []).append(package)
    paths = 0
    old_files = metadata.get("files") if isinstance(metadata, Mapping) else None  # lock-version 1.x
    for name, entries in installed.items():
        fitting = [e for e in entries if _files_fit(e, old_files, platform, c)]
        package = _one_of(name, fitting or entries, len(entries), platform, c)
        url, kind = _source_url(package)
        paths += kind in ("directory", "file")
        c.add(package["name"], str(package.get("version") or ""), "pip", line=None, url=url)
    return _selected(choice, groups, in_lock, new_lock, extras, optional_left, paths)


def _marker(c: Collector, marker: object, env: dict[str, str], extras: tuple[str, ...], name: str) -> bool:
    result = _holds(marker, env, extras)
    if result is None:
        c.warnings.append(f"{c.path}: cannot evaluate the marker of {name} ({str(marker)[:120]!r}): kept")
        return True
    return result


def _files_fit(package: Mapping[str, object], old_files: object, platform: str, c: Collector) -> bool:
    """Poetry's chooser takes a wheel whose platform tag fits, else an sdist it builds: with neither
    among the locked files, ``poetry install`` fails on that platform ("Unable to find installation
    candidates"): a warning, and False. Only the platform is checked: the Python the markers assume
    may not be the one used. No files listed (path, git, URL packages): True."""
    files = package.get("files")
    if not isinstance(files, list) and isinstance(old_files, Mapping):
        files = old_files.get(package["name"])
    if not isinstance(files, list):
        return True
    names = [str(f.get("file")) for f in files if isinstance(f, Mapping) and f.get("file")]
    if not names or any(fits_platform(n, platform) for n in names):
        return True
    shown = sorted({_platform_tag(n) for n in names})
    only = ", ".join(shown[:4]) + ("..." if len(shown) > 4 else "")
    c.warnings.append(
        f"{c.path}: {package['name']} {package.get('version')}: none of its {len(names)} locked files is "
        f"for {platform} (only {only}): poetry install fails there"
    )
    return False


# conda subdir -> the wheel platform tags that install there (PEP 425/600; glibc Linux, 64-bit)
_WHEEL_PLATFORMS = {
    "linux-64": re.compile(r"(many)?linux(1|2010|2014|_\d+_\d+)?_x86_64"),
    "linux-aarch64": re.compile(r"(many)?linux(2014|_\d+_\d+)?_aarch64"),
    "linux-ppc64le": re.compile(r"(many)?linux(2014|_\d+_\d+)?_ppc64le"),
    "osx-64": re.compile(r"macosx_\d+_\d+_(x86_64|intel|universal2?|fat64)"),
    "osx-arm64": re.compile(r"macosx_\d+_\d+_(arm64|universal2)"),
    "win-64": re.compile(r"win_amd64"),
}


def fits_platform(filename: str, platform: str) -> bool:
    """Whether a locked file can install on ``platform``: an sdist, a pure wheel, a fitting platform tag."""
    if not filename.endswith(".whl"):
        return True  # an sdist (.tar.gz, .zip): poetry builds it
    tags = filename[:-4].split("-")[-1]
    pattern = _WHEEL_PLATFORMS.get(platform)
    return any(t == "any" or (pattern is not None and pattern.fullmatch(t)) for t in tags.split("."))


def _platform_tag(filename: str) -> str:
    return filename[:-4].split("-")[-1] if filename.endswith(".whl") else "sdist"


def _one_of(
    name: str, entries: list[Mapping[str, object]], locked: int, platform: str, c: Collector
) -> Mapping[str, Any]:
    """One entry of a name locked several times (``entries``: those that can install here): the one from
    the project's own source, else the last."""
    from_source = [e for e in entries if _source_url(e)[1] is not None]
    chosen = (from_source or entries)[-1]
    if locked == 1:
        return chosen
    c.warnings.append(
        f"{c.path}: {name} is locked {locked} times for {platform} and poetry install installs each, "
        f"in parallel: which stays is not determined; read {chosen.get('version')}"
        + (" (from the project's source)" if from_source else "")
        + (f" (the only one with a file for {platform})" if len(entries) == 1 else "")
    )
    return chosen


def _check_choice(
    choice: PoetryChoice,
    extras: Mapping[str, list[str]],
    in_lock: set[str],
    new_lock: bool,
    packages: list[Mapping[str, object]],
    lock_version: str,
    c: Collector,
) -> None:
    unknown = [e for e in choice.extras if e not in extras]
    if unknown:  # poetry install -E: "Extra [x] is not specified."
        raise c.error(
            None,
            f"no extra {unknown[0]!r} in this poetry.lock",
            hint=f"its extras: {', '.join(sorted(extras)) or 'none'} (--environment EXTRA[,EXTRA])",
        )
    categories = new_lock or any("category" in p for p in packages)
    if choice.names_groups and not categories:
        raise c.error(
            None,
            f"this poetry.lock (lock-version {lock_version or '?'}) does not record dependency groups",
            hint="groups can be chosen in locks of Poetry 2 (lock-version 2.1) and Poetry < 1.5 (category); "
            "regenerate the lock with Poetry 2, or choose extras only",
        )
    if choice.only and (choice.with_groups or choice.without):  # poetry install warns the same
        c.warnings.append(
            f"{c.path}: with= and without= are ignored along with only=, as poetry install does"
        )
    named = choice.with_groups | choice.without | choice.only
    missing = sorted(named - in_lock)
    if choice.names_groups and missing:  # poetry install: "Group(s) not found: x"
        raise c.error(
            None,
            f"no group {missing[0]!r} in this poetry.lock",
            hint=f"its groups: {', '.join(sorted(in_lock))} (--environment with=G,without=G,only=G)",
        )


def _selected(
    choice: PoetryChoice,
    groups: set[str],
    in_lock: set[str],
    new_lock: bool,
    extras: Mapping[str, list[str]],
    optional_left: int,
    paths: int,
) -> str:
    parts = [f"groups {', '.join(sorted(groups)) or 'none'} of {', '.join(sorted(in_lock))}"]
    if not choice.names_groups and len(in_lock) > 1:
        parts[0] += " (all: the lock does not say which are optional)"
    if choice.extras:
        parts.append(f"extras {', '.join(choice.extras)}")
    left = sorted(set(extras) - set(choice.extras))
    if left:
        parts.append(f"extras not read: {', '.join(left)} (choose with --environment EXTRA[,EXTRA])")
    if optional_left:
        parts.append(f"{optional_left} optional (extras) left out")
    if paths:
        parts.append(f"{paths} path packages")
    if not new_lock:
        parts.append("an older lock: Poetry would re-resolve it from pyproject.toml")
    return "; ".join(parts)


def _at_least(version: str, floor: str) -> bool:
    try:
        return Version(version) >= Version(floor)
    except InvalidVersion:
        return False
