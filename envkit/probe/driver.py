"""The driver the image's CUDA needs, beside the host's driver (from the catalog's CUDA table).

A CUDA build runs on the driver it was packaged with (``min_driver``) or, with minor-version
compatibility, on the first driver of its major (``compat_driver``, limited features: PTX JIT
may fail). The host driver is what the kernel module reports (``/proc/driver/nvidia/version``,
the same inside a container).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.probe.additions import DriverCheck

if TYPE_CHECKING:
    from envkit.catalog import Catalog
    from envkit.probe.model import ProbeReport

__all__ = ["driver_check", "driver_line", "image_cuda"]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def image_cuda(report: ProbeReport) -> str | None:
    label = report.fact("container").get("cuda")
    if label and label != "cpu":
        return str(label)
    for entry in report.frameworks.values():
        if entry.cuda_runtime:
            return ".".join(entry.cuda_runtime.split(".")[:2])
    return None


def driver_check(report: ProbeReport, catalog: Catalog) -> DriverCheck | None:
    """The image's CUDA against the host's driver, or None for a CPU environment."""
    cuda = image_cuda(report)
    if cuda is None:
        return None
    release = catalog.cuda_release(cuda)
    driver = report.fingerprint.get("gpu_driver")
    host = str(driver) if driver is not None else None
    if release is None:
        status = "unknown-cuda"
    elif host is None:
        status = "no-driver"
    elif _key(host) >= _key(release.min_driver):
        status = "ok"
    elif _key(host) >= _key(release.compat_driver):
        status = "compat-only"
    else:
        status = "too-old"
    return DriverCheck(
        cuda,
        release.min_driver if release else None,
        release.compat_driver if release else None,
        host,
        status,
    )


def driver_line(check: DriverCheck) -> str:
    need = (
        f"needs driver >= {check.min_driver} (>= {check.compat_driver} with minor-version compatibility)"
        if check.min_driver
        else "(CUDA not in the catalog: driver minimum unknown)"
    )
    host = check.host_driver or "none (no NVIDIA driver on this host)"
    verdict = {
        "ok": "ok",
        "compat-only": "runs through minor-version compatibility only (PTX JIT may fail)",
        "too-old": "TOO OLD: the image cannot use the GPU",
        "no-driver": "no GPU driver",
        "unknown-cuda": "not checked",
    }[check.status]
    return f"driver: image CUDA {check.cuda} {need}; host driver {host}: {verdict}"
