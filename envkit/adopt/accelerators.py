"""Accelerator stacks envkit does not build (ROCm, Ascend, Intel and Kunlun XPU): read, then refused.

envkit builds CUDA and CPU environments. A source whose framework is a ROCm build
(``torch==2.4.1+rocm6.1``, ``--index-url .../whl/rocm6.1``, ``FROM rocm/pytorch:...``), an Ascend
one (``torch-npu``, a CANN or ``ascendhub`` base image), or an XPU one (``+xpu``, ``.../whl/xpu``,
``paddlepaddle-xpu``) must not become a CPU spec: :func:`refuse_other_accelerators` refuses it
(exit 2) and names every piece of evidence and where it was read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envkit.adopt.evidence import AdoptError, Collected, CondaPin, PipPin, shown_item

__all__ = ["Accelerator", "other_accelerators", "refuse_other_accelerators"]


@dataclass(frozen=True)
class Accelerator:
    """One piece of evidence of a non-CUDA accelerator stack: which stack, what said so, where."""

    stack: str  # ROCm | Ascend | Intel XPU | Kunlun XPU
    what: str
    where: str

    def __str__(self) -> str:
        return f"{self.stack}: {self.what} ({self.where})"


_LOCAL = (("ROCm", re.compile(r"\+rocm\d", re.I)), ("Intel XPU", re.compile(r"\+xpu\b", re.I)))
_PACKAGES = {
    "torch-npu": "Ascend",
    "paddle-custom-npu": "Ascend",
    "pytorch-triton-rocm": "ROCm",
    "paddlepaddle-rocm": "ROCm",
    "paddlepaddle-dcu": "ROCm",
    "pytorch-triton-xpu": "Intel XPU",
    "paddlepaddle-xpu": "Kunlun XPU",
    "paddle-custom-xpu": "Kunlun XPU",
    "mindspore": "Ascend",  # Huawei's framework for Ascend (its CPU/GPU wheels envkit does not build)
}
_INDEXES = (
    ("ROCm", re.compile(r"/whl/(?:nightly/|test/)?rocm\d|repo\.radeon\.com", re.I)),
    (
        "Intel XPU",
        re.compile(r"/whl/(?:nightly/|test/)?xpu\b|pytorch-extension\.intel\.com/\S*\bxpu\b", re.I),
    ),
)
_IMAGES = (
    ("ROCm", re.compile(r"(?:^|/)rocm/|rocm\d|[-:_]rocm\b|[-_.]dcu\b", re.I)),
    ("Ascend", re.compile(r"ascend|(?:^|/)cann[:/]|[-_.]cann\d|[-_.:]npu\b", re.I)),
    ("Intel XPU", re.compile(r"(?:^|/)intel/intel-extension-for-pytorch:.*xpu|[-_.:]xpu\b", re.I)),
)


def other_accelerators(found: Collected) -> list[Accelerator]:
    """Every sign in ``found`` of an accelerator stack envkit does not build, in source order."""
    evidence: list[Accelerator] = []
    pins: list[PipPin | CondaPin] = [*found.pip, *found.conda]
    for pin in pins:
        stack = _PACKAGES.get(pin.name)
        if stack is None:
            stack = next((s for s, pattern in _LOCAL if pattern.search(pin.spec)), None)
        if stack:
            evidence.append(Accelerator(stack, shown_item(pin.spec), pin.where or found.origin))
    for url, where in [*found.index_urls, *found.extra_urls]:
        stack = next((s for s, pattern in _INDEXES if pattern.search(url)), None)
        if stack:
            evidence.append(Accelerator(stack, shown_item(url), where))
    image = found.base_image or ""
    stack = next((s for s, pattern in _IMAGES if pattern.search(image)), None)
    if stack:
        evidence.append(Accelerator(stack, f"FROM {shown_item(image)}", found.origin))
    for lost in found.lost:  # a build stage's base, an ENV, a script: what the final stage is built from
        stack = next((s for s, pattern in _IMAGES if pattern.search(lost.item)), None)
        stack = stack if lost.item.startswith("FROM ") else None
        stack = stack or ("Ascend" if _ASCEND_FILES.search(lost.item) else None)
        if stack:
            evidence.append(Accelerator(stack, lost.item, lost.where))
    return evidence


# CANN's install tree and installers (/usr/local/Ascend, Ascend-cann-toolkit_*.run, cann.sh)
_ASCEND_FILES = re.compile(r"/usr/local/Ascend\b|Ascend-cann-|\bcann\.sh\b|\bmindspore\b", re.I)


def refuse_other_accelerators(found: Collected) -> None:
    """:class:`AdoptError` (exit 2) when the source is a ROCm, Ascend or XPU stack."""
    evidence = other_accelerators(found)
    if not evidence:
        return
    stacks = sorted({e.stack for e in evidence})
    raise AdoptError(
        f"{found.origin}: an environment for {' and '.join(stacks)} ({'; '.join(map(str, evidence[:6]))}); "
        "envkit builds CUDA and CPU environments only, and a CPU spec would not be this one; "
        "nothing was written",
        hint="adopt it when envkit builds that stack; for a CUDA or CPU variant of the project, "
        "adopt the source that installs it (or write the spec with `envkit init --framework`)",
    )
