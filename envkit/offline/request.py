"""What a pack of one environment must hold, read from its fresh lock and the resolved spec."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from envkit.catalog import InstallerFile
from envkit.errors import UsageError
from envkit.lock import LockState
from envkit.offline.collect import PackRequest
from envkit.spec.load import LoadedSpec
from envkit.spec.resolve import ResolvedSpec

__all__ = ["bootstrap_installers", "pack_request"]

_MIN_PYTHON = Version("3.10")  # py-rattler's wheel is abi3 for CPython >= 3.10


def bootstrap_installers(resolved: ResolvedSpec) -> dict[str, InstallerFile]:
    """The catalog installer per platform when the runtime image has no Python to run py-rattler.

    The offline builder stage is the runtime image. The catalog knows which images ship a Python
    (python, pytorch and paddle images) and which do not (the OS images, nvidia/cuda): for the
    latter the pack carries the spec's Miniconda/Miniforge installer (self-contained, no network)
    and the builder stage installs it only to get a python3 for py-rattler. An image the catalog does
    not know is assumed to have python3 (the build says so clearly when it does not).
    """
    spec, known = resolved.spec, resolved.base
    if known is None or (known.python and Version(known.python) >= _MIN_PYTHON):
        return {}
    if spec.installer.value == "micromamba":
        raise UsageError(
            f"{spec.name}: the runtime image {known.ref} has no Python to run the offline installer, "
            "and micromamba brings none",
            hint="use installer: miniforge or miniconda for air-gapped builds, or a base_image with python3",
        )
    found = {}
    for platform in spec.platforms:
        installer = resolved.installer(platform)
        if installer is None:
            raise UsageError(f"the catalog has no {spec.installer.value} installer for {platform}",
                             hint="choose another installer or platform")  # fmt: skip
        found[platform] = installer
    return found


def pack_request(
    loaded: LoadedSpec, lock: LockState, folder: Path, find_links: tuple[str, ...] = ()
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
        installer = loaded.resolved.offline_installer(platform)
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
        bootstraps=bootstrap_installers(loaded.resolved),
    )
