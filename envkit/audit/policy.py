"""Policy checks: each has an id, a severity and a one-line fix.

Inputs are plain values gathered by the caller (spec, image build context,
inventory, image metadata, driver version, today's date), so every check is a
pure function and testable without files or engines.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import yaml
from packaging.version import InvalidVersion, Version

from envkit._lines import logical_lines
from envkit.audit.findings import AuditFinding
from envkit.audit.service import AuditSeverity
from envkit.errors import CatalogError, LockError
from envkit.inventory.models import Inventory

if TYPE_CHECKING:  # an audit of a file needs none of these: they are imported where a check uses them
    from envkit.catalog import CudaRelease, InstallerFile, KnownBadRule
    from envkit.engine.protocol import ImageInfo
    from envkit.lock import LockState
    from envkit.spec.models import Spec

__all__ = [
    "RULES",
    "PolicyCatalog",
    "PolicyContext",
    "lock_files",
    "python_eol",
    "run_policy",
]

_KNOWN_BAD_SEVERITY: dict[str, AuditSeverity] = {"info": "low", "warning": "medium", "critical": "critical"}

# rule id -> (severity, what it checks); known-bad rules are added as known-bad:<id>.
RULES: dict[str, tuple[AuditSeverity, str]] = {
    "lock-missing": ("medium", "the environment has no lock file"),
    "lock-stale": ("high", "the lock was made from another version of the spec"),
    "lock-no-hashes": ("medium", "locked packages without hashes"),
    "spec-unpinned": ("low", "spec entries without any version constraint"),
    "base-image-unpinned": ("medium", "base image not pinned by digest"),
    "installer-unverified": ("high", "installer downloaded without a verified checksum"),
    "image-user-root": ("medium", "the image runs as root"),
    "image-lock-mismatch": ("high", "the image was built from a different lock"),
    "known-bad": ("high", "a known-bad combination of versions is installed"),
    "cuda-driver": ("high", "CUDA needs a newer driver than the one given"),
    "python-eol": ("medium", "Python past its end of life"),
}


class PolicyCatalog(Protocol):
    """What the policy checks ask the catalog: :class:`envkit.catalog.Catalog` answers, and so does
    :class:`envkit.catalog.CatalogOnDemand` (the known-bad rules without loading the whole catalog)."""

    def known_bad_hits(self, versions: dict[str, str]) -> list[KnownBadRule]: ...

    def cuda_release(self, version: str) -> CudaRelease | None: ...

    def installer(self, kind: str, arch: str, python: str | None = None) -> InstallerFile | None: ...


@dataclass(frozen=True)
class PolicyContext:
    """What the policy checks may look at: the catalog, today's date, the spec, its lock and image."""

    catalog: PolicyCatalog
    today: date
    spec: Spec | None = None
    spec_sha256: str | None = None
    spec_path: str | None = None
    image_dir: Path | None = None  # images/<name>: Dockerfile and lock files
    lock: LockState | None = None  # envkit.lock.current_lock(spec, image_dir)
    inventory: Inventory | None = None
    image: ImageInfo | None = None
    image_ref: str | None = None
    driver: str | None = None


def _finding(
    rule: str, message: str, fix: str, location: str | None, *, severity: AuditSeverity | None = None
) -> AuditFinding:
    return AuditFinding(
        kind="policy",
        id=rule,
        severity=severity or RULES[rule][0],
        message=message,
        fix=fix,
        location=location,
    )


# -- lock files ---------------------------------------------------------------


def lock_files(lock: LockState, image_dir: Path) -> list[Path]:
    """The lock files (not the pinned environment.yml) among those ``lock`` expects, present on disk."""
    from envkit.lock.lockfile import ENVIRONMENT_YML

    return [
        image_dir / name for name in lock.files if name != ENVIRONMENT_YML and (image_dir / name).is_file()
    ]


def check_lock(ctx: PolicyContext) -> list[AuditFinding]:
    if ctx.lock is None or ctx.image_dir is None or ctx.spec is None:
        return []
    from envkit.lock.lockfile import CONDA_LOCK

    name = ctx.spec.name
    if ctx.lock.status == "missing":
        return [
            _finding(
                "lock-missing",
                f"{name} has no lock in {ctx.image_dir} ({ctx.lock.reason}): builds resolve afresh each time",
                f"envkit lock {name}",
                ctx.spec_path,
            )
        ]
    found = []
    if ctx.lock.status == "stale":
        found.append(
            _finding(
                "lock-stale",
                f"the lock in {ctx.image_dir} is stale: {ctx.lock.reason} "
                f"(the spec is now {str(ctx.spec_sha256)[:12]}); builds ignore it",
                f"envkit lock {name}",
                str(ctx.image_dir / CONDA_LOCK),
            )
        )
    for path in lock_files(ctx.lock, ctx.image_dir):
        found += _unhashed(path, name)
    return found


def _unhashed(path: Path, name: str) -> list[AuditFinding]:
    from envkit.lock.lockfile import CONDA_LOCK, parse_conda_lock

    text = path.read_text("utf-8", errors="replace")
    if path.name == CONDA_LOCK:
        try:
            contents = parse_conda_lock(text, str(path))
        except LockError:
            return []  # not a readable lock: check_lock reports it as stale
        missing = [p.name for ps in contents.conda.values() for p in ps if not (p.sha256 or p.md5)]
        missing += [p.name for ps in contents.pip.values() for p in ps if not p.hashes]
    elif "@EXPLICIT" in text:
        urls = [ln for ln in text.splitlines() if "://" in ln and not ln.startswith("#")]
        missing = [u.rsplit("/", 1)[-1] for u in urls if "#" not in u]
    else:
        pins = [ln for _, ln in logical_lines(text) if "==" in ln and not ln.startswith("#")]
        missing = [ln.split("==")[0].strip() for ln in pins if "--hash=" not in ln]
    if not missing:
        return []
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return [
        _finding(
            "lock-no-hashes",
            f"{path.name}: {len(missing)} package(s) without a hash: {shown}",
            f"envkit lock {name} (locks carry hashes; pip installs with --require-hashes)",
            str(path),
        )
    ]


# -- spec -----------------------------------------------------------------------


def _no_constraint(line: str) -> bool:
    from packaging.requirements import InvalidRequirement, Requirement  # a spec's lines only

    try:
        return not Requirement(line).specifier
    except InvalidRequirement:
        return False


def check_spec_unpinned(ctx: PolicyContext) -> list[AuditFinding]:
    if ctx.spec is None:
        return []
    bare = [c for c in ctx.spec.conda if re.fullmatch(r"(?:[\w.\-/]+::)?[\w.\-]+", c)]
    bare += [line for line in ctx.spec.pip if _no_constraint(line)]
    if not bare:
        return []
    return [
        _finding(
            "spec-unpinned",
            f"{len(bare)} spec entr{'y has' if len(bare) == 1 else 'ies have'} no version constraint: "
            + ", ".join(bare),
            "give each a range, e.g. numpy>=1.24,<2 (the lock pins the exact version)",
            ctx.spec_path,
        )
    ]


def _dockerfile(ctx: PolicyContext) -> Path | None:
    """The image directory's Dockerfile, when there is one."""
    dockerfile = ctx.image_dir / "Dockerfile" if ctx.image_dir else None
    return dockerfile if dockerfile is not None and dockerfile.is_file() else None


def _from_images(ctx: PolicyContext) -> list[str]:
    dockerfile = _dockerfile(ctx)
    if dockerfile is not None:
        text = dockerfile.read_text("utf-8")
        refs = re.findall(r"^FROM\s+(?:--\S+\s+)*(\S+)", text, re.MULTILINE)
        stages = set(re.findall(r"^FROM\s+.*\s+AS\s+(\S+)", text, re.MULTILINE | re.IGNORECASE))
        return sorted({r for r in refs if r not in stages and r != "scratch"})
    if ctx.spec is not None and ctx.spec.base_image:
        return [ctx.spec.base_image]
    return []


def check_base_image(ctx: PolicyContext) -> list[AuditFinding]:
    loose = [ref for ref in _from_images(ctx) if "@sha256:" not in ref]
    where = str(ctx.image_dir / "Dockerfile") if ctx.image_dir else ctx.spec_path
    return [
        _finding(
            "base-image-unpinned",
            f"base image {ref} is not pinned by digest: the tag can move or be deleted",
            f"set base_image: {ref}@sha256:<digest> (docker buildx imagetools inspect {ref})",
            where,
        )
        for ref in loose
    ]


def check_installer(ctx: PolicyContext) -> list[AuditFinding]:
    found: list[AuditFinding] = []
    spec = ctx.spec
    if spec is not None and spec.installer.uses_conda:
        from envkit.spec.models import ARCHES

        for platform in spec.platforms:
            arch = ARCHES.get(platform, platform)
            if ctx.catalog.installer(spec.installer.value, arch, spec.python) is None:
                found.append(
                    _finding(
                        "installer-unverified",
                        f"the catalog has no verified {spec.installer.value} installer checksum for {arch}",
                        "choose an installer with a verified sha256 (envkit catalog --section installers)",
                        ctx.spec_path,
                    )
                )
    dockerfile = _dockerfile(ctx)
    if dockerfile is not None:
        text = dockerfile.read_text("utf-8")
        if re.search(r"\b(curl|wget)\b[^\n]*\s-[A-Za-z]*[oO]\b", text) and "sha256sum -c" not in text:
            found.append(
                _finding(
                    "installer-unverified",
                    "the Dockerfile downloads a file without checking its sha256",
                    f"regenerate it: envkit render {spec.name if spec else 'NAME'}",
                    str(dockerfile),
                )
            )
    return found


# -- image --------------------------------------------------------------------


def check_image(ctx: PolicyContext) -> list[AuditFinding]:
    if ctx.image is None:
        return []
    where = f"image:{ctx.image_ref or ctx.image.id}"
    found = []
    user = ctx.image.user.strip()
    if user.split(":")[0] in ("", "root", "0"):
        found.append(
            _finding(
                "image-user-root",
                f"{ctx.image_ref or ctx.image.id} runs as {user or 'root (no USER set)'}",
                "add a non-root USER to the image (envkit's Dockerfile creates one)",
                where,
            )
        )
    # The build labels the image with the fresh lock's digest (LockState.lock_sha256 -> DockerfileInputs);
    # a stale or missing lock is not built from, and check_lock reports it.
    current = ctx.lock.lock_sha256 if ctx.lock is not None and ctx.lock.fresh else None
    if current:
        from envkit.render.dockerfile import LOCK_LABEL

        built = ctx.image.labels.get(LOCK_LABEL)
        if built != current:
            what = f"lock {built[:12]}" if built else "no lock label"
            found.append(
                _finding(
                    "image-lock-mismatch",
                    f"{ctx.image_ref or ctx.image.id} was built from {what}; "
                    f"the current lock is {current[:12]}",
                    "rebuild: envkit build " + (ctx.spec.name if ctx.spec else "NAME"),
                    where,
                )
            )
    return found


# -- versions -----------------------------------------------------------------


def _versions(ctx: PolicyContext) -> dict[str, str]:
    """Project -> version as Python imports it (pip shadows conda), ``conda:`` prefixes dropped."""
    if ctx.inventory is None:
        return {}
    return {project.removeprefix("conda:"): p.version for project, p in ctx.inventory.primary().items()}


def check_known_bad(ctx: PolicyContext) -> list[AuditFinding]:
    versions = _versions(ctx)
    location = ctx.inventory.path if ctx.inventory else None
    return [
        _finding(
            f"known-bad:{rule.id}",
            rule.message,
            rule.fix,
            location,
            severity=_KNOWN_BAD_SEVERITY.get(rule.severity, "high"),
        )
        for rule in ctx.catalog.known_bad_hits(versions)
    ]


def _minor(version: str) -> str:
    """``3.10.12`` -> ``3.10``."""
    return ".".join(version.split(".")[:2])


def _inventory_location(ctx: PolicyContext) -> str | None:
    return ctx.spec_path or (ctx.inventory.path if ctx.inventory else None)


def _cuda_version(ctx: PolicyContext) -> str | None:
    if ctx.spec is not None:
        return ctx.spec.cuda if ctx.spec.is_gpu else None
    if ctx.inventory is not None:
        if ctx.inventory.meta.get("cuda"):
            return ctx.inventory.meta["cuda"]
        versions = _versions(ctx)
        for name in ("cuda-version", "cudatoolkit", "cuda-runtime", "cuda-cudart"):
            if versions.get(name):
                return _minor(versions[name])
    return None


def check_cuda_driver(ctx: PolicyContext) -> list[AuditFinding]:
    cuda = _cuda_version(ctx)
    if not ctx.driver or not cuda:
        return []
    release = ctx.catalog.cuda_release(cuda)
    if release is None:
        return []
    try:
        too_old = Version(release.min_driver) > Version(ctx.driver)
    except InvalidVersion:
        return []
    if not too_old:
        return []
    return [
        _finding(
            "cuda-driver",
            f"CUDA {cuda} needs driver >= {release.min_driver}; the driver is {ctx.driver}"
            f" (minor-version compatibility from {release.compat_driver}, without new features)",
            f"upgrade the driver to {release.min_driver}+, "
            f"or use a CUDA whose minimum driver is <= {ctx.driver}",
            _inventory_location(ctx),
        )
    ]


def python_eol() -> dict[str, date]:
    """Python minor version -> end-of-life date, from the catalog's python_eol.yaml."""
    return dict(_python_eol())


@functools.cache
def _python_eol() -> dict[str, date]:  # read once per process: a fleet audit asks for every inventory
    try:
        text = (
            resources.files("envkit.catalog").joinpath("data").joinpath("python_eol.yaml").read_text("utf-8")
        )
        found = {}
        for row in yaml.safe_load(text)["versions"]:
            year, month, *day = (int(p) for p in str(row["end_of_life"]).split("-"))
            found[str(row["version"])] = date(
                year, month, day[0] if day else calendar.monthrange(year, month)[1]
            )
    except (OSError, KeyError, ValueError, TypeError, yaml.YAMLError) as e:
        raise CatalogError(f"the packaged python_eol.yaml is invalid: {e}", hint="reinstall envkit") from e
    return found


def _python_version(ctx: PolicyContext) -> str | None:
    if ctx.spec is not None:
        return ctx.spec.python
    if ctx.inventory is not None:
        version = ctx.inventory.meta.get("python") or _versions(ctx).get("python")
        if version:
            return _minor(version)
    return None


def check_python_eol(ctx: PolicyContext) -> list[AuditFinding]:
    python = _python_version(ctx)
    if python is None:
        return []
    eols = python_eol()
    eol = eols.get(python)
    if eol is None or eol >= ctx.today:
        return []
    newest = max(eols, key=lambda v: tuple(int(p) for p in v.split(".")))
    return [
        _finding(
            "python-eol",
            f"Python {python} reached its end of life on {eol.isoformat()}: no more security fixes",
            f"move to a supported Python (e.g. {newest}); see https://devguide.python.org/versions/",
            _inventory_location(ctx),
        )
    ]


CHECKS: Sequence[Callable[[PolicyContext], list[AuditFinding]]] = (
    check_lock,
    check_spec_unpinned,
    check_base_image,
    check_installer,
    check_image,
    check_known_bad,
    check_cuda_driver,
    check_python_eol,
)


def run_policy(ctx: PolicyContext) -> list[AuditFinding]:
    found: list[AuditFinding] = []
    for check in CHECKS:
        found += check(ctx)
    return found
