"""Python, CUDA and the frameworks a source pins, judged with the drift stage's facts and the catalog.

- torch: ``torch==2.1.2+cu121`` -> CUDA 12.1; a conda ``pytorch`` build ``py3.11_cuda12.1_...``
  or a ``pytorch-cuda=12.1`` pin -> 12.1; ``+cpu`` / a ``cpu`` build / ``cpuonly`` -> cpu; a PyPI
  ``torch`` without a local version -> the CUDA runtime wheels beside it, else the catalog's
  ``pypi_cuda`` for that release (PyPI's Linux wheel); a ``--index-url .../whl/cu118`` -> 11.8.
- paddle: ``paddlepaddle-gpu 2.6.0.post118`` -> paddle 2.6.0 on CUDA 11.8; a plain
  ``paddlepaddle-gpu`` -> its index (``packages/stable/cu126``) or the catalog's ``pypi_cuda``;
  ``paddlepaddle`` -> cpu.
- a base image: ``pytorch/pytorch:2.1.0-cuda12.1-...``, ``paddlepaddle/paddle:2.6.0-gpu-cuda11.8-...``,
  ``nvidia/cuda:11.8.0-...`` (the catalog's entry when it has one, else the tag).

The CUDA facts are :data:`envkit.drift.facts.FACTS` over an inventory built from the pins, so
``envkit diff`` and ``envkit init --from`` read a CUDA flavour the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envkit.catalog import Catalog, FrameworkRelease
from envkit.drift.facts import FACTS
from envkit.errors import InventoryError
from envkit.init.adopted import Collected
from envkit.inventory._collect import Collector
from envkit.inventory.models import Inventory

__all__ = [
    "FRAMEWORK_CONDA",
    "FRAMEWORK_PIP",
    "Framework",
    "cuda_evidence",
    "cuda_of_flavour",
    "detect_frameworks",
    "facts_inventory",
    "image_facts",
    "index_flavour",
    "release_in",
]

# The packages that carry each framework, by installer (conda-forge and the pytorch channel).
FRAMEWORK_PIP = {"torch": "torch", "paddlepaddle": "paddle", "paddlepaddle-gpu": "paddle"}
FRAMEWORK_CONDA = {
    "pytorch": "torch",
    "pytorch-gpu": "torch",
    "pytorch-cpu": "torch",
    "paddlepaddle": "paddle",
    "paddlepaddle-gpu": "paddle",
}
_INDEX_FLAVOUR = re.compile(
    r"(?:download\.pytorch\.org/whl|paddlepaddle\.org\.cn/packages/(?:stable|nightly))/(cu\d{3}|cpu)\b"
)
_IMAGE_TAGS = (
    ("torch", re.compile(r"(?:^|/)pytorch/pytorch:(\d+\.\d+(?:\.\d+)?)-cuda(\d+\.\d+)")),
    ("paddle", re.compile(r"(?:^|/)paddlepaddle/paddle:(\d+\.\d+\.\d+)(?:-gpu-cuda(\d+\.\d+))?")),
)
_CUDA_TAG = re.compile(r"(?:^|/)cuda:(\d+\.\d+)")
_PYTHON_TAG = re.compile(r"(?:^|/)python:(3\.\d+)")


@dataclass(frozen=True)
class Framework:
    """The framework a source pins: which, its constraint, how it is installed, where it was read."""

    framework: str  # torch | paddle
    constraint: str  # the source's pin: "2.1.2+cu121", ">=1.9", "" (unpinned)
    installer: str  # conda | pip | image
    where: str
    spec: str  # the pin as written


def facts_inventory(found: Collected) -> Inventory:
    """The pins as an inventory (exact versions only), for :data:`envkit.drift.facts.FACTS`."""
    collector = Collector(found.origin, found.kind)
    for pin in found.conda:
        collector.add(pin.name, pin.version, "conda", line=None, build=pin.build, channel=pin.channel)
    for p in found.pip:
        collector.add(p.name, p.version, "pip", line=None)
    try:
        return collector.inventory(found.origin, facts_only=True)
    except InventoryError:
        return Inventory(found.origin, found.origin, found.kind, ())


def cuda_of_flavour(flavour: str | None) -> str | None:
    """``cu121`` -> ``12.1``, ``cu118`` -> ``11.8``, ``cpu`` -> ``cpu``; else None."""
    if flavour == "cpu":
        return "cpu"
    match = re.fullmatch(r"cu(\d+)(\d)", flavour or "")
    return f"{int(match[1])}.{match[2]}" if match else None


def index_flavour(found: Collected) -> tuple[str, str] | None:
    """The CUDA flavour a framework index names (``.../whl/cu121``), and where."""
    for url, where in [*found.index_urls, *found.extra_urls]:
        match = _INDEX_FLAVOUR.search(url)
        if match:
            return match[1], where
    return None


def image_facts(image: str | None, catalog: Catalog) -> tuple[str | None, str | None, str | None, str | None]:
    """(framework, version, cuda, python) a base image carries: the catalog's entry, else its tag."""
    if not image:
        return None, None, None, None
    known = catalog.base_image(
        image.split("/", 1)[1] if image.startswith("registry.baidubce.com/") else image
    )
    if known is not None:
        framework = {"pytorch": "torch", "paddle": "paddle"}.get(known.kind)
        return framework, known.framework_version, known.cuda or ("cpu" if framework else None), known.python
    for framework, pattern in _IMAGE_TAGS:
        match = pattern.search(image)
        if match:
            return framework, match[1], match[2] or "cpu", None
    cuda = _CUDA_TAG.search(image)
    python = _PYTHON_TAG.search(image)
    return None, None, cuda[1] if cuda else None, python[1] if python else None


def detect_frameworks(found: Collected) -> dict[str, Framework]:
    """The framework pins of the source, pip first (pip's files shadow conda's)."""
    chosen: dict[str, Framework] = {}
    for pin in found.conda:
        if pin.name in FRAMEWORK_CONDA:
            rest = pin.spec.split("::", 1)[-1][len(pin.name) :].split("[", 1)[0].strip()
            constraint = pin.version or rest
            chosen[FRAMEWORK_CONDA[pin.name]] = Framework(
                FRAMEWORK_CONDA[pin.name], constraint, "conda", pin.where, pin.spec
            )
    for p in found.pip:
        if p.name in FRAMEWORK_PIP:
            constraint = p.version or p.spec.split(";", 1)[0][len(p.name) :].strip()
            chosen[FRAMEWORK_PIP[p.name]] = Framework(
                FRAMEWORK_PIP[p.name], constraint, "pip", p.where, p.spec
            )
    return chosen


def release_in(releases: tuple[FrameworkRelease, ...], constraint: str) -> tuple[str | None, str]:
    """The release a constraint names: its exact version (public part), else the newest release the
    catalog has within the range; ("", why) when there is none. Returns (version, how)."""
    text = constraint.strip()
    exact = re.fullmatch(r"(==|=)?\s*(\d+(?:\.\d+)+)((?:\.post\d+)?(?:\+[A-Za-z0-9.]+)?)(?:[=\s].*)?", text)
    if exact and not (exact[1] == "=" and exact[2].count(".") < 2):
        return exact[2], "pinned"
    try:
        spec = SpecifierSet(_conda_range(text)) if text else SpecifierSet()
    except InvalidSpecifier:
        return None, f"cannot read the constraint {text!r}"
    fitting = [r for r in releases if not r.yanked and _in(r.version, spec)]
    if not fitting:
        return None, f"no release in the catalog satisfies {text!r}"
    best = max(fitting, key=lambda r: (r.verified, Version(r.version)))
    return best.version, f"the newest release the catalog has for {text or 'an unpinned framework'}"


def _conda_range(text: str) -> str:
    """conda's ``=1.13`` (1.13.*) and ``1.13.*`` as PEP 440."""
    if text.startswith("=") and not text.startswith("=="):
        return "==" + text[1:].split("=", 1)[0].rstrip(".*") + ".*"
    return text.split()[0] if " " in text and not any(c in text for c in "<>=!~") else text


def torch_flavour(inventory: Inventory) -> str | None:
    return FACTS["torch_cuda"](inventory, inventory.primary())


def paddle_flavour(inventory: Inventory) -> str | None:
    return FACTS["paddle_cuda"](inventory, inventory.primary())


def toolkit_cuda(inventory: Inventory) -> str | None:
    return FACTS["cuda_toolkit"](inventory, inventory.primary())


def cuda_evidence(
    framework: str,
    version: str,
    pin: Framework,
    inventory: Inventory,
    index: tuple[str, str] | None,
    catalog: Catalog,
) -> tuple[str, str] | None:
    """(CUDA, why) the framework's pin says, or None when it says nothing."""
    if pin.installer == "image":
        return None
    flavour = torch_flavour(inventory) if framework == "torch" else paddle_flavour(inventory)
    cuda = cuda_of_flavour(flavour)
    if cuda:
        return cuda, f"{pin.spec} ({pin.where})"
    named = cuda_of_flavour(index[0]) if index else None
    if pin.installer == "pip" and named and index and flavour in (None, "gpu"):
        return named, f"the {framework} index {index[0]} ({index[1]})"
    if pin.installer == "pip" and flavour in (None, "gpu"):
        release = catalog.framework_release(framework, version)
        if release and release.pypi_cuda:
            return (
                release.pypi_cuda,
                f"PyPI's Linux {pin.spec.split('=')[0]} {version} is built for CUDA {release.pypi_cuda}",
            )
        return None
    if framework == "torch" and pin.installer == "conda":
        toolkit = toolkit_cuda(inventory)
        if toolkit:
            return toolkit, f"the conda CUDA runtime pinned beside pytorch ({toolkit})"
        if re.search(r"=[^=\s\[]+[=\s]\S|build=", pin.spec.split("::")[-1]):
            return "cpu", f"the build of {pin.spec} names no CUDA envkit reads: cpu (--cuda to choose)"
        return "cpu", "conda's pytorch without pytorch-cuda or a CUDA build is the CPU build"
    return None


def _in(version: str, spec: SpecifierSet) -> bool:
    try:
        return Version(version) in spec
    except InvalidVersion:
        return False
