"""What ``envkit audit`` audits: an environment (lock + spec), an inventory file, or an image.

Each entry point gathers an inventory and the policy context, then runs the
vulnerability service and the policy checks. Adapters (service, engine) are
passed in: the CLI builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.audit.data_age import DEFAULT_MAX_AGE_DAYS, age_line, age_warning
from envkit.audit.findings import AuditFinding, AuditReport, NotChecked, apply_ignores, audit_inventory
from envkit.audit.policy import PolicyCatalog, PolicyContext, lock_files, run_policy
from envkit.audit.service import VulnService
from envkit.errors import AuditError, UsageError
from envkit.inventory import parse_inventory, read_inventory
from envkit.inventory.models import Inventory, Package
from envkit.inventory.names import project_of

if TYPE_CHECKING:  # an audit of a file reads no spec and no lock: those imports wait for an environment
    from envkit.engine.protocol import ContainerEngine
    from envkit.lock import LockState
    from envkit.spec.load import LoadedSpec

__all__ = [
    "AuditRequest",
    "audit_environment",
    "audit_file",
    "audit_image",
    "inventory_from_image",
    "spec_inventory",
]

PIP_LIST = ("python", "-m", "pip", "list", "--format=json", "--disable-pip-version-check")


@dataclass(frozen=True)
class AuditRequest:
    """How to audit: the vulnerability service, the catalog, today's date, the host's driver."""

    service: VulnService
    catalog: PolicyCatalog  # a Catalog, or CatalogOnDemand (the CLI's: no pydantic for a file audit)
    today: date
    driver: str | None = None
    max_db_age: int | None = DEFAULT_MAX_AGE_DAYS  # days; None: never warn (envkit.audit.data_age)


def spec_inventory(loaded: LoadedSpec) -> Inventory:
    """The exact pins a spec states (framework wheels, ``==`` lines): what can be audited without a lock."""
    from packaging.requirements import InvalidRequirement, Requirement

    from envkit.render.pip import framework_requirements

    packages = []
    for line in [*framework_requirements(loaded.resolved), *loaded.spec.pip]:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        pins = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
        if pins:
            name = project_of(req.name, "pip")
            packages.append(Package(project=name, name=name, version=pins[0], installer="pip"))
    return Inventory(label=loaded.spec.name, path=str(loaded.path), format="spec", packages=tuple(packages))


def _merge(label: str, path: str, inventories: list[Inventory]) -> Inventory:
    packages = tuple(p for inv in inventories for p in inv.packages)
    return Inventory(label=label, path=path, format="lock", packages=packages)


def _report(
    target: str,
    kind: str,
    inventory: Inventory,
    ctx: PolicyContext,
    request: AuditRequest,
    loaded: LoadedSpec | None,
    *,
    location: str | None = None,
) -> AuditReport:
    vulns, checked, not_checked, not_covered = audit_inventory(inventory, request.service, location=location)
    findings: list[AuditFinding] = vulns + run_policy(ctx)
    if loaded is not None:
        findings = apply_ignores(findings, loaded.spec.audit.ignore)
    provenance = request.service.provenance()
    stale = age_warning(provenance, request.today, request.max_db_age)
    return AuditReport(
        target=target,
        target_kind=kind,
        provenance=provenance,
        data_age=age_line(provenance, request.today),
        warnings=(stale,) if stale else (),
        findings=tuple(sorted(findings)),
        checked=checked,
        not_checked=tuple(not_checked),
        not_covered=tuple(not_covered),
    )


def _context(request: AuditRequest, loaded: LoadedSpec | None, image_dir: Path | None) -> PolicyContext:
    lock = None
    if loaded is not None and image_dir is not None:
        from envkit.lock import current_lock

        lock = current_lock(loaded, image_dir)
    return PolicyContext(
        catalog=request.catalog,
        today=request.today,
        spec=loaded.spec if loaded else None,
        spec_sha256=loaded.sha256 if loaded else None,
        spec_path=str(loaded.path) if loaded else None,
        image_dir=image_dir,
        lock=lock,
        driver=request.driver,
    )


def _lists_packages(path: Path) -> bool:
    """False for a requirements.lock that holds only its header and options (a conda-only spec)."""
    lines = path.read_text("utf-8", errors="replace").splitlines()
    return any(line.strip() and not line.lstrip().startswith(("#", "-")) for line in lines)


def _inventory_files(lock: LockState, image_dir: Path) -> list[Path]:
    """What to audit in a lock: every platform's explicit file plus requirements.lock.

    conda-lock.yml holds the same packages, but the inventory reader takes one platform of it;
    it is read only when the per-platform files are absent.
    """
    from envkit.lock.lockfile import CONDA_LOCK, REQUIREMENTS_LOCK

    present = [p for p in lock_files(lock, image_dir) if p.name != CONDA_LOCK]
    files = [p for p in present if p.name != REQUIREMENTS_LOCK or _lists_packages(p)]
    if not files and (image_dir / CONDA_LOCK).is_file():
        files = [image_dir / CONDA_LOCK]
    return files


def audit_environment(loaded: LoadedSpec, image_dir: Path, request: AuditRequest) -> AuditReport:
    """The environment's lock files (or, without any, the spec's exact pins) plus every policy check."""
    ctx = _context(request, loaded, image_dir)
    files = _inventory_files(ctx.lock, image_dir) if ctx.lock is not None else []
    if files:
        inventory = _merge(loaded.spec.name, str(image_dir), [read_inventory(p) for p in files])
    else:
        inventory = spec_inventory(loaded)
    return _report(
        loaded.spec.name, "environment", inventory, replace(ctx, inventory=inventory), request, loaded
    )


def audit_file(
    path: Path,
    request: AuditRequest,
    *,
    loaded: LoadedSpec | None = None,
    platform: str | None = None,
    environment: str | None = None,
    python: str | None = None,
) -> AuditReport:
    """Any inventory file (pip freeze, requirements/lock, conda env export, pip list JSON, pixi.lock,
    uv.lock, pylock.toml, poetry.lock, ...); a lock is read for one platform (and environment), and
    the report's target says which."""
    if not path.is_file():
        raise UsageError(
            f"{path}: no such file", hint="pass an environment name, an inventory file or --image IMAGE"
        )
    inventory = read_inventory(path, platform=platform, environment=environment, python=python)
    ctx = replace(_context(request, loaded, None), inventory=inventory)
    chosen = inventory.meta.get("selected")
    target = f"{path} ({chosen})" if chosen else str(path)
    report = _report(target, "inventory", inventory, ctx, request, loaded)
    return replace(report, warnings=(*report.warnings, *inventory.warnings))


def inventory_from_image(engine: ContainerEngine, image: str) -> Inventory:
    """``python -m pip list --format=json`` inside a fresh container of ``image``."""
    result = engine.run(image, list(PIP_LIST))
    if result.exit_code != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise AuditError(
            f"{image}: `{' '.join(PIP_LIST)}` exited with {result.exit_code}: {tail}",
            hint="the image needs python with pip on PATH",
        )
    return parse_inventory(result.stdout, path=f"image:{image}", label=image, format="pip-json")


def audit_image(
    engine: ContainerEngine,
    image: str,
    request: AuditRequest,
    *,
    loaded: LoadedSpec | None = None,
    image_dir: Path | None = None,
) -> AuditReport:
    info = engine.inspect(image)
    if info is None:
        raise UsageError(
            f"{image}: no such image", hint="build it first (envkit build NAME) or check the tag"
        )
    inventory = inventory_from_image(engine, image)
    ctx = replace(_context(request, loaded, image_dir), inventory=inventory, image=info, image_ref=image)
    report = _report(image, "image", inventory, ctx, request, loaded, location=f"image:{image}")
    # pip inside the image cannot see conda's C libraries: say so rather than imply they are clean.
    note = NotChecked("conda packages", "", "only pip-visible distributions are listed inside an image")
    return replace(report, not_covered=(*report.not_covered, note))
