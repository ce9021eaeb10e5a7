"""SBOMs as inventories: CycloneDX JSON (1.4-1.6) and SPDX JSON (2.2, 2.3), by package URL.

What syft, trivy, pip-audit, cyclonedx-py and ``envkit build`` write. A package is read from
its purl (https://github.com/package-url/purl-spec): ``pkg:pypi/NAME@VERSION`` is a pip
package, ``pkg:conda/NAME@VERSION?build=&channel=`` a conda one; other ecosystems (deb, npm,
docker, ...) are counted, not audited (the advisory data here is PyPI's). CycloneDX nests
components in components: walked without recursion, at most :data:`MAX_DEPTH` deep and
:data:`MAX_COMPONENTS` in all, so a hostile file cannot exhaust the stack or the memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packageurl import PackageURL

from envkit.inventory._collect import Collector, channel_from_url

__all__ = ["MAX_COMPONENTS", "MAX_DEPTH", "is_cyclonedx", "is_spdx", "read_cyclonedx", "read_spdx"]

MAX_DEPTH = 32
MAX_COMPONENTS = 200_000
_PURL_MAX = 2048


def is_cyclonedx(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("bomFormat") == "CycloneDX"


def is_spdx(data: Any) -> bool:
    return isinstance(data, Mapping) and str(data.get("spdxVersion", "")).startswith("SPDX-")


def _components(data: Mapping[str, object], c: Collector) -> Iterator[tuple[str, Mapping[str, object]]]:
    """``(where, component)`` of every component, nested ones too (bounded, no recursion)."""
    stack: list[tuple[str, int, Any]] = [("components", 0, data.get("components"))]
    meta = data.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("component"), Mapping):
        stack.append(("metadata.component.components", 1, meta["component"].get("components")))
    seen = 0
    while stack:
        where, depth, items = stack.pop()
        if items is None:
            continue
        if not isinstance(items, list):
            c.skip(None, f"{where} is not a list")
            continue
        if depth > MAX_DEPTH:
            c.warnings.append(
                f"{c.path}: components nested deeper than {MAX_DEPTH} levels at {where}: not read"
            )
            continue
        for index, item in enumerate(items):
            seen += 1
            if seen > MAX_COMPONENTS:
                raise c.error(
                    None, f"more than {MAX_COMPONENTS} components", hint="is this one image's SBOM?"
                )
            here = f"{where}[{index}]"
            if not isinstance(item, Mapping):
                c.skip(None, f"{here} is not an object")
                continue
            yield here, item
            if item.get("components") is not None:
                stack.append((f"{here}.components", depth + 1, item.get("components")))


def _add_purl(c: Collector, where: str, text: Any, version: Any, counts: dict[str, int]) -> None:
    if not isinstance(text, str) or not text.startswith("pkg:") or len(text) > _PURL_MAX:
        counts["without a package URL"] = counts.get("without a package URL", 0) + 1
        return
    try:
        purl = _purl(text)
    except ValueError as e:
        c.skip(None, f"{where}: not a package URL: {text[:120]!r} ({e})")
        return
    found = purl.version or (version if isinstance(version, str) else "")
    if purl.type == "pypi":
        c.add(purl.name, found, "pip", line=None)
    elif purl.type == "conda":
        qualifiers = purl.qualifiers if isinstance(purl.qualifiers, Mapping) else {}
        channel = qualifiers.get("channel")
        if channel and "/" in channel:
            channel = channel_from_url(channel.rstrip("/") + "/noarch/x")
        c.add(purl.name, found, "conda", line=None, build=qualifiers.get("build"), channel=channel)
    else:
        counts[purl.type] = counts.get(purl.type, 0) + 1


def _note_others(c: Collector, counts: dict[str, int]) -> None:
    if counts:
        c.meta["sbom.not-audited"] = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


def read_cyclonedx(data: Mapping[str, object], c: Collector) -> None:
    c.meta["sbom.format"] = f"CycloneDX {data.get('specVersion', '?')}"
    counts: dict[str, int] = {}
    for where, component in _components(data, c):
        _add_purl(c, where, component.get("purl"), component.get("version"), counts)
    _note_others(c, counts)


def read_spdx(data: Mapping[str, object], c: Collector) -> None:
    c.meta["sbom.format"] = str(data.get("spdxVersion"))
    packages = data.get("packages")
    if not isinstance(packages, list):
        raise c.error(None, "an SPDX document without a packages list")
    if len(packages) > MAX_COMPONENTS:
        raise c.error(None, f"more than {MAX_COMPONENTS} packages", hint="is this one image's SBOM?")
    counts: dict[str, int] = {}
    for index, package in enumerate(packages):
        where = f"packages[{index}]"
        if not isinstance(package, Mapping):
            c.skip(None, f"{where} is not an object")
            continue
        refs = package.get("externalRefs")
        purls = [
            r.get("referenceLocator")
            for r in (refs if isinstance(refs, list) else [])
            if isinstance(r, Mapping) and r.get("referenceType") == "purl"
        ]
        _add_purl(c, where, purls[0] if purls else None, package.get("versionInfo"), counts)
    _note_others(c, counts)


def _purl(text: str) -> PackageURL:
    from packageurl import PackageURL  # imported when an SBOM is read (~9 ms of every start-up otherwise)

    return PackageURL.from_string(text)
