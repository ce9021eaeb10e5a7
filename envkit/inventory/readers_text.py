"""Readers for line-oriented listings: conda list (classic, wide, mamba/micromamba),
conda list --export, conda list --explicit, pip freeze / requirements locks and
``python -m torch.utils.collect_env`` output."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from envkit._lines import logical_lines
from envkit.inventory._collect import (
    EGG,
    REQUIREMENT,
    Collector,
    channel_from_url,
    pip_pin,
    requirement_version,
    split_conda_filename,
    version_from_url,
    version_too_large,
    without_features,
)
from envkit.inventory.models import Package

__all__ = [
    "read_conda_explicit",
    "read_conda_export",
    "read_conda_list",
    "read_requirements",
]

_PROMPT = re.compile(r"^(\(.*?\)\s*)?\S*[@:]\S*[$#>]\s|^[$>]\s|conda list|mamba list|micromamba list")
_TABLE_HEADER = re.compile(r"^#?\s*Name\s+Version\s+Build(\s+Channel)?\s*\Z")
_SEPARATOR = re.compile(r"^[\s\-=─━_]+\Z")
_EXPORT = re.compile(r"^([^\s=]+)=([^\s=]+)(?:=([^\s=]+))?\Z")
_PLAIN_PIN = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9._+-]*)===?([A-Za-z0-9_][A-Za-z0-9._+!*-]*)\Z")
# `# packages in environment at /opt/conda:` (the prefix may be cut off, or the line cut before it)
_CONDA_HEADER = re.compile(r"^# packages in environment at(?:[ \t]+(?P<prefix>.*?))?[ \t]*:?\Z")
_EDITABLE_NOTE = re.compile(r"^#\s*Editable install.*\(([A-Za-z0-9._-]+)==([^)\s]+)\)")


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        yield number, raw.rstrip()


def read_conda_list(text: str, c: Collector) -> None:
    """``conda list`` / ``mamba list`` / ``micromamba list`` tables (any column widths)."""
    for number, line in _lines(text):
        stripped = line.strip()
        if not stripped or _SEPARATOR.match(stripped) or _TABLE_HEADER.match(stripped):
            continue
        if stripped.startswith("#"):
            header = _CONDA_HEADER.match(stripped)
            if header and header["prefix"]:  # a header cut short names no prefix: nothing to keep
                c.meta["prefix"] = header["prefix"]
            continue
        if stripped.startswith("List of packages in environment:"):
            c.format = "mamba-list"
            c.meta["prefix"] = stripped.split(":", 1)[1].strip().strip('"')
            continue
        if _PROMPT.search(stripped):
            continue
        fields = without_features(stripped.split())
        # a version starts with a digit; the Anaconda metapackage's is "custom" (anaconda custom py36_1)
        versioned = (
            fields[1][:1].isdigit() or (fields[1] == "custom" and len(fields) > 2)
            if len(fields) > 1
            else False
        )
        if len(fields) < 2 or len(fields) > 4 or not versioned:
            c.skip(number, f"expected 'name version [build [channel]]', got {stripped[:80]!r}")
            continue
        _add_conda_row(fields, number, c)


def _add_conda_row(fields: list[str], number: int, c: Collector, env: str | None = None) -> None:
    """``name version [build [channel]]`` columns; no channel column means defaults (pkgs/main).

    A ``<pip>`` build (conda < 4.6) or a ``pypi`` channel is a pip-installed PyPI project.
    """
    build = fields[2] if len(fields) > 2 else None
    channel = fields[3] if len(fields) > 3 else (None if build == "<pip>" else "pkgs/main")
    if channel and "://" in channel:  # conda prints a channel's URL for channels it has no name for
        channel = channel_from_url(channel)
    c.add(fields[0], fields[1], "conda", line=number, build=build, channel=channel, env=env)


def _platform_comment(comment: str, c: Collector) -> None:
    """``# platform: linux-64`` in an export or explicit listing."""
    if comment.startswith("# platform:"):
        c.meta["platform"] = comment.split(":", 1)[1].strip()


def read_conda_export(text: str, c: Collector) -> None:
    """``conda list --export``: ``name=version=build`` lines."""
    for number, line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            _platform_comment(stripped, c)
            continue
        match = _EXPORT.match(stripped)
        if not match:
            c.skip(number, f"expected 'name=version=build', got {stripped[:80]!r}")
            continue
        c.add(match[1], match[2], "conda", line=number, build=match[3])


def read_conda_explicit(text: str, c: Collector) -> None:
    """``conda list --explicit`` (``@EXPLICIT`` then package URLs, optional #md5 / #sha256)."""
    seen_marker = False
    for number, line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            _platform_comment(stripped, c)
            continue
        if stripped == "@EXPLICIT":
            seen_marker = True
            continue
        if not seen_marker:
            raise c.error(number, "package URL before the @EXPLICIT line")
        url = stripped.split("#", 1)[0]
        parts = split_conda_filename(url.rsplit("/", 1)[-1])
        if parts is None or "://" not in url:
            c.skip(number, f"not a conda package URL: {stripped[:100]!r}")
            continue
        name, version, build = parts
        c.add(name, version, "conda", line=number, build=build, channel=channel_from_url(url), url=stripped)


def read_requirements(text: str, c: Collector) -> None:
    """``pip freeze`` and requirements locks: ``==`` pins, ``name @ url``, ``-e`` lines, hashes."""
    editable: tuple[str, str] | None = None
    # Without a backslash there is no continuation line to join: the lines as they are (fast path).
    lines = logical_lines(text) if "\\" in text else enumerate(text.splitlines(), start=1)
    for number, line in lines:
        package = _plain_pin(line, number)
        if package is not None:  # the common `name==version` line
            c.packages.append(package)
            editable = None
            continue
        stripped = line.strip()
        if stripped.startswith("#"):
            note = _EDITABLE_NOTE.match(stripped)
            editable = (note[1], note[2]) if note else editable
        elif stripped:
            editable = _requirement_line(stripped, number, editable, c)


@functools.lru_cache(maxsize=1 << 18)
def _plain_pin(line: str, number: int) -> Package | None:
    """A ``name==version`` row (one match: already a valid name and version), read once per process:
    a fleet's freezes repeat the same rows."""
    pin = _PLAIN_PIN.match(line.strip())
    if pin is None or version_too_large(pin[2]):
        return None  # a 5,000-digit epoch or part: read (and skipped, with a warning) by the slow path
    return pip_pin(pin[1], pin[2], number)


def _requirement_line(
    stripped: str, number: int, editable: tuple[str, str] | None, c: Collector
) -> tuple[str, str] | None:
    """One non-comment line other than a plain pin (the editable note is used up by an ``-e`` line)."""
    if "#" in stripped:
        stripped = re.sub(r"\s+#.*$", "", stripped)
    if "--hash" in stripped:
        c.format = "requirements-lock" if c.format == "pip-freeze" else c.format
    if stripped.startswith(("-e ", "--editable")):
        target = stripped.split(None, 1)[1] if " " in stripped else ""
        egg = EGG.search(target)
        if egg:
            c.add(egg[1], version_from_url(target), "pip", line=number, url=target)
        elif editable:
            c.add(editable[0], editable[1], "pip", line=number, url=target)
        else:
            c.skip(number, f"editable install without a name: {stripped[:100]!r}")
        return None
    if stripped.startswith("-"):
        return editable  # --index-url, --extra-index-url, -f, -c, -r, --hash on its own, ...
    if "--hash" in stripped:
        stripped = re.sub(r"\s--hash[= ]\S+", "", stripped).strip()
    match = REQUIREMENT.match(stripped)
    if not match:
        c.skip(number, f"not a requirement line: {stripped[:100]!r}")
        return editable
    c.add(match["name"], requirement_version(match), "pip", line=number, url=match["url"])
    return editable
