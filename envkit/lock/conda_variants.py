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
            name = spec.name.normalized if spec is not None else None
            if spec is not None and name is not None:
                self._specs.setdefault(name, []).append(spec)
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
