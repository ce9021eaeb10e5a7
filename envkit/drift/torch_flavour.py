"""The CUDA flavour of a PyPI torch with no ``+cuXXX``/``+cpu`` suffix and no nvidia-* wheels.

What can be inferred, and from what:

- **Windows and macOS**: the torch wheels on PyPI are CPU-only there (CUDA builds for Windows
  come from download.pytorch.org; macOS has no CUDA builds). Source: pytorch.org "Start Locally"
  (Windows/pip/CUDA: ``--index-url https://download.pytorch.org/whl/cuXXX``; "MacOS Binaries
  dont support CUDA"). The platform comes from the inventory: its recorded platform (collect_env
  ``Python platform``, a snapshot, a lock's subdir), a Windows or macOS prefix, or packages that
  exist only there (``pywin32``, ``pywinpty``: Windows-only wheels; ``appnope``, ``pyobjc-core``:
  macOS-only, ipython requires appnope with ``sys_platform == "darwin"``).
- **Linux, torch before 1.13**: the PyPI wheel bundled its CUDA; the catalog's ``pypi_cuda``
  says which (1.8-1.12: CUDA 10.2). From 1.13 on the Linux wheel requires nvidia-* CUDA wheels
  (``nvidia-cuda-runtime-cu11`` ...; 2.15: ``cuda-toolkit``): without them the listing is
  incomplete or torch was installed ``--no-deps``, so the flavour stays unknown.

When it stays unknown against a known flavour, the ``torch-cuda-flavour-unknown`` rule says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from packaging.version import Version

from envkit._memo import by_identity
from envkit.catalog import load_catalog
from envkit.drift.models import DriftFinding, Rule
from envkit.inventory.models import Inventory, Package

__all__ = ["flavour_unknown", "inferred_torch_flavour", "inventory_os"]

_WINDOWS_ONLY = ("pywin32", "pywinpty", "pywin32-ctypes", "tensorflow-intel", "wincertstore")
_MACOS_ONLY = ("appnope", "pyobjc-core")
# Packages that exist for one system only, by their package name (conda's or pip's): conda's Linux
# toolchain runtime (ld_impl_linux-64, libgcc-ng, _libgcc_mutex), its Windows runtimes (vs2015_runtime,
# vc14_runtime, ucrt, m2w64-*); a Debian/Ubuntu system Python's own packages (python-apt, distro-info).
_LINUX_NAMES = frozenset(
    {
        "ld_impl_linux-64",
        "ld_impl_linux-aarch64",
        "ld_impl_linux-ppc64le",
        "libgcc-ng",
        "_libgcc_mutex",
        "libstdcxx-ng",
        "python-apt",
        "unattended-upgrades",
        "ubuntu-drivers-common",
    }
)
_WINDOWS_NAMES = frozenset({"vs2015_runtime", "vc14_runtime", "ucrt", "m2w64-gcc-libs", "msys2-conda-epoch"})
_NVIDIA_DEPS_SINCE = Version("1.13")


def inventory_os(inv: Inventory, pkgs: Mapping[str, Package]) -> str | None:
    """``windows`` / ``macos`` / ``linux`` when the inventory says which, else None."""
    platform = inv.meta.get("platform", "").lower()
    if platform.startswith(("windows", "win-", "win32", "win_")):
        return "windows"
    if platform.startswith(("darwin", "macos", "osx-")):
        return "macos"
    if platform.startswith(("linux", "manylinux")):
        return "linux"
    prefix = inv.meta.get("prefix", "")
    if re.match(r"^[A-Za-z]:[\\/]", prefix):
        return "windows"
    if prefix.startswith("/Users/"):
        return "macos"
    if any(name in pkgs for name in _WINDOWS_ONLY):
        return "windows"
    if any(name in pkgs for name in _MACOS_ONLY):
        return "macos"
    return _system_by_names(inv.packages)


@by_identity
def _system_by_names(packages: tuple[Package, ...]) -> str | None:
    names = {p.name for p in packages}
    if names & _WINDOWS_NAMES:
        return "windows"
    if names & _LINUX_NAMES:
        return "linux"
    return None


def inferred_torch_flavour(inv: Inventory, pkgs: Mapping[str, Package], torch: Package) -> str | None:
    """``cpu`` (Windows/macOS PyPI wheels), ``cu102`` (Linux, torch < 1.13, from the catalog), or None."""
    system = inventory_os(inv, pkgs)
    if system in ("windows", "macos"):
        return "cpu"
    if system != "linux":
        return None
    try:
        if Version(torch.version) >= _NVIDIA_DEPS_SINCE:
            return None
    except ValueError:  # InvalidVersion, or a part beyond 4,300 digits
        return None
    release = load_catalog().framework_release("torch", torch.version)
    cuda = release.pypi_cuda if release else None
    return f"cu{cuda.replace('.', '')}" if cuda else None


def flavour_unknown(
    rule: Rule, inventories: Sequence[Inventory], tables: list[dict[str, Package]]
) -> list[DriftFinding]:
    """torch present everywhere it matters, its flavour known on some inputs and unknown on others."""
    from envkit.drift.facts import FACTS  # facts imports this module

    fact = FACTS[rule.params["fact"]]
    project = rule.params["package"]
    values = {
        inv.label: fact(inv, table)
        for inv, table in zip(inventories, tables, strict=True)
        if project in table
    }
    known = {label: v for label, v in values.items() if v is not None}
    unknown = [label for label, v in values.items() if v is None]
    if not known or not unknown:
        return []
    shown = ", ".join(f"{v} ({label})" for label, v in sorted(known.items())[:5])
    detail = f"unknown on {', '.join(unknown[:10])}; known: {shown}"
    return [
        DriftFinding(
            project, "rule", rule.severity, rule.id, dict(values), f"{project}: {rule.message}: {detail}"
        )
    ]
