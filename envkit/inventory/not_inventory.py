"""Files people pass to ``envkit diff``/``audit`` that are not package listings.

Recognized by their own fixed wording, so that the user gets one clear line (what envkit
thinks the file is, which formats it reads) instead of a row-level parse error of a format
it guessed. Each marker is the tool's own output text.
"""

from __future__ import annotations

import re

__all__ = ["instead", "not_an_inventory"]

_TORCH_INSTEAD = (
    "run `python -m torch.utils.collect_env` (host facts and the torch packages) or `pip freeze` / "
    "`conda list` (every package) in that environment"
)
# what to run instead, for the tools whose output names the environment without listing it
_INSTEAD = {
    "detectron2": _TORCH_INSTEAD,
    "PaddlePaddle's summary_env": (
        "run `pip freeze` or `conda list` in that environment (or `envkit probe`, whose report has "
        "Paddle's CUDA and cuDNN)"
    ),
}

# (description, pattern over the first 4 KiB); the more specific first: detectron2's table ends with
# torch's build configuration
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # detectron2.utils.collect_env: two columns, "sys.platform  linux", "DETECTRON2_ENV_MODULE  <not set>"
    (
        "detectron2's environment table (python -m detectron2.utils.collect_env), not a package listing",
        re.compile(r"^\s*(sys\.platform\s{2,}\S|DETECTRON2_ENV_MODULE\s|detectron2\._C\s)", re.M),
    ),
    # Paddle's tools/summary_env.py: "Paddle version: 2.4.0", "Paddle With CUDA: True", "cuDNN version: 8.4"
    (
        "PaddlePaddle's summary_env output (tools/summary_env.py), not a package listing",
        re.compile(r"^\s*(Paddle version:|Paddle With CUDA:)", re.M),
    ),
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


def instead(what: str) -> str | None:
    """What the user can give envkit instead of the non-inventory ``what`` names, if envkit knows."""
    return next((hint for key, hint in _INSTEAD.items() if key in what), None)


def not_an_inventory(text: str) -> str | None:
    """What ``text`` is when it is a known non-inventory output, else None."""
    head = text[:4096]
    if re.search(r"^\s*\[(pip3?|conda)\] ", head, re.M) or "Versions of relevant libraries" in head:
        return None  # collect_env quotes nvidia-smi-like lines; it is an inventory
    for what, pattern in _KINDS:
        if pattern.search(head):
            return what
    return None
