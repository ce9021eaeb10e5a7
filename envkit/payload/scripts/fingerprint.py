"""What moves the numbers, recorded next to them. Standard library only; no secrets.

Environment variables are copied from an allow-list (exact names and prefixes), and even an
allowed name is dropped when it looks like a credential.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import socket
import sys
from pathlib import Path
from typing import Any

ENV_NAMES = frozenset(
    {
        "CUBLAS_WORKSPACE_CONFIG",
        "NVIDIA_TF32_OVERRIDE",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_LAUNCH_BLOCKING",
        "CUDA_MODULE_LOADING",
        "PYTHONHASHSEED",
        "LD_PRELOAD",
        "CONDA_DEFAULT_ENV",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
    }
)
ENV_PREFIXES = ("FLAGS_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "GOMP_", "CUDNN_", "NCCL_", "TORCH_CUDNN_")
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")
# Values that carry credentials whatever the variable is called: URLs with user:password@, bearer/basic
# headers, and the token formats of the usual hosts (GitHub, GitLab, Hugging Face, AWS, Slack, JWTs).
SECRET_VALUE = re.compile(
    r"://[^/\s:@]+:[^/\s@]+@|\b(?:bearer|basic)\s+\S|\b(?:gh[pousr]_|github_pat_|glpat-|hf_|xox[abpr]-|AKIA)"
    r"[A-Za-z0-9_-]{8,}|\beyJ[A-Za-z0-9_-]{10,}\.",
    re.IGNORECASE,
)
REDACTED = "<redacted: looks like a credential>"


def allowed_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    out = {}
    for name, value in env.items():
        if name not in ENV_NAMES and not name.startswith(ENV_PREFIXES):
            continue
        if any(word in name.upper() for word in SECRET_WORDS):
            continue
        out[name] = REDACTED if SECRET_VALUE.search(value) else value
    return dict(sorted(out.items()))


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def nvidia_driver() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text(errors="replace")
    except OSError:
        return None
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


def distributions() -> dict[str, str]:
    """Every installed distribution, ``name -> version`` (names lower-cased, ``_`` as ``-``)."""
    from importlib import metadata

    out: dict[str, str] = {}
    for dist in metadata.distributions():
        name, version = _name_version(dist)
        if name:
            out[name.lower().replace("_", "-")] = version
    return dict(sorted(out.items()))


def _name_version(dist: Any) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the metadata's header lines, without parsing the whole file
    (the email parser over ~300 METADATA files is most of the fingerprint's time)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in found:
            found[key] = value.strip()
        if len(found) == 2:
            break
    if "Name" not in found:  # an unusual file: let importlib.metadata read it
        return dist.metadata["Name"], dist.version
    return found["Name"], found.get("Version") or dist.version


def conda_meta() -> list[str] | None:
    meta = Path(sys.prefix) / "conda-meta"
    if not meta.is_dir():
        return None
    records = []
    for path in sorted(meta.glob("*.json")):
        try:
            rec = json.loads(path.read_text())
            records.append(f"{rec.get('name')}={rec.get('version')}={rec.get('build')}")
        except (OSError, ValueError):
            records.append(path.stem)
    return records


def machine_id() -> str | None:
    """The host's id (systemd's machine-id): a CPU device's identity in a fleet's history."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(path).read_text(errors="replace").strip()
        except OSError:
            continue
        if text:
            return text[:64]
    return None


def in_container() -> bool:
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    try:
        return any(w in Path("/proc/1/cgroup").read_text() for w in ("docker", "containerd", "kubepods"))
    except OSError:
        return False


def cuda_readiness(spec: dict[str, object]) -> dict[str, object]:
    """The GPU readiness facts of this environment (``ready.py``'s report, compacted): the CUDA
    libraries loaded and their versions, the SASS/PTX targets of every library with GPU code.
    ``spec`` is the host's catalog extract (dynload tables, driver libraries). Needs no GPU; a
    failure is recorded (``error``), never raised: the probe's numbers matter more."""
    try:
        import ready

        return ready.summary(ready.report(spec, ready.site_dirs()))
    except Exception as exc:  # the facts are extra: a broken scan must not lose the probe
        return {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}


def collect(readiness: dict[str, object] | None = None) -> dict[str, object]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    container: dict[str, object] | None = None
    if in_container() or os.environ.get("ENVKIT_IMAGE_ID"):
        tags = os.environ.get("ENVKIT_IMAGE_TAGS", "")
        container = {
            "image_id": os.environ.get("ENVKIT_IMAGE_ID"),
            "image_tags": [t for t in tags.split(",") if t],
        }
    return {
        "host": os.environ.get("ENVKIT_HOST") or socket.gethostname(),
        "machine_id": machine_id(),
        "time": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation()},
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "libc": "-".join(platform.libc_ver()).strip("-") or None,
        },
        "cpu": {"model": cpu_model(), "count": os.cpu_count(), "affinity": affinity},
        "gpu_driver": nvidia_driver(),
        "env": allowed_env(),
        "distributions": distributions(),
        "conda_meta": conda_meta(),
        "container": container,
        **({"cuda_readiness": cuda_readiness(readiness)} if readiness is not None else {}),
    }
