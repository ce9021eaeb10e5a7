"""The source's facts judged with the catalog: a framework's release, its CUDA, a base image's stack.

- torch: ``torch==2.1.2+cu121`` -> CUDA 12.1; a conda ``pytorch`` build ``py3.11_cuda12.1_...``
  or a ``pytorch-cuda=12.1`` pin -> 12.1; ``+cpu`` / a ``cpu`` build / ``cpuonly`` -> cpu; a PyPI
  ``torch`` without a local version -> the CUDA runtime wheels beside it, else the catalog's
  ``pypi_cuda`` for that release (PyPI's Linux wheel); a ``--index-url .../whl/cu118`` -> 11.8.
- paddle: ``paddlepaddle-gpu 2.6.0.post118`` -> paddle 2.6.0 on CUDA 11.8; a plain
  ``paddlepaddle-gpu`` -> its index (``packages/stable/cu126``) or the catalog's ``pypi_cuda``;
  ``paddlepaddle`` -> cpu.
- a base image: ``pytorch/pytorch:2.1.0-cuda12.1-...``, ``paddlepaddle/paddle:2.6.0-gpu-cuda11.8-...``,
  ``nvidia/cuda:11.8.0-...`` (the catalog's entry when it has one, else the tag).

What the pins say without the catalog (the frameworks, the CUDA a pin, index or conda plumbing
states) is :mod:`envkit.adopt.facts`'; the catalog's answers come in a
:class:`~envkit.adopt.releases.Releases`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envkit.adopt.evidence import AdoptError, Collected, shown_item
from envkit.adopt.facts import (
    Framework,
    cuda_of_flavour,
    hinted_cuda,
    index_flavour,
    paddle_flavour,
    plumbing_cuda,
    toolkit_cuda,
    torch_flavour,
)
from envkit.adopt.python_of import minor_in
from envkit.adopt.releases import Releases
from envkit.catalog import FrameworkRelease
from envkit.catalog.ngc import NgcImage
from envkit.inventory.models import Inventory

__all__ = [
    "ASK",
    "ImageFacts",
    "cuda_evidence",
    "image_facts",
    "older_than_catalog",
    "refuse_conflicting_build",
    "release_in",
]

_PRE = r"(?:(?:a|b|rc)\d+)?"
_IMAGE_TAGS = (
    ("torch", re.compile(rf"(?:^|/)pytorch/pytorch:(\d+\.\d+(?:\.\d+)?{_PRE})-cuda(\d+\.\d+)")),
    ("paddle", re.compile(rf"(?:^|/)paddlepaddle/paddle:(\d+\.\d+\.\d+{_PRE})(?:-gpu-cuda(\d+\.\d+))?")),
)
# other images that carry a framework and say so in the tag: runpod/pytorch:2.1.0-py3.10-cuda11.8.0-devel,
# pytorchlightning/pytorch_lightning:base-cuda-py3.10-torch2.0-cuda11.7.1, anibali/pytorch:1.8.1-cuda11.1
_TORCH_REPO = re.compile(r"(?:^|/)[\w.-]*(?:pytorch|torch)[\w.-]*(?::(?P<tag>\S*))?\Z")  # an empty tag too
# any image whose tag spells the torch release: modelscope:ubuntu20.04-cuda11.7.1-py38-torch2.0.1-tf1.15.5
_TORCH_TOKEN = re.compile(r"(?:^|[-_.])(?:torch|pytorch)-?(\d+\.\d+(?:\.\d+)?)(?![\d.])")
_TORCH_IN_TAG = re.compile(
    r"(?:^|[-_.])(?:torch|pytorch)-?(\d+(?:\.\d+){0,2})(?![\d.])|^(\d+\.\d+(?:\.\d+)?)(?=-)"
)
_CUDA_IN_TAG = re.compile(r"cuda-?(\d+\.\d+)")
_PY_IN_TAG = re.compile(r"(?:^|[-_.])py(?:thon)?-?(3\.\d+|3\d{1,2}(?!\d))")  # py3.10, python3.10, py310
_CU_IN_TAG = re.compile(r"(?:^|[-_.])cu(\d{3})(?![\d.])")
_PADDLE_IN_TAG = re.compile(rf"(?:^|[-_.])paddle(?:paddle)?-?(\d+\.\d+\.\d+{_PRE})(?![\d.])")
# images whose framework is a build of their own, or whose tag names no release
_OWN_BUILD = (
    (re.compile(r"(?:^|/)nvcr\.io/nvidia/pytorch:"), "torch", "NVIDIA's own torch build in an NGC image"),
    (
        re.compile(r"(?:^|/)nvcr\.io/nvidia/paddlepaddle:"),
        "paddle",
        "NVIDIA's own paddle build in an NGC image",
    ),
    (
        re.compile(r"(?:^|/)pytorch/pytorch(?::latest)?(?:@|\Z)"),
        "torch",
        "pytorch/pytorch without a release tag",
    ),
    (
        re.compile(r"(?:^|/)paddlepaddle/paddle(?::latest[\w.-]*)?(?:@|\Z)"),
        "paddle",
        "paddlepaddle/paddle without a release tag",
    ),
    (  # Paddle's application images (paddleocr-vl, paddlenlp, ...): they bring paddle, the tag no release
        re.compile(
            r"(?:^|/)paddlepaddle/(?!paddle(?:[:@]|\Z))[\w.-]+(?::(?![^@]*paddle(?:paddle)?-?\d)[^@]*)?(?:@|\Z)"
        ),
        "paddle",
        "a Paddle application image whose tag names no paddle release",
    ),
)
# a `cuda` repository's tag: its CUDA is the first X.Y whose minor is not zero-padded (CUDA writes
# 12.4, never 12.04; `22.04` in a mirror's `cuda:22.04_12.2` is Ubuntu's release, not CUDA's)
_CUDA_TAG = re.compile(r"(?:^|/)cuda:(?:[^@]*?[^\d.])?(\d+\.(?:0|[1-9]\d?))(?![\d])")
_PYTHON_TAG = re.compile(r"(?:^|/)python:(3\.\d+)|(?:^|/)python-?(3\.\d+)(?=[:@]|\Z)")  # python3.9:latest


@dataclass(frozen=True)
class ImageFacts:
    """What a base image carries: a framework (and its release, when the tag or catalog says), CUDA,
    Python; ``unknown`` says why a framework image's release cannot be told (an NGC build, no tag)."""

    framework: str | None = None
    version: str | None = None
    cuda: str | None = None
    python: str | None = None
    unknown: str | None = None
    ngc: NgcImage | None = None  # the NGC table's row of the image


def image_facts(image: str | None, releases: Releases) -> ImageFacts:
    """The facts a base image carries: the catalog's entry (read into ``releases``), else its tag."""
    if not image:
        return ImageFacts()
    known = releases.base_image
    if known is not None:
        framework = {"pytorch": "torch", "paddle": "paddle"}.get(known.kind)
        return ImageFacts(
            framework, known.framework_version, known.cuda or ("cpu" if framework else None), known.python
        )
    ngc = releases.ngc
    if ngc is not None:  # NVIDIA's own torch build: its facts from the catalog's NGC table
        return ImageFacts("torch", None, ".".join(ngc.cuda.split(".")[:2]), ngc.python, ngc.describe(), ngc)
    for pattern, framework, why in _OWN_BUILD:
        if pattern.search(image):
            cuda = _CUDA_IN_TAG.search(image)
            return ImageFacts(framework, None, cuda[1] if cuda else None, None, why)
    for framework, pattern in _IMAGE_TAGS:
        match = pattern.search(image)
        if match:
            python = _PY_IN_TAG.search(image.rsplit(":", 1)[-1])
            return ImageFacts(framework, match[1], match[2] or "cpu", _tag_python(python))
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    python = _PY_IN_TAG.search(tag)
    cuda = _CUDA_IN_TAG.search(tag) or _CU_IN_TAG.search(tag)
    paddle = _PADDLE_IN_TAG.search(
        tag
    )  # vendor images: paddlex/paddlex:paddlex3.1.2-paddlepaddle3.0.0-gpu-cuda11.8-...
    if paddle:
        return ImageFacts("paddle", paddle[1], _tag_cuda(cuda) or "cpu", _tag_python(python))
    repo = _TORCH_REPO.search(image.split("@", 1)[0])
    version = _TORCH_TOKEN.search(tag) or (_TORCH_IN_TAG.search(tag) if repo else None)
    if version:
        return ImageFacts("torch", version[1] or version[2], _tag_cuda(cuda) or "cpu", _tag_python(python))
    if repo:  # bitnami/pytorch:latest, huggingface/transformers-pytorch-gpu: torch, no release named
        why = f"a torch image whose tag ({tag or 'none'}) names no torch release"
        return ImageFacts("torch", None, _tag_cuda(cuda), _tag_python(python), why)
    cuda_tag = _CUDA_TAG.search(image)
    named = _PYTHON_TAG.search(image)  # python:3.12-slim, registry/.../python3.9:latest
    stated = (named[1] or named[2]) if named else _tag_python(python)  # uv:python3.12-bookworm
    return ImageFacts(None, None, cuda_tag[1] if cuda_tag else None, stated)


def _tag_python(match: re.Match[str] | None) -> str | None:
    """``py3.10`` / ``python3.10`` -> 3.10; ``py38`` -> 3.8, ``py310`` -> 3.10."""
    if match is None:
        return None
    return match[1] if "." in match[1] else f"3.{match[1][1:]}"


def _tag_cuda(match: re.Match[str] | None) -> str | None:
    """``cuda12.1`` -> 12.1, ``cu124`` -> 12.4."""
    if match is None:
        return None
    return match[1] if "." in match[1] else cuda_of_flavour(f"cu{match[1]}")


def release_in(
    releases: tuple[FrameworkRelease, ...],
    constraint: str,
    *,
    cuda: str | None = None,
    python: str | None = None,
) -> tuple[str | None, str]:
    """The release a constraint names: its exact version (public part; ``==1.10`` is the catalog's
    1.10.0), else the newest release the catalog has within the range that publishes wheels for
    ``cuda`` and ``python`` when the source pins them; (None, why) when there is none."""
    text = constraint.strip()
    exact = re.fullmatch(
        r"(==|=)?\s*(\d+(?:\.\d+)+(?:(?:a|b|rc)\d+)?)((?:\.post\d+)?(?:\+[A-Za-z0-9.]+)?)(?:[=\s].*)?", text
    )
    if exact and not (exact[1] == "=" and exact[2].count(".") < 2):
        same = next((r.version for r in releases if _equal(r.version, exact[2])), None)
        return same or exact[2], "pinned"
    try:
        spec = SpecifierSet(_conda_range(text)) if text else SpecifierSet()
    except InvalidSpecifier:
        return None, f"cannot read the constraint {text!r}"
    fitting = [r for r in releases if not r.yanked and _in(r.version, spec)]
    if not fitting:
        return None, f"no release in the catalog satisfies {text!r}"
    wanted = [
        r
        for r in fitting
        if (cuda is None or r.wheel_for(cuda) is not None) and (python is None or _has_python(r, python))
    ]
    pinned = " and ".join(
        p for p in (f"CUDA {cuda}" if cuda else "", f"Python {python}" if python else "") if p
    )
    if not wanted:
        return None, f"no release in the catalog within {text or 'any version'!r} has wheels for {pinned}"
    best = max(wanted, key=lambda r: (r.verified, Version(r.version)))
    newer = sorted((r.version for r in wanted if Version(r.version) > Version(best.version)), key=Version)
    with_pins = f" with wheels for {pinned}" if pinned else ""
    what = f"{text or 'an unpinned framework'}{with_pins}"
    if newer:  # never "the newest" when the catalog lists newer (unverified) releases
        return (
            best.version,
            f"the newest verified release the catalog has for {what} (newer, unverified: {', '.join(newer)})",
        )
    return best.version, f"the newest release the catalog has for {what}"


def _has_python(release: FrameworkRelease, python: str) -> bool:
    """``python`` is a minor version (``3.10``) or a range (``>=3.7,<3.9``) the release has a wheel in."""
    if re.fullmatch(r"3\.\d+", python):
        return python in release.python
    try:
        spec = SpecifierSet(python.replace(" ", ""))
    except InvalidSpecifier:
        return True
    return any(minor_in(spec, p) for p in release.python)


def older_than_catalog(releases: tuple[FrameworkRelease, ...], version: str) -> str | None:
    """The catalog's oldest release when ``version`` is older than it (envkit cannot tell its wheels)."""
    known = [r.version for r in releases]
    if not known or any(_equal(k, version) for k in known):
        return None
    try:
        oldest = min(known, key=Version)
        return oldest if Version(version) < Version(oldest) else None
    except InvalidVersion:
        return None


def _equal(a: str, b: str) -> bool:
    try:
        return Version(Version(a).public) == Version(Version(b).public)  # ==1.10 is 1.10.0 (PEP 440)
    except InvalidVersion:
        return a == b


def _conda_range(text: str) -> str:
    """conda's ``=1.13`` (1.13.*) and ``1.13.*`` as PEP 440."""
    if text.startswith("=") and not text.startswith("=="):
        return "==" + text[1:].split("=", 1)[0].rstrip(".*") + ".*"
    if re.fullmatch(r"\d+(?:\.\d+)*\.\*", text):
        return "==" + text
    return text.split()[0] if " " in text and not any(c in text for c in "<>=!~") else text


def cuda_evidence(
    framework: str,
    version: str,
    pin: Framework,
    inventory: Inventory,
    index: tuple[str, str] | None,
    releases: Releases,
    found: Collected | None = None,
) -> tuple[str, str] | None:
    """(CUDA, why) the framework's pin says, or None when it says nothing."""
    if pin.installer == "image":
        return None
    flavour = torch_flavour(inventory) if framework == "torch" else paddle_flavour(inventory)
    cuda = cuda_of_flavour(flavour)
    if cuda:
        if framework == "torch" and pin.installer == "conda" and found is not None:
            refuse_conflicting_build(found, cuda, pin)
        return cuda, f"{pin.spec} ({pin.where})"
    index = index_flavour(found, framework) if found is not None else index
    named = cuda_of_flavour(index[0]) if index else None
    if pin.installer == "pip" and named and index and flavour in (None, "gpu"):
        return named, f"the {framework} index {index[0]} ({index[1]})"
    hinted = hinted_cuda(found) if framework == "torch" and found is not None else None
    if pin.installer == "pip" and flavour in (None, "gpu") and hinted:
        return hinted
    if pin.installer == "pip" and flavour in (None, "gpu"):
        return _pypi_cuda(framework, version, pin, flavour, releases)
    if framework == "torch" and pin.installer == "conda":
        toolkit = toolkit_cuda(inventory)
        if toolkit:
            return toolkit, f"the conda CUDA runtime pinned beside pytorch ({toolkit})"
        plumbing, why = plumbing_cuda(found) if found is not None else (None, "")
        if plumbing:
            return plumbing, why
        if re.search(r"=[^=\s\[]+[=\s]\S|build=", pin.spec.split("::")[-1]) and "cuda" not in pin.spec:
            return "cpu", f"the build of {pin.spec} names no CUDA envkit reads: cpu (--cuda to choose)"
        if why:
            return ASK, why
        return "cpu", "conda's pytorch without pytorch-cuda or a CUDA build is the CPU build"
    return None


def refuse_conflicting_build(found: Collected, cuda: str, pin: Framework) -> None:
    """Conda's pytorch whose build says one CUDA (``pytorch=*=*cpu*``, ``...cuda11.8...``) beside
    CUDA plumbing that says another (``pytorch-cuda=12.1``, ``cpuonly``): two answers in one source;
    conda cannot solve both, and which one the team meant is not envkit's guess. Refused, listing both."""
    names = {p.name: p for p in found.conda}
    other: tuple[str, str] | None = None
    if cuda == "cpu":
        named, why = plumbing_cuda(found)
        if named is not None:
            other = (f"CUDA {named}", why)
    elif "cpuonly" in names:
        other = ("cpu", f"{names['cpuonly'].spec} ({names['cpuonly'].where})")
    else:
        named, why = plumbing_cuda(found)
        if named is not None and named != cuda:
            other = (f"CUDA {named}", why)
    if other is None:
        return
    said = "cpu" if cuda == "cpu" else f"CUDA {cuda}"
    raise AdoptError(
        f"{found.origin}: the source says two builds of pytorch: {said} ({shown_item(pin.spec)}, "
        f"{pin.where}) and {other[0]} ({other[1]}); conda cannot install both, and envkit does not "
        "choose one; nothing was written",
        hint="keep the one the project runs (drop the other pin) and rerun, or choose with --cuda",
    )


def _pypi_cuda(
    framework: str, version: str, pin: Framework, flavour: str | None, releases: Releases
) -> tuple[str, str] | None:
    """The CUDA of PyPI's Linux wheel of the release; a GPU package PyPI has no GPU wheel of
    (``paddlepaddle-gpu`` 3.x: its GPU wheels are only on Paddle's index, one per CUDA) asks."""
    release = releases.release(framework, version)
    if release and release.pypi_cuda:
        return (
            release.pypi_cuda,
            f"PyPI's Linux {pin.spec.split('=')[0]} {version} is built for CUDA {release.pypi_cuda}",
        )
    if flavour == "gpu":
        return ASK, (
            f"{pin.spec} ({pin.where}) is the GPU build, but PyPI has no GPU wheel of {framework} "
            f"{version} and the source names no {framework} index"
        )
    return None


ASK = "ask"
"""The CUDA the source asks for without naming it: envkit refuses with the choices, never assumes cpu."""


def _in(version: str, spec: SpecifierSet) -> bool:
    try:
        return Version(version) in spec
    except InvalidVersion:
        return False
