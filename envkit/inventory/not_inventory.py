"""Files people pass to ``envkit diff``/``audit`` that are not package listings.

Recognized by their own fixed wording, so that the user gets one clear line (what envkit
thinks the file is, which formats it reads) instead of a row-level parse error of a format
it guessed. Each marker is the tool's own output text.
"""

from __future__ import annotations

import re

__all__ = ["not_an_inventory"]

# (description, pattern over the first 4 KiB)
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # nvidia-smi's table header: "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |"
    ("nvidia-smi output (GPU and driver status)", re.compile(r"NVIDIA-SMI \d|Driver Version: *\d+\.\d+")),
    # paddle.utils.run_check(): "Running verify PaddlePaddle program ...", "PaddlePaddle works well on 1 GPU."
    (
        "a PaddlePaddle run_check() log",
        re.compile(
            r"Running verify PaddlePaddle program|PaddlePaddle works well on"
            r"|PaddlePaddle is installed successfully"
        ),
    ),
    # torch.__config__.show(): "PyTorch built with:" then "  - GCC 9.3", "  - Build settings: ..."
    ("a torch build configuration dump (torch.__config__.show())", re.compile(r"^PyTorch built with:", re.M)),
    # nvcc --version: "nvcc: NVIDIA (R) Cuda compiler driver"
    ("nvcc --version output", re.compile(r"Cuda compiler driver")),
)


def not_an_inventory(text: str) -> str | None:
    """What ``text`` is when it is a known non-inventory output, else None."""
    head = text[:4096]
    if re.search(r"^\s*\[(pip3?|conda)\] ", head, re.M) or "Versions of relevant libraries" in head:
        return None  # collect_env quotes nvidia-smi-like lines; it is an inventory
    for what, pattern in _KINDS:
        if pattern.search(head):
            return what
    return None
