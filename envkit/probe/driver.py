"""The driver the image's CUDA needs, beside the host's driver (from the catalog's CUDA table).

A CUDA build runs on the driver it was packaged with (``min_driver``) or, with minor-version
compatibility, on the first driver of its major (``compat_driver``, limited features: PTX JIT
may fail). The host driver is what the kernel module reports (``/proc/driver/nvidia/version``,
the same inside a container).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envkit.catalog import Catalog

__all__ = ["driver_check", "driver_line"]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _image_cuda(report: dict[str, Any]) -> str | None:
    label = report.get("fingerprint", {}).get("container", {}).get("cuda")
    if label and label != "cpu":
        return str(label)
    for entry in report.get("frameworks", {}).values():
        runtime = entry.get("cuda_runtime") if isinstance(entry, dict) else None
        if runtime:
            return ".".join(str(runtime).split(".")[:2])
    return None


def driver_check(report: dict[str, Any], catalog: Catalog) -> dict[str, Any] | None:
    """``{cuda, min_driver, compat_driver, host_driver, status}`` or None for a CPU environment."""
    cuda = _image_cuda(report)
    if cuda is None:
        return None
    release = catalog.cuda_release(cuda)
    host = report.get("fingerprint", {}).get("gpu_driver")
    check: dict[str, Any] = {
        "cuda": cuda,
        "min_driver": release.min_driver if release else None,
        "compat_driver": release.compat_driver if release else None,
        "host_driver": host,
    }
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
    check["status"] = status
    return check


def driver_line(check: dict[str, Any]) -> str:
    need = (
        f"needs driver >= {check['min_driver']} "
        f"(>= {check['compat_driver']} with minor-version compatibility)"
        if check["min_driver"]
        else "(CUDA not in the catalog: driver minimum unknown)"
    )
    host = check["host_driver"] or "none (no NVIDIA driver on this host)"
    verdict = {
        "ok": "ok",
        "compat-only": "runs through minor-version compatibility only (PTX JIT may fail)",
        "too-old": "TOO OLD: the image cannot use the GPU",
        "no-driver": "no GPU driver",
        "unknown-cuda": "not checked",
    }[check["status"]]
    return f"driver: image CUDA {check['cuda']} {need}; host driver {host}: {verdict}"
