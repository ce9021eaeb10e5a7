"""The NVIDIA Container Toolkit's requirements (``NVIDIA_REQUIRE_*``): written once, evaluated once.

An image's ``NVIDIA_REQUIRE_*`` variables are checked by the toolkit when a container starts on a
GPU host (``docker run --gpus``): every variable is one requirement and all must hold; within one,
space-separated alternatives of comma-joined conditions ``PROPERTY OP VALUE`` with the properties
``cuda`` (the driver's CUDA version), ``driver``, ``arch`` (the device's compute capability,
``major.minor``) and ``brand``, versions compared component by component, evaluated per visible
GPU; a property the host cannot tell (no device visible) holds. The facts and their source are
``container_toolkit`` in ``data/gpu.yaml``. ``envkit render`` writes the expressions built here into
the image (:func:`nvidia_arch_env`), and ``envkit check`` evaluates them with :func:`satisfies`.

The architecture constraint comes from what the framework's fatbins carry (``images/NAME/gpu-code.json``,
written by ``envkit lock``: :func:`gpu_code_arch_requirement`), else from the CUDA release's oldest
target (:func:`toolkit_arch_requirement`). Which fatbins run on a compute capability is decided here
once (:func:`sass_runs`, :func:`split_groups`, :func:`framework_runs`): ``envkit check``'s rules use
the same functions, so the expression and the verdicts cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envkit._safe import one_line
from envkit.catalog.models import CudaRelease

__all__ = [
    "ARCH_ENV",
    "FRAMEWORK_DISTS",
    "ArchRequirement",
    "driver_cuda",
    "fatbin_arch_requirement",
    "framework_runs",
    "gpu_code_arch_requirement",
    "nvidia_arch_env",
    "parse_arch",
    "sass_runs",
    "satisfies",
    "split_groups",
    "toolkit_arch_requirement",
]

ARCH_ENV = "NVIDIA_REQUIRE_ARCH"
PROPERTIES = ("cuda", "driver", "arch", "brand")
_CONDITION = re.compile(r"^([a-z]+)(!=|<=|>=|=|<|>)(.+)\Z")
_SM = re.compile(r"^sm_(\d+)a?\Z")
_ARCH = re.compile(r"^(sm|compute)_(\d+)(a?)\Z")
FRAMEWORK_DISTS = frozenset({"torch", "pytorch", "paddlepaddle-gpu", "paddlepaddle"})  # PyPI and conda names
GPU_CODE_KIND = "envkit-gpu-code"  # images/NAME/gpu-code.json (envkit.readiness.lockcheck writes it)
GPU_CODE_VERSION = 1
Groups = Iterable[tuple[Collection[str], int]]  # a library's fatbins: (the archs one carries, how many)


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


def nvidia_arch_env(
    is_gpu: bool, release: CudaRelease | None, quote: Callable[[str], str], derived: str | None = None
) -> dict[str, str]:
    """The image's ``NVIDIA_REQUIRE_ARCH`` (quoted for a Dockerfile by ``quote``); {} on CPU.
    ``derived``: the expression the framework's fatbins give (:func:`gpu_code_arch_requirement`),
    else the CUDA release's oldest target."""
    requirement = (derived or toolkit_arch_requirement(release)) if is_gpu else None
    return {ARCH_ENV: quote(requirement)} if requirement else {}


# -- which fatbins run on a compute capability (the one rule render and check share) ------------------
def parse_arch(name: str) -> tuple[str, int, int, bool] | None:
    """``sm_90a`` -> ("sm", 9, 0, True); ``compute_80`` -> ("compute", 8, 0, False); else None."""
    m = _ARCH.match(name)
    if not m:
        return None
    n = int(m.group(2))
    return m.group(1), n // 10, n % 10, m.group(3) == "a"


def sass_runs(sass: str, cc: tuple[int, int]) -> bool:
    """SASS runs on the same major at an equal or higher minor; 'a' SASS on its exact capability only."""
    parsed = parse_arch(sass)
    if parsed is None or parsed[0] != "sm":
        return False
    _, major, minor, specific = parsed
    return (major, minor) == cc if specific else major == cc[0] and minor <= cc[1]


def ptx_for(archs: Iterable[str], cc: tuple[int, int]) -> list[str]:
    """PTX the driver can JIT for ``cc``: compute_XY with X.Y <= the device's capability."""
    return [a for a in archs if (p := parse_arch(a)) is not None and p[0] == "compute" and (p[1], p[2]) <= cc]


def split_groups(groups: Groups, cc: tuple[int, int]) -> tuple[int, int, int, set[str]]:
    """Fatbins with SASS for ``cc``, with only PTX to JIT, with nothing; the PTX that would JIT."""
    sass = jit = none = 0
    ptx: set[str] = set()
    for archs, n in groups:
        if any(sass_runs(a, cc) for a in archs):
            sass += n
        elif found := ptx_for(archs, cc):
            jit += n
            ptx.update(found)
        else:
            none += n
    return sass, jit, none, ptx


def framework_runs(groups: Groups, fatbins: int, cc: tuple[int, int]) -> bool:
    """A framework library runs on ``cc`` unless most of its fatbins have no code for it (the run-time
    'no kernel image'); a few fatbins without (a bundled third-party kernel) do not stop it."""
    sass, jit, none, _ = split_groups(groups, cc)
    return not (none * 2 > fatbins or (none and not sass and not jit))


def _cc_text(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def fatbin_arch_requirement(
    libraries: Sequence[tuple[Sequence[tuple[Collection[str], int]], int]],
) -> str | None:
    """The ``arch`` expression admitting exactly the compute capabilities on which every library (its
    fatbin groups, its fatbin count) runs by :func:`framework_runs`; None without fatbins.

    The verdict changes only where an arch of the libraries starts or ends: ``sm_XY`` at X.Y and
    (X+1).0, ``sm_XYa`` at X.Y and X.(Y+1), ``compute_XY`` at X.Y. So it is evaluated once per such
    point, and the points where it holds joined into ranges: ``arch>=7.5,arch<11.0 arch>=12.0,arch<13.0``.
    """
    libraries = [(list(groups), n) for groups, n in libraries if n > 0]
    points: set[tuple[int, int]] = set()
    for groups, _ in libraries:
        for archs, _n in groups:
            for arch in archs:
                parsed = parse_arch(arch)
                if parsed is None:
                    continue
                kind, major, minor, specific = parsed
                points.add((major, minor))
                if kind == "sm":
                    points.add((major, minor + 1) if specific else (major + 1, 0))
    if not points:
        return None
    ranges: list[tuple[tuple[int, int], tuple[int, int] | None]] = []
    start: tuple[int, int] | None = None
    for cc in sorted(points):
        runs = all(framework_runs(groups, n, cc) for groups, n in libraries)
        if runs and start is None:
            start = cc
        elif not runs and start is not None:
            ranges.append((start, cc))
            start = None
    if start is not None:
        ranges.append((start, None))
    if not ranges:  # code for no device at all: refuse every one (no capability is below 0.0)
        return "arch<0.0"
    return " ".join(
        f"arch>={_cc_text(lo)}" + (f",arch<{_cc_text(hi)}" if hi is not None else "") for lo, hi in ranges
    )


@dataclass(frozen=True)
class ArchRequirement:
    """The image's architecture constraint derived from ``gpu-code.json``, and what it came from
    (``value`` None: nothing to derive it from; ``source`` says why)."""

    value: str | None
    source: str


def _field(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ValueError(f"{where} is not {'an' if name[0] in 'aeiou' else 'a'} {name}")
    return value


def _framework_libraries(
    wheel: Mapping[str, object], where: str
) -> list[tuple[str, list[tuple[list[str], int]], int]]:
    out = []
    for j, lib in enumerate(_field(wheel.get("libraries", []), list, f"{where}.libraries")):
        at = f"{where}.libraries[{j}]"
        _field(lib, dict, at)
        member = _field(lib.get("member"), str, f"{at}.member")
        fatbins = _field(lib.get("fatbins", 0), int, f"{at}.fatbins")
        groups = []
        for k, group in enumerate(_field(lib.get("groups", []), list, f"{at}.groups")):
            _field(group, dict, f"{at}.groups[{k}]")
            archs = _field(group.get("archs"), list, f"{at}.groups[{k}].archs")
            if not all(isinstance(a, str) for a in archs):
                raise ValueError(f"{at}.groups[{k}].archs is not a list of names")
            groups.append((archs, _field(group.get("fatbins"), int, f"{at}.groups[{k}].fatbins")))
        if fatbins < 0 or any(n < 0 for _, n in groups) or sum(n for _, n in groups) > fatbins:
            raise ValueError(f"{at}: its groups hold more fatbins than its {fatbins}")
        if lib.get("problem") is not None:  # not read: the caller says so
            member, fatbins, groups = f"{member}: {lib.get('problem')}", -1, []
        if fatbins:
            out.append((member, groups, fatbins))
    return out


def gpu_code_arch_requirement(doc: Any, pinned: Collection[str] | None = None) -> ArchRequirement:
    """The ``arch`` expression the framework wheels of a ``gpu-code.json`` document carry code for.

    ``pinned``: the sha256 values the lock pins; a framework wheel recorded with another is a file
    from an older lock (value None, said in ``source``). A malformed document raises ValueError naming
    the field."""
    _field(doc, dict, "the document")
    if doc.get("kind") != GPU_CODE_KIND or doc.get("version") != GPU_CODE_VERSION:
        raise ValueError(f"not an {GPU_CODE_KIND} version {GPU_CODE_VERSION} document")
    libraries: list[tuple[list[tuple[list[str], int]], int]] = []
    named = []
    for i, wheel in enumerate(_field(doc.get("wheels", []), list, "wheels")):
        _field(wheel, dict, f"wheels[{i}]")
        name = _field(wheel.get("name"), str, f"wheels[{i}].name")
        if name.lower() not in FRAMEWORK_DISTS:
            continue
        version = _field(wheel.get("version"), str, f"wheels[{i}].version")
        sha = _field(wheel.get("sha256"), str, f"wheels[{i}].sha256")
        if pinned is not None and sha not in pinned:
            return ArchRequirement(
                None, f"gpu-code.json records {name} {version} with a sha256 the lock does not pin (relock)"
            )
        found = _framework_libraries(wheel, f"wheels[{i}]")
        unread = [m for m, _, n in found if n < 0]
        if wheel.get("problem") is not None or unread:
            why = wheel.get("problem") or ", ".join(unread)
            return ArchRequirement(
                None, f"{name} {version} in gpu-code.json was not read whole ({one_line(str(why))})"
            )
        linked = wheel.get("linked")
        if linked is not None:  # what the framework loads at import (the rest: on first use of an op)
            _field(linked, list, f"wheels[{i}].linked")
            found = [lib for lib in found if lib[0] in linked]
        libraries += [(groups, n) for _, groups, n in found]
        named.append(
            f"{name} {version}: {', '.join(m.rsplit('/', 1)[-1] for m, _, _ in found) or 'no GPU code'}"
        )
    if not named:
        return ArchRequirement(None, "gpu-code.json records no framework wheel (torch, paddlepaddle-gpu)")
    value = fatbin_arch_requirement(libraries)
    if value is None:
        return ArchRequirement(
            None, f"the framework wheels in gpu-code.json carry no GPU code ({'; '.join(named)})"
        )
    return ArchRequirement(value, f"the fatbins of {'; '.join(named)} (gpu-code.json)")


def driver_cuda(driver: str, releases: Iterable[CudaRelease]) -> str | None:
    """The newest CUDA whose own driver is at most ``driver`` (what the toolkit reads as ``cuda``)."""
    fit = [r for r in releases if compare_versions(driver, ">=", r.min_driver)]
    best = max(fit, key=lambda r: _components(r.version), default=None)
    return best.version if best else None
