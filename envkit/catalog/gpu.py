"""GPU readiness facts (``data/gpu.yaml``): GPUs and their compute capability, NVIDIA's rules,
the driver's own libraries, and what each framework opens at run time per CUDA major."""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import yaml
from pydantic import Field, ValidationError

from envkit._strict import StrictModel
from envkit._yaml import C_SAFE_LOADER
from envkit.errors import CatalogError

__all__ = ["DynloadLib", "GpuFacts", "GpuModel", "GpuRule", "load_gpu_facts", "parse_cc"]

_CC = re.compile(r"^(\d{1,2})\.(\d)\Z")


def parse_cc(text: str) -> tuple[int, int] | None:
    """``"9.0"`` -> (9, 0); ``"sm_90"`` / ``"sm_90a"`` / ``"compute_120"`` -> (9, 0) / (12, 0)."""
    m = _CC.match(text.strip())
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.match(r"^(?:sm|compute)_(\d{2,3})a?\Z", text.strip().lower())
    if m:
        n = int(m.group(1))
        return n // 10, n % 10
    return None


class _Sourced(StrictModel):
    source: str = Field(min_length=1)
    verified: bool = False
    note: str | None = None


class GpuModel(StrictModel):
    """A GPU by its short name (``H100``) and its compute capability."""

    name: str = Field(pattern=r"^[A-Za-z0-9]+$")
    cc: str = Field(pattern=r"^\d{1,2}\.\d$")
    data_center: bool

    @property
    def capability(self) -> tuple[int, int]:
        major, minor = self.cc.split(".")
        return int(major), int(minor)


class GpuList(_Sourced):
    list: tuple[GpuModel, ...]


class GpuRule(_Sourced):
    """One of NVIDIA's compatibility rules, in words, with its source."""

    id: str
    text: str


class HostLibraries(_Sourced):
    list: tuple[str, ...]


class DynloadLib(StrictModel):
    """A library a framework opens at run time: names tried in order, the soname it must have."""

    lib: str
    names: tuple[str, ...] = Field(min_length=1)
    soname: str
    first_use: str
    optional: bool = False


class FrameworkDynload(_Sourced):
    by_cuda: dict[str, tuple[DynloadLib, ...]]


class ContainerToolkit(_Sourced):
    """The properties the NVIDIA Container Toolkit's ``NVIDIA_REQUIRE_*`` expressions can test."""

    properties: tuple[str, ...]


class GpuFacts(StrictModel):
    """Everything in ``gpu.yaml``."""

    gpus: GpuList
    rules: tuple[GpuRule, ...]
    container_toolkit: ContainerToolkit
    host_libraries: HostLibraries
    dynload: dict[str, FrameworkDynload]

    def gpu(self, name: str) -> GpuModel | None:
        key = re.sub(r"[^a-z0-9]", "", name.lower()).removeprefix("nvidia").removeprefix("geforce")
        for gpu in self.gpus.list:
            if gpu.name.lower() == key:
                return gpu
        # a full name from nvidia-smi / collect_env: "NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 5090"
        hits = [g for g in self.gpus.list if g.name.lower() in key]
        return max(hits, key=lambda g: len(g.name)) if hits else None

    def rule(self, rule_id: str) -> GpuRule:
        return next(r for r in self.rules if r.id == rule_id)

    def payload_spec(self) -> dict[str, Any]:
        """What the readiness payload needs from the catalog (JSON-able)."""
        return {
            "host_libraries": list(self.host_libraries.list),
            "dynload": {
                fw: {major: [lib.model_dump() for lib in libs] for major, libs in entry.by_cuda.items()}
                for fw, entry in sorted(self.dynload.items())
            },
        }

    def dynload_row(self, framework: str, cuda_major: str, lib: str) -> DynloadLib | None:
        entry = self.dynload.get(framework)
        rows = entry.by_cuda.get(cuda_major, ()) if entry else ()
        return next((r for r in rows if r.lib == lib), None)


@functools.cache
def load_gpu_facts() -> GpuFacts:
    """Load and validate ``gpu.yaml`` (cached: immutable)."""
    try:
        text = resources.files("envkit.catalog").joinpath("data").joinpath("gpu.yaml").read_text("utf-8")
        return GpuFacts.model_validate(yaml.load(text, Loader=C_SAFE_LOADER))  # noqa: S506 (a safe loader)
    except (ValidationError, yaml.YAMLError, OSError) as e:
        raise CatalogError(
            f"the packaged GPU catalog is invalid: {e}", hint="reinstall envkit; this is a bug if it persists"
        ) from e
