"""``Guard``'s wiring: its arguments checked, its read cadence, and the parts it is built from (the
spike detectors, the update tracker's options, the run log and the config the report states). The
loop's own state starts in ``Guard.__init__``; nothing here keeps state."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from envkit.errors import GuardError
from envkit.guard.adapter import Adapter
from envkit.guard.options import ReadOptions, RunlogOptions, SpikeOptions
from envkit.guard.records import Policy
from envkit.guard.runlog import RunLog
from envkit.guard.spikes import SpikeDetector, Spikes

__all__ = ["checked_policy", "make_runlog", "make_spikes", "read_every", "run_config"]


def checked_policy(policy: str, clip: float | None) -> Policy:
    """``policy`` as a :class:`Policy`; a policy or a clip the guard cannot use is a GuardError."""
    if policy not in ("skip", "stop", "warn"):
        raise GuardError(f"policy {policy!r}: choose skip, stop or warn", hint="see docs/guides/guard.md")
    if clip is not None and not clip > 0:
        raise GuardError("clip must be > 0 (or None)", hint="see docs/guides/guard.md")
    return Policy(policy)


def read_every(adapter: Adapter, reads: ReadOptions, scaler: Any, world_size: int) -> int:
    """Every how many steps the host reads the device's flags: every step with a GradScaler, in a
    process group, or where reads are not deferred (a CPU "device" answers at once: deferring reads
    there only adds the device-side masking)."""
    defer = adapter.device() != "cpu" if reads.defer is None else reads.defer
    one = scaler is not None or world_size > 1 or not defer
    return 1 if one else reads.check_every


def make_spikes(sp: SpikeOptions) -> Spikes:
    """The loss's detector (``loss_factor``) and the gradient norm's (``factor``), as ``sp`` says."""
    return Spikes(
        SpikeDetector(sp.window, sp.warmup, sp.threshold, sp.loss_factor, sp.floor),
        SpikeDetector(sp.window, sp.warmup, sp.threshold, sp.factor, sp.floor),
    )


def make_runlog(
    run: str | os.PathLike[str], adapter: Adapter, log: RunlogOptions, rank: int, world_size: int
) -> RunLog:
    runlog = RunLog(
        Path(run),
        adapter,
        name=log.name,
        seed=log.seed,
        rank=rank,
        world=world_size,
        tensorboard=log.tensorboard,
    )
    runlog.flush_every = log.flush_every
    return runlog


def run_config(
    policy: Policy,
    spike_policy: Policy | None,
    clip: float | None,
    check_every: int,
    reads: ReadOptions,
    scaler: Any,
    entry: str | None,
    log: RunlogOptions,
) -> dict[str, Any]:
    """What the report states of how the run was guarded."""
    return {
        "policy": str(policy),
        "clip": clip,
        "check_every": check_every,
        "check_every_requested": reads.check_every,
        "scaler": scaler is not None,
        "spikes": None if spike_policy is None else str(spike_policy),
        "entry": entry,
        "autocast": log.autocast,  # what the loop runs under (say it: comparisons rank it as a cause)
    }
