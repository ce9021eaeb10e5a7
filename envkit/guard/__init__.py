"""envkit.guard: catch NaN/Inf and exploding gradients inside your own training loop (torch, Paddle).

``Guard(model, optimizer, run=..., policy="skip", clip=1.0)``, then per step
``with guard.step(step, batch) as g: g.backward(loss); g.optimizer_step()``. See ``docs/guides/guard.md``.
More options come grouped (:mod:`envkit.guard.options`): ``spikes=SpikeOptions(...)``,
``reads=ReadOptions(...)``, ``limits=Limits(...)``, ``log=RunlogOptions(...)``.
Importing this package imports no framework; the model's class picks the adapter.
"""

from __future__ import annotations

import logging

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

# The guard's INFO lines (each skip, each ledger hit) are there for whoever asks for them
# (``logging.getLogger("envkit.guard").setLevel(logging.INFO)``). Importing Paddle configures the root
# logger at INFO with a stderr handler, which echoed every one of them under the guard's own
# first-skip line (issue 44 item 7): the guard's logger says WARNING and up unless set otherwise.
_LOGGER = logging.getLogger("envkit.guard")
if _LOGGER.level == logging.NOTSET:
    _LOGGER.setLevel(logging.WARNING)
