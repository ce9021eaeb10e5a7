"""What a pack of one environment must hold, read from its fresh lock and the catalog."""

from __future__ import annotations

from pathlib import Path

from envkit.catalog import Catalog
from envkit.errors import UsageError
from envkit.lock import LockState
from envkit.pack.collect import PackRequest
from envkit.spec.load import LoadedSpec
from envkit.spec.models import ARCHES

__all__ = ["pack_request"]


def pack_request(
    loaded: LoadedSpec, lock: LockState, folder: Path, catalog: Catalog, find_links: tuple[str, ...] = ()
) -> PackRequest:
    """The files of a pack for ``loaded`` as locked in ``folder`` (``images/NAME``, a fresh lock)."""
    spec = loaded.spec
    if not spec.installer.uses_conda:
        raise UsageError(
            f"{spec.name} uses installer {spec.installer.value}: packs are for conda environments",
            hint=f"build it offline with `envkit build {spec.name} --offline` (a wheelhouse, no pack needed)",
        )
    if not lock.fresh or lock.lock is None:
        raise UsageError(
            f"{spec.name} has no fresh lock ({lock.reason})", hint=f"run `envkit lock {spec.name}`"
        )
    installers = {}
    for platform in spec.platforms:
        installer = catalog.offline_installer(ARCHES[platform])
        if installer is None:
            raise UsageError(
                f"the catalog has no offline conda installer (py-rattler wheel) for {platform}",
                hint="build this platform online, or pack only the platforms the catalog serves",
            )
        installers[platform] = installer
    # the verified lock's own values: conda-lock.yml was parsed once, when it was checked
    contents = lock.lock.contents
    requirements = lock.lock.files[lock.pip_lock].decode("utf-8") if lock.pip_lock else None
    return PackRequest(
        name=spec.name,
        platforms=spec.platforms,
        lock_sha256=lock.lock.sha256,
        conda={p: contents.conda.get(p, ()) for p in spec.platforms},
        requirements=requirements,
        python=spec.python,
        installers=installers,
        find_links=find_links,
    )
