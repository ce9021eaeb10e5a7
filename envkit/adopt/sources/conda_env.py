"""A conda ``environment.yml`` -> pins: ``conda env export`` (with or without builds),
``--from-history`` and hand-written files, with their ``pip:`` section.

The inventory reader (:func:`envkit.inventory.readers_data.read_env_export`) reads installed
versions; a spec keeps each dependency as written (``numpy>=1.24,<2``, ``pytorch::pytorch``,
``python=3.10.4=h12debd9_0``), so this reads the same YAML (bounded: no aliases, depth-limited)
and keeps the match specs. The ``pip:`` section goes through the requirements reader, so its
``-e``, URL and ``--index-url`` lines are treated the same as in a requirements.txt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from envkit._yaml import YamlProblem, load_bounded_fast
from envkit.adopt.evidence import AdoptError, Collected, CondaPin, hostile, refuse
from envkit.adopt.sources.reader import Read, SourceText, diff_inventory
from envkit.adopt.sources.requirements import requirement_line
from envkit.inventory.readers_data import yaml_item_lines

__all__ = ["conda_pin", "read_conda_env"]

MAX_ENV_BYTES = 16 * 1024 * 1024  # the largest real export beside the project is 40 KB
# name, then an optional version/range, then an optional build (``=`` or space separated)
_SPEC = re.compile(
    r"^(?:(?P<channel>[A-Za-z0-9][A-Za-z0-9_.\-/:]*)::)?(?P<name>[A-Za-z0-9_][A-Za-z0-9_.\-]*)\s*"
    r"(?P<rest>.*)\Z"
)
_BRACKETS = re.compile(r"\[([^\]]*)\]\Z")
_SINGLE_COLON = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9_.\-]*):([A-Za-z0-9_][A-Za-z0-9_.\-]*(?:[ \t=<>!~].*)?)\Z"
)
_KEY_VALUE = re.compile(r"([a-z_]+)\s*=\s*['\"]?([^,'\"\]]+)['\"]?")
_EXACT = re.compile(r"^(?:==?)?\s*(?P<version>[0-9][A-Za-z0-9_.+!]*)(?:[=\s]+(?P<build>[A-Za-z0-9_.+*]+))?\Z")
# `pytorch=*=*cuda*`, `pytorch * *cuda*`: any version, of that build
_ANY_VERSION = re.compile(r"^(?:==?)?[ \t]*\*(?:[= \t]+(?P<build>[A-Za-z0-9_.+*]+))?\Z")


def read_conda_env(source: SourceText) -> Read:
    """An ``environment.yml`` (and its ``pip:`` section): its pins, and its ``envkit diff`` listing."""
    found = Collected(source.label, "environment.yml")
    _collect(source.text, found, label=source.label, base=source.path.parent)
    return found, diff_inventory(source)


def _collect(text: str, found: Collected, *, label: str, base: Path | None) -> None:
    try:
        data = load_bounded_fast(text, max_bytes=MAX_ENV_BYTES)
    except YamlProblem as e:
        where = f"{label}:{e.line}" if e.line else label
        raise AdoptError(
            f"{where}: invalid YAML: {e.message}; nothing was written", hint="check the file"
        ) from e
    if not isinstance(data, Mapping) or not isinstance(data.get("dependencies"), list):
        raise AdoptError(
            f"{label}: not a conda environment file (no 'dependencies:' list); nothing was written",
            hint="an environment.yml has name, channels and dependencies",
        )
    lines = yaml_item_lines(text)
    if isinstance(data.get("name"), str):
        found.name = data["name"]
    channels = data.get("channels") or []
    if not isinstance(channels, list) or not all(isinstance(c, str) for c in channels):
        raise AdoptError(f"{label}: 'channels' is not a list of names", hint="channels: [conda-forge]")
    found.channels.extend(channels)
    prefix = data.get("prefix")
    if isinstance(prefix, str):
        found.platform = _platform_of_prefix(prefix)
    _dependencies(data["dependencies"], found, label=label, base=base, lines=lines)
    variables = data.get("variables")
    if isinstance(variables, Mapping):
        found.env.update({str(k): str(v) for k, v in variables.items()})


def _dependencies(
    deps: list[object], found: Collected, *, label: str, base: Path | None, lines: dict[str, list[int]]
) -> None:
    for dep in deps:
        if isinstance(dep, Mapping) and "pip" in dep:
            pip = dep["pip"]
            if not isinstance(pip, list):
                raise AdoptError(f"{label}: 'pip:' is not a list", hint="pip: [name==version, ...]")
            for req in pip:
                requirement_line(str(req), _where(label, lines, str(req)), found, base=base)
            continue
        if not isinstance(dep, str | int | float):
            raise AdoptError(f"{label}: unexpected dependency entry {str(dep)[:80]!r}", hint="check the file")
        text_dep = str(dep).strip()
        conda_pin(text_dep, _where(label, lines, text_dep), found)


def conda_pin(text: str, where: str, found: Collected, channel: str | None = None) -> None:
    """One conda match spec as written: a :class:`CondaPin`, a refusal (shell syntax) or a Lost line."""
    if hostile(text) or any(c in text for c in "`$\\'\"&"):
        raise refuse(where, text)
    single = _SINGLE_COLON.match(text)
    if single:  # `pytorch:pytorch=2.1.*`: conda's channel separator is `::`
        found.notes.append(
            f"{text} ({where}): read as {single[1]}::{single[2]} (conda's channel separator is ::)"
        )
        text = f"{single[1]}::{single[2]}"
    match = _SPEC.match(text)
    if not match:
        found.lose(where, text, "not a conda match spec")
        return
    rest = match["rest"].strip()
    keys = _BRACKETS.search(rest)  # `pytorch=2.1.2[build=cpu*]` (conda env export --from-history)
    fields = dict(_KEY_VALUE.findall(keys[1])) if keys else {}
    rest = rest[: keys.start()].strip() if keys else rest
    exact = _EXACT.match(rest) if rest else None
    version, build = "", fields.get("build", "")
    any_version = _ANY_VERSION.match(rest) if rest else None
    if any_version:
        build = any_version["build"] or build
    if exact:
        version = exact["version"]
        build = exact["build"] or build
        if rest.startswith("=") and not rest.startswith("==") and not build:
            version = version.rstrip("*").rstrip(".")  # `numpy=1.26` is 1.26.*: exact only when complete
    found.conda.append(
        CondaPin(match["name"].lower(), text, version, build or None, match["channel"] or channel, where)
    )


def _where(label: str, lines: dict[str, list[int]], item: str) -> str:
    numbers = lines.get(item)
    return f"{label}:{numbers.pop(0)}" if numbers else label


def _platform_of_prefix(prefix: str) -> str | None:
    """Where the exported environment lived: ``d:\\an3\\envs\\x`` is Windows, ``/Users/...`` macOS."""
    if re.match(r"^[A-Za-z]:[\\/]", prefix) or "\\" in prefix:
        return "win-64"
    if prefix.startswith("/Users/"):
        return "osx-64"
    return None
