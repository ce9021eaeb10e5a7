"""NVIDIA's rules applied to what the payload found: findings, each with the failure a user would meet.

Pure: :class:`ReadinessFacts` + a :class:`Target` + the catalog in, findings out. The rules and
their sources are in ``envkit/catalog/data/gpu.yaml`` (binary compatibility, PTX JIT, minor-version
and forward compatibility) and ``cuda.yaml`` (each toolkit's driver and the minor-version floor).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from envkit.catalog import Catalog
from envkit.catalog.require import (
    ARCH_ENV,
    framework_runs,
    parse_arch,
    sass_runs,
    satisfies,
    split_groups,
    toolkit_arch_requirement,
)
from envkit.readiness.facts import FrameworkFacts, LibraryScan, ReadinessFacts
from envkit.readiness.owners import package_of
from envkit.readiness.targets import Target

__all__ = [
    "ReadinessFinding",
    "arch_findings",
    "carried_text",
    "driver_findings",
    "driver_floors",
    "environment_findings",
    "format_version",
    "ptx_text",
    "runtime_cuda",
    "split_fatbins",
    "summarize",
    "toolkit_findings",
]


def _base(path: str) -> str:
    """The file name of a path inside the image (a string, not a host path)."""
    return path.rsplit("/", 1)[-1]


ReadinessSeverity = Literal["error", "warning", "note"]
_NAMES = {"paddle": "Paddle", "torch": "torch"}
# The version calls' encodings: cuDNN 8 major*1000+minor*100+patch, cuDNN 9 major*10000+...
_LABEL = {
    "cudart": "CUDA runtime",
    "cudnn": "cuDNN",
    "cublas": "cuBLAS",
    "cublasLt": "cuBLASLt",
    "nccl": "NCCL",
    "cufft": "cuFFT",
    "curand": "cuRAND",
}


@dataclass(frozen=True)
class ReadinessFinding:
    """One fact that decides a verdict: ``error`` fails it, ``warning`` and ``note`` do not."""

    severity: ReadinessSeverity
    code: str
    message: str
    framework: str | None = None
    file: str | None = None
    package: str | None = None  # "xformers 0.0.35": a package other than the frameworks and NVIDIA's

    def to_json(self) -> dict[str, str | None]:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "framework": self.framework,
            "file": self.file,
            "package": self.package,
        }


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def format_version(lib: str, value: int | str | None) -> str | None:
    """A version call's integer as people write it (cudart 11080 -> 11.8, cuDNN 8600 -> 8.6.0)."""
    if value is None or isinstance(value, str):
        return value
    if lib == "cudart":
        return f"{value // 1000}.{value % 1000 // 10}"
    if lib == "cudnn":
        major = value // 1000 if value < 90000 else value // 10000
        rest = value - major * (1000 if value < 90000 else 10000)
        return f"{major}.{rest // 100}.{rest % 100}"
    if lib in ("nccl", "cublasLt"):
        return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
    if lib in ("cufft", "curand"):  # cuFFT 10900 is 10.9.0, cuRAND 10300 is 10.3.0
        return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"
    return str(value)


# -- the environment, whatever the GPU ---------------------------------------------------------------
def _loaded_at_import(fw: FrameworkFacts) -> set[str] | None:
    """The files importing the framework loads: the closure of its extension module (torch's
    ``_C*.so``, Paddle's ``libpaddle.so``) and of what it opens at run time, over the links found.
    None when no such entry is among the roots (then every root counts)."""
    entries = [r for r in fw.roots if _base(r).startswith("_C") or _base(r) == "libpaddle.so"]
    if not entries:
        return None
    edges: dict[str, list[str]] = {}
    for link in fw.links:
        if link.to is not None:
            edges.setdefault(link.requester, []).append(link.to)
    seen = set(entries) | {o.to for o in fw.opened if o.to}
    todo = list(seen)
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _link_findings(fw: FrameworkFacts) -> Iterable[ReadinessFinding]:
    name = _NAMES.get(fw.name, fw.name)
    loaded = _loaded_at_import(fw)
    missing: dict[str, list[str]] = {}
    orphans: dict[str, list[str]] = {}
    for link in fw.links:
        if link.to is None and not link.host:
            into = missing if loaded is None or link.requester in loaded else orphans
            into.setdefault(link.name, []).append(_base(link.requester))
    for soname, who in sorted(missing.items()):
        by = ", ".join(sorted(set(who))[:3])
        yield ReadinessFinding(
            "error", "library-missing", f"{soname} missing: {name} fails to load ({by} links it)", fw.name, by
        )
    for soname, who in sorted(orphans.items()):  # e.g. torch 2.15's wheel ships libgfortran.so.5, unlinked
        by = ", ".join(sorted(set(who))[:3])
        yield ReadinessFinding(
            "warning",
            "library-missing-unloaded",
            f"{soname} missing for {by}, which {name} ships but does not load at import (nothing it "
            f"loads links it): it fails only where something opens {by}",
            fw.name,
            by,
        )
    for host in sorted({lk.name for lk in fw.links if lk.host}):
        yield ReadinessFinding(
            "note",
            "host-library",
            f"{host} comes from the host's NVIDIA driver (NVIDIA Container Toolkit)",
            fw.name,
        )


def _dynload_findings(fw: FrameworkFacts, catalog: Catalog) -> Iterable[ReadinessFinding]:
    name = _NAMES.get(fw.name, fw.name)
    major = (fw.cuda or "").split(".")[0]
    cudnn_major = (fw.cudnn or "").split(".")[0]
    for row in fw.opened:
        spec = catalog.gpu.dynload_row(fw.name, major, row.lib)
        if spec is None:
            continue
        expected = spec.soname.replace("{cudnn_major}", cudnn_major)
        if row.to is None:
            sev: ReadinessSeverity = "note" if spec.optional else "error"
            tried = ", ".join(row.names)
            yield ReadinessFinding(
                sev,
                "dynload-missing",
                f"{expected} missing: {name}'s dynload fails at {spec.first_use} (tried {tried})",
                fw.name,
                expected,
            )
        elif row.soname and row.soname != expected and not spec.optional:
            yield ReadinessFinding(
                "error",
                "dynload-wrong-major",
                f"{row.opened_as} opens {row.to} ({row.soname}) but {name} {fw.version} was built for "
                f"{expected}: {name}'s dynload fails at {spec.first_use}",
                fw.name,
                row.to,
            )


def _loaded_findings(fw: FrameworkFacts) -> Iterable[ReadinessFinding]:
    for lib, error in sorted(fw.loaded.errors.items()):
        label = _LABEL.get(lib, lib)
        yield ReadinessFinding(
            "error", "load-failed", f"loading {label} fails, as it will at its first use: {error}", fw.name
        )
    for lib, value in sorted(fw.loaded.versions.items()):
        text = format_version(lib, value)
        where = next((p for p in fw.loaded.maps.get(lib, ()) if f"lib{lib}.so" in _base(p)), None)
        yield ReadinessFinding(
            "note",
            "loaded",
            f"loaded {_LABEL.get(lib, lib)} {text}" + (f" ({where})" if where else ""),
            fw.name,
            where,
        )


def environment_findings(facts: ReadinessFacts, catalog: Catalog) -> list[ReadinessFinding]:
    """What holds on every GPU: libraries that resolve (or not), what loads, CPU-only builds."""
    out: list[ReadinessFinding] = []
    if not facts.frameworks:
        out.append(ReadinessFinding("error", "no-framework", "neither torch nor paddle is installed here"))
    for fw in facts.frameworks.values():
        name = _NAMES.get(fw.name, fw.name)
        if fw.cuda is None:
            if facts.cuda_present:
                out.append(
                    ReadinessFinding(
                        "error",
                        "cpu-only-build",
                        f"CPU-only {name} {fw.version} in a CUDA image ({len(facts.cuda_present)} CUDA "
                        f"runtime libraries present): {name} sees no GPU on any host "
                        f"(torch.cuda.is_available() / paddle.is_compiled_with_cuda() is False)",
                        fw.name,
                    )
                )
            else:
                out.append(
                    ReadinessFinding(
                        "note", "cpu-only-build", f"{name} {fw.version} is a CPU-only build", fw.name
                    )
                )
            continue
        out.extend(_link_findings(fw))
        out.extend(_dynload_findings(fw, catalog))
        out.extend(_loaded_findings(fw))
    for lib in facts.libraries.values():
        if lib.problem:
            problem = f"{lib.path}: {lib.problem}"
            out.append(ReadinessFinding("warning", "unreadable-library", problem, None, lib.path))
    return out


# -- GPU architectures -------------------------------------------------------------------------------
def _runs(arch: str, cc: tuple[int, int]) -> bool:
    """SASS (:func:`envkit.catalog.require.sass_runs`) or PTX of the same major that JITs here."""
    parsed = parse_arch(arch)
    if parsed is not None and parsed[0] == "compute":
        return parsed[1] == cc[0] and parsed[2] <= cc[1]
    return sass_runs(arch, cc)


def carried_text(lib: LibraryScan) -> str:
    """'sm_61, sm_70 ... (and sm_35 in 1 fatbin)': the archs most fatbins carry, then the strays."""
    main = [a for a, n in lib.sass.items() if n * 2 >= lib.fatbins]
    stray = [a for a, n in lib.sass.items() if n * 2 < lib.fatbins]
    order = sorted(main, key=lambda a: _key(a))
    text = ", ".join(order) if order else "no SASS"
    if stray:
        text += f" (and {', '.join(sorted(stray, key=_key))} in a few fatbins)"
    return text


def ptx_text(lib: LibraryScan) -> str:
    return ("PTX " + ", ".join(sorted(lib.ptx, key=_key))) if lib.ptx else "no PTX"


def split_fatbins(lib: LibraryScan, cc: tuple[int, int]) -> tuple[int, int, int, set[str]]:
    """Fatbins with SASS for ``cc``, with only PTX to JIT, with nothing; the PTX that would JIT
    (:func:`envkit.catalog.require.split_groups`, the rule the image's constraint is derived by)."""
    return split_groups(lib.groups, cc)


def toolkit_findings(facts: ReadinessFacts, target: Target, catalog: Catalog) -> list[ReadinessFinding]:
    """A GPU older than every target of the framework's CUDA release (CUDA 13 starts at sm_75): the
    image's ``NVIDIA_REQUIRE_ARCH`` (:func:`envkit.catalog.require.toolkit_arch_requirement`, the
    expression ``envkit render`` writes) evaluated as the NVIDIA Container Toolkit does at start."""
    if target.cc is None:
        return []
    out = []
    for fw in facts.frameworks.values():
        cuda = runtime_cuda(fw)
        release = catalog.cuda_release(".".join(cuda.split(".")[:2])) if cuda else None
        requirement = toolkit_arch_requirement(release)
        arch = f"{target.cc[0]}.{target.cc[1]}"
        if release is not None and requirement and not satisfies(requirement, arch=arch):
            sm = f"sm_{target.cc[0]}{target.cc[1]}"
            out.append(
                ReadinessFinding(
                    "error",
                    "toolkit-drops-gpu",
                    f"CUDA {release.version} does not support {sm} (its targets: "
                    f"{', '.join(release.archs)}): {_NAMES.get(fw.name, fw.name)} {fw.version} cannot use "
                    f"this GPU (its image's {ARCH_ENV}={requirement} refuses it at start)",
                    fw.name,
                )
            )
    return out


def _framework_of(facts: ReadinessFacts, lib: LibraryScan) -> FrameworkFacts | None:
    return next((fw for fw in facts.frameworks.values() if lib.path.startswith(fw.directory + "/")), None)


def arch_findings(facts: ReadinessFacts, target: Target, catalog: Catalog) -> list[ReadinessFinding]:
    """Per library with GPU code: SASS for the target, or PTX to JIT from, and can the driver JIT it.

    A framework's own library must have code in (nearly) every fatbin: a majority without is the
    run-time "no kernel image"; a few fatbins without (a bundled third-party kernel built for
    other GPUs) are a warning. NVIDIA's libraries hold per-architecture fatbins and dispatch by
    device, so for them any code for the target is enough.
    """
    if target.cc is None:
        return []
    out: list[ReadinessFinding] = []
    for lib in facts.libraries.values():
        if lib.fatbins == 0 or package_of(facts, lib) is not None:  # other packages: readiness.packages
            continue
        out.extend(_library_arch_findings(facts, lib, target, target.cc, catalog))
    return out


def _library_arch_findings(
    facts: ReadinessFacts, lib: LibraryScan, target: Target, cc: tuple[int, int], catalog: Catalog
) -> list[ReadinessFinding]:
    """:func:`arch_findings` for one library with GPU code."""
    sm = f"sm_{cc[0]}{cc[1]}"
    out: list[ReadinessFinding] = []
    owner = _framework_of(facts, lib)
    fw_name = owner.name if owner else None
    who = _NAMES.get(owner.name, owner.name) if owner else "it"
    base = lib.soname or _base(lib.path)
    sass, jit, none, ptx = split_fatbins(lib, cc)
    if owner is None:  # NVIDIA's: any code for this device will do
        if sass:
            return out
        jit, none = (lib.fatbins, 0) if ptx else (0, lib.fatbins)
    if bool(none) if owner is None else not framework_runs(lib.groups, lib.fatbins, cc):
        msg = (
            f"no kernel image for {sm} in {base} ({none} of {lib.fatbins} fatbins): "
            f"{who} carries {carried_text(lib)} and {ptx_text(lib)}"
        )
        if owner is None:  # NVIDIA's libraries may load kernels another way (cuFFT 12: one sm_75 fatbin)
            msg += " (in its .nv_fatbin; an NVIDIA library may carry kernels elsewhere)"
        out.append(
            ReadinessFinding(
                "warning" if owner is None else "error", "no-kernel-image", msg, fw_name, lib.path
            )
        )
        return out
    if none:
        stray = sorted(
            {a for archs, _ in lib.groups for a in archs if not any(_runs(b, cc) for b in archs)},
            key=_key,
        )
        out.append(
            ReadinessFinding(
                "warning",
                "few-fatbins-without-code",
                f"{none} of {lib.fatbins} fatbins of {base} have no code for {sm} (they carry "
                f"{', '.join(stray)}): their kernels fail with 'no kernel image' if used",
                fw_name,
                lib.path,
            )
        )
    if jit:
        best = max(ptx, key=_key)
        msg = (
            f"{base}: no SASS for {sm} in {jit} of {lib.fatbins} fatbins; PTX {best} only: kernels "
            f"JIT-compile at first use, minutes (then cached in ~/.nv/ComputeCache)"
        )
        out.append(ReadinessFinding("warning", "ptx-jit", msg, fw_name, lib.path))
        out.extend(_jit_driver(lib, owner, target, catalog))
    return out


def _jit_driver(
    lib: LibraryScan, owner: FrameworkFacts | None, target: Target, catalog: Catalog
) -> list[ReadinessFinding]:
    """PTX newer than the driver cannot JIT: a driver below the toolkit's own minimum fails here."""
    if target.driver is None or owner is None or owner.cuda is None:
        return []
    release = catalog.cuda_release(".".join(owner.cuda.split(".")[:2]))
    if release is None or _key(target.driver) >= _key(release.min_driver):
        return []
    return [
        ReadinessFinding(
            "error",
            "ptx-too-new",
            f"{lib.soname or _base(lib.path)}: driver {target.driver} cannot JIT CUDA {release.version}'s "
            "PTX "
            f"(needs >= {release.min_driver}; minor-version compatibility does not cover PTX JIT)",
            owner.name,
            lib.path,
        )
    ]


# -- the driver --------------------------------------------------------------------------------------
def runtime_cuda(fw: FrameworkFacts) -> str | None:
    """The CUDA runtime the framework runs on: the libcudart it links and loads, else its build's."""
    linked = any(lk.name.startswith("libcudart.so") for lk in fw.links)
    loaded = format_version("cudart", fw.loaded.versions.get("cudart"))
    return loaded if linked and loaded else fw.cuda


def _floors(catalog: Catalog, cuda: str) -> tuple[str | None, str | None, str]:
    """(toolkit's own driver, minor-version floor, the release named) for CUDA ``cuda``."""
    short = ".".join(cuda.split(".")[:2])
    release = catalog.cuda_release(short)
    major = short.split(".")[0]
    same = [c for c in catalog.cuda if c.version.split(".")[0] == major]
    floor = min((c.compat_driver for c in same), key=_key, default=None)
    return (release.min_driver if release else None), floor, short


def driver_floors(facts: ReadinessFacts, catalog: Catalog) -> dict[str, str]:
    """The driver floors of the CUDA runtime the frameworks run on (the first CUDA one): ``cuda``,
    ``toolkit`` (the release's own driver) and ``minor-version`` (the floor of its major); {} on CPU."""
    for fw in facts.frameworks.values():
        cuda = runtime_cuda(fw)
        if cuda:
            toolkit, minor, short = _floors(catalog, cuda)
            floors = {"cuda": short, "toolkit": toolkit, "minor-version": minor}
            return {k: v for k, v in floors.items() if v}
    return {}


def driver_findings(facts: ReadinessFacts, target: Target, catalog: Catalog) -> list[ReadinessFinding]:
    if target.driver is None:
        return []
    out: list[ReadinessFinding] = []
    drv = target.driver
    for fw in facts.frameworks.values():
        cuda = runtime_cuda(fw)
        if cuda is None:
            continue
        own, floor, short = _floors(catalog, cuda)
        major = short.split(".")[0]
        if own and _key(drv) >= _key(own):
            out.append(
                ReadinessFinding(
                    "note", "driver-ok", f"driver {drv} >= {own}, CUDA {short}'s own driver", fw.name
                )
            )
        elif floor and _key(drv) >= _key(floor):
            what = f"below CUDA {short}'s own {own}" if own else f"CUDA {short} is not in the catalog"
            limits = catalog.gpu.rule("minor-version-compatibility").text.split(": ", 1)[-1]
            msg = (
                f"driver {drv} is {what} but at or above {floor}, the floor of CUDA {major} "
                f"minor-version compatibility: it runs, but {limits}"
            )
            out.append(ReadinessFinding("note", "minor-version-compat", msg, fw.name))
        elif floor:
            out.append(_below_floor(facts, target, fw.name, drv, major, floor))
    return out


def _below_floor(
    facts: ReadinessFacts, target: Target, fw: str, drv: str, major: str, floor: str
) -> ReadinessFinding:
    msg = (
        f"driver {drv} on a CUDA {major}.x runtime: below the {floor} floor of CUDA {major} "
        "minor-version compatibility"
    )
    if facts.compat_libcuda and target.data_center is not False:
        where = facts.compat_libcuda[0]
        return ReadinessFinding(
            "warning",
            "forward-compat",
            f"{msg}; runs only through the forward-compatibility libcuda in the image ({where}), "
            "on data-center GPUs only",
            fw,
            where,
        )
    extra = (
        ""
        if target.data_center is False
        else " (a data-center GPU could run it with NVIDIA's cuda-compat forward-compatibility package; "
        "GeForce/RTX cannot)"
    )
    return ReadinessFinding("error", "driver-too-old", msg + extra, fw)


def summarize(findings: Sequence[ReadinessFinding]) -> Literal["ready", "will-fail"]:
    return "will-fail" if any(f.severity == "error" for f in findings) else "ready"
