"""NVIDIA's NGC PyTorch containers by tag (``data/ngc_pytorch.yaml``, each row with its source and
whether it was read from that tag's release notes)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

import yaml

__all__ = ["NgcImage", "ngc_pytorch"]

_TAG = re.compile(r"(?:^|/)nvcr\.io/nvidia/pytorch:(\d{2}\.\d{2})-py3\b")


@dataclass(frozen=True)
class NgcImage:
    """One NGC PyTorch tag: NVIDIA's torch build, its CUDA and Python, and where that was read."""

    tag: str
    torch: str | None
    cuda: str
    python: str
    verified: bool
    source: str
    cudnn: str | None = None

    @property
    def release_line(self) -> str | None:
        """``2.2`` for NVIDIA's ``2.2.0a0+81ea7a4``: the PyPI releases nearest to the build."""
        match = re.match(r"(\d+)\.(\d+)", self.torch or "")
        return f"{match[1]}.{match[2]}" if match else None

    def describe(self) -> str:
        torch = f"torch {self.torch} (NVIDIA's build)" if self.torch else "NVIDIA's torch build"
        cudnn = f", cuDNN {self.cudnn}" if self.cudnn else ""
        read = (
            "per its release notes"
            if self.verified
            else "unverified: see envkit/catalog/data/ngc_pytorch.yaml"
        )
        return f"NGC PyTorch {self.tag}: {torch}, CUDA {self.cuda}{cudnn}, Python {self.python} ({read})"


@functools.cache
def _table() -> dict[str, NgcImage]:
    text = resources.files("envkit.catalog").joinpath("data").joinpath("ngc_pytorch.yaml").read_text("utf-8")
    rows = yaml.safe_load(text)["images"]
    return {
        tag: NgcImage(
            tag,
            row.get("torch"),
            str(row["cuda"]),
            str(row["python"]),
            bool(row["verified"]),
            str(row["source"]),
            row.get("cudnn"),
        )
        for tag, row in rows.items()
    }


def ngc_pytorch(image: str) -> NgcImage | None:
    """The table's row for an ``nvcr.io/nvidia/pytorch:YY.MM-py3`` image, or None."""
    match = _TAG.search(image)
    return _table().get(match[1]) if match else None
