"""What the guard records per step and per incident: plain frozen values, standard library only.

Floats are kept exactly: JSON gets the shortest repr that round-trips (``repr(float)``) or the
markers ``"nan"`` / ``"inf"`` / ``"-inf"`` that the probe report reads, and ``float.hex`` for
bitwise comparisons (``loss_hex``).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

# the probe payload's stdlib module (a script tree run in foreign interpreters, not type-checked)
_PORTABLE = importlib.import_module("envkit.payload.scripts.portable")

__all__ = ["Incident", "IncidentKind", "Policy", "StepRecord", "json_clean", "json_float", "read_float"]


class Policy(str, Enum):
    """A bad step: ``skip`` (clear the gradients, go on), ``stop`` (raise), ``warn`` (step anyway)."""

    SKIP = "skip"
    STOP = "stop"
    WARN = "warn"

    def __str__(self) -> str:
        return self.value


class IncidentKind(str, Enum):
    """What went wrong at a step: NaN/Inf, an error, a spike, or replicas that disagree."""

    NONFINITE_LOSS = "nonfinite-loss"
    NONFINITE_GRAD = "nonfinite-grad"
    ERROR = "error"  # the step raised (an index out of range, a device assert)
    LOSS_SPIKE = "loss-spike"
    GRAD_SPIKE = "grad-spike"
    UPDATE_SPIKE = "update-spike"  # the update (lr · gradient) far larger than any before it
    RANK_MISMATCH = "rank-mismatch"  # replicas disagree on the all-reduced gradient norm
    DEAD_RUN = "dead-run"  # after a blow-up, the loss has stopped moving (one warning a run)
    INPUT_OUTLIER = "input-outlier"  # a finite batch tensor far outside the scale of the batches before

    def __str__(self) -> str:
        return self.value


def json_float(value: float) -> float | str:
    """A float for JSON: itself when finite, else the probe report's marker (the payload's own encoder)."""
    encoded: float | str = _PORTABLE.json_float(value)
    return encoded


def json_clean(value: Any) -> Any:
    """``value`` with every non-finite float (at any depth) as its marker: JSON without NaN literals."""
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, dict):
        return {k: json_clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_clean(v) for v in value]
    return value


def read_float(value: Any) -> float:
    if isinstance(value, str):
        return float(value)  # "nan", "inf", "-inf"
    return float(value)


def hex_float(value: float) -> str:
    return value.hex() if math.isfinite(value) else str(value)


@dataclass(slots=True)
class StepRecord:
    """One step as the guard saw it. ``skipped`` holds the reason, or None when the update was applied."""

    step: int
    loss: float
    grad_norm: float  # before clipping
    clipped_norm: float | None = None  # after clipping (None: no clip configured)
    lr: float | None = None
    loss_scale: float | None = None
    overflow: bool = False  # a GradScaler skipped the step: loss-scale overflow, not a NaN incident
    skipped: str | None = None
    lrs: list[float] | None = None  # each parameter group's learning rate
    # each group's lr · |clipped gradient| / |weight| (before the update): the step's relative size
    update_ratios: list[float] | None = None
    rank_losses: list[float] | None = None
    rank_norms: list[float] | None = None
    raised: str | None = None  # the step raised (re-raised to the loop): not a skip

    @property
    def finite(self) -> bool:
        return math.isfinite(self.loss) and math.isfinite(self.grad_norm)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "step": self.step,
            "loss": json_float(self.loss),
            "loss_hex": hex_float(self.loss),
            "grad_norm": json_float(self.grad_norm),
            "grad_norm_hex": hex_float(self.grad_norm),
            "clipped_norm": None if self.clipped_norm is None else json_float(self.clipped_norm),
            "lr": self.lr,
            "loss_scale": self.loss_scale,
            "overflow": self.overflow,
            "skipped": self.skipped,
        }
        if self.lrs is not None:
            data["lrs"] = [json_float(v) for v in self.lrs]
        if self.update_ratios is not None:
            data["update_ratios"] = [json_float(v) for v in self.update_ratios]
        if self.rank_losses is not None:
            data["rank_losses"] = [json_float(v) for v in self.rank_losses]
            data["rank_norms"] = [json_float(v) for v in self.rank_norms or []]
        if self.raised is not None:
            data["raised"] = self.raised
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepRecord:
        def opt(key: str) -> float | None:
            return None if data.get(key) is None else read_float(data[key])

        ranks = data.get("rank_losses")
        return cls(
            step=int(data["step"]),
            loss=read_float(data["loss"]),
            grad_norm=read_float(data["grad_norm"]),
            clipped_norm=opt("clipped_norm"),
            lr=opt("lr"),
            loss_scale=opt("loss_scale"),
            overflow=bool(data.get("overflow")),
            skipped=data.get("skipped"),
            lrs=_floats(data.get("lrs")),
            update_ratios=_floats(data.get("update_ratios")),
            rank_losses=None if ranks is None else [read_float(v) for v in ranks],
            rank_norms=None if ranks is None else [read_float(v) for v in data.get("rank_norms") or []],
            raised=data.get("raised"),
        )


def _floats(value: Any) -> list[float] | None:
    return [read_float(v) for v in value] if isinstance(value, list) else None


@dataclass
class Incident:
    """A bad step: what, where (localization), the dump that replays it and what the policy did."""

    step: int
    kind: IncidentKind
    message: str
    action: str  # skipped / stopped / warned / raised
    dump: str | None = None  # RUN-relative path of incidents/step-N
    ranks: list[int] = field(default_factory=list)  # the ranks whose numbers went bad (data parallel)
    localization: dict[str, Any] | None = None
    param_grad_norms: dict[str, float | str] = field(default_factory=dict)
    # what the incident's step was: lr and update ratio per group, beside the largest before it;
    # where the batch held NaN/Inf (tensor, index), checked when the step went bad
    context: dict[str, Any] = field(default_factory=dict)
    recording_error: str | None = None  # the guard could not record all of it (its dump): why

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = str(self.kind)
        return dict(json_clean(data))
