"""``Guard``'s options, grouped: typed frozen values, checked when made (a :class:`GuardError` with a hint).

``Guard(model, optimizer, run=..., policy="skip", clip=1.0, loss_fn=loss_fn)`` needs none of them;
a loop that wants more passes one value per concern::

    Guard(model, opt, run="runs/x", spikes=SpikeOptions(policy="skip", warmup=50),
          reads=ReadOptions(check_every=10), limits=Limits(max_dumps=2),
          log=RunlogOptions(name="bert", seed=3, tensorboard=True))

``spikes=None`` turns spike detection off (non-finite steps are still caught).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from envkit.errors import GuardError

__all__ = ["LEGACY", "Grouped", "Limits", "ReadOptions", "RunlogOptions", "SpikeOptions", "fold_legacy"]

_HINT = "see docs/guides/guard.md (options)"
_POLICIES = ("skip", "stop", "warn")


@dataclass(frozen=True)
class SpikeOptions:
    """Loss / gradient-norm spikes and update spikes (``docs/guides/guard.md``, "Calibrated on real runs").

    A spike needs ``median + threshold·σ`` (σ from the MAD over the last ``window`` finite values,
    after ``warmup`` steps) *and* ``factor × median`` (gradient norm) or ``loss_factor × median``
    (loss), *and* ``floor`` × the largest value of the warm-up (the run's own scale: a loss that went
    to ~0 on a memorized batch has a median and MAD so small that dropout noise clears both). An
    update ``update_factor`` × larger than any healthy one before is an update-spike (``None``: off). A
    batch tensor whose largest |x| is ``input_factor`` × the median of the batches before is an
    input-outlier warning (``None``: off; ``envkit/guard/scale.py``)."""

    policy: str = "warn"
    window: int = 100
    warmup: int = 20
    threshold: float = 6.0
    factor: float = 4.0
    loss_factor: float = 1.5
    floor: float = 0.01
    update_factor: float | None = 10.0
    input_factor: float | None = 50.0

    def __post_init__(self) -> None:
        if self.policy not in _POLICIES:
            raise GuardError(f"spikes policy {self.policy!r}: choose skip, stop or warn", hint=_HINT)
        if not 3 <= self.warmup <= self.window or not self.threshold > 0:
            raise GuardError("SpikeOptions: 3 <= warmup <= window and threshold > 0", hint=_HINT)
        if not (self.factor >= 1 and self.loss_factor >= 1):
            raise GuardError("SpikeOptions: factor and loss_factor >= 1", hint=_HINT)
        if not 0.0 <= self.floor <= 1.0:
            raise GuardError("SpikeOptions: 0 <= floor <= 1", hint=_HINT)
        if self.update_factor is not None and not self.update_factor > 0:
            raise GuardError("SpikeOptions: update_factor > 0 (or None: off)", hint=_HINT)
        if self.input_factor is not None and not self.input_factor > 1:
            raise GuardError("SpikeOptions: input_factor > 1 (or None: off)", hint=_HINT)


@dataclass(frozen=True)
class ReadOptions:
    """When the host reads the device's flags: every ``check_every`` steps on an accelerator (every
    step on CPU unless ``defer=True``; every step with a GradScaler or in a process group)."""

    check_every: int = 1
    defer: bool | None = None

    def __post_init__(self) -> None:
        if self.check_every < 1:
            raise GuardError("ReadOptions: check_every must be >= 1", hint=_HINT)


@dataclass(frozen=True)
class Limits:
    """How much the guard may do: ``max_skips`` in a row turn into a stop, ``max_overflows`` GradScaler
    overflows in a row before one is an incident; ``max_dumps`` per kind of bad step and
    ``max_spike_dumps`` per kind of warning (warnings never starve incidents)."""

    max_skips: int = 10
    max_overflows: int = 20
    max_dumps: int = 5
    max_spike_dumps: int = 2

    def __post_init__(self) -> None:
        if self.max_skips < 1 or self.max_overflows < 0 or self.max_dumps < 0 or self.max_spike_dumps < 0:
            raise GuardError("Limits: max_skips >= 1, the others >= 0", hint=_HINT)


@dataclass(frozen=True)
class RunlogOptions:
    """What the run log says and keeps: the workload ``name`` and ``seed`` of the report, what the
    loop runs under (``autocast="bf16"``: comparisons rank it as a cause), the last ``keep`` steps in
    each dump, ``steps.jsonl`` appended every ``flush_every`` steps, TensorBoard event files
    (opt-in: ~0.5 ms of CPU per step), the bad-batch ledger (``skip``, ``replay`` or ``off``)."""

    name: str = "train"
    seed: int = 0
    autocast: str | None = None
    keep: int = 16
    flush_every: int = 100
    tensorboard: bool = False
    ledger: str = "skip"

    def __post_init__(self) -> None:
        if self.keep < 1 or self.flush_every < 1:
            raise GuardError("RunlogOptions: keep and flush_every must be >= 1", hint=_HINT)


# the keywords Guard took before its options were grouped (rounds 1 and 2): group and field now
LEGACY: dict[str, tuple[str, str]] = {
    "check_every": ("reads", "check_every"),
    "defer_reads": ("reads", "defer"),
    "max_skips": ("limits", "max_skips"),
    "max_overflows": ("limits", "max_overflows"),
    "max_dumps": ("limits", "max_dumps"),
    "max_spike_dumps": ("limits", "max_spike_dumps"),
    "spike_window": ("spikes", "window"),
    "spike_warmup": ("spikes", "warmup"),
    "spike_threshold": ("spikes", "threshold"),
    "spike_factor": ("spikes", "factor"),
    "loss_spike_factor": ("spikes", "loss_factor"),
    "update_factor": ("spikes", "update_factor"),
    "keep": ("log", "keep"),
    "flush_every": ("log", "flush_every"),
    "name": ("log", "name"),
    "seed": ("log", "seed"),
    "autocast": ("log", "autocast"),
    "tensorboard": ("log", "tensorboard"),
    "ledger": ("log", "ledger"),
}
_CLASSES = {"spikes": "SpikeOptions", "reads": "ReadOptions", "limits": "Limits", "log": "RunlogOptions"}


@dataclass(frozen=True)
class Grouped:
    """Guard's grouped options, with any old keywords folded in."""

    spikes: SpikeOptions | None
    reads: ReadOptions
    limits: Limits
    log: RunlogOptions


def fold_legacy(
    old: dict[str, Any], spikes: SpikeOptions | str | None, given: Grouped
) -> tuple[Grouped, str | None]:
    """The options with the old keywords (and ``spikes="warn"``, once a policy string) folded into
    their groups, and the deprecation message naming the new form (None when nothing old was given).
    An unknown keyword is the ``TypeError`` Python raises for one."""
    unknown = sorted(set(old) - set(LEGACY))
    if unknown:
        raise TypeError(f"Guard.__init__() got an unexpected keyword argument {unknown[0]!r}")
    fields: dict[str, dict[str, Any]] = {group: {} for group in _CLASSES}
    for key, value in old.items():
        group, field = LEGACY[key]
        fields[group][field] = value
    if isinstance(spikes, str):
        fields["spikes"]["policy"] = spikes
    if not any(fields.values()):
        return given, None
    f = fields  # spikes=None: detection off, as it was
    spikes_now = None if spikes is None else replace(given.spikes or SpikeOptions(), **f["spikes"])
    reads, limits = replace(given.reads, **f["reads"]), replace(given.limits, **f["limits"])
    folded = Grouped(spikes_now, reads, limits, replace(given.log, **f["log"]))
    said = [f"{k}={v!r}" for k, v in old.items()] + (
        [f"spikes={spikes!r}"] if isinstance(spikes, str) else []
    )
    form = ", ".join(
        f"{group}={_CLASSES[group]}({', '.join(f'{k}={v!r}' for k, v in values.items())})"
        for group, values in fields.items()
        if values
    )
    message = (
        f"Guard({', '.join(said)}) is deprecated: write Guard({form}) (the old keywords keep working "
        "for at least one more release: docs/guides/guard.md, 'Deprecated keywords')"
    )
    return folded, message
