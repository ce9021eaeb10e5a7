"""Mixed precision in a replay: the recorded loss scale and autocast, as the training step ran them.

A step trained under a ``GradScaler`` ran ``scaler.scale(loss).backward()`` and ``unscale_``: its
gradients went through backward multiplied by the loss scale (fp16 gradients that underflow without
it do not with it), so a replay without the scale gives another gradient norm and a deterministic
fault looked ``transient``. A step under autocast computed its forward in bf16/fp16. The dump holds
both: each step's ``loss_scale`` in ``records.json`` (the scale its backward used) and the
``autocast`` the loop declared (``RunlogOptions(autocast="bf16")``) in ``manifest.json``. The replay
makes a fresh scaler at that scale per replay (``unscale_`` once per scaler) and runs the user's
``loss_fn`` under that autocast.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from envkit.errors import DumpError
from envkit.guard.dump import Dump

__all__ = ["AUTOCAST_DTYPES", "Amp", "recorded_amp"]

AUTOCAST_DTYPES = {
    "bf16": "bfloat16", "bfloat16": "bfloat16", "torch.bfloat16": "bfloat16",
    "fp16": "float16", "float16": "float16", "half": "float16", "torch.float16": "float16",
}  # fmt: skip


@dataclass(frozen=True)
class Amp:
    """The step's loss scale (None: no GradScaler) and autocast dtype (None: none), as recorded."""

    loss_scale: float | None
    autocast: str | None  # "bfloat16" / "float16"
    note: str | None = None  # an autocast the dump names that the replay does not know

    def scaler(self, framework: str, device: str, *, primed: bool = False) -> Any:
        """A fresh GradScaler at the recorded scale (one per replay: ``unscale_`` once per scaler).
        ``primed``: ready to unscale gradients some other backward made (torch's sets its scale
        tensor on its first ``scale()``: a DDP replay's all-reduced gradients never went through it)."""
        if self.loss_scale is None:
            return None
        if framework == "paddle":
            import paddle

            return paddle.amp.GradScaler(init_loss_scaling=self.loss_scale)
        import torch

        scaler = torch.amp.GradScaler(device, init_scale=self.loss_scale)
        if primed:
            scaler.scale(torch.ones((), device=device))
        return scaler

    def context(self, framework: str, device: str) -> Callable[[], AbstractContextManager[Any]] | None:
        """The autocast the step's forward ran under, or None."""
        if self.autocast is None:
            return None
        dtype = self.autocast
        if framework == "paddle":
            import paddle

            if dtype == "bfloat16":
                return lambda: paddle.amp.auto_cast(level="O1", dtype="bfloat16")
            return lambda: paddle.amp.auto_cast(level="O1", dtype="float16")
        import torch

        return lambda: torch.autocast(device_type=device, dtype=getattr(torch, dtype))

    def describe(self) -> list[str]:
        parts = []
        if self.loss_scale is not None:
            parts.append(f"with the recorded loss scale {self.loss_scale:g}")
        if self.autocast is not None:
            parts.append(f"under {self.autocast} autocast (as the run declared)")
        lines = [f"replayed {' and '.join(parts)}"] if parts else []
        return lines + ([self.note] if self.note else [])


def recorded_amp(dump: Dump) -> Amp:
    """The loss scale of the dump's step (``records.json``) and the autocast its manifest names."""
    where = dump.file("records.json")
    records = dump.json_parts.get("records.json")
    if not isinstance(records, list):
        raise DumpError(f"{where}: expected a list of step records", hint="the dump was edited")
    mine = [r for r in records if isinstance(r, dict) and r.get("step") == dump.step]
    raw = mine[-1].get("loss_scale") if mine else None
    scale: float | None = None
    if raw is not None:
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < float(raw) < math.inf:
            raise DumpError(
                f"{where}: loss_scale {str(raw)[:40]!r}: expected a positive number", hint="edited"
            )
        scale = float(raw)
    declared = dump.manifest.get("autocast")
    if declared is None:
        undeclared = (
            "the run used a GradScaler and declared no autocast: replayed in the model's own dtype; if "
            "its forward ran under autocast, declare it (RunlogOptions(autocast='bf16' or 'fp16'))"
        )
        return Amp(scale, None, undeclared if scale is not None else None)
    if not isinstance(declared, str):
        raise DumpError(
            f"{dump.file('manifest.json')}: autocast: expected a string", hint="the dump was edited"
        )
    dtype = AUTOCAST_DTYPES.get(declared.strip().lower())
    note = None if dtype else f"autocast {declared[:40]!r} is not bf16 or fp16: replayed without autocast"
    return Amp(scale, dtype, note)
