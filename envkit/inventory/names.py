"""Which conda package and which pip distribution are the same project.

:func:`project_of` gives the identity used for comparison: the PyPI (PEP 503) name
when a conda package is that PyPI project (conda ``pytorch`` -> ``torch``), else
``conda:<name>``, so a conda C library never merges with an unrelated PyPI project of
the same name (conda ``graphviz`` vs PyPI ``graphviz``). Two sources, both data:
``envkit/inventory/data/names.yaml`` (hand-checked overrides, each with its source; they win) and
the maintained conda-forge mapping pixi uses (:mod:`envkit.catalog.conda_pypi`, refreshed with
``envkit catalog refresh-names``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

import yaml

from envkit._pep503 import canonicalize_name
from envkit.errors import CatalogError

__all__ = ["CORE_TOOLS", "NameMap", "canonical", "load_names", "project_of", "suspicious_rows"]

# conda build strings of Python packages: py39h..., py3.9_cuda..., pyhd8ed1ab_0, pyh..., py_0, pypi_0.
_PY_BUILD = re.compile(r"^(py\d|pyh|py_|pypi_|py3|py2)|_py\d")
_CONDA_ONLY_PREFIXES = ("lib", "_", "cuda-", "ld_impl", "gcc", "gxx", "sysroot", "kernel-headers")
_CONDA_ONLY_SUFFIXES = ("-mutex", "-devel", "-dev", "-cuda", "-c", "-cpp", "_linux-64")
# Core packaging tools: a conda package of another name mapped to one of these vendors it (nsight-compute
# -> pip in the shipped mapping); such a row is never the identity of that package.
CORE_TOOLS = frozenset(
    {"pip", "setuptools", "wheel", "python", "conda", "mamba", "distribute", "pkg-resources"}
)


@dataclass(frozen=True)
class NameMap:
    """Conda names that are PyPI distributions under another name, and those that never are."""

    renames: dict[str, str]  # conda name -> PyPI canonical name
    not_pypi: frozenset[str]  # conda names that never merge with a pip distribution


@functools.lru_cache(maxsize=65536)
def canonical(name: str) -> str:
    """PEP 503 normalized name (``PyYAML`` -> ``pyyaml``, ``ruamel.yaml`` -> ``ruamel-yaml``)."""
    return canonicalize_name(name)


@functools.cache
def load_names() -> NameMap:
    text = resources.files("envkit.inventory").joinpath("data").joinpath("names.yaml").read_text("utf-8")
    try:
        data = yaml.safe_load(text)
        renames = {str(e["conda"]).lower(): canonical(str(e["pypi"])) for e in data["renames"]}
        not_pypi = frozenset(str(e["conda"]).lower() for e in data["not_pypi"])
    except (yaml.YAMLError, KeyError, TypeError) as e:
        raise CatalogError(
            f"envkit/inventory/data/names.yaml is invalid: {e}", hint="reinstall envkit"
        ) from e
    return NameMap(renames, not_pypi)


def _looks_conda_only(name: str) -> bool:
    return name.startswith(_CONDA_ONLY_PREFIXES) or name.endswith(_CONDA_ONLY_SUFFIXES)


@functools.lru_cache(maxsize=65536)
def project_of(name: str, installer: str, build: str | None = None) -> str:
    """The comparison identity of a package.

    ``installer`` is ``"pip"`` or ``"conda"``. For pip this is the PEP 503 name. For
    conda, in order: names.yaml (its renames; ``conda:<name>`` for its not_pypi names); a
    rename in the conda-forge mapping (``py-xgboost`` -> ``xgboost``); the build string
    (Python builds -> same-named PyPI project, plain hash builds -> ``conda:<name>``);
    without a build string, the mapping's same name or null (``conda:<name>``), and for a
    name it lacks, the name's shape.
    """
    if installer != "conda":
        return canonical(name)
    conda = name.lower()
    names = load_names()
    if conda in names.renames:
        return names.renames[conda]
    if conda in names.not_pypi:
        return f"conda:{conda}"
    from envkit.catalog.conda_pypi import load_mapping  # envkit.catalog imports pydantic: conda rows only

    mapping = load_mapping()
    pypi = mapping.get(conda)
    if pypi is not None and canonical(pypi) in CORE_TOOLS and canonical(pypi) != canonical(conda):
        return f"conda:{conda}"  # a wrong mapping row (a tool that vendors pip is not pip)
    if pypi is not None and canonical(pypi) != canonical(conda):
        return canonical(pypi)
    if build is not None and build != "":
        return canonical(conda) if _PY_BUILD.search(build) else f"conda:{conda}"
    if conda in mapping:
        return f"conda:{conda}" if pypi is None else canonical(conda)
    return f"conda:{conda}" if _looks_conda_only(conda) else canonical(conda)


def suspicious_rows(mapping: dict[str, str | None]) -> list[tuple[str, str]]:
    """Mapping rows that name another package's identity (issue 34, class 11): a core tool, or a PyPI
    project that is the same-named identity of another conda package while the two names share
    nothing (``charliecloud -> lark``). Each must be reviewed: overridden in names.yaml or kept."""
    own = {canonical(k) for k, v in mapping.items() if v and canonical(v) == canonical(k)}
    found = []
    for conda, pypi in sorted(mapping.items()):
        if not pypi:
            continue
        a, b = canonical(conda), canonical(pypi)
        if a == b:
            continue
        core = b in CORE_TOOLS
        unrelated = (
            b in own and a not in b and b not in a and a.replace("-", "")[:4] != b.replace("-", "")[:4]
        )
        if core or unrelated:
            found.append((conda, pypi))
    return found
