"""The GPUs and drivers a check is for: ``--gpu H100|sm_90``, ``--driver 535.104.05``, ``--host FILE``.

A host report is what envkit already reads (a snapshot, a probe report, collect_env output) or
``nvidia-smi`` output (its table or ``--query-gpu=name,driver_version --format=csv``): the GPU
names and the driver are taken from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envkit._io import TooLarge, read_text_bounded
from envkit.catalog import Catalog
from envkit.catalog.gpu import parse_cc
from envkit.errors import EnvkitError, UsageError

__all__ = ["Target", "gpu_target", "host_targets", "parse_driver"]

MAX_HOST_REPORT = 16 * 1024 * 1024
_DRIVER = re.compile(r"^\d{2,4}(\.\d{1,3}){1,2}\Z")
_SMI_DRIVER = re.compile(r"Driver Version: *(\d+(?:\.\d+){1,2})")
# One table row: a name never spans lines (a name with a line break is no row, not a forged one)
_SMI_GPU = re.compile(
    r"^\|[ \t]+\d+[ \t]+((?:NVIDIA|Tesla|GeForce) [^|\r\n]*?)[ \t]+(?:On|Off)[ \t]+\|", re.M
)
_CSV_ROW = re.compile(
    r"^[ \t]*((?:NVIDIA|Tesla|GeForce|Quadro)[^,\r\n]*),[ \t]*(\d+(?:\.\d+){1,2})[ \t]*\r?$", re.M
)


@dataclass(frozen=True)
class Target:
    """One GPU (its compute capability), one driver, or both: what a verdict is for."""

    label: str
    gpu: str | None = None  # the name as given or reported
    cc: tuple[int, int] | None = None
    data_center: bool | None = None
    driver: str | None = None


def parse_driver(text: str) -> str:
    value = text.strip()
    if not _DRIVER.match(value):
        raise UsageError(
            f"--driver {text!r} is not a driver version", hint="e.g. --driver 535.104.05 or 470.82"
        )
    return value


def gpu_target(text: str, catalog: Catalog, driver: str | None = None) -> Target:
    """``H100`` (a catalog name), ``sm_90`` / ``9.0`` (a capability)."""
    cc = parse_cc(text)
    if cc is not None:
        return Target(f"sm_{cc[0]}{cc[1]}", gpu=None, cc=cc, data_center=None, driver=driver)
    facts = catalog.gpu
    gpu = facts.gpu(text)
    if gpu is None:
        names = ", ".join(g.name for g in facts.gpus.list)
        raise UsageError(f"--gpu {text!r}: no such GPU in the catalog", hint=f"use sm_XX, or one of: {names}")
    label = f"{gpu.name} (sm_{gpu.capability[0]}{gpu.capability[1]})"
    return Target(label, gpu=gpu.name, cc=gpu.capability, data_center=gpu.data_center, driver=driver)


def _from_smi(text: str) -> tuple[list[str], str | None]:
    driver = _SMI_DRIVER.search(text)
    gpus = [m.group(1).strip() for m in _SMI_GPU.finditer(text)]
    if not gpus:
        rows = _CSV_ROW.findall(text)
        return [r[0].strip() for r in rows], (rows[0][1] if rows else (driver.group(1) if driver else None))
    return gpus, driver.group(1) if driver else None


def _from_inventory(path: Path) -> tuple[list[str], str | None]:
    from envkit.drift.host import host_facts
    from envkit.inventory.read import read_inventory

    facts = host_facts(read_inventory(path))
    gpu = facts.get("gpu")
    names = [g.strip() for g in re.split(r"\n|;", gpu) if g.strip()] if gpu else []
    names = [re.sub(r"^GPU \d+:\s*", "", n).split(" (UUID", 1)[0] for n in names]
    return names, facts.get("driver")


def host_targets(path: Path, catalog: Catalog) -> list[Target]:
    """One target per distinct GPU model the report names (or one driver-only target)."""
    try:
        text = read_text_bounded(path, MAX_HOST_REPORT)
    except (OSError, TooLarge) as e:
        raise UsageError(
            f"cannot read host report {path}: {e}", hint="pass nvidia-smi output or a snapshot"
        ) from e
    gpus, driver = _from_smi(text)
    if not gpus and driver is None:
        try:
            gpus, driver = _from_inventory(path)
        except EnvkitError as e:
            raise UsageError(
                f"{path}: no GPU or driver found ({e.message})",
                hint="pass nvidia-smi output, collect_env output, a snapshot or a probe report",
            ) from e
    if not gpus and driver is None:
        raise UsageError(
            f"{path}: the report names no GPU and no driver", hint="was it taken on the GPU host?"
        )
    out: list[Target] = []
    for name in dict.fromkeys(gpus):
        gpu = catalog.gpu.gpu(name)
        cc = gpu.capability if gpu else None
        out.append(
            Target(
                f"{path.name}: {name}",
                gpu=name,
                cc=cc,
                data_center=gpu.data_center if gpu else None,
                driver=driver,
            )
        )
    return out or [Target(f"{path.name}: driver {driver}", driver=driver)]
