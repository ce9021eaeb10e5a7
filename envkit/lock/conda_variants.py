"""Which build of a chosen version fits the spec's CUDA: the scores and the pins of the conda solve.

Several builds of one version (cpu, cuda118, cuda120…) often fit a request; the solver alone may
pick any. :func:`variant_score` says how well a build fits the target CUDA, :func:`variant_pins`
names the builds that fit better than the solver's choice (``name ==version build``), and
:func:`variant_preference` hands the solver, before it solves, the build it should prefer where one
build of a package's highest version fits best: then one solve picks it and no pin is needed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import rattler

from envkit.lock.solver import CondaRequest
from envkit.lock.variant import CONDA_FRAMEWORKS

__all__ = ["Feasible", "variant_pins", "variant_preference", "variant_score"]

_CUDA_TAG = re.compile(r"(?:^|[_.-])cu(?:da)?_?(\d{2,3})(?=$|[_.-])")


async def variant_pins(
    gateway: rattler.Gateway,
    sources: list[rattler.Channel],
    platforms: list[Any],
    records: list[Any],
    specs: Sequence[str],
    cuda: str | None,
) -> list[str]:
    """``name ==version build`` pins where another build of the chosen version fits the CUDA better.

    A build is a candidate only when it could be installed beside the request at all: the
    request's own specs for its name match it, and each of its dependencies on a chosen name is
    met by some record of that name the request allows (a ``py311`` build is no candidate in a
    Python 3.10 lock, a CUDA build none when the spec asks for ``pytorch=*=cpu*``).
    """
    if not records:
        return []
    chosen = {r.name.normalized: r for r in records}
    result = await gateway.query(
        sources, platforms, sorted(chosen), recursive=False, channel_relations="disabled"
    )
    found = _by_name(result)
    fits = Feasible(specs, found)
    pins = []
    for name, candidates in found.items():
        record = chosen[name]
        same = [c for c in candidates if str(c.version) == str(record.version) and fits(c)]
        best = max(same, key=lambda c: _rank(c, cuda), default=None)
        if best is not None and _score(best, cuda) > _score(record, cuda):
            pins.append(f"{name} =={best.version} {best.build}")
    return sorted(pins)


async def variant_preference(
    gateway: rattler.Gateway,
    sources: list[rattler.Channel],
    platforms: list[Any],
    request: CondaRequest,
) -> list[Any]:
    """The records the first solve should prefer: the variant pins made before the solve.

    For each name the request asks for directly, and each framework name, that the previous lock
    does not already settle: among the builds of its highest version the request allows
    (:class:`Feasible`), the one build that fits the CUDA best, when the builds' fit differs and
    exactly one fits best. The solver takes a preferred record when it can (py-rattler's
    ``locked_packages``), so the solve picks what :func:`variant_pins` would have pinned and
    :func:`variant_pins` finds nothing left to pin; where it still does (the solver chose another
    version, a dependency's variant, several equally good builds), the caller solves again.
    """
    settled = {p.name for p in request.preferred}
    names = {n for s in request.specs if (n := _exact_name(s)) is not None} | CONDA_FRAMEWORKS
    names -= settled
    if not names:
        return []
    result = await gateway.query(
        sources, platforms, sorted(names), recursive=False, channel_relations="disabled"
    )
    found = _by_name(result)
    fits = Feasible(request.specs, found)
    preferred = []
    for name in sorted(found):
        allowed = [r for r in found[name] if fits(r)]
        if not allowed:
            continue
        highest = max(r.version for r in allowed)
        top = [r for r in allowed if str(r.version) == str(highest)]
        scores = [_score(r, request.cuda) for r in top]
        best = max(scores)
        if min(scores) < best and scores.count(best) == 1:
            preferred.append(top[scores.index(best)])
    return preferred


def _exact_name(spec: str) -> str | None:
    parsed = _match_spec(spec.split("::")[-1])
    return parsed.name.normalized if parsed is not None else None


class Feasible:
    """Whether a record could sit beside the request: its specs, and the dependencies we can check.

    ``known`` holds every record of some names (a gateway query's answer): a dependency on one of
    those names must be met by a record of it that the request's specs allow; a dependency on any
    other name (virtual packages, names not queried) is not judged.
    """

    def __init__(self, specs: Sequence[str], known: dict[str, list[Any]]) -> None:
        self._specs: dict[str, list[Any]] = {}
        for text in specs:
            spec = _match_spec(text.split("::")[-1])
            if spec is not None and spec.name.normalized is not None:
                self._specs.setdefault(spec.name.normalized, []).append(spec)
        self._known = known
        self._deps: dict[str, Any] = {}
        self._allowed: dict[str, list[Any]] = {}

    def __call__(self, record: Any) -> bool:
        if not self._allowed_by_specs(record):
            return False
        for text in record.depends:
            if text not in self._deps:
                self._deps[text] = _match_spec(str(text))
            dep = self._deps[text]
            name = dep.name.normalized if dep is not None else None
            if dep is None or name is None or name == record.name.normalized or name not in self._known:
                continue
            if not any(dep.matches(other) for other in self._allowed_records(name)):
                return False
        return True

    def _allowed_by_specs(self, record: Any) -> bool:
        return all(spec.matches(record) for spec in self._specs.get(record.name.normalized, ()))

    def _allowed_records(self, name: str) -> list[Any]:
        if name not in self._allowed:
            self._allowed[name] = [r for r in self._known[name] if self._allowed_by_specs(r)]
        return self._allowed[name]


def _match_spec(text: str) -> Any:
    """The parsed match spec, or None when rattler cannot read it (no evidence either way)."""
    try:
        return rattler.MatchSpec(text)
    except Exception:  # noqa: BLE001 - rattler's parse errors are not importable
        return None


def _rank(record: Any, cuda: str | None) -> tuple[int, int, str]:
    """The best build first: the best fit, then the lowest build number, then the build string."""
    return (_score(record, cuda), -int(record.build_number), str(record.build))


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
