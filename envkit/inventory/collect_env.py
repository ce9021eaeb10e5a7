"""``python -m torch.utils.collect_env`` output: host facts plus ``[pip3]``/``[conda]`` rows.

collect_env is not one environment. Its ``[pip]`` rows are what the ``pip`` on PATH sees and
its ``[conda]`` rows what ``conda list`` sees: in a clean conda install they are the same
packages seen twice (not a second install); when they disagree on many packages they are two
environments. Each row keeps the section it came from (``Package.env``); the environment
whose torch is the one collect_env ran with (the header's ``PyTorch version``) is the active
one (``meta["active_env"]``), else pip's, by installer precedence.

Both layouts are read: the classic ``Key: value`` header and the sectioned one of newer
collect_env copies (vLLM's: ``System Info`` / ``PyTorch Info`` / ``Python Environment`` /
``CUDA / GPU Info`` blocks between ``=====`` rules, keys padded before the colon).

The header is read even when the package sections say ``Could not collect``: torch's version
(a row of its own), the CUDA it was built with, the CUDA runtime, driver, GPU, cuDNN (from
the list of libcudnn files when collect_env could not pick one), OS, libc and CPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from envkit.inventory._collect import REQUIREMENT, Collector, version_too_large, without_features

__all__ = ["SECTION", "public_version", "read_collect_env"]

SECTION = re.compile(r"^\[(pip3?|conda)\]\s+(.*)\Z")
_KEYS = {
    "PyTorch version": "torch",
    "CUDA used to build PyTorch": "torch_cuda",
    "ROCM used to build PyTorch": "torch_rocm",
    "Python version": "python",
    "OS": "os",
    "Libc version": "libc",
    "CUDA runtime version": "cuda_runtime",
    "Nvidia driver version": "driver",
    "cuDNN version": "cudnn",
    "GPU models and configuration": "gpu",
    "Is CUDA available": "cuda_available",
    "Python platform": "platform",
    "CPU": "cpu",
}
# "No CUDA": collect_env on a machine without CUDA (torch/utils/collect_env.py, vLLM's copy)
_UNKNOWN = ("could not collect", "probably one of the following", "n/a", "none", "no cuda")
# What collect_env prints when it could not tell (not: there is none). "No CUDA" and a missing line
# are absence; "Could not collect" and "N/A" (a Jetson's driver, an AMD host's NVIDIA driver) are not.
_NOT_COLLECTED = ("could not collect", "n/a")
_GPU_FACTS = frozenset({"gpu", "driver", "cuda_runtime", "cudnn"})
# libcudnn.so.8.9.2, cudnn64_8.dll, and cuDNN 8's split libraries on Windows (cudnn_ops_train64_8.dll)
_CUDNN_FILE = re.compile(r"libcudnn\.so\.(\d+(?:\.\d+)*)|cudnn(?:_[a-z_]+)?64_(\d+)\.dll", re.IGNORECASE)


def _known(value: str) -> bool:
    return bool(value) and not value.lower().startswith(_UNKNOWN)


@dataclass
class _Header:
    """What the header lines said so far (one collect_env)."""

    last_key: str | None = None
    cudnn_files: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)
    not_collected: set[str] = field(default_factory=set)


def read_collect_env(text: str, c: Collector) -> None:
    """Header facts (one ``meta`` key each) and the package rows of every section."""
    h = _Header()
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        section = SECTION.match(stripped)
        if section:
            h.last_key = None
            _row(section[1], section[2].strip(), number, c)
            continue
        key, sep, value = stripped.partition(":")
        key, value = key.strip(), value.strip()  # the sectioned layout pads keys: "OS      : Ubuntu"
        if sep and key in _KEYS:
            h.last_key = _KEYS[key]
            seen.add(h.last_key)
            _key_line(h, h.last_key, value, number, c)
            continue
        so = _CUDNN_FILE.search(stripped)
        if h.last_key == "cudnn" and so:
            h.cudnn_files.append(so[1] or so[2])
        elif h.last_key == "gpu" and re.match(r"^GPU \d+:", stripped):
            h.gpus.append(stripped.split(":", 1)[1].strip())
        elif h.last_key == "cpu" and key.strip() == "Model name" and _known(value):
            c.meta["cpu"] = value
    if (
        "gpu" not in seen
    ):  # cut before its GPU lines (a paste ending at "Python version"): unknown, not absent
        h.not_collected |= _GPU_FACTS - seen
    h.not_collected -= {"gpu"} if h.gpus else set()
    h.not_collected -= {"cudnn"} if h.cudnn_files else set()
    _finish(c, h.cudnn_files, h.gpus)
    unknown = sorted(f for f in h.not_collected if f not in c.meta)
    if unknown:
        c.meta["not_collected"] = ",".join(unknown)
    _platform_from_os(c)
    if not c.packages:  # header facts only (sections "Could not collect", a paste of the header): unknown
        c.meta["packages"] = "not collected"


def _key_line(h: _Header, key: str, value: str, number: int, c: Collector) -> None:
    """One ``Key: value`` header line."""
    so = _CUDNN_FILE.search(value)
    if key == "gpu" and re.match(r"^GPU \d+:", value):
        h.gpus.append(value.split(":", 1)[1].strip())
    elif key == "cudnn" and so:
        h.cudnn_files.append(so[1] or so[2])
    elif _known(value) and not (key == "cudnn" and ("\\" in value or "/" in value)):
        c.meta[key] = value
        c.meta.setdefault(f"{key}_line", str(number))
    elif key == "torch_cuda" and value.lower() == "none":
        c.meta["torch_cuda"] = "None"  # built without CUDA: a CPU (or ROCm) build
    elif key in _GPU_FACTS and value.lower().startswith(_NOT_COLLECTED):
        h.not_collected.add(key)


def _platform_from_os(c: Collector) -> None:
    """Older collect_env has no ``Python platform`` line: its ``OS`` line says the system."""
    if "platform" in c.meta or "os" not in c.meta:
        return
    system = c.meta["os"].lower()
    if "windows" in system:
        c.meta["platform"] = "windows"
    elif "mac" in system or "darwin" in system:
        c.meta["platform"] = "macos"
    elif any(
        word in system for word in ("linux", "ubuntu", "debian", "centos", "red hat", "fedora", "rocky")
    ):
        c.meta["platform"] = "linux"


def _row(kind: str, row: str, number: int, c: Collector) -> None:
    if not row or row.lower().startswith("could not collect"):
        return
    if kind.startswith("pip"):
        match = REQUIREMENT.match(row)
        if not match or match["op"] not in {"==", "==="}:
            c.skip(number, f"expected '[{kind}] name==version', got {row[:80]!r}")
            return
        c.add(match["name"], match["version"], "pip", line=number, env=kind)
        return
    fields = without_features(row.split())
    if len(fields) < 2 or len(fields) > 4:
        c.skip(number, f"expected '[conda] name version build [channel]', got {row[:80]!r}")
        return
    build = fields[2] if len(fields) > 2 else None
    channel = fields[3] if len(fields) > 3 else None
    c.add(fields[0], fields[1], "conda", line=number, build=build, channel=channel, env=kind)


def _version(text: str) -> Version | None:
    if version_too_large(text):  # thousands of digits: int() would refuse them with a ValueError
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _finish(c: Collector, cudnn_files: list[str], gpus: list[str]) -> None:
    if "python" in c.meta:
        c.meta["python"] = c.meta["python"].split()[0]
    if gpus:
        c.meta["gpu"] = gpus[0] if len(set(gpus)) == 1 else ", ".join(sorted(set(gpus)))
        c.meta["gpu_count"] = str(len(gpus))
    if cudnn_files and "cudnn" not in c.meta:
        versions = sorted({v for v in cudnn_files if _version(v)}, key=lambda v: Version(v))
        if versions:
            c.meta["cudnn"] = versions[-1]
            if len(versions) > 1:
                c.meta["cudnn_candidates"] = ", ".join(versions)
    _header_torch(c)
    _environments(c)
    for key in [k for k in c.meta if k.endswith("_line")]:
        del c.meta[key]


def _header_torch(c: Collector) -> None:
    """No torch row (``Could not collect``): the header's torch is the one installed. A torch row
    that is not the header's torch (a local version dropped in a trimmed paste, another build of the
    same release): the header says what collect_env imported; its row is added beside the others
    (the duplicate is reported) and wins, as the environment's first line."""
    header = c.meta.get("torch")
    if not header or _version(header) is None:
        return
    line = int(c.meta.get("torch_line", "0")) or None
    rows = [p for p in c.packages if p.project == "torch"]
    if not rows:
        c.add("torch", header, "pip", line=line, env="header")
        return
    if any(p.version == header for p in rows):
        return
    runs = {p.env for p in rows if p.env}
    env = "pip3" if "pip3" in runs else ("pip" if "pip" in runs else next(iter(sorted(runs)), None))
    shown = ", ".join(f"[{p.env}] {p.version}" for p in rows)
    c.warnings.append(
        f"{c.path}: collect_env ran torch {header} (its header) but lists {shown}: torch {header} is compared"
    )
    c.add("torch", header, "pip", line=line, env=env)


def _environments(c: Collector) -> None:
    """Which section is the environment that ran collect_env; say so when pip and conda disagree."""
    by_env: dict[str, dict[str, str]] = {}
    for package in c.packages:
        if package.env in {"pip", "pip3", "conda"}:
            by_env.setdefault(package.env, {})[package.project] = package.version
    pip_env = "pip3" if "pip3" in by_env else "pip"
    pip, conda = by_env.get(pip_env, {}), by_env.get("conda", {})
    shared = sorted(set(pip) & set(conda))
    differ = [p for p in shared if public_version(pip[p]) != public_version(conda[p])]
    header = c.meta.get("torch")
    active = pip_env if pip else ("conda" if conda else None)
    if header and conda.get("torch") and public_version(conda["torch"]) == public_version(header):
        active = (
            "conda"
            if not pip.get("torch") or public_version(pip["torch"]) != public_version(header)
            else active
        )
    if active:
        c.meta["active_env"] = active
    if pip and conda:
        c.meta["selected"] = (
            f"[{pip_env}] and [conda] rows: one environment seen twice, [{active}] rows first"
        )
    if len(differ) >= 2 and 2 * len(differ) >= len(shared):
        c.meta["environments"] = f"{pip_env}, conda"
        other = "conda" if active == pip_env else pip_env
        c.meta["selected"] = f"the [{active}] environment; the [{other}] rows are another environment"
        examples = ", ".join(f"{p} {pip[p]} vs {conda[p]}" for p in differ[:3])
        ran = header is not None and public_version(
            by_env.get(active or "", {}).get("torch", "")
        ) == public_version(header)
        why = "its torch is the one collect_env ran with" if ran else "pip precedes conda"
        c.warnings.append(
            f"{c.path}: the [{pip_env}] and [conda] rows disagree on {len(differ)} of {len(shared)} "
            f"packages ({examples}): two environments; the [{active}] one is compared ({why})"
        )


def public_version(version: str) -> str:
    """``version`` without its local part (``2.1.0+cu121`` -> ``2.1.0``); unparsable: as given."""
    parsed = _version(version)
    return parsed.public if parsed else version
