"""What a source says, read without the catalog: :func:`read_evidence` and the facts of its pins.

The reader of the source's format (:mod:`envkit.adopt.sources`) gives the typed evidence
(:class:`~envkit.adopt.evidence.Collected`: every pin, channel, index, image and Python with the
file and line, image tag or wheel it came from); the stacks envkit does not build (ROCm, Ascend,
XPU, nightlies, companions of another release) are refused here, before the catalog is asked
(:func:`envkit.adopt.releases.read_releases`) and the plan decides (:mod:`envkit.adopt.plan`).

The facts of the pins, also without the catalog: the frameworks pinned (:class:`Framework`,
:func:`detect_frameworks`), and the CUDA they state (:func:`stated_cuda`): ``torch==2.1.2+cu121``,
a framework index ``.../whl/cu118``, conda's ``pytorch-cuda=12.1`` / ``cudatoolkit`` plumbing
(:func:`plumbing_cuda`), a wheel built for a named CUDA. The CUDA facts are
:data:`envkit.drift.facts.FACTS` over an inventory built from the pins (:func:`facts_inventory`), so
``envkit diff`` and ``envkit init --from`` read a CUDA flavour the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envkit._io import read_text_bounded
from envkit.adopt.accelerators import refuse_other_accelerators
from envkit.adopt.companions import refuse_mismatched_companions
from envkit.adopt.evidence import AdoptError, Collected
from envkit.adopt.nightly import refuse_nightly
from envkit.adopt.options import AdoptOptions
from envkit.adopt.sources import (
    Read,
    SourceText,
    is_pep621_project,
    is_pixi_manifest,
    read_pixi_toml,
    read_pyproject_uv,
    read_source,
)
from envkit.adopt.sources.requirements import MAX_TEXT_BYTES
from envkit.drift.facts import FACTS
from envkit.errors import InventoryError
from envkit.inventory import Collector
from envkit.inventory.models import Inventory

__all__ = [
    "FRAMEWORK_CONDA",
    "FRAMEWORK_PIP",
    "Collected",
    "Framework",
    "cpu_paddle_beside_cuda_torch",
    "cuda_of_flavour",
    "detect_frameworks",
    "facts_inventory",
    "hinted_cuda",
    "index_flavour",
    "paddle_flavour",
    "plumbing_cuda",
    "read_evidence",
    "stated_cuda",
    "toolkit_cuda",
    "torch_flavour",
]


def read_evidence(source: str, options: AdoptOptions | None = None) -> Read:
    """What the source says (a pixi manifest read here, every other kind by :func:`read_source`),
    and its inventory when ``envkit diff`` reads it; a ROCm/Ascend/XPU stack refused (exit 2)."""
    options = options or AdoptOptions()
    found, inventory = _read(source, options)
    refuse_other_accelerators(found)  # a ROCm/Ascend/XPU stack is never written as a CPU spec
    refuse_nightly(found)  # nor a nightly build as the newest release
    refuse_mismatched_companions(found)  # nor torch==2.1.2 beside torchaudio==2.2.0 as either
    return found, inventory


def _read(source: str, options: AdoptOptions) -> Read:
    path = Path(source)
    if path.name in ("pixi.toml", "pyproject.toml") and path.is_file():
        text = read_text_bounded(path, MAX_TEXT_BYTES)
        manifest = SourceText(path, text, source, environment=options.environment)
        if is_pixi_manifest(path.name, text):
            return read_pixi_toml(manifest)
        if is_pep621_project(path.name, text) and not options.environment:
            return read_pyproject_uv(manifest)
    if options.environment:
        raise AdoptError(
            f"--environment {options.environment}: {source} has no environments (a pixi manifest has)",
            hint="drop --environment",
        )
    return read_source(source, image_reader=options.image_reader)


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


def torch_flavour(inventory: Inventory) -> str | None:
    return FACTS["torch_cuda"](inventory, inventory.primary())


def paddle_flavour(inventory: Inventory) -> str | None:
    return FACTS["paddle_cuda"](inventory, inventory.primary())


def toolkit_cuda(inventory: Inventory) -> str | None:
    return FACTS["cuda_toolkit"](inventory, inventory.primary())


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
    hinted = hinted_cuda(found)
    return hinted[0] if hinted else None


def hinted_cuda(found: Collected) -> tuple[str, str] | None:
    """(CUDA, why) of the first wheel or find-links page built for a torch on a named CUDA."""
    for hint in found.torch_hints:
        cuda = cuda_of_flavour(hint.flavour)
        if cuda:
            return cuda, f"{hint.what} ({hint.where}) is built for torch {hint.torch} on {hint.flavour}"
    return None
