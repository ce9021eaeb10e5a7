"""The CUDA-variant guard: a CPU framework build solved into a CUDA spec (or the reverse) is refused.

Users of pixi and conda-lock hit this silently: the solver is free to pick the CPU build of
pytorch when the CUDA one does not fit, and the image then trains on the CPU. ``check_variants``
reads what each locked framework package *is* (build string, ``+cpu`` / ``+cuXYZ`` local
version, CPU-only or GPU-only package names, CUDA runtime dependencies) and raises a
:class:`~envkit.errors.UsageError` (exit 2) naming the package, the build it got and the build
the spec needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from packaging.version import InvalidVersion, Version

from envkit._pep503 import canonicalize_name
from envkit.errors import UsageError
from envkit.lock.solver import CondaPackage, PipPackage

__all__ = ["CONDA_FRAMEWORKS", "Variant", "check_variants", "conda_variant", "pip_variant"]

Kind = Literal["cpu", "cuda"]

# Framework distributions whose builds come in CPU and CUDA variants.
CONDA_FRAMEWORKS = {"pytorch", "libtorch", "pytorch-cpu", "pytorch-gpu", "cpuonly", "paddlepaddle",
                     "paddlepaddle-gpu", "paddlepaddle-cuda"}  # fmt: skip
_PIP_FRAMEWORKS = {"torch", "paddlepaddle", "paddlepaddle-gpu"}
_CPU_NAMES = {"pytorch-cpu", "cpuonly", "paddlepaddle"}  # names that are CPU builds by definition
_GPU_NAMES = {"pytorch-gpu", "paddlepaddle-gpu", "paddlepaddle-cuda"}
_CUDA_DEPENDS = {"__cuda", "cudatoolkit", "cuda-version", "pytorch-cuda", "cuda-cudart", "cuda-runtime"}
_NVIDIA_WHEEL = re.compile(r"^(nvidia-.*-cu\d+|cuda-toolkit)\Z")


@dataclass(frozen=True)
class Variant:
    """How a framework build shows itself in a lock or an environment (CUDA, CPU, ROCm)."""

    package: str
    version: str
    build: str  # how the build shows itself: "cuda120_py311h_0", "+cpu", "paddlepaddle (CPU package)"
    kind: Kind
    manager: Literal["conda", "pip"]


def conda_variant(package: CondaPackage) -> Variant | None:
    """The variant of a locked conda framework package, or None when it is not one / says nothing."""
    name = package.name
    if name not in CONDA_FRAMEWORKS:
        return None
    kind: Kind | None = None
    if name in _CPU_NAMES:
        kind = "cpu"
    elif name in _GPU_NAMES or re.search(r"(^|_)cuda\d", package.build) or "_cuda" in package.build:
        kind = "cuda"
    elif re.search(r"(^|_)cpu(_|\Z)", package.build):
        kind = "cpu"
    else:
        depends = {d.split()[0] for d in package.depends}
        if depends & _CUDA_DEPENDS:
            kind = "cuda"
        elif "cpuonly" in depends:
            kind = "cpu"
    if kind is None:
        return None
    build = package.build if name not in _CPU_NAMES | _GPU_NAMES else f"{package.build} ({name})"
    return Variant(name, package.version, build, kind, "conda")


def pip_variant(package: PipPackage, depends: Iterable[str] = ()) -> Variant | None:
    """The variant of a locked pip framework distribution, or None when it cannot tell."""
    name = canonicalize_name(package.name)
    if name not in _PIP_FRAMEWORKS:
        return None
    if name == "paddlepaddle":
        return Variant(name, package.version, "paddlepaddle (the CPU package)", "cpu", "pip")
    if name == "paddlepaddle-gpu":
        return Variant(name, package.version, "paddlepaddle-gpu (a CUDA package)", "cuda", "pip")
    try:
        local = Version(package.version).local or ""
    except InvalidVersion:
        return None
    if local == "cpu" or local.startswith("cpu."):
        return Variant(name, package.version, "+cpu", "cpu", "pip")
    if re.fullmatch(r"cu\d+", local):
        return Variant(name, package.version, f"+{local}", "cuda", "pip")
    if any(_NVIDIA_WHEEL.match(canonicalize_name(d)) for d in depends):
        return Variant(name, package.version, "PyPI default (CUDA, nvidia-* wheels)", "cuda", "pip")
    return None


def check_variants(
    cuda: str,
    conda: Mapping[str, tuple[CondaPackage, ...]],
    pip: Mapping[str, tuple[PipPackage, ...]],
) -> None:
    """Raise when a framework build does not match the spec's ``cuda`` ("cpu" or "12.1")."""
    wanted: Kind = "cpu" if cuda == "cpu" else "cuda"
    found: list[tuple[str, Variant]] = []
    for platform, packages in sorted(conda.items()):
        found += [(platform, v) for p in packages if (v := conda_variant(p)) is not None]
    for platform, pip_packages in sorted(pip.items()):
        names = [p.name for p in pip_packages]  # nvidia-* wheels in the lock: the framework needs them
        found += [(platform, v) for p in pip_packages if (v := pip_variant(p, names)) is not None]
    wrong = [(platform, v) for platform, v in found if v.kind != wanted]
    if not wrong:
        return
    platform, variant = wrong[0]
    needed = "a CPU build" if wanted == "cpu" else f"a CUDA {cuda} build"
    got = "a CPU build" if variant.kind == "cpu" else "a CUDA build"
    others = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
    raise UsageError(
        f"{platform}: the {variant.manager} lock solved {variant.package} {variant.version} "
        f"to {got} ({variant.build}), but the spec needs {needed} (cuda: {cuda}){others}",
        hint=_hint(variant, wanted, cuda),
    )


def _hint(variant: Variant, wanted: Kind, cuda: str) -> str:
    if variant.manager == "pip":
        return (
            "pin the framework through `frameworks:` (envkit picks the wheel and index for the spec's CUDA)"
        )
    if wanted == "cuda":
        return (
            f"the channels offer no {variant.package} build for CUDA {cuda} that fits: add a channel "
            f"that has one (conda-forge, pytorch/nvidia), or pin it, e.g. '{variant.package}=*=cuda*'"
        )
    return f"pin the CPU build, e.g. '{variant.package}=*=cpu*' (or add `cpuonly` for the pytorch channel)"
