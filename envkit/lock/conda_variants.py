"""Which build of a chosen version fits the spec's CUDA: the scores and the pins of the conda solve.

Several builds of one version (cpu, cuda118, cuda120…) often fit a request; the solver alone may
pick any. :func:`variant_score` says how well a build fits the target CUDA, :func:`variant_pins`
names the builds that fit better than the solver's choice (``name ==version build``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import rattler

__all__ = ["variant_pins", "variant_score"]

_CUDA_TAG = re.compile(r"(?:^|[_.-])cu(?:da)?_?(\d{2,3})(?=$|[_.-])")


async def variant_pins(
    gateway: rattler.Gateway,
    sources: list[rattler.Channel],
    platforms: list[Any],
    records: list[Any],
    cuda: str | None,
) -> list[str]:
    """``name ==version build`` pins where another build of the chosen version fits the CUDA better."""
    if not records:
        return []
    chosen = {r.name.normalized: r for r in records}
    result = await gateway.query(
        sources, platforms, sorted(chosen), recursive=False, channel_relations="disabled"
    )
    pins = []
    for name, found in _by_name(result).items():
        record = chosen[name]
        same = [c for c in found if str(c.version) == str(record.version)]
        best = max(same, key=lambda c: (_score(c, cuda), -int(c.build_number), str(c.build)), default=None)
        if best is not None and _score(best, cuda) > _score(record, cuda):
            pins.append(f"{name} =={best.version} {best.build}")
    return sorted(pins)


def _by_name(result: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for subdir in result:
        for record in subdir:
            found.setdefault(record.name.normalized, []).append(record)
    return found


def _score(record: Any, cuda: str | None) -> int:
    return variant_score(str(record.build), [str(d) for d in record.depends], cuda)


def variant_score(build: str, depends: Sequence[str], cuda: str | None) -> int:
    """How well a build fits the target CUDA: 3 exact, 2 same major, 1 any GPU build, 0 CPU, -1 wrong CUDA.

    For a CPU target, CPU builds score 1 and GPU builds 0.
    """
    evidence: list[int] = []
    gpu = False
    for dep in depends:
        name, _, version = dep.partition(" ")
        if name == "cuda-version":
            gpu = True
            evidence.append(_cuda_version_fits(version.strip(), cuda))
        elif name in {"__cuda", "cudatoolkit", "cuda-cudart", "cuda-runtime"}:
            gpu = True
            evidence.append(1)
    tag = _CUDA_TAG.search(build)
    if tag:
        gpu = True
        evidence.append(_tag_fits(tag.group(1), cuda))
    if cuda is None:
        return 0 if gpu else 1
    if not gpu:
        return 0
    return -1 if -1 in evidence else max(evidence)


def _cuda_version_fits(spec: str, cuda: str | None) -> int:
    if cuda is None:
        return 0
    try:
        return 3 if rattler.VersionSpec(spec or "*").matches(rattler.Version(cuda)) else -1
    except Exception:  # noqa: BLE001 - unparsable constraint: no evidence either way
        return 1


def _tag_fits(tag: str, cuda: str | None) -> int:
    if cuda is None:
        return 0
    major, minor = cuda.split(".")
    if tag == major + minor:
        return 3
    if tag[: len(major)] == major and tag[len(major) :] in {"0", "x"}:
        return 2  # conda-forge's "cuda120" builds serve every 12.x
    return -1
