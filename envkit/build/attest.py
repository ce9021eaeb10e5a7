"""What a build attests: its provenance statement (:mod:`envkit.sbom.provenance`) from the plan."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.lock.epoch import EPOCH_LABEL
from envkit.offline.collect import INSTALLER
from envkit.sbom.cyclonedx import SBOM_NAME, sbom_sha256
from envkit.sbom.provenance import Material, provenance_statement, write_provenance
from envkit.spec.load import LoadedSpec

if TYPE_CHECKING:
    from envkit.build.builder import BuildPlan

__all__ = ["installer_materials", "write_build_provenance"]


def installer_materials(loaded: LoadedSpec, plan: BuildPlan) -> list[Material]:
    """The installers the build ran, by sha256: the pack's files (offline conda) or the catalog's."""
    if plan.packed is not None:
        return [Material(f"installer:{e.path.split('/')[-1]}", f"context:{e.path}", e.sha256)
                for e in plan.packed.entries if e.path.startswith(f"{INSTALLER}/")]  # fmt: skip
    spec = loaded.spec
    if not spec.installer.uses_conda:
        return []
    found = []
    for platform in spec.platforms:
        installer = loaded.resolved.installer(platform)
        if installer is not None:
            found.append(
                Material(f"installer:{installer.kind}-{installer.arch}", installer.url, installer.sha256)
            )
    return found


def write_build_provenance(
    root: Path,
    loaded: LoadedSpec,
    plan: BuildPlan,
    *,
    image_id: str,
    base: str,
    base_id: str | None,
    started: dt.datetime,
    nocache: bool,
) -> Path:
    """Write ``.envkit/provenance/NAME-<id12>.intoto.json`` for the image just built; its path."""
    name = loaded.spec.name
    materials = [
        Material("base-image", f"docker-image://{base}", base_id),
        Material("lock", f"envkit-lock:images/{name}", plan.lock.lock_sha256),
        Material("spec", f"file:environments/{loaded.path.name}", loaded.sha256),
        *installer_materials(loaded, plan),
    ]
    byproducts = []
    if plan.sbom is not None:
        byproducts.append(Material("sbom", f"file:images/{name}/{SBOM_NAME}", sbom_sha256(plan.sbom)))
    statement = provenance_statement(
        name=name,
        image_id=image_id,
        external={"name": name, "offline": plan.offline, "nocache": nocache},
        internal={"context_sha256": plan.digest, "source_date_epoch": plan.labels.get(EPOCH_LABEL)},
        materials=materials,
        byproducts=byproducts,
        started=started,
        finished=dt.datetime.now(dt.timezone.utc),
    )
    return write_provenance(root, name, statement)
