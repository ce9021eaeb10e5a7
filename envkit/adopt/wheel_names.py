"""What a wheel's file name or a find-links page's address says about the framework.

- a framework wheel itself (``.../torch-2.0.0%2Bcu118-cp310-cp310-linux_x86_64.whl``,
  ``paddlepaddle_gpu-2.6.1.post120-cp310-...whl``): :func:`framework_wheel` -> the pin it installs;
- a wheel built against a framework release (``flash_attn-2.7.4+cu12torch2.6cxx11abiFALSE-cp312-...``),
  a find-links page of one (``https://data.pyg.org/whl/torch-2.1.0+cu121.html``,
  ``.../mmcv/dist/cu117/torch1.13/index.html``): :func:`torch_hint` -> the torch release (and CUDA)
  the project runs, which an unpinned ``torch`` beside it must match.

The Python of a ``cp3X`` tag is read by the requirements reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from envkit._pep503 import canonicalize_name

__all__ = ["TorchHint", "framework_wheel", "torch_hint"]

_WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>\d[^-]*)-(?:\d[^-]*-)?cp3\d+-[^-]+-[^-]+\.whl\Z")
_FRAMEWORKS = {"torch", "paddlepaddle", "paddlepaddle-gpu"}
_HINTS = (
    re.compile(r"torch-(?P<torch>\d+\.\d+(?:\.\d+)?)\+(?P<cuda>cu\d{3}|cpu)\.html\Z"),  # PyG, torch-scatter
    re.compile(r"/(?P<cuda>cu\d{3}|cpu)/torch(?P<torch>\d+\.\d+)(?:\.\d+)?/"),  # mmcv's find-links pages
    re.compile(r"\+(?:cu(?P<major>\d{2,3}))?torch(?P<torch>\d+\.\d+)"),  # flash-attn, causal-conv1d wheels
)


def _file_name(url: str) -> str:
    try:
        path = urlsplit(url).path if "://" in url else url
    except ValueError:
        return ""
    return unquote(path.rsplit("/", 1)[-1].split("#", 1)[0])


def framework_wheel(url: str) -> str | None:
    """``torch==2.0.0+cu118`` for a URL (or path) of a framework's own wheel; else None."""
    match = _WHEEL.match(_file_name(url))
    if match is None:
        return None
    name = canonicalize_name(match["name"])
    return f"{name}=={match['version']}" if name in _FRAMEWORKS else None


@dataclass(frozen=True)
class TorchHint:
    """A torch release (``2.6``, ``2.1.0``) a wheel or page was built for, its CUDA flavour when it
    names one (``cu121``; None for ``cu12``), and where it was read."""

    torch: str
    flavour: str | None
    where: str
    what: str

    @property
    def constraint(self) -> str:
        return f"=={self.torch}" if self.torch.count(".") == 2 else f"=={self.torch}.*"


def torch_hint(url: str, where: str) -> TorchHint | None:
    """The torch release a wheel's name or a find-links page's address was built for, or None."""
    text = unquote(url)
    for pattern in _HINTS:
        match = pattern.search(text)
        if match:
            flavour = match.groupdict().get("cuda")
            major = match.groupdict().get("major")
            if flavour is None and major and len(major) == 3:
                flavour = f"cu{major}"
            return TorchHint(match["torch"], flavour, where, _file_name(url) or text)
    return None
