"""What ``envkit snapshot`` records about the machine, with the standard library only: it runs in
this process (``envkit.payload.load("snapshot")``) and, unchanged, inside any image, where
:mod:`envkit.inventory.image_source` runs it as a script: ``snapshot.py [--prefix DIR]`` prints one
JSON object, :func:`collect`'s facts and the conda records of ``DIR/conda-meta`` (``sys.prefix``'s by
default: what ``conda list --json`` reports, without needing a conda binary).

Facts are the host's: OS (``/etc/os-release``), C library, CPU model, NVIDIA driver
(``/proc/driver/nvidia/version``) and GPU models (``/proc/driver/nvidia/gpus/*/information``).
Each is left out when the machine does not have it.
"""

from __future__ import annotations

import json
import platform
import re
import socket
import sys
from importlib import metadata
from pathlib import Path

__all__ = ["collect", "conda_records", "distributions", "host_facts"]


def _read(path: str) -> str:
    try:
        return Path(path).read_text("utf-8", errors="replace")
    except OSError:
        return ""


def host_facts(root: str = "/") -> dict[str, str]:
    facts: dict[str, str] = {}
    base = Path(root)
    release = _read(str(base / "etc/os-release"))
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', release, re.MULTILINE)
    if pretty:
        facts["os"] = pretty[1]
    libc = "-".join(p for p in platform.libc_ver() if p)
    if libc:
        facts["libc"] = libc
    cpu = re.search(r"^model name\s*:\s*(.+)$", _read(str(base / "proc/cpuinfo")), re.MULTILINE)
    if cpu:
        facts["cpu"] = cpu[1].strip()
    nvidia = _read(str(base / "proc/driver/nvidia/version"))
    driver = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", nvidia)
    if driver:
        facts["driver"] = driver[1]
    gpus = sorted(
        {
            m[1].strip()
            for info in sorted((base / "proc/driver/nvidia/gpus").glob("*/information"))
            for m in [re.search(r"^Model:\s*(.+)$", _read(str(info)), re.MULTILINE)]
            if m
        }
    )
    if gpus:
        facts["gpu"] = ", ".join(gpus)
    return facts


def distributions() -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(name, dist.version)
    return sorted(found.items())


def collect() -> dict[str, object]:
    """Everything but conda's records (the caller adds those where conda is)."""
    return {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "pip": [[name, version] for name, version in distributions()],
        "facts": host_facts(),
    }


def conda_records(prefix: str) -> list[dict[str, object]] | None:
    """The records of ``prefix/conda-meta/*.json`` as ``conda list --json`` names them; None without
    a ``conda-meta`` directory (not a conda environment)."""
    meta = Path(prefix) / "conda-meta"
    if not meta.is_dir():
        return None
    out: list[dict[str, object]] = []
    for path in sorted(meta.glob("*.json")):
        try:
            r = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(r, dict):
            channel = str(r.get("channel") or "") or None
            out.append({"name": r.get("name"), "version": r.get("version"), "build_string": r.get("build"),
                        "channel": channel, "platform": r.get("subdir")})  # fmt: skip
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    where = args[args.index("--prefix") + 1] if "--prefix" in args[:-1] else sys.prefix
    print(json.dumps({**collect(), "conda": conda_records(where)}))
