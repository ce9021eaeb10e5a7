"""The catalog's known-bad combinations (``data/known_bad.yaml``), read without pydantic.

Every audit checks them (a 400-package file audit needs nothing else from the catalog), so they
load on their own: a few frozen values checked by hand, strictly (unknown keys, a missing field,
a non-text value or an unknown severity are errors), in a fraction of the catalog's load time.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal, cast

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envkit._yaml import C_SAFE_LOADER
from envkit.errors import CatalogError

__all__ = ["KnownBadRule", "known_bad_hits", "load_known_bad", "parse_known_bad"]

KnownBadSeverity = Literal["info", "warning", "critical"]
_SEVERITIES: tuple[KnownBadSeverity, ...] = ("info", "warning", "critical")
_TEXT_FIELDS = ("id", "severity", "message", "fix", "source")


@dataclass(frozen=True)
class KnownBadRule:
    """A known-bad combination of versions: when it applies, how bad, what to do, the source."""

    id: str
    when: Mapping[str, str]  # normalized package name -> the specifier its version must be inside
    severity: KnownBadSeverity
    message: str
    fix: str
    source: str

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "when": dict(self.when),
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
            "source": self.source,
        }


def _rule(data: Any, where: str) -> KnownBadRule:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: not a mapping")
    unknown = sorted(str(k) for k in data if k not in (*_TEXT_FIELDS, "when"))
    missing = [k for k in (*_TEXT_FIELDS, "when") if k not in data]
    if unknown or missing:
        raise ValueError(f"{where}: unknown fields {unknown}, missing fields {missing}")
    texts = {}
    for key in _TEXT_FIELDS:
        if not isinstance(data[key], str):
            raise ValueError(f"{where}.{key}: not text")
        texts[key] = data[key].strip()
    when = data["when"]
    if not isinstance(when, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in when.items()
    ):
        raise ValueError(f"{where}.when: not a mapping of package names to specifiers")
    if texts["severity"] not in _SEVERITIES:
        raise ValueError(f"{where}.severity: not one of {', '.join(_SEVERITIES)}")
    conditions = {k.strip(): v.strip() for k, v in when.items()}
    for spec in conditions.values():
        # InvalidSpecifier (a ValueError) for a condition no version can be checked against
        SpecifierSet(spec)
    return KnownBadRule(
        id=texts["id"],
        when=conditions,
        severity=cast("KnownBadSeverity", texts["severity"]),
        message=texts["message"],
        fix=texts["fix"],
        source=texts["source"],
    )


def parse_known_bad(data: Any) -> tuple[KnownBadRule, ...]:
    """The rules of a loaded ``known_bad.yaml`` document (``{"rules": [...]}``); ValueError when malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise ValueError("known_bad.yaml: no list of rules")
    return tuple(_rule(r, f"rules[{i}]") for i, r in enumerate(data["rules"]))


@functools.cache
def load_known_bad() -> tuple[KnownBadRule, ...]:
    """The packaged known-bad rules (read once per process)."""
    try:
        path = resources.files("envkit.catalog").joinpath("data").joinpath("known_bad.yaml")
        return parse_known_bad(yaml.load(path.read_text("utf-8"), Loader=C_SAFE_LOADER))  # noqa: S506 (safe)
    except (ValueError, yaml.YAMLError, OSError) as e:
        raise CatalogError(
            f"the packaged catalog is invalid: {e}", hint="reinstall envkit; this is a bug if it persists"
        ) from e


def known_bad_hits(rules: Iterable[KnownBadRule], versions: Mapping[str, str]) -> list[KnownBadRule]:
    """Rules whose every condition matches ``versions`` (normalized name -> version)."""
    return [
        rule for rule in rules if all(_matches(versions.get(pkg), spec) for pkg, spec in rule.when.items())
    ]


def _matches(version: str | None, spec: str) -> bool:
    if version is None:
        return False
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    if parsed.is_prerelease or parsed.is_devrelease:
        parsed = Version(parsed.base_version)  # numpy 2.0.0rc1 behaves as numpy 2, not as numpy 1
    return parsed in SpecifierSet(spec, prereleases=True)
