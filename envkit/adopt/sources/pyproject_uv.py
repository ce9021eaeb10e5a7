"""A ``pyproject.toml`` (PEP 621 ``[project]``, with uv's ``[tool.uv]`` tables) -> pins.

Read as ``uv sync`` installs it on Linux: ``[project] dependencies`` (PEP 508; a platform marker
that cannot hold on Linux sets a line aside), ``requires-python`` when it pins one minor
(``==3.11.*``, ``~=3.11.0``; a range is left to the plan), ``[tool.uv.sources]`` entries that name
an ``index`` (the entry whose ``marker`` holds on Linux and that needs no ``--extra``), resolved
through ``[[tool.uv.index]]`` to its URL; an index marked ``default = true`` replaces PyPI, one not
``explicit`` is searched for every package. Not read, each reported: ``[project.optional-dependencies]``
(``uv sync`` installs none without ``--extra``), ``[dependency-groups]``, and ``git``/``path``/
``url``/``workspace`` sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.markers import InvalidMarker, Marker

from envkit._pep503 import canonicalize_name
from envkit._toml import TOMLDecodeError, loads
from envkit.adopt.evidence import AdoptError, Collected, shown_item
from envkit.adopt.sources.reader import Read, SourceText
from envkit.adopt.sources.requirements import add_requirement, marker_holds

__all__ = ["is_pep621_project", "read_pep621_project", "read_pyproject_uv"]


def is_pep621_project(name: str, text: str) -> bool:
    """A ``pyproject.toml`` that is not a pixi manifest (:func:`~envkit.adopt.sources.is_pixi_manifest`
    is asked first): read here, or refused here, never sniffed as a listing."""
    return name == "pyproject.toml"


def _table(data: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def read_pyproject_uv(source: SourceText) -> Read:
    """A ``pyproject.toml`` ``[project]`` as ``uv sync`` installs it on Linux (no inventory)."""
    return read_pep621_project(source.text, source.label), None


def read_pep621_project(text: str, label: str) -> Collected:
    try:
        data: Mapping[str, object] = loads(text)
    except TOMLDecodeError as e:
        raise AdoptError(f"{label}: not TOML ({e}); nothing was written", hint="check the file") from e
    project = _table(data, "project")
    uv = _table(_table(data, "tool"), "uv")
    if not project:
        raise AdoptError(
            f"{label}: no [project] table (PEP 621): its dependencies are not where envkit reads them "
            "(a Poetry or setuptools-only project?); nothing was written",
            hint="adopt its lock or an exported requirements.txt (poetry export, uv export), or pass --from "
            "the environment it installs",
        )
    found = Collected(label, "pyproject.toml")
    found.name = str(project.get("name") or "") or None
    _python(project, label, found)
    indexes = _indexes(uv, label, found)
    sources = _table(uv, "sources")
    dependencies = project.get("dependencies") or []
    if not isinstance(dependencies, list):
        raise AdoptError(f"{label}: [project] dependencies is not a list; nothing was written", hint="fix it")
    for number, requirement in enumerate(dependencies):
        where = f"{label} project.dependencies[{number}]"
        add_requirement(str(requirement), where, found)
        name = str(requirement).split(";", 1)[0].strip()
        name = next((n for n in sources if _same(n, name)), "")
        if name:
            _source(name, sources[name], indexes, f"{label} tool.uv.sources.{name}", found)
    for extra, listed in _table(project, "optional-dependencies").items():
        found.lose(
            f"{label} project.optional-dependencies.{extra}",
            shown_item(", ".join(map(str, listed)) if isinstance(listed, list) else str(listed)),
            "an extra: `uv sync` installs it only with --extra; not read",
        )
    for group in _table(data, "dependency-groups"):
        found.lose(
            f"{label} dependency-groups.{group}", group, "a dependency group (development tools): not carried"
        )
    return found


def _same(a: str, b: str) -> bool:
    head = b.replace(" ", "")
    for stop in "<>=!~[@;(":
        head = head.split(stop, 1)[0]
    return canonicalize_name(a) == canonicalize_name(head)


def _python(project: Mapping[str, object], label: str, found: Collected) -> None:
    requires = str(project.get("requires-python") or "").replace(" ", "")
    one = re.fullmatch(r"(?:==|~=)(3\.\d{1,2})(?:\.\*|\.\d+)?", requires)
    if one:
        found.python, found.python_where = one[1], f"{label} project.requires-python ({requires})"


def _indexes(uv: Mapping[str, object], label: str, found: Collected) -> dict[str, str]:
    named: dict[str, str] = {}
    listed = uv.get("index") or []
    for number, index in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(index, Mapping) or not isinstance(index.get("url"), str):
            continue
        where = f"{label} tool.uv.index[{number}]"
        url = str(index["url"])
        if isinstance(index.get("name"), str):
            named[str(index["name"])] = url
        if index.get("default") is True:
            found.index_urls.append((url, where))
        elif index.get("explicit") is not True:
            found.extra_urls.append((url, where))
    return named


def _source(name: str, value: object, indexes: Mapping[str, str], where: str, found: Collected) -> None:
    entries = value if isinstance(value, list) else [value]
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        if "extra" in entry or "group" in entry or not _holds(entry.get("marker")):
            continue  # needs --extra/--group, or another platform's
        index = entry.get("index")
        if isinstance(index, str):
            url = indexes.get(index)
            if url is None:
                raise AdoptError(
                    f"{where}: index {index!r} is no [[tool.uv.index]] of the file; nothing was written",
                    hint="name an index the file declares",
                )
            if url not in (u for u, _ in found.extra_urls):
                found.extra_urls.append((url, f"{where} (index {index})"))
            return
        kind = next((k for k in ("git", "path", "url", "workspace") if k in entry), "source")
        found.lose(
            where, f"{name} = {{ {kind} = ... }}", f"a {kind} source: the spec pins released versions only"
        )
        return


def _holds(marker: object) -> bool:
    if not isinstance(marker, str) or not marker.strip():
        return True
    try:
        return marker_holds(Marker(marker), None)
    except InvalidMarker:
        return True
