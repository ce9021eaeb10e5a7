"""Data-driven drift rules: ``envkit/drift/data/rules.yaml`` (its ``known_bad`` rule applies the catalog's).

A rule names a ``check`` (a function below) and its parameters. ``within`` checks look at one
inventory (and run for every input and for ``envkit diff --check``); ``across`` checks compare
inventories.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

import yaml

from envkit._memo import by_identity
from envkit.catalog import KnownBadRule, load_catalog
from envkit.drift.cuda_wheels import cuda_majors
from envkit.drift.diff import no_majority, spread
from envkit.drift.duplicates import variants
from envkit.drift.facts import FACTS, cuda_flavour, major_minor
from envkit.drift.models import DiffPolicy, DriftFinding, DriftSeverity, KindPolicy, Rule, RuleSet
from envkit.drift.torch_flavour import flavour_unknown
from envkit.errors import CatalogError
from envkit.inventory.collect_env import public_version
from envkit.inventory.models import Inventory, Package

__all__ = ["ACROSS", "WITHIN", "apply_rules", "load_rules"]


def _kind_policy(data: Mapping[str, Any]) -> KindPolicy:
    return KindPolicy(
        data["severity"], data.get("key", data["severity"]), data.get("major"), data.get("rule")
    )


@functools.cache
def load_rules() -> RuleSet:
    """The packaged rules, validated (cached: immutable)."""
    text = resources.files("envkit.drift").joinpath("data").joinpath("rules.yaml").read_text("utf-8")
    try:
        data = yaml.safe_load(text)
        policy = DiffPolicy(
            frozenset(data["diff"]["key_projects"]),
            {kind: _kind_policy(v) for kind, v in data["diff"]["kinds"].items()},
        )
        rules = [
            Rule(
                r["id"],
                r["check"],
                r["severity"],
                r["message"],
                r["source"],
                r.get("params", {}),
                r.get("fix"),
            )
            for r in data["rules"]
        ]
    except (yaml.YAMLError, KeyError, TypeError) as e:
        raise CatalogError(f"envkit/drift/data/rules.yaml is invalid: {e}", hint="reinstall envkit") from e
    unknown = [r.id for r in rules if r.check not in WITHIN and r.check not in ACROSS]
    if unknown:
        raise CatalogError(
            f"drift rules with an unknown check: {', '.join(unknown)}", hint="reinstall envkit"
        )
    return RuleSet(policy, tuple(rules))


Within = Callable[[Rule, Inventory, dict[str, Package]], list[DriftFinding]]
Across = Callable[[Rule, Sequence[Inventory], list[dict[str, Package]]], list[DriftFinding]]


def _one(
    rule: Rule, package: str, inv: Inventory, value: str, detail: str, severity: DriftSeverity | None = None
) -> DriftFinding:
    text = f"{inv.label}: {rule.message}: {detail}" + (f" (fix: {rule.fix})" if rule.fix else "")
    return DriftFinding(package, "rule", severity or rule.severity, rule.id, {inv.label: value}, text)


def _known_bad(rule: Rule, inv: Inventory, pkgs: dict[str, Package]) -> list[DriftFinding]:
    """The catalog's known-bad combinations (the same matching as spec validation and the audit)."""
    found = []
    for bad in _bad_hits(pkgs):
        hit = Rule(bad.id, rule.check, bad.severity, bad.message, bad.source, fix=bad.fix)
        detail = ", ".join(f"{p} {pkgs[p].version}" for p in bad.when)
        found.append(_one(hit, next(iter(bad.when)), inv, detail, detail))
    return found


@by_identity
def _bad_hits(pkgs: dict[str, Package]) -> list[KnownBadRule]:
    """The catalog's hits for one table (a fleet's hosts share their tables)."""
    return load_catalog().known_bad_hits({project: package.version for project, package in pkgs.items()})


def _companion_flavour(rule: Rule, inv: Inventory, pkgs: dict[str, Package]) -> list[DriftFinding]:
    base = pkgs.get(rule.params["base"])
    base_flavour = cuda_flavour(base) if base else None
    found = []
    for name in rule.params["companions"]:
        other = pkgs.get(name)
        flavour = cuda_flavour(other) if other else None
        if base_flavour and flavour and flavour != base_flavour:
            detail = f"{rule.params['base']} {base_flavour} vs {name} {flavour}"
            found.append(_one(rule, name, inv, detail, detail))
    return found


def _companion_release(rule: Rule, inv: Inventory, pkgs: dict[str, Package]) -> list[DriftFinding]:
    base = pkgs.get(rule.params["base"])
    expected = rule.params["pairs"].get(major_minor(base.version) or "") if base else None
    found = []
    for name, want in (expected or {}).items():
        other = pkgs.get(name)
        have = major_minor(other.version) if other else None
        if base and other and have and have != want:
            detail = f"{rule.params['base']} {base.version} pairs with {name} {want}.x, found {other.version}"
            found.append(_one(rule, name, inv, f"{base.version}/{other.version}", detail))
    return found


def _cuda_components(rule: Rule, inv: Inventory, pkgs: dict[str, Package]) -> list[DriftFinding]:
    """Runtime components from different CUDA minors. The ``cuda-version`` metapackage is a
    constraint, not the runtime in use: it counts only when no runtime component is there."""
    present = [p for p in rule.params["projects"] if p in pkgs]
    runtime = [p for p in present if p != "conda:cuda-version"]
    minors = {p: major_minor(pkgs[p].version) for p in (runtime or present)}
    distinct = {m for m in minors.values() if m}
    if len(distinct) <= 1 or len({m.split(".")[0] for m in distinct}) > 1:
        return []  # two CUDA majors: cuda-majors-mixed reports them
    detail = ", ".join(f"{p.removeprefix('conda:')} {pkgs[p].version}" for p in sorted(minors))
    return [_one(rule, "cuda", inv, " ".join(sorted(distinct)), detail)]


def _cuda_majors(rule: Rule, inv: Inventory, pkgs: dict[str, Package]) -> list[DriftFinding]:
    """CUDA libraries of two or more CUDA majors (from wheel names or toolkit versions, any major)."""
    majors = _shared_majors(pkgs)
    if len(majors) <= 1:
        return []
    detail = "; ".join(
        f"CUDA {m}: "
        + ", ".join(f"{p.name} {p.version}" for p in found[:4])
        + (" …" if len(found) > 4 else "")
        for m, found in sorted(majors.items())
    )
    return [_one(rule, "cuda", inv, " ".join(str(m) for m in sorted(majors)), detail)]


_shared_majors = by_identity(cuda_majors)  # once per table (a fleet's hosts share theirs); read only


def cuda_library_majors(inv: Inventory, pkgs: dict[str, Package]) -> set[str]:
    """The CUDA majors of the environment's CUDA libraries (what ``cuda-majors-mixed`` compares)."""
    return {str(m) for m in _shared_majors(pkgs)}


def _pypi_row_of_conda_list(package: Package) -> bool:
    return package.installer == "pip" and package.env == "conda"


def _listed_twice_by_conda(inv: Inventory, project: str) -> bool:
    """collect_env's ``[conda]`` section (conda list) holds both conda's ``pytorch`` and a ``torch
    pypi_0`` row: two installs in one environment, whatever the versions (issue 34, class 13)."""
    rows = [p for p in inv.packages if p.project == project and p.env == "conda"]
    return any(p.installer == "conda" for p in rows) and any(_pypi_row_of_conda_list(p) for p in rows)


def _shadowed(rule: Rule, inv: Inventory, pkgs: dict[str, Package]) -> list[DriftFinding]:
    """pip and conda both installed one project. In collect_env, whose ``[pip]`` rows are pip's
    view of the same environment, only a different version is a second install; two separate
    environments (``meta["environments"]``) are not shadowing at all."""
    if "environments" in inv.meta or not _both_installers(inv):
        return []
    view_only = inv.format == "collect-env"
    installers: dict[str, dict[str, Package]] = {}
    for package in inv.packages:
        held = installers.setdefault(package.project, {}).get(package.installer)
        if held is None or package.name == package.project or held.name != held.project:
            installers[package.project][package.installer] = package
    found = []
    for project, by in sorted(installers.items()):
        if len(by) < 2:
            continue
        conda, pip = by["conda"], by["pip"]
        if view_only and _listed_twice_by_conda(inv, project):
            pip = next(p for p in inv.packages if p.project == project and _pypi_row_of_conda_list(p))
        elif view_only and public_version(conda.version) == public_version(pip.version):
            continue
        elif view_only:
            others = [p for p in inv.packages if p.project == project and p.installer == "conda"]
            if any(public_version(p.version) == public_version(pip.version) for p in others):
                continue
        detail = f"conda {conda.name} {conda.version} and pip {pip.name} {pip.version}"
        severity: DriftSeverity | None = (
            "critical" if project in rule.params.get("critical_for", ()) else None
        )
        found.append(_one(rule, project, inv, detail, detail, severity))
    return found


def _both_installers(inv: Inventory) -> bool:
    return len(_installers(inv.packages)) > 1


@by_identity
def _installers(packages: tuple[Package, ...]) -> frozenset[str]:
    return frozenset(p.installer for p in packages)


def _across(rule: Rule, package: str, values: dict[str, str | None], what: str) -> list[DriftFinding]:
    known = {label: v for label, v in values.items() if v is not None}
    if len(set(known.values())) <= 1:
        return []
    if len(values) == 2:
        detail = " vs ".join(f"{v} ({label})" for label, v in values.items())
    else:
        majority, outliers = spread(known)
        detail = (
            f"majority {majority}; outliers: " + ", ".join(f"{o} {known[o]}" for o in outliers[:10])
            if len(known) - len(outliers) > 1
            else no_majority(dict(known))
        )
    return [
        DriftFinding(package, "rule", rule.severity, rule.id, values, f"{what}: {rule.message}: {detail}")
    ]


def _fact_differs(
    rule: Rule, inventories: Sequence[Inventory], tables: list[dict[str, Package]]
) -> list[DriftFinding]:
    fact = FACTS[rule.params["fact"]]
    values = {inv.label: fact(inv, table) for inv, table in zip(inventories, tables, strict=True)}
    return _across(rule, rule.params["package"], values, rule.params["package"])


def _differs_with(
    rule: Rule, inventories: Sequence[Inventory], tables: list[dict[str, Package]]
) -> list[DriftFinding]:
    project, guards = rule.params["project"], rule.params["when_any"]
    values: dict[str, str | None] = {}
    for inv, table in zip(inventories, tables, strict=True):
        if project in table and any(g in table for g in guards):
            values[inv.label] = table[project].version
    return _across(rule, project, values, project) if len(values) > 1 else []


WITHIN: dict[str, Within] = {
    "known_bad": _known_bad,
    "companion_flavour": _companion_flavour,
    "companion_release": _companion_release,
    "cuda_components": _cuda_components,
    "cuda_majors": _cuda_majors,
    "shadowed": _shadowed,
}
ACROSS: dict[str, Across] = {
    "fact_differs": _fact_differs,
    "differs_with": _differs_with,
    "fact_unknown": flavour_unknown,
}


def apply_rules(inventories: Sequence[Inventory], rules: RuleSet) -> list[DriftFinding]:
    """Within-input rules on every input, and across-input rules when there are two or more."""
    tables = [inv.primary() for inv in inventories]
    every = [list(variants(inv)) for inv in inventories]  # duplicated rows: each version present
    findings: list[DriftFinding] = []
    seen: set[tuple[object, ...]] = set()  # each finding once (a duplicated row's tables repeat them)
    for rule in rules.rules:
        if rule.check in WITHIN:
            for inv, tried in zip(inventories, every, strict=True):
                for table in tried:
                    for finding in WITHIN[rule.check](rule, inv, table):
                        if _identity(finding) not in seen:
                            seen.add(_identity(finding))
                            findings.append(finding)
        elif len(inventories) > 1:
            across = ACROSS[rule.check](rule, inventories, tables)
            findings.extend(across)
            seen.update(_identity(f) for f in across)
    return findings


def _identity(f: DriftFinding) -> tuple[object, ...]:
    """Equal for equal findings (``DriftFinding`` holds a dict: not hashable itself)."""
    return (f.package, f.kind, f.severity, f.rule, tuple(sorted(f.values.items())), f.message)
