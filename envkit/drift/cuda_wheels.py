"""The CUDA major of a package, from its name or (for toolkit-versioned wheels) its version.

PyPI's CUDA libraries say their CUDA major in one of two ways (source: the wheels on pypi.org):

- a name suffix: ``nvidia-cudnn-cu12``, ``nvidia-nccl-cu13``, ``nvidia-cuda-runtime-cu11``
  (any ``nvidia-*-cuNN``); ``nvidia-dali-cuda120``; ``cupy-cuda12x`` / ``cupy-cuda117``;
  ``jax-cuda12-plugin`` / ``jax-cuda12-pjrt``;
- conda's CUDA packages (``cudatoolkit 11.8``, ``cuda-cudart 12.1.105``, ``pytorch-cuda 12.1``)
  are versioned like the toolkit;
- from CUDA 13 on, no suffix: the toolkit's own components are versioned like the toolkit
  (``nvidia-cuda-runtime 13.0.96``, ``nvidia-cublas 13.1.0.3``, ``nvidia-nvjitlink 13.0.88``,
  ``cuda-toolkit 13.2.2``, which torch 2.15.0 requires). Other unsuffixed libraries carry their
  own version (``nvidia-cufft 12.0.0.61`` and ``nvidia-curand 10.4.0.35`` ship with CUDA 13) and
  say nothing about the CUDA major.

:func:`cuda_majors` groups an environment's packages by CUDA major; two majors in one
environment are a mixed CUDA stack (rule ``cuda-majors-mixed``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from envkit.inventory.models import Package

__all__ = ["cuda_major", "cuda_majors"]

_NAMED = (
    re.compile(r"^nvidia-[a-z0-9-]+-cu(\d{2})\Z"),
    re.compile(r"^nvidia-[a-z0-9-]+-cuda(\d{2})\d\Z"),  # nvidia-dali-cuda120
    re.compile(r"^cupy-cuda(\d{2})x\Z"),  # cupy-cuda12x
    re.compile(r"^cupy-cuda(\d{2})\d\Z"),  # cupy-cuda117 (11.7), cupy-cuda102 (10.2)
    re.compile(r"^jax-cuda(\d{2})-(?:plugin|pjrt)\Z"),
)
# Unsuffixed wheels whose version is the CUDA toolkit's (CUDA 13's component wheels).
_TOOLKIT_VERSIONED = re.compile(
    r"^(?:nvidia-cuda-(?:runtime|nvrtc|cupti|nvcc|cccl|crt|sanitizer-api|cuobjdump|nvdisasm|opencl)"
    r"|nvidia-(?:cublas|nvjitlink|nvtx|nvvm|nvml-dev)|cuda-toolkit"
    # conda's CUDA packages carry the toolkit version too (conda-forge cuda-* feedstocks, NVIDIA's
    # channel, anaconda cudatoolkit); pytorch-cuda 12.1 is the pytorch channel's CUDA selector
    # (not cuda-version: a metapackage that constrains the CUDA packages, no library; issue 34 class 17)
    r"|conda:cuda-(?:cudart|nvrtc|cupti|runtime|libraries|nvtx|nvcc)|conda:cudatoolkit"
    r"|pytorch-cuda|conda:pytorch-cuda)\Z"
)
_MAJOR = re.compile(r"^(\d{1,2})\.")
_PREFIXES = ("nvidia-", "cupy-cuda", "jax-cuda", "cuda-", "conda:cuda", "pytorch-cuda", "conda:pytorch-cuda")


_PLACEHOLDER = re.compile(r"^(?:\d+!)?0+(?:\.0+)*(?:[._-]?(?:a|b|rc|dev|alpha|beta)\.?\d*)*(?:\+.*)?\Z", re.I)


def placeholder(version: str) -> bool:
    """A stub's version, no fact: NGC images install ``nvidia-cuda-runtime-cu13 0.0.0a0`` (and the like)
    so that pip's dependencies are met by the image's own CUDA; its release is all zeros."""
    return _PLACEHOLDER.match(version) is not None


def cuda_major(project: str, version: str) -> int | None:
    """The CUDA major ``project`` (a PyPI name) at ``version`` is built for, or None if it does not say
    (or is a placeholder, :func:`placeholder`)."""
    if placeholder(version):
        return None
    for pattern in _NAMED:
        named = pattern.match(project)
        if named:
            return int(named[1])
    if _TOOLKIT_VERSIONED.match(project):
        major = _MAJOR.match(version)
        return int(major[1]) if major and int(major[1]) >= 9 else None
    return None


def cuda_majors(pkgs: Mapping[str, Package]) -> dict[int, list[Package]]:
    """Packages that say their CUDA major, by major (pip-installed, or conda packages of PyPI projects)."""
    found: dict[int, list[Package]] = {}
    candidates = sorted(p for p in pkgs if p.startswith(_PREFIXES))  # cheap: 400-package fleets
    for project in candidates:
        package = pkgs[project]
        major = cuda_major(project, package.version)
        if major is not None:
            found.setdefault(major, []).append(package)
    return found
