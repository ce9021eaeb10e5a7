"""Image layers that follow the lock: the pip packages split into groups, one image layer each.

Pure: (the resolved spec, the lock's pip packages) -> groups; (requirements.lock, a group) -> that
group's lock file. A group's layer holds only its packages' files, installed from only its own
wheels and lock lines, so its bytes (after :mod:`envkit.reproduce`'s normalization) depend on its
packages alone: the same packages give the same layer digest whatever else the lock changed, and a
registry, a cluster node or a CUDA variant that holds that layer never receives it again.

The groups, from the least to the most often changed (the order of the layers; why these:
docs/design.md, "Image layers"):

- ``venv``: what ``python -m venv`` seeds (pip, setuptools, wheel) when the lock pins it: installed
  into the bare venv itself (its layer), since installing it later would replace the seeded files
  and a layer cannot delete what the one below holds;
- ``cuda``: NVIDIA's runtime wheels (``nvidia-*``, NVIDIA's ``cuda-*`` packages), GBs, changed
  only with the CUDA release or the framework's pins;
- ``framework``: the framework's own distributions (torch and triton, paddlepaddle[-gpu]), about
  a GB, changed with the framework version;
- ``native``: every other package with compiled code (a platform wheel: numpy, scipy, pillow);
- ``python``: pure-Python wheels (``py3-none-any``), small and the most often bumped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envkit.lock import PipPackage
from envkit.spec.resolve import ResolvedSpec

__all__ = [
    "GROUPS",
    "LAYER_DIR",
    "SEEDS",
    "LayerGroup",
    "group_lock",
    "group_of",
    "layer_groups",
    "layer_lock_name",
]

GROUPS = ("venv", "cuda", "framework", "native", "python")
SEEDS = frozenset({"pip", "setuptools", "wheel"})  # what `python -m venv` installs (ensurepip)
LAYER_DIR = "layers"  # the build context's folder of per-group lock files (and wheels/<group>/)
# distributions only a framework uses, installed with it (torch's compiler)
_COMPANIONS = {"torch": ("triton",)}
_CUDA_PREFIXES = ("nvidia-", "cuda-")  # NVIDIA's runtime wheels and its cuda-* packages
_PURE = re.compile(r"-none-any\.whl\Z")
_REQ_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==")


@dataclass(frozen=True)
class LayerGroup:
    """One image layer: a group name and the canonical names of its packages, sorted."""

    name: str
    packages: tuple[str, ...]


def layer_lock_name(group: str) -> str:
    return f"{LAYER_DIR}/{group}.lock"


def _framework_names(resolved: ResolvedSpec) -> set[str]:
    found: set[str] = set()
    for framework, wheel in resolved.wheels:
        if wheel is None:
            continue
        try:
            found.add(canonicalize_name(Requirement(wheel.requirement).name))
        except InvalidRequirement:
            continue
        found.update(_COMPANIONS.get(framework, ()))
    return found


def group_of(name: str, urls: Iterable[str], frameworks: set[str]) -> str:
    """The group of package ``name`` whose locked files are ``urls`` (one per platform)."""
    canonical = canonicalize_name(name)
    if canonical in SEEDS:
        return "venv"
    if canonical.startswith(_CUDA_PREFIXES):
        return "cuda"
    if canonical in frameworks:
        return "framework"
    if any(not _PURE.search(url.split("#", 1)[0]) for url in urls):
        return "native"  # a platform wheel (or an sdist, built into one)
    return "python"


def layer_groups(resolved: ResolvedSpec, pip: Mapping[str, Sequence[PipPackage]]) -> tuple[LayerGroup, ...]:
    """The non-empty groups of the lock's pip packages (per platform), in layer order."""
    urls: dict[str, list[str]] = {}
    for packages in pip.values():
        for package in packages:
            urls.setdefault(canonicalize_name(package.name), []).append(package.url)
    frameworks = _framework_names(resolved)
    members: dict[str, list[str]] = {group: [] for group in GROUPS}
    for name, found in urls.items():
        members[group_of(name, found, frameworks)].append(name)
    return tuple(LayerGroup(g, tuple(sorted(members[g]))) for g in GROUPS if members[g])


def group_lock(requirements_lock: str, group: LayerGroup, header: str) -> str:
    """The lines of ``requirements_lock`` (pip's hashed format) for ``group``'s packages only.

    Options (``--index-url`` …) go to every group; a package's block is its ``name==version`` line
    and the hash lines under it. The result depends on the group's packages only, never on the rest
    of the lock (the layer's cache key and bytes follow from it).
    """
    wanted = set(group.packages)
    out: list[str] = [header]
    keep = False
    for line in requirements_lock.splitlines(keepends=True):
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("-"):
            out.append(line)
            continue
        match = _REQ_LINE.match(line)
        if match:
            keep = canonicalize_name(match.group(1)) in wanted
        if keep:
            out.append(line)
    return "".join(out)
