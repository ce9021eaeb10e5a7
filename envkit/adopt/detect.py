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

from envkit.adopt.evidence import AdoptError, Collected, shown_item
from envkit.adopt.python_of import minor_in
from envkit.adopt.releases import Releases
from envkit.catalog import FrameworkRelease
from envkit.catalog.ngc import NgcImage
from envkit.drift.facts import FACTS
from envkit.errors import InventoryError
from envkit.inventory._collect import Collector
from envkit.inventory.models import Inventory

__all__ = [
    "ASK",
    "FRAMEWORK_CONDA",
    "FRAMEWORK_PIP",
    "Framework",
    "ImageFacts",
    "cpu_paddle_beside_cuda_torch",
    "cuda_evidence",
    "cuda_of_flavour",
    "detect_frameworks",
    "facts_inventory",
    "image_facts",
    "index_flavour",
    "older_than_catalog",
    "plumbing_cuda",
    "release_in",
    "stated_cuda",
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


_INDEX_HOSTS = {"torch": "download.pytorch.org", "paddle": "paddlepaddle.org.cn"}


def index_flavour(found: Collected, framework: str | None = None) -> tuple[str, str] | None:
    """The CUDA flavour a framework index names (``.../whl/cu121``), and where; with ``framework``,
    only that framework's own index (a Paddle index says nothing of torch's CUDA)."""
    host = _INDEX_HOSTS.get(framework or "", "")
    for url, where in [*found.index_urls, *found.extra_urls]:
        match = _INDEX_FLAVOUR.search(url)
        if match and host in url:
            return match[1], where
    return None


def cpu_paddle_beside_cuda_torch(
    found: Collected, frameworks: dict[str, Framework], image_cuda: str | None = None
) -> Framework | None:
    """The CPU ``paddlepaddle`` of a source whose torch is a CUDA build: a package beside the framework
    (the stack mixes CPU and GPU builds), not the framework whose CUDA the spec chooses."""
    paddle, torch = frameworks.get("paddle"), frameworks.get("torch")
    if paddle is None or torch is None or paddle.installer == "image":
        return None
    if torch.installer == "image":
        return paddle if image_cuda not in (None, "cpu") and _cpu_paddle(found, paddle) else None
    if not _cpu_paddle(found, paddle):
        return None
    inventory = facts_inventory(found)
    flavour = torch_flavour(inventory)
    index = index_flavour(found, "torch")
    if flavour == "cpu" or (index is not None and index[0] == "cpu"):
        return None
    cuda = flavour is not None or index is not None or torch.installer == "pip"
    return paddle if cuda or plumbing_cuda(found)[0] else None


def _cpu_paddle(found: Collected, paddle: Framework) -> bool:
    """Paddle's CPU package, and no Paddle CUDA index that would make it a GPU one."""
    if paddle_flavour(facts_inventory(found)) not in ("cpu", None) or "gpu" in paddle.spec.split("=")[0]:
        return False
    paddle_index = index_flavour(found, "paddle")
    return paddle_index is None or paddle_index[0] == "cpu"


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


def detect_frameworks(found: Collected) -> dict[str, Framework]:
    """The framework pins of the source, pip first (pip's files shadow conda's)."""
    chosen: dict[str, Framework] = {}
    for pin in found.conda:
        if pin.name in FRAMEWORK_CONDA:
            rest = pin.spec.split("::", 1)[-1][len(pin.name) :].split("[", 1)[0].strip()
            partial = rest.startswith("=") and not rest.startswith("==") and not pin.build
            # conda's `pytorch=2.0` is 2.0.* (the newest 2.0.x), not a release "2.0"
            constraint = rest if partial and pin.version.count(".") < 2 else (pin.version or rest)
            if pin.build and not pin.version:  # `pytorch=*=*cuda*`, `pytorch[build=*cuda*]`: any release
                constraint = ""
            ranged = not constraint or (constraint[:1] in "<>~!" and " " not in constraint)
            if (
                pin.name == "pytorch"
                and ranged
                and not pin.version
                and _from_pytorch_channel(found, pin.channel)
            ):
                constraint = f"{constraint},{_PYTORCH_CHANNEL_LAST}" if constraint else _PYTORCH_CHANNEL_LAST
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


# The pytorch conda channel's last release is 2.5.x: "2.5 will be the last release of PyTorch that will be
# published to the pytorch channel" (https://github.com/pytorch/pytorch/issues/138506); pytorch-cuda is
# that channel's package. An unpinned or ranged conda pytorch from it is one of those releases.
_PYTORCH_CHANNEL_LAST = "<2.6"


def _from_pytorch_channel(found: Collected, channel: str | None) -> bool:
    names = [c.lower().rstrip("/").rsplit("/", 1)[-1] for c in found.channels]
    if channel is not None:
        return channel.lower().rstrip("/").rsplit("/", 1)[-1] == "pytorch"
    return any(p.name == "pytorch-cuda" for p in found.conda) or names[:1] == ["pytorch"]


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
    hinted = _hinted_cuda(found) if framework == "torch" and found is not None else None
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
_PLUMBING = ("pytorch-cuda", "cudatoolkit", "cuda-version", "cuda-runtime", "cuda-toolkit", "cuda-cudart")
_SINGLE_CUDA = re.compile(r"^(?:==?)?\s*(\d+)\.(\d+)(?:\.\d+)*(?:\.\*|\*)?(?:[= \t].*)?\Z")
# the soumith/pytorch channels' feature packages of 2017-2018 (cuda80, cuda90, cuda92, cuda100): a CUDA
_LEGACY_CUDA = re.compile(r"cuda([7-9]|10)(\d)")


def plumbing_cuda(found: Collected) -> tuple[str | None, str]:
    """(CUDA, why) conda's CUDA plumbing beside pytorch names (``cudatoolkit==11.3.*``,
    ``pytorch-cuda=11.7.0``), or (None, why it asks for a CUDA build without naming one), or
    (None, "") when it says nothing. ``cpuonly`` or a cpu ``pytorch-mutex`` say cpu elsewhere."""
    pins = {p.name: p for p in found.conda}
    mutex = pins.get("pytorch-mutex")
    if "cpuonly" in pins or (mutex is not None and "cpu" in (mutex.build or mutex.spec.rsplit("=", 1)[-1])):
        return None, ""
    for name in _PLUMBING:
        pin = pins.get(name)
        if pin is None:
            continue
        rest = pin.spec.split("::", 1)[-1][len(pin.name) :].strip()
        single = _SINGLE_CUDA.match(pin.version or rest)
        if single:
            return f"{int(single[1])}.{single[2]}", f"{pin.spec} ({pin.where})"
        return None, f"{pin.spec} ({pin.where}) asks for a CUDA build but names no single CUDA version"
    for pin in found.conda:
        legacy = _LEGACY_CUDA.fullmatch(pin.name)
        if legacy:
            return (
                f"{int(legacy[1])}.{legacy[2]}",
                f"{pin.spec} ({pin.where}), the channel's CUDA feature package",
            )
    for name in ("pytorch-gpu",):
        if name in pins:
            return None, f"{pins[name].spec} ({pins[name].where}) is a CUDA build that names no CUDA version"
    if mutex is not None and "cuda" in mutex.spec:
        return None, f"{mutex.spec} ({mutex.where}) asks for a CUDA build but names no CUDA version"
    if found.cuda_requirement is not None and "pytorch" in pins:
        version, where = found.cuda_requirement
        return None, (
            f"{pins['pytorch'].spec} ({pins['pytorch'].where}) with the system requirement cuda {version} "
            f"({where}) is a CUDA build; the requirement names the driver (CUDA {version} or newer), "
            "not the CUDA of the build"
        )
    channels = {c.lower().rstrip("/").rsplit("/", 1)[-1] for c in found.channels}
    torch = pins.get("pytorch")
    if torch is not None and ({"pytorch", "nvidia"} & channels or (torch.channel or "").lower() == "pytorch"):
        return None, (
            f"{torch.spec} ({torch.where}) from the pytorch channel without cpuonly is its CUDA build, "
            "and the source names no CUDA version"
        )
    return None, ""


def stated_cuda(found: Collected, index: tuple[str, str] | None) -> str | None:
    """A CUDA the source pins whatever the framework release (conda plumbing, a framework index,
    a local version such as ``+cu121``): what an unpinned framework's release must have wheels for."""
    toolkit = toolkit_cuda(facts_inventory(found))
    if toolkit:
        return toolkit
    plumbing, _ = plumbing_cuda(found)
    if plumbing:
        return plumbing
    for pin in found.pip:
        local = re.search(r"\+(cu\d{3}|cpu)\b", pin.spec)
        if pin.name in FRAMEWORK_PIP and local:
            return cuda_of_flavour(local[1])
    if index:
        return cuda_of_flavour(index[0])
    hinted = _hinted_cuda(found)
    return hinted[0] if hinted else None


def _hinted_cuda(found: Collected) -> tuple[str, str] | None:
    """(CUDA, why) of the first wheel or find-links page built for a torch on a named CUDA."""
    for hint in found.torch_hints:
        cuda = cuda_of_flavour(hint.flavour)
        if cuda:
            return cuda, f"{hint.what} ({hint.where}) is built for torch {hint.torch} on {hint.flavour}"
    return None


def _in(version: str, spec: SpecifierSet) -> bool:
    try:
        return Version(version) in spec
    except InvalidVersion:
        return False
