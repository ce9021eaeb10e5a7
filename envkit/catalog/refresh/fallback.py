"""The hand-checked flavour table (``data/framework_flavours.yaml``): the refresh's fallback."""

from __future__ import annotations

from importlib import resources
from typing import Literal

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic import Field, ValidationError

from envkit._strict import StrictModel
from envkit.errors import CatalogError

__all__ = ["FamilySpec", "FlavourGroup", "FlavourSpec", "load_fallback"]

FALLBACK_FILE = "framework_flavours.yaml"


class FlavourSpec(StrictModel):
    """One hand-checked CUDA flavour of a framework: its package, pip version pattern and index."""

    cuda: str
    package: str
    pip: str = Field(pattern=r"\{v\}")
    index: str | None = None
    mode: Literal["index-url", "extra-index-url", "find-links"] | None = None
    page: str | None = None  # the page that lists this flavour's wheels
    prefer_pypi: bool = False  # plain PyPI when the version is there, else the index (deleted releases)
    cudnn: str | None = None
    experimental: bool = False

    def pip_version(self, version: Version) -> str:
        return self.pip.format(v=version)


class FlavourGroup(StrictModel):
    """The flavours that a range of framework versions shares, with the source that says so."""

    versions: str
    source: str
    verified: bool = False
    pypi_cuda: str | None = None  # CUDA of the plain PyPI wheel when its metadata does not say
    cudnn: str | None = None
    numpy: str | None = None
    note: str | None = None
    flavours: tuple[FlavourSpec, ...]

    def admits(self, version: Version) -> bool:
        return version in SpecifierSet(self.versions)


class FamilySpec(StrictModel):
    """The hand-checked flavour table of one framework family (framework_flavours.yaml)."""

    floor: str
    projects: tuple[str, ...]
    groups: tuple[FlavourGroup, ...]

    def group_for(self, version: Version) -> FlavourGroup | None:
        return next((g for g in self.groups if g.admits(version)), None)


def load_fallback(text: str | None = None) -> dict[str, FamilySpec]:
    if text is None:
        text = resources.files("envkit.catalog").joinpath("data").joinpath(FALLBACK_FILE).read_text("utf-8")
    try:
        raw = yaml.safe_load(text)
        return {name: FamilySpec.model_validate(value) for name, value in raw.items()}
    except (ValidationError, yaml.YAMLError, AttributeError) as e:
        raise CatalogError(
            f"{FALLBACK_FILE} is invalid: {e}", hint="fix the hand-checked flavour table"
        ) from e
