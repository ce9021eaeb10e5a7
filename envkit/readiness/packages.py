"""Every other package's GPU code against a target: "xformers 0.0.35: no kernel image for sm_70 ...".

The frameworks keep their own rules (:func:`envkit.readiness.rules.arch_findings`), and so do
NVIDIA's libraries (per-device dispatch: any code for the device will do). Every other library with
GPU code, attributed to its distribution by the payload (``RECORD`` / ``conda-meta`` / a JIT cache
entry), is judged file by file: a file with code for no fatbin of the target (no SASS that runs
there, no PTX to JIT from) is an error, some fatbins without code a warning, PTX only a warning
(JIT at first use). A package that ships one library per CUDA release and loads the one of the
framework's runtime (bitsandbytes' ``libbitsandbytes_cuda132.so``) is judged by that file.
"""

from __future__ import annotations

import re

from envkit.readiness.facts import LibraryScan, Owner, ReadinessFacts
from envkit.readiness.owners import package_of
from envkit.readiness.rules import ReadinessFinding, carried_text, ptx_text, runtime_cuda, split_fatbins
from envkit.readiness.targets import Target

__all__ = ["package_findings", "variant_skipped", "walk_findings"]

_VARIANT = re.compile(r"cuda(\d{2,3})")


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _runtime_tag(facts: ReadinessFacts) -> str | None:
    """The framework's CUDA as a library tag: 13.2 -> "132", 11.8 -> "118"."""
    for fw in facts.frameworks.values():
        cuda = runtime_cuda(fw)
        if cuda:
            return "".join(cuda.split(".")[:2])
    return None


def variant_skipped(facts: ReadinessFacts, lib: LibraryScan, owner: Owner) -> bool:
    """``lib`` is one of a package's per-CUDA builds, and another is the one the runtime loads."""
    tag = _runtime_tag(facts)
    m = _VARIANT.search(_base(lib.path))
    if tag is None or m is None or m.group(1) == tag:
        return False
    pattern = _VARIANT.sub("cuda*", _base(lib.path))
    siblings = [
        other
        for other in facts.libraries.values()
        if facts.owners.get(other.path) == owner and _VARIANT.sub("cuda*", _base(other.path)) == pattern
    ]
    return any((v := _VARIANT.search(_base(o.path))) and v.group(1) == tag for o in siblings)


def _one(lib: LibraryScan, owner: Owner, sm: str, cc: tuple[int, int]) -> ReadinessFinding | None:
    sass, jit, none, ptx = split_fatbins(lib, cc)
    who, base = owner.label, _base(lib.path)
    if not sass and not jit:
        return ReadinessFinding(
            "error",
            "package-no-kernel-image",
            f"{who}: no kernel image for {sm} in {base} (carries {carried_text(lib)}, {ptx_text(lib)})",
            None,
            lib.path,
            owner.label,
        )
    if none:
        return ReadinessFinding(
            "warning",
            "package-few-fatbins-without-code",
            f"{who}: {none} of {lib.fatbins} fatbins of {base} have no code for {sm} (carries "
            f"{carried_text(lib)}, {ptx_text(lib)}): their kernels fail with 'no kernel image' if used",
            None,
            lib.path,
            owner.label,
        )
    if jit:
        best = max(ptx, key=lambda a: int(re.sub(r"\D", "", a) or 0))
        return ReadinessFinding(
            "warning",
            "package-ptx-jit",
            f"{who}: no SASS for {sm} in {base} ({jit} of {lib.fatbins} fatbins); PTX {best} only: "
            "kernels JIT-compile at first use, minutes (then cached in ~/.nv/ComputeCache)",
            None,
            lib.path,
            owner.label,
        )
    return None


def package_findings(facts: ReadinessFacts, target: Target) -> list[ReadinessFinding]:
    """Per library of every other package: code for the target, or why not."""
    if target.cc is None:
        return []
    cc = target.cc
    sm = f"sm_{cc[0]}{cc[1]}"
    out = []
    for lib in facts.libraries.values():
        if lib.fatbins == 0:
            continue
        owner = package_of(facts, lib)
        if owner is None or variant_skipped(facts, lib, owner):
            continue
        found = _one(lib, owner, sm, cc)
        if found is not None:
            out.append(found)
    return out


def walk_findings(facts: ReadinessFacts) -> list[ReadinessFinding]:
    """A walk over the environment's shared objects that stopped early (a bound) is said, once."""
    walk = facts.walk
    if walk is None or not walk.cut:
        return []
    return [
        ReadinessFinding(
            "warning",
            "walk-cut",
            f"read {walk.shared_objects} shared objects of the environment and stopped (at most "
            f"{walk.limit} files, 300 s): the packages beyond were not checked",
        )
    ]
