"""envkit.guard: catch NaN/Inf and exploding gradients inside your own training loop (torch, Paddle).

``Guard(model, optimizer, run=..., policy="skip", clip=1.0)``, then per step
``with guard.step(step, batch) as g: g.backward(loss); g.optimizer_step()``. See ``docs/guard.md``.
More options come grouped (:mod:`envkit.guard.options`): ``spikes=SpikeOptions(...)``,
``reads=ReadOptions(...)``, ``limits=Limits(...)``, ``log=RunlogOptions(...)``.
Importing this package imports no framework; the model's class picks the adapter.
"""

from __future__ import annotations

from envkit.guard.loop import Guard
from envkit.guard.options import Limits, ReadOptions, RunlogOptions, SpikeOptions
from envkit.guard.records import Incident, IncidentKind, Policy, StepRecord
from envkit.guard.step import GuardStep

__all__ = [
    "Guard",
    "GuardStep",
    "Incident",
    "IncidentKind",
    "Limits",
    "Policy",
    "ReadOptions",
    "RunlogOptions",
    "SpikeOptions",
    "StepRecord",
]
