"""GPU code of locked wheels, read from the zip without installing: ``envkit lock`` with ``gpus:``.

Every ``*.so`` member of a wheel is streamed out of the zip into an anonymous temporary file and
read there by the payload's fatbin reader (nothing is installed; the file is gone when read),
bounded: ``MAX_MEMBER`` bytes per member, ``MAX_MEMBERS`` shared objects per wheel. The result,
per wheel and library, is what
``images/NAME/gpu-code.json`` records, so ``envkit check --lock`` answers for a lock made elsewhere.
The verdict per target uses the rules of ``envkit check`` (:mod:`envkit.readiness.rules`): a
framework's library (torch, Paddle) fails when most of its fatbins have no code for the target,
NVIDIA's when none has (a warning: they may dispatch elsewhere), any other wheel's when one of its
files has code for no fatbin of the target.
"""

from __future__ import annotations

import re
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from envkit import payload
from envkit.catalog.require import FRAMEWORK_DISTS, framework_runs
from envkit.readiness.facts import LibraryScan, Owner
from envkit.readiness.owners import is_nvidia
from envkit.readiness.rules import ReadinessFinding, carried_text, ptx_text, split_fatbins
from envkit.readiness.targets import Target

__all__ = ["FRAMEWORK_DISTS", "WheelCode", "scan_conda", "scan_wheel", "wheel_findings"]

MAX_MEMBER = 4 << 30  # bytes of one shared object in a wheel (paddle's libphi.so: 1.96 GB)
MAX_MEMBERS = 5000  # shared objects per wheel
MAX_TAR_BYTES = 16 << 30  # bytes of all members of a conda package's tar streamed through
# what a framework's import loads first (its DT_NEEDED closure is what it runs on at all; the rest of
# its libraries, torch's libtorch_cuda_linalg.so, Paddle's libflashattn.so, it opens on first use)
IMPORT_ROOTS = re.compile(r"^(torch/_C(\.[^/]*)?\.so|paddle/(base|fluid)/libpaddle\.so)\Z")
_SO = re.compile(r"\.so(\.[0-9][0-9A-Za-z.]*)?\Z")
_VARIANT = re.compile(r"cuda(\d{2,3})")


_ELFSCAN = payload.load("elfscan")  # the payload's fatbin reader (standard library; the image runs it too)


@dataclass(frozen=True)
class WheelCode:
    """One wheel's (or conda package's) GPU code: each shared object with fatbins (or a problem), by
    member name."""

    name: str
    version: str
    filename: str
    sha256: str
    libraries: tuple[LibraryScan, ...]
    problem: str | None = None
    # a framework wheel's libraries its import loads (the DT_NEEDED closure of IMPORT_ROOTS); None: not
    # known (another wheel, or a gpu-code.json written before it was recorded): every library counts
    linked: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, object]:
        extra: dict[str, object] = {} if self.linked is None else {"linked": list(self.linked)}
        return {
            **extra,
            "name": self.name,
            "version": self.version,
            "filename": self.filename,
            "sha256": self.sha256,
            "problem": self.problem,
            "libraries": [
                {
                    "member": lib.path,
                    "fatbins": lib.fatbins,
                    "sass": dict(lib.sass),
                    "ptx": dict(lib.ptx),
                    "groups": [{"archs": sorted(a), "fatbins": n} for a, n in lib.groups],
                    "problem": lib.problem,
                }
                for lib in self.libraries
            ],
        }


def _library(member: str, raw: Mapping[str, Any]) -> LibraryScan:
    return LibraryScan(
        path=member,
        soname=raw.get("soname"),
        needed=tuple(raw.get("needed", ())),
        fatbins=int(raw.get("fatbins", 0)),
        sass=dict(raw.get("sass", {})),
        ptx=dict(raw.get("ptx", {})),
        problem=raw.get("problem"),
        size=raw.get("size"),
        groups=tuple((frozenset(g["archs"]), int(g["fatbins"])) for g in raw.get("groups", [])),
    )


def scan_wheel(path: Path, name: str, version: str, sha256: str) -> WheelCode:
    """Read the fatbins of every shared object in the wheel at ``path``, in place."""
    libraries: list[LibraryScan] = []
    needed: dict[str, list[str]] = {}
    try:
        with zipfile.ZipFile(path) as z:
            members = [i for i in z.infolist() if not i.is_dir() and _SO.search(i.filename)]
            if len(members) > MAX_MEMBERS:
                return WheelCode(name, version, path.name, sha256, (), f"{len(members)} shared objects")
            for info in members:
                if info.file_size > MAX_MEMBER:
                    problem = f"{info.file_size} bytes (limit {MAX_MEMBER}): not read"
                    libraries.append(_library(info.filename, {"problem": problem}))
                    continue
                raw = _scan_member(z, info)
                if raw is not None:
                    needed[info.filename] = [str(n) for n in raw.get("needed", [])]
                if raw is not None and (raw["fatbins"] or raw["problem"]):
                    libraries.append(_library(info.filename, raw))
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as e:
        return WheelCode(name, version, path.name, sha256, tuple(libraries), f"{type(e).__name__}: {e}")
    linked = _linked(needed, libraries) if name.lower() in FRAMEWORK_DISTS else None
    return WheelCode(name, version, path.name, sha256, tuple(libraries), linked=linked)


def _linked(needed: Mapping[str, Sequence[str]], libraries: Sequence[LibraryScan]) -> tuple[str, ...] | None:
    """The GPU libraries in the DT_NEEDED closure of the wheel's :data:`IMPORT_ROOTS` (a needed name
    is the member of that file name); None when the wheel has no root (then every library counts)."""
    by_name: dict[str, list[str]] = {}
    for member in needed:
        by_name.setdefault(member.rsplit("/", 1)[-1], []).append(member)
    todo = [m for m in needed if IMPORT_ROOTS.match(m)]
    if not todo:
        return None
    seen = set(todo)
    while todo:
        for dep in needed.get(todo.pop(), ()):
            for member in by_name.get(dep, ()):
                if member not in seen:
                    seen.add(member)
                    todo.append(member)
    return tuple(lib.path for lib in libraries if lib.path in seen)


def _scan_member(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> dict[str, Any] | None:
    """One member's scan (None: not an ELF file). Decompressed once into a temporary file: the
    reader seeks back (section table at the end, strings, then the fatbins), and a backward seek in
    a deflated member decompresses it again from the start (4x slower on bitsandbytes' wheel)."""
    with z.open(info) as member:
        return _scan_stream(member)


def _scan_stream(member: IO[bytes]) -> dict[str, object] | None:
    """:func:`_scan_member` of any readable stream (a zip member, a tar member)."""
    head = member.read(4)
    if head != b"\x7fELF":
        return None
    with tempfile.TemporaryFile(prefix="envkit-member-") as tmp:
        tmp.write(head)
        copied = len(head)
        while chunk := member.read(1 << 20):
            copied += len(chunk)
            if copied > MAX_MEMBER:
                return {"fatbins": 0, "problem": f"more than {MAX_MEMBER} bytes: not read"}
            tmp.write(chunk)
        tmp.seek(0)
        raw: dict[str, object] = _ELFSCAN.scan_stream(tmp, copied)
        return raw


def scan_conda(path: Path, name: str, version: str, sha256: str) -> WheelCode:
    """A conda package's shared objects (``.tar.bz2``, or ``.conda``: a zip whose ``pkg-*.tar.zst``
    needs the ``zstandard`` module), streamed member by member, never unpacked to disk whole."""
    try:
        if path.name.endswith(".tar.bz2"):
            with tarfile.open(path, mode="r|bz2") as tar:
                return WheelCode(name, version, path.name, sha256, _tar_libraries(tar))
        with zipfile.ZipFile(path) as z:
            inner = [
                i for i in z.infolist() if i.filename.startswith("pkg-") and i.filename.endswith(".tar.zst")
            ]
            if len(inner) != 1:
                return WheelCode(
                    name, version, path.name, sha256, (), "no pkg-*.tar.zst in the .conda archive"
                )
            try:
                import zstandard
            except ImportError:
                return WheelCode(
                    name, version, path.name, sha256, (), "reading .conda needs the zstandard module"
                )
            with (
                z.open(inner[0]) as raw,
                zstandard.ZstdDecompressor().stream_reader(raw) as zst,
                tarfile.open(fileobj=zst, mode="r|") as tar,
            ):
                return WheelCode(name, version, path.name, sha256, _tar_libraries(tar))
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as e:
        return WheelCode(name, version, path.name, sha256, (), f"{type(e).__name__}: {e}")


def _tar_libraries(tar: tarfile.TarFile) -> tuple[LibraryScan, ...]:
    libraries: list[LibraryScan] = []
    total = count = 0
    for member in tar:
        total += max(member.size, 0)
        if total > MAX_TAR_BYTES:
            raise ValueError(f"more than {MAX_TAR_BYTES} bytes of members: not read further")
        if not member.isfile() or not _SO.search(member.name):
            continue
        count += 1
        if count > MAX_MEMBERS or member.size > MAX_MEMBER:
            libraries.append(_library(member.name, {"problem": f"{member.size} bytes or too many: not read"}))
            continue
        stream = tar.extractfile(member)
        raw = _scan_stream(stream) if stream is not None else None
        if raw is not None and (raw["fatbins"] or raw["problem"]):
            libraries.append(_library(member.name, raw))
    return tuple(libraries)


def _variant_skipped(lib: LibraryScan, wheel: WheelCode, cuda: str | None) -> bool:
    """One of the wheel's per-CUDA builds (``libbitsandbytes_cuda126.so``) while another is the
    one the spec's CUDA loads."""
    tag = "".join((cuda or "").split(".")[:2])
    m = _VARIANT.search(lib.path.rsplit("/", 1)[-1])
    if not tag or m is None or m.group(1) == tag:
        return False
    loaded = _VARIANT.sub(f"cuda{tag}", lib.path)
    return any(o.path == loaded for o in wheel.libraries)


def _finding(severity: str, code: str, text: str, wheel: WheelCode, lib: LibraryScan) -> ReadinessFinding:
    return ReadinessFinding(
        "error" if severity == "error" else "warning",
        code,
        f"{wheel.name} {wheel.version}: {text}",
        None,
        f"{wheel.filename}:{lib.path}",
        f"{wheel.name} {wheel.version}",
    )


def wheel_findings(wheels: Sequence[WheelCode], target: Target, cuda: str | None) -> list[ReadinessFinding]:
    """What each wheel's GPU code means on ``target`` (nothing for a target with no GPU named)."""
    if target.cc is None:
        return []
    cc = target.cc
    sm = f"sm_{cc[0]}{cc[1]}"
    out: list[ReadinessFinding] = []
    for wheel in wheels:
        framework = wheel.name.lower() in FRAMEWORK_DISTS
        for lib in wheel.libraries:
            if lib.fatbins == 0 or _variant_skipped(lib, wheel, cuda):
                continue
            sass, jit, none, _ = split_fatbins(lib, cc)
            base = lib.path.rsplit("/", 1)[-1]
            carries = f"carries {carried_text(lib)}, {ptx_text(lib)}"
            if is_nvidia(lib.path, Owner(wheel.name, wheel.version, "wheel")) and not framework:
                if not sass and not jit:
                    out.append(
                        _finding(
                            "warning",
                            "wheel-no-kernel-image",
                            f"no code for {sm} in {base} "
                            f"({carries}; NVIDIA's libraries may carry kernels elsewhere)",
                            wheel,
                            lib,
                        )
                    )
                continue  # fmt: skip
            if framework and wheel.linked is not None and lib.path not in wheel.linked:
                if not sass and not jit:  # opened on first use of its ops, not at import
                    text = (
                        f"no kernel image for {sm} in {base}, which it opens on first use of its ops, "
                        f"not at import ({carries}): those ops fail on this GPU"
                    )
                    out.append(_finding("warning", "wheel-op-library-no-kernel-image", text, wheel, lib))
                continue
            fails = not framework_runs(lib.groups, lib.fatbins, cc) if framework else not sass and not jit
            if fails:
                text = f"no kernel image for {sm} in {base} ({none} of {lib.fatbins} fatbins; {carries})"
                out.append(_finding("error", "wheel-no-kernel-image", text, wheel, lib))
            elif none:
                text = f"{none} of {lib.fatbins} fatbins of {base} have no code for {sm} ({carries})"
                out.append(_finding("warning", "wheel-few-fatbins-without-code", text, wheel, lib))
            elif jit:
                text = f"no SASS for {sm} in {base}: PTX only, kernels JIT-compile at first use ({carries})"
                out.append(_finding("warning", "wheel-ptx-jit", text, wheel, lib))
    return out
