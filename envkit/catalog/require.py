"""The NVIDIA Container Toolkit's requirements (``NVIDIA_REQUIRE_*``): written once, evaluated once.

An image's ``NVIDIA_REQUIRE_*`` variables are checked by the toolkit when a container starts on a
GPU host (``docker run --gpus``): every variable is one requirement and all must hold; within one,
space-separated alternatives of comma-joined conditions ``PROPERTY OP VALUE`` with the properties
``cuda`` (the driver's CUDA version), ``driver``, ``arch`` (the device's compute capability,
``major.minor``) and ``brand``, versions compared component by component, evaluated per visible
GPU; a property the host cannot tell (no device visible) holds. The facts and their source are
``container_toolkit`` in ``data/gpu.yaml``. ``envkit render`` writes the expressions built here into
the image (:func:`nvidia_arch_env`), and ``envkit check`` evaluates them with :func:`satisfies`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from envkit.catalog.models import CudaRelease

__all__ = ["ARCH_ENV", "driver_cuda", "nvidia_arch_env", "satisfies", "toolkit_arch_requirement"]

ARCH_ENV = "NVIDIA_REQUIRE_ARCH"
PROPERTIES = ("cuda", "driver", "arch", "brand")
_CONDITION = re.compile(r"^([a-z]+)(!=|<=|>=|=|<|>)(.+)\Z")
_SM = re.compile(r"^sm_(\d+)a?\Z")


def _components(text: str) -> list[int]:
    if not re.fullmatch(r"[0-9.]+", text) or not re.search(r"\d", text):
        raise ValueError(f"{text!r} is not a version")
    parts = [int(p) for p in text.split(".") if p]
    while parts and parts[-1] == 0:  # 12.0 == 12 == 12.0.0, as the toolkit compares
        parts.pop()
    return parts


def compare_versions(left: str, op: str, right: str) -> bool:
    """libnvidia-container's ``dsl_compare_version``: numeric components, trailing zeros ignored."""
    a, b = _components(left), _components(right)
    width = max(len(a), len(b))
    a, b = a + [0] * (width - len(a)), b + [0] * (width - len(b))
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _holds(condition: str, values: dict[str, str | None]) -> bool:
    m = _CONDITION.match(condition)
    if m is None or m.group(1) not in PROPERTIES:
        raise ValueError(f"invalid requirement condition {condition!r}")
    prop, op, wanted = m.groups()
    have = values.get(prop)
    if have is None:  # the host cannot tell: the toolkit lets it pass
        return True
    if prop == "brand":
        if op not in ("=", "!="):
            raise ValueError(f"brand compares with = or != only: {condition!r}")
        return (have.lower() == wanted.lower()) == (op == "=")
    return compare_versions(have, op, wanted)


def satisfies(
    requirement: str,
    *,
    cuda: str | None = None,
    driver: str | None = None,
    arch: str | None = None,
    brand: str | None = None,
) -> bool:
    """Whether a host with these properties meets ``requirement`` (one ``NVIDIA_REQUIRE_*`` value)."""
    values = {"cuda": cuda, "driver": driver, "arch": arch, "brand": brand}
    alternatives = [a for a in requirement.split(" ") if a]
    if not alternatives:
        return True
    return any(all(_holds(c, values) for c in alt.split(",") if c) for alt in alternatives)


def toolkit_arch_requirement(release: CudaRelease | None) -> str | None:
    """``arch>=X.Y``: the oldest compute capability the CUDA release targets (CUDA 13: 7.5). Nothing
    built with it runs below (no SASS, no PTX the driver could JIT for an older device)."""
    if release is None:
        return None
    found = [int(m.group(1)) for a in release.archs if (m := _SM.match(a))]
    if not found:
        return None
    low = min(found)
    return f"arch>={low // 10}.{low % 10}"


def nvidia_arch_env(is_gpu: bool, release: CudaRelease | None, quote: Callable[[str], str]) -> dict[str, str]:
    """The image's ``NVIDIA_REQUIRE_ARCH`` (quoted for a Dockerfile by ``quote``); {} on CPU."""
    requirement = toolkit_arch_requirement(release) if is_gpu else None
    return {ARCH_ENV: quote(requirement)} if requirement else {}


def driver_cuda(driver: str, releases: Iterable[CudaRelease]) -> str | None:
    """The newest CUDA whose own driver is at most ``driver`` (what the toolkit reads as ``cuda``)."""
    fit = [r for r in releases if compare_versions(driver, ">=", r.min_driver)]
    best = max(fit, key=lambda r: _components(r.version), default=None)
    return best.version if best else None
