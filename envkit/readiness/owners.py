"""Who a library with GPU code belongs to, for the rules: a framework, NVIDIA, or another package."""

from __future__ import annotations

import re

from envkit.readiness.facts import LibraryScan, Owner, ReadinessFacts

__all__ = ["is_nvidia", "package_of"]

# NVIDIA's own libraries, by distribution (pip nvidia-*, conda's CUDA packages) or by file name
# (vendored copies: torchvision.libs/libnvjpeg.4a0b5c81.so.13)
_NVIDIA_DIST = re.compile(r"^(nvidia-|cuda-|libcu|libnv|libnccl|nccl|cudnn|cudatoolkit|cutensor)", re.I)
_NVIDIA_FILE = re.compile(r"^lib(cu|nv|nccl)")


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def is_nvidia(path: str, owner: Owner | None) -> bool:
    """An NVIDIA library: an NVIDIA distribution's, a vendored copy, or one in a CUDA directory."""
    if _NVIDIA_FILE.match(_base(path)):
        return True
    if owner is not None:
        return bool(_NVIDIA_DIST.match(owner.name))
    return "/nvidia/" in path or "/cuda" in path


def package_of(facts: ReadinessFacts, lib: LibraryScan) -> Owner | None:
    """The package a library is judged as (None: a framework's or NVIDIA's, which have their rules)."""
    if any(lib.path.startswith(fw.directory + "/") for fw in facts.frameworks.values()):
        return None
    owner = facts.owners.get(lib.path)
    if is_nvidia(lib.path, owner) or (owner is None and facts.walk is None):
        return None  # a report without the walk (an older payload, a probe): as before, NVIDIA's rule
    return owner if owner is not None else Owner(_parent(lib.path), None, "no distribution")


def _parent(path: str) -> str:
    parts = path.rsplit("/", 2)
    return parts[-2] if len(parts) == 3 else path
