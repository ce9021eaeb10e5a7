"""Readers for line-oriented listings: conda list (classic, wide, mamba/micromamba),
conda list --export, conda list --explicit, pip freeze / requirements locks and
``python -m torch.utils.collect_env`` output."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envkit.inventory._collect import (
    EGG,
    REQUIREMENT,
    Collector,
    channel_from_url,
    requirement_version,
    split_conda_filename,
    version_from_url,
)

__all__ = [
    "read_collect_env",
    "read_conda_explicit",
    "read_conda_export",
    "read_conda_list",
    "read_requirements",
]

_PROMPT = re.compile(r"^(\(.*?\)\s*)?\S*[@:]\S*[$#>]\s|^[$>]\s|conda list|mamba list|micromamba list")
_TABLE_HEADER = re.compile(r"^#?\s*Name\s+Version\s+Build(\s+Channel)?\s*$")
_SEPARATOR = re.compile(r"^[\s\-=─━_]+$")
_EXPORT = re.compile(r"^([^\s=]+)=([^\s=]+)(?:=([^\s=]+))?$")
_EDITABLE_NOTE = re.compile(r"^#\s*Editable install.*\(([A-Za-z0-9._-]+)==([^)\s]+)\)")


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        yield number, raw.rstrip()


def read_conda_list(text: str, c: Collector) -> None:
    """``conda list`` / ``mamba list`` / ``micromamba list`` tables (any column widths)."""
    for number, line in _lines(text):
        stripped = line.strip()
        if not stripped or _SEPARATOR.match(stripped) or _TABLE_HEADER.match(stripped):
            continue
        if stripped.startswith("#"):
            if stripped.startswith("# packages in environment at"):
                c.meta["prefix"] = stripped.split(" at ", 1)[1].rstrip(":")
            continue
        if stripped.startswith("List of packages in environment:"):
            c.format = "mamba-list"
            c.meta["prefix"] = stripped.split(":", 1)[1].strip().strip('"')
            continue
        if _PROMPT.search(stripped):
            continue
        fields = stripped.split()
        if len(fields) < 2 or len(fields) > 5:
            raise c.error(number, f"expected 'name version [build [channel]]', got {stripped[:80]!r}")
        _add_conda_row(fields, number, c)


def _add_conda_row(fields: list[str], number: int, c: Collector) -> None:
    """``name version [build [channel]]`` columns; no channel column means defaults (pkgs/main)."""
    build = fields[2] if len(fields) > 2 else None
    channel = fields[3] if len(fields) > 3 else "pkgs/main"
    c.add(fields[0], fields[1], "conda", line=number, build=build, channel=channel)


def _platform_comment(comment: str, c: Collector) -> None:
    """``# platform: linux-64`` in an export or explicit listing."""
    if comment.startswith("# platform:"):
        c.meta["platform"] = comment.split(":", 1)[1].strip()


def read_conda_export(text: str, c: Collector) -> None:
    """``conda list --export``: ``name=version=build`` lines."""
    for number, line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            _platform_comment(stripped, c)
            continue
        match = _EXPORT.match(stripped)
        if not match:
            raise c.error(number, f"expected 'name=version=build', got {stripped[:80]!r}")
        c.add(match[1], match[2], "conda", line=number, build=match[3])


def read_conda_explicit(text: str, c: Collector) -> None:
    """``conda list --explicit`` (``@EXPLICIT`` then package URLs, optional #md5 / #sha256)."""
    seen_marker = False
    for number, line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            _platform_comment(stripped, c)
            continue
        if stripped == "@EXPLICIT":
            seen_marker = True
            continue
        if not seen_marker:
            raise c.error(number, "package URL before the @EXPLICIT line")
        url = stripped.split("#", 1)[0]
        parts = split_conda_filename(url.rsplit("/", 1)[-1])
        if parts is None or "://" not in url:
            raise c.error(number, f"not a conda package URL: {stripped[:100]!r}")
        name, version, build = parts
        c.add(name, version, "conda", line=number, build=build, channel=channel_from_url(url), url=stripped)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Join backslash continuations (requirements locks put --hash options on their own lines)."""
    pending: list[str] = []
    start = 0
    for number, line in _lines(text):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, " ".join(p.strip() for p in pending)
        pending = []
    if pending:
        yield start, " ".join(p.strip() for p in pending)


def read_requirements(text: str, c: Collector) -> None:
    """``pip freeze`` and requirements locks: ``==`` pins, ``name @ url``, ``-e`` lines, hashes."""
    editable: tuple[str, str] | None = None
    for number, line in _logical_lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            note = _EDITABLE_NOTE.match(stripped)
            editable = (note[1], note[2]) if note else editable
            continue
        stripped = re.sub(r"\s+#.*$", "", stripped)
        if "--hash" in stripped:
            c.format = "requirements-lock" if c.format == "pip-freeze" else c.format
        if stripped.startswith(("-e ", "--editable")):
            target = stripped.split(None, 1)[1] if " " in stripped else ""
            egg = EGG.search(target)
            if egg:
                c.add(egg[1], version_from_url(target), "pip", line=number, url=target)
            elif editable:
                c.add(editable[0], editable[1], "pip", line=number, url=target)
            else:
                raise c.error(number, f"editable install without a name: {stripped[:100]!r}")
            editable = None
            continue
        if stripped.startswith("-"):
            continue  # --index-url, --extra-index-url, -f, -c, -r, --hash on its own, ...
        stripped = re.sub(r"\s--hash[= ]\S+", "", stripped).strip()
        match = REQUIREMENT.match(stripped)
        if not match:
            raise c.error(number, f"not a requirement line: {stripped[:100]!r}")
        c.add(match["name"], requirement_version(match), "pip", line=number, url=match["url"])


_CE_KEYS = {
    "PyTorch version": "torch",
    "CUDA used to build PyTorch": "torch_cuda",
    "Python version": "python",
    "OS": "os",
    "CUDA runtime version": "cuda_runtime",
    "Nvidia driver version": "driver",
    "cuDNN version": "cudnn",
    "GPU models and configuration": "gpu",
    "Is CUDA available": "cuda_available",
    "Python platform": "platform",
}
_CUDNN_SO = re.compile(r"libcudnn\.so\.(\d+(?:\.\d+)*)")


def read_collect_env(text: str, c: Collector) -> None:
    """``python -m torch.utils.collect_env``: header facts plus ``[pip3]``/``[conda]`` rows."""
    last_key: str | None = None
    for number, line in _lines(text):
        stripped = line.strip()
        section = re.match(r"^\[(pip3?|conda)\]\s+(.*)$", stripped)
        if section:
            last_key = None
            _collect_env_row(section[1], section[2].strip(), number, c)
            continue
        key, sep, value = stripped.partition(":")
        if sep and key in _CE_KEYS:
            last_key = _CE_KEYS[key]
            if value.strip():
                c.meta[last_key] = value.strip()
            continue
        so = _CUDNN_SO.search(stripped)
        if last_key == "cudnn" and so and "cudnn" not in c.meta:
            c.meta["cudnn"] = so[1]
        elif last_key == "gpu" and stripped.startswith("GPU 0:"):
            c.meta.setdefault("gpu", stripped.split(":", 1)[1].strip())
    if "python" in c.meta:
        c.meta["python"] = c.meta["python"].split()[0]


def _collect_env_row(kind: str, row: str, number: int, c: Collector) -> None:
    if row.lower().startswith("could not collect") or not row:
        return
    if kind.startswith("pip"):
        match = REQUIREMENT.match(row)
        if not match or match["op"] not in {"==", "==="}:
            raise c.error(number, f"expected '[{kind}] name==version', got {row[:80]!r}")
        c.add(match["name"], match["version"], "pip", line=number)
        return
    fields = row.split()
    if len(fields) < 2 or len(fields) > 4:
        raise c.error(number, f"expected '[conda] name version build [channel]', got {row[:80]!r}")
    _add_conda_row(fields, number, c)
