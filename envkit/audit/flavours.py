"""Flavour-named distributions: ``paddlepaddle-gpu`` is PaddlePaddle, ``opencv-python-headless`` OpenCV.

The same code published under another distribution name must get the base project's advisories
(a vulnerable package reported clean is the worst answer an audit can give). The mapping is
data, ``envkit/audit/data/flavours.yaml``, each entry with its source; :func:`base_dep` gives the
dependency to ask about as well, and the findings it yields name the mapping (``Vuln.via``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Literal

import yaml

from envkit._pep503 import canonicalize_name
from envkit._yaml import C_SAFE_LOADER
from envkit.audit.service import Dep
from envkit.errors import CatalogError

__all__ = ["Flavour", "base_dep", "load_flavours"]

_POST_CUDA = re.compile(r"\.post\d{2,3}\Z")  # paddlepaddle-gpu 2.4.1.post112: CUDA 11.2
VersionRule = Literal["same", "drop-post-cuda"]
_FILE = "envkit/audit/data/flavours.yaml"


@dataclass(frozen=True)
class Flavour:
    """A build flavour of a PyPI project (paddlepaddle-gpu of paddlepaddle) whose advisories it shares."""

    distribution: str  # canonical name of the flavour (paddlepaddle-gpu)
    project: str  # canonical name whose advisories apply (paddlepaddle)
    version: VersionRule
    source: str

    def base_version(self, version: str) -> str:
        return _POST_CUDA.sub("", version) if self.version == "drop-post-cuda" else version

    def via(self) -> str:
        return f"advisory of {self.project}; {self.distribution} matched through envkit's flavour mapping"


def _entry(raw: object, number: int) -> Flavour:
    if not isinstance(raw, dict) or set(raw) != {"distribution", "project", "version", "source"}:
        raise CatalogError(
            f"{_FILE}: flavours[{number}] needs exactly distribution, project, version, source",
            hint="reinstall envkit",
        )
    if raw["version"] not in ("same", "drop-post-cuda") or not all(isinstance(v, str) for v in raw.values()):
        raise CatalogError(
            f"{_FILE}: flavours[{number}]: bad version rule or a non-text value", hint="reinstall envkit"
        )
    return Flavour(
        canonicalize_name(raw["distribution"]),
        canonicalize_name(raw["project"]),
        raw["version"],
        raw["source"],
    )


@functools.cache
def load_flavours() -> dict[str, Flavour]:
    """``distribution -> Flavour`` from the shipped data (a broken file is a CatalogError: a bug)."""
    text = resources.files("envkit.audit").joinpath("data").joinpath("flavours.yaml").read_text("utf-8")
    try:
        data = yaml.load(text, Loader=C_SAFE_LOADER)  # noqa: S506 (a safe loader; libyaml: ~10x faster)
    except yaml.YAMLError:
        try:  # the Python loader's message (libyaml's words differ)
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise CatalogError(f"{_FILE} is not YAML: {e}", hint="reinstall envkit") from e
    entries = data.get("flavours") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise CatalogError(f"{_FILE}: no flavours list", hint="reinstall envkit")
    flavours = [_entry(raw, n) for n, raw in enumerate(entries)]
    return {f.distribution: f for f in flavours}


def base_dep(dep: Dep) -> tuple[Dep, Flavour] | None:
    """The base project's dependency to ask about as well, for a flavour-named ``dep``."""
    flavour = load_flavours().get(dep.name)
    if flavour is None:
        return None
    return Dep(flavour.project, flavour.base_version(dep.version)), flavour
