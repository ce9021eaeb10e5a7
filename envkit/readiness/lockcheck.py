"""Will a lock run on the team's GPUs? Decided at ``envkit lock`` time, before any build.

``envkit lock`` of a spec with ``gpus:`` finds each locked wheel and conda package at hand (the
project's wheelhouse, ``~/.conda/pkgs``, ``--archives DIR``; a file counts only when its sha256 is
one the lock pins), reads its GPU code without installing (:mod:`envkit.readiness.wheels`) and
writes ``images/NAME/gpu-code.json``: per package, per shared object, the fatbins' SASS/PTX and
arch groups. ``envkit check --lock PATH`` reads that file back (bounded, shape-checked, each
package's sha256 checked against ``requirements.lock`` / ``conda-lock.yml`` beside it) and gives
the same verdicts, for a lock someone else made. Its claims are as honest as whoever wrote the
file: they are parsed, never run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from envkit._io import TooLarge, load_json_bounded, read_text_bounded
from envkit.catalog import Catalog
from envkit.catalog.require import ARCH_ENV, ArchRequirement, gpu_code_arch_requirement, satisfies
from envkit.errors import UsageError
from envkit.lock.lockset import GPU_CODE
from envkit.lock.solver import CondaPackage, PipPackage
from envkit.readiness.facts import FrameworkFacts, Loaded, ReadinessError, ReadinessFacts, parse_library
from envkit.readiness.rules import ReadinessFinding, driver_findings, summarize
from envkit.readiness.targets import Target
from envkit.readiness.wheels import WheelCode, scan_conda, scan_wheel, wheel_findings

__all__ = [
    "GPU_CODE",
    "LockGpuCode",
    "LockVerdict",
    "dump",
    "image_arch_requirement",
    "lock_gpu_code",
    "lock_verdicts",
    "read_gpu_code",
]

KIND = "envkit-gpu-code"
VERSION = 1
MAX_GPU_CODE = 16 << 20


@dataclass(frozen=True)
class LockGpuCode:
    """The GPU code of a lock's wheels, and the wheels that could not be read (name, version, why)."""

    cuda: str | None
    gpus: tuple[str, ...]
    wheels: tuple[WheelCode, ...]
    not_scanned: tuple[tuple[str, str, str], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "kind": KIND,
            "version": VERSION,
            "cuda": self.cuda,
            "gpus": list(self.gpus),
            "wheels": [w.to_json() for w in self.wheels],
            "not_scanned": [{"name": n, "version": v, "why": why} for n, v, why in self.not_scanned],
        }


@dataclass(frozen=True)
class LockVerdict:
    """One target's verdict on a lock's wheels."""

    target: Target
    status: str
    findings: tuple[ReadinessFinding, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "target": {"label": self.target.label, "gpu": self.target.gpu},
            "status": self.status,
            "findings": [f.to_json() for f in self.findings],
        }


ARCHIVES = ("*.whl", "*.conda", "*.tar.bz2")


def _filename(pkg: PipPackage | CondaPackage) -> str:
    return unquote(urlsplit(pkg.url).path.rsplit("/", 1)[-1])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _at_hand(dirs: Sequence[Path]) -> dict[str, list[Path]]:
    """Package archives by name in ``dirs`` and one level down (a wheelhouse's entries, a conda
    package cache)."""
    found: dict[str, list[Path]] = {}
    for d in dirs:
        for path in [
            p for pattern in ARCHIVES for p in [*sorted(d.glob(pattern)), *sorted(d.glob(f"*/{pattern}"))]
        ]:
            if path.is_file() and not path.is_symlink():
                found.setdefault(path.name, []).append(path)
    return found


def lock_gpu_code(
    packages: Sequence[PipPackage | CondaPackage], cuda: str | None, gpus: Sequence[str], dirs: Sequence[Path]
) -> LockGpuCode:
    """Read every locked wheel and conda package at hand (its sha256 one the lock pins), uninstalled."""
    at_hand = _at_hand(dirs)
    wheels: list[WheelCode] = []
    missing: list[tuple[str, str, str]] = []
    for pkg in packages:
        name = _filename(pkg)
        if not name.endswith((".whl", ".conda", ".tar.bz2")):
            missing.append((pkg.name, pkg.version, f"{name or pkg.url} is not a wheel or conda package"))
            continue
        pins = pkg.hashes if isinstance(pkg, PipPackage) else (pkg.sha256,)
        pinned = [(p, digest) for p in at_hand.get(name, []) if (digest := _sha256(p)) in pins]
        if not pinned:
            missing.append((pkg.name, pkg.version, f"{name} is not at hand with a pinned sha256"))
            continue
        path, digest = pinned[0]
        scan = scan_wheel if name.endswith(".whl") else scan_conda
        wheels.append(scan(path, pkg.name, pkg.version, digest))
    return LockGpuCode(cuda, tuple(gpus), tuple(wheels), tuple(missing))


def _as_facts(code: LockGpuCode) -> ReadinessFacts:
    """The lock as the driver rules see an environment: a framework running on the spec's CUDA."""
    loaded = Loaded({}, {}, {})
    fw = FrameworkFacts("the lock", None, None, code.cuda, None, "", (), (), (), loaded)
    return ReadinessFacts(None, {"the lock": fw} if code.cuda else {}, {}, (), ())


def lock_verdicts(code: LockGpuCode, targets: Sequence[Target], catalog: Catalog) -> tuple[LockVerdict, ...]:
    """Each target's verdict: the wheels' GPU code, and its driver by `envkit check`'s own rules."""
    facts = _as_facts(code)
    arch = image_arch_requirement(code)
    out = []
    for target in targets:
        findings = list(wheel_findings(code.wheels, target, code.cuda))
        if arch.value and target.cc and not satisfies(arch.value, arch=f"{target.cc[0]}.{target.cc[1]}"):
            findings.append(
                ReadinessFinding(
                    "error",
                    "toolkit-requirement-unmet",
                    f"the image's {ARCH_ENV}={arch.value} (from {arch.source}) is not met here: the NVIDIA "
                    "Container Toolkit refuses to start it ('requirement error: unsatisfied condition')",
                    None,
                    GPU_CODE,
                )
            )
        findings += driver_findings(facts, target, catalog)
        for name, version, why in code.not_scanned:
            findings.append(
                ReadinessFinding("note", "wheel-not-scanned", f"{name} {version}: not read ({why})")
            )
        out.append(LockVerdict(target, summarize(findings), tuple(findings)))
    return tuple(out)


def image_arch_requirement(code: LockGpuCode) -> ArchRequirement:
    """The ``NVIDIA_REQUIRE_ARCH`` ``envkit render`` writes from this ``gpu-code.json``: the one
    derivation (:func:`envkit.catalog.require.gpu_code_arch_requirement`) on the same document."""
    try:
        return gpu_code_arch_requirement(code.to_json())
    except ValueError as e:  # a library not read: the render refuses the file too
        return ArchRequirement(None, f"{GPU_CODE}: {e}")


def _bad(path: Path, what: str) -> ReadinessError:
    return ReadinessError(
        f"{path}: {what}",
        hint="rewrite it: `envkit lock NAME` with `gpus:` in the spec and the wheels at hand",
    )


def read_gpu_code(path: Path) -> LockGpuCode:
    """``gpu-code.json`` (or the ``images/NAME`` folder holding it), checked against the lock beside it."""
    file = path / GPU_CODE if path.is_dir() else path
    try:
        doc = load_json_bounded(read_text_bounded(file, MAX_GPU_CODE), 10)
    except (OSError, TooLarge, ValueError) as e:
        raise UsageError(
            f"cannot read {file}: {e}", hint="envkit lock NAME writes it when the spec names `gpus:`"
        ) from e
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("version") != VERSION:
        raise _bad(file, f"not an {KIND} version {VERSION} document")
    wheels = [_wheel(file, i, w) for i, w in enumerate(_list(file, doc.get("wheels"), "wheels"))]
    missing = []
    for i, m in enumerate(_list(file, doc.get("not_scanned", []), "not_scanned")):
        if not isinstance(m, dict) or not all(isinstance(m.get(k), str) for k in ("name", "version", "why")):
            raise _bad(file, f"not_scanned[{i}] is not {{name, version, why}} strings")
        missing.append((m["name"], m["version"], m["why"]))
    gpus = _list(file, doc.get("gpus", []), "gpus")
    cuda = doc.get("cuda")
    if not all(isinstance(g, str) for g in gpus) or not (cuda is None or isinstance(cuda, str)):
        raise _bad(file, "gpus is not a list of names, or cuda not a string")
    _pinned(file.parent, wheels)
    return LockGpuCode(cuda, tuple(gpus), tuple(wheels), tuple(missing))


def _list(file: Path, value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(file, f"{where} is not a list")
    return value


def _wheel(file: Path, i: int, value: Any) -> WheelCode:
    if not isinstance(value, dict):
        raise _bad(file, f"wheels[{i}] is not an object")
    texts = [value.get(k) for k in ("name", "version", "filename", "sha256")]
    if not all(isinstance(t, str) for t in texts) or not (
        value.get("problem") is None or isinstance(value.get("problem"), str)
    ):
        raise _bad(file, f"wheels[{i}]: name, version, filename, sha256 must be strings")
    libraries = []
    for j, raw in enumerate(_list(file, value.get("libraries", []), f"wheels[{i}].libraries")):
        if not isinstance(raw, dict) or not isinstance(raw.get("member"), str):
            raise _bad(file, f"wheels[{i}].libraries[{j}] has no member name")
        libraries.append(parse_library(raw["member"], raw))
    linked = value.get("linked")
    if linked is not None and (not isinstance(linked, list) or not all(isinstance(m, str) for m in linked)):
        raise _bad(file, f"wheels[{i}].linked is not a list of member names")
    name, version, filename, sha = (str(t) for t in texts)
    return WheelCode(
        name,
        version,
        filename,
        sha,
        tuple(libraries),
        value.get("problem"),
        None if linked is None else tuple(linked),
    )


def _pinned(directory: Path, wheels: Sequence[WheelCode]) -> None:
    """Each package's sha256 is one the lock beside the file pins (``requirements.lock`` for wheels,
    ``conda-lock.yml`` for conda packages; checked when the file is there)."""
    texts = {}
    for name in ("requirements.lock", "conda-lock.yml"):
        lock = directory / name
        if lock.is_file():
            try:
                texts[name] = read_text_bounded(lock, 64 << 20)
            except (OSError, TooLarge) as e:
                raise UsageError(f"cannot read {lock}: {e}", hint="restore it: `envkit lock NAME`") from e
    for wheel in wheels:
        name = "requirements.lock" if wheel.filename.endswith(".whl") else "conda-lock.yml"
        text = texts.get(name)
        if text is not None and wheel.sha256 not in text:
            raise _bad(
                directory / GPU_CODE,
                f"{wheel.filename} (sha256 {wheel.sha256[:12]}...) is not a package {name} pins",
            )


def dump(code: LockGpuCode) -> str:
    return json.dumps(code.to_json(), indent=1, sort_keys=True) + "\n"
