"""``Guard``'s wiring: its arguments checked, its read cadence, and the parts it is built from (the
spike detectors, the update tracker, the run log and the config the report states, the ledger):
:func:`build`. The loop's own state starts in ``Guard.__init__``; nothing here keeps state."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit.errors import GuardError
from envkit.guard.adapter import Adapter, make_adapter
from envkit.guard.checks import DumpBudget
from envkit.guard.ledger import Ledger
from envkit.guard.options import Grouped, ReadOptions, RunlogOptions, SpikeOptions
from envkit.guard.records import Policy
from envkit.guard.runlog import RunLog
from envkit.guard.scale import InputScale
from envkit.guard.schedules import LrWatch
from envkit.guard.spikes import SpikeDetector, Spikes
from envkit.guard.updates import UpdateTracker

__all__ = ["Parts", "build", "checked_policy", "make_runlog", "make_spikes", "read_every", "run_config"]


@dataclass(frozen=True)
class Parts:
    """What a ``Guard`` is built from (:func:`build`)."""

    policy: Policy
    spike_policy: Policy | None  # None: spike checks off
    adapter: Adapter
    rank: int
    world_size: int
    check_every: int
    spikes: Spikes
    updates: UpdateTracker
    dumps: DumpBudget  # per kind: warnings never starve incidents
    lr_watch: LrWatch
    log: RunLog
    ledger: Ledger  # the batches incidents skipped
    scale: InputScale | None  # each batch's scale against the batches before (None: off)


def build(
    model: Any,
    optimizer: Any,
    *,
    run: str | os.PathLike[str],
    policy: str,
    clip: float | None,
    scaler: Any,
    scheduler: Any,
    entry: str | None,
    grouped: Grouped,
) -> Parts:
    """The parts of a ``Guard`` of ``model`` and ``optimizer``, its arguments checked first (a
    GuardError before any file is made); the run log states the config."""
    spikes, reads, limits, log = grouped.spikes, grouped.reads, grouped.limits, grouped.log
    checked = checked_policy(policy, clip)
    spike_policy = None if spikes is None else Policy(spikes.policy)
    sp = spikes or SpikeOptions()
    adapter = make_adapter(model, optimizer, scaler)
    adapter.clipping = clip is not None
    rank, world_size = adapter.world()
    check_every = read_every(adapter, reads, scaler, world_size)
    detectors, updates = make_spikes(sp), UpdateTracker(sp.update_factor, sp.warmup)
    dumps, lr_watch = DumpBudget(limits.max_dumps, limits.max_spike_dumps), LrWatch(optimizer, scheduler)
    runlog = make_runlog(run, adapter, log, rank, world_size)
    ledger = Ledger(runlog.root / "ledger.jsonl", log.ledger)
    runlog.config = run_config(checked, spike_policy, clip, check_every, reads, scaler, entry, log)
    return Parts(
        policy=checked,
        spike_policy=spike_policy,
        adapter=adapter,
        rank=rank,
        world_size=world_size,
        check_every=check_every,
        spikes=detectors,
        updates=updates,
        dumps=dumps,
        lr_watch=lr_watch,
        log=runlog,
        ledger=ledger,
        scale=None if spikes is None or sp.input_factor is None else InputScale(sp.input_factor),
    )


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
