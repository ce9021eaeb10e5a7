"""What a source implies beyond its pins: the torch a wheel or find-links page was built for
(:mod:`envkit.adopt.wheel_names`), the image's release under an unpinned install of its own framework,
and the facts the source named (the spec's provenance header, :mod:`envkit.spec.provenance`)."""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envkit.adopt.detect import ImageFacts, release_in
from envkit.adopt.evidence import Collected, shown_item
from envkit.adopt.facts import Framework, index_flavour, stated_cuda
from envkit.adopt.python_of import python_statement
from envkit.adopt.wheel_names import TorchHint
from envkit.spec.provenance import SourceFact

__all__ = ["hinted_torch", "source_facts", "unpinned_on_image"]


def hinted_torch(found: Collected, frameworks: dict[str, Framework]) -> None:
    """A wheel or find-links page built for a torch release (``flash_attn-...+cu126torch2.6``,
    ``data.pyg.org/whl/torch-2.1.0+cu121.html``) says which torch the project runs: it is the torch
    of a source that pins none, narrows an unpinned ``torch``, and is reported when the pin differs."""
    for hint in found.torch_hints[:1]:
        torch = frameworks.get("torch")
        read = f"{hint.what} ({hint.where}) is built for torch {hint.torch}"
        if torch is None or not torch.constraint:
            spec = f"torch{hint.constraint}"
            frameworks["torch"] = Framework("torch", hint.constraint, "pip", hint.where, spec)
            said = "pins no torch" if torch is None else f"does not pin {torch.spec} ({torch.where})"
            found.notes.append(f"torch: the source {said}; {read}: read as {spec}")
        elif not _fits(release_in((), torch.constraint)[0], hint):
            found.lose(hint.where, hint.what, f"built for torch {hint.torch}; the source pins {torch.spec}")


def _fits(version: str | None, hint: TorchHint) -> bool:
    try:
        return version is not None and Version(Version(version).public) in SpecifierSet(hint.constraint)
    except (InvalidVersion, InvalidSpecifier):
        return True


def unpinned_on_image(found: Collected, frameworks: dict[str, Framework], image: ImageFacts) -> None:
    """``pip install paddlepaddle`` (no version) on an image that has that paddle: pip keeps the
    image's (already satisfied), so the image's release is the one the source runs."""
    pin = frameworks.get(image.framework or "")
    if pin is None or pin.constraint or not image.version or pin.installer != "pip":
        return
    gpu_package = pin.spec.split("[")[0].strip().endswith("-gpu")
    if image.framework == "paddle" and gpu_package != (image.cuda not in (None, "cpu")):
        return  # paddlepaddle on a GPU image (or -gpu on a CPU one) is another package beside it
    ranged = f"=={image.version}.*" if image.version.count(".") == 1 else image.version
    frameworks[pin.framework] = Framework(pin.framework, ranged, "image", pin.where, pin.spec)
    found.notes.append(
        f"{pin.framework}: {shown_item(pin.spec)} ({pin.where}) names no version, and the base image "
        f"{found.base_image} has {pin.framework} {image.version}: pip keeps it (already satisfied)"
    )


def source_facts(
    found: Collected,
    frameworks: dict[str, Framework],
    versions: dict[str, str],
    *,
    cuda: tuple[str, dict[str, str]] | None,
    image: ImageFacts,
) -> list[SourceFact]:
    """What the source named, for the spec's header (``envkit validate`` warns when the spec loses
    it): each framework and its release, the CUDA the source's builds are on (not a default cpu),
    the Python it states exactly."""
    facts = [
        SourceFact("framework", fw, frameworks[fw].where, version) for fw, version in sorted(versions.items())
    ]
    if cuda is not None and not cuda[1].get("cuda", "").startswith("no CUDA build pinned"):
        facts.append(SourceFact("cuda", cuda[0], cuda[1].get("cuda", found.origin)))
    elif cuda is None and (stated := stated_cuda(found, index_flavour(found)) or image.cuda) not in (
        None,
        "cpu",
    ):
        facts.append(SourceFact("cuda", str(stated), found.origin))
    python, where = python_statement(found, image.python)
    exact = re.fullmatch(r"[=\s]*(3\.\d+)(?:\.\d+|\.\*)?", python or "")
    if exact:
        facts.append(SourceFact("python", exact[1], where))
    return facts
