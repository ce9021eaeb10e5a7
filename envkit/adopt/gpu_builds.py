"""Packages that are a GPU build by name (``onnxruntime-gpu``, ``tensorrt``, ``cupy-cuda12x``,
``cudf-cu12``, ``nvidia-*-cu12``, ``flash-attn``, ``faiss-gpu``, ``jax[cuda12]``) on a spec whose
CUDA is ``cpu``: the adopted image has no CUDA libraries, so each either runs on the CPU
(``onnxruntime-gpu`` falls back to its CPU provider) or fails to load. ``envkit init --from`` still
writes the spec the source's framework facts give (the package is carried as written), and says so
as a warning naming each package and where it came from, with the flag that builds on CUDA instead
(``--cuda``): a careful user reading the source would not expect a GPU to be unused in silence."""

from __future__ import annotations

import re

from envkit.adopt.evidence import Collected, shown_item

__all__ = ["gpu_builds_on_cpu"]

_GPU_BUILD = re.compile(
    r"^(?:onnxruntime-gpu|onnxruntime-directml-gpu|tensorrt(?:-cu1\d)?(?:-libs|-bindings)?|tensorrt-llm"
    r"|cupy-cuda\d+x?|nvidia-dali-cuda\d+|faiss-gpu(?:-cu1\d)?|flash-attn|mamba-ssm|causal-conv1d"
    r"|jax-cuda\d+-(?:plugin|pjrt)|[a-z0-9-]+-cu1[1-3]|nvidia-[a-z0-9-]+-cu1[1-3])\Z"
)
_CUDA_EXTRA = re.compile(r"\[[^\]]*\b(?:cuda\d*(?:[-_]\w+)?|and-cuda|gpu)\b[^\]]*\]", re.I)


def gpu_builds_on_cpu(found: Collected, cuda: str) -> list[str]:
    """A warning for each GPU-build package the source pins, when the spec's CUDA is ``cpu``."""
    if cuda != "cpu":
        return []
    return [
        f"{shown_item(pin.spec)} ({pin.where}) is a GPU build, carried on a cpu spec: the image has "
        "no CUDA libraries, so it runs on the CPU or fails to load its CUDA code; rerun with "
        "--cuda VERSION to build on a CUDA image, or pin its CPU build"
        for pin in found.pip
        if _GPU_BUILD.match(pin.name) or _CUDA_EXTRA.search(pin.spec.split(";", 1)[0])
    ]
