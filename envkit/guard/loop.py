"""``Guard``: the training-loop side (framework-neutral; the adapter does the tensor work).

Per step: the loss's finite flag and one fused global gradient norm stay on the device; the host
reads them every ``check_every`` steps on an accelerator (every step on CPU, where a read costs no
wait, unless ``ReadOptions(defer=True)``; every step with a GradScaler or in a process group, which
sync anyway). A bad step found at its own read is handled exactly: skipped (gradients cleared),
stopped (:class:`~envkit.errors.GuardStopped`) or warned. Between reads a bad step's gradients are
zeroed on the device (``masked_fill_`` with the step's flag) so NaN never reaches the weights; the incident is
recorded at the next read (its dump then holds the state at that read: ``exact: false``).
Healthy numbers are never changed: the norm is what ``clip_grad_norm_`` computes, clipping is its
own arithmetic, the random generators are only read (never reseeded).
"""

from __future__ import annotations

import logging
import math
import os
import sys
import warnings
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envkit.errors import GuardStopped
from envkit.guard.adapter import Adapter
from envkit.guard.checks import WARNINGS, rank_outliers
from envkit.guard.ledger import LedgerEntry, batch_digest
from envkit.guard.options import Grouped, Limits, ReadOptions, RunlogOptions, SpikeOptions, fold_legacy
from envkit.guard.records import Incident, IncidentKind, Policy, StepRecord, json_float
from envkit.guard.scale import NOTHING, Measured, ScaleFinding
from envkit.guard.step import GuardStep, PendingStep
from envkit.guard.watch import DeadRunWatch, OverflowMemory, causes, overflow_cause
from envkit.guard.wiring import build

__all__ = ["Guard", "GuardStep"]

LossFn = Callable[[Any, Any], Any]
_log = logging.getLogger("envkit.guard")
_SPIKES, _READS, _LIMITS, _LOG = SpikeOptions(), ReadOptions(), Limits(), RunlogOptions()


class Guard:
    """Guard a training loop: see ``docs/guides/guard.md``."""

    def __init__(
        self,
        model: Any,
        optimizer: Any,
        *,
        run: str | os.PathLike[str],
        policy: str = "skip",
        clip: float | None = None,
        loss_fn: LossFn | None = None,
        scaler: Any = None,
        scheduler: Any = None,
        entry: str | None = None,
        spikes: SpikeOptions | str | None = _SPIKES,
        reads: ReadOptions = _READS,
        limits: Limits = _LIMITS,
        log: RunlogOptions = _LOG,
        **deprecated: Any,
    ) -> None:
        # the keywords of rounds 1 and 2 (check_every=…, spikes="warn"): folded in, with a warning
        grouped, message = fold_legacy(
            deprecated, spikes, Grouped(None if isinstance(spikes, str) else spikes, reads, limits, log)
        )
        if message is not None:
            warnings.warn(message, DeprecationWarning, stacklevel=2)
        parts = build(
            model, optimizer, run=run, policy=policy, clip=clip, scaler=scaler, scheduler=scheduler,
            entry=entry, grouped=grouped,
        )  # fmt: skip
        self.policy, self.spike_policy, self.limits = parts.policy, parts.spike_policy, grouped.limits
        self.adapter: Adapter = parts.adapter
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.clip = clip
        self.rank, self.world_size = parts.rank, parts.world_size
        self.check_every = parts.check_every
        self.loss_fn, self.entry = loss_fn, entry
        self.spikes, self.updates = parts.spikes, parts.updates
        self.recent: deque[StepRecord] = deque(maxlen=grouped.log.keep)
        self.pending: list[PendingStep] = []
        self.count = 0
        self.consecutive_skips = 0
        self.consecutive_overflows = 0
        self.dead = DeadRunWatch()
        self.previous: tuple[int, Any] = (-1, None)  # the last step's batch: an incident compares with it
        self.overflowed = OverflowMemory()  # the batches whose gradients overflowed
        self.dumps = parts.dumps  # per kind: warnings never starve incidents
        self.lr_watch = parts.lr_watch
        self.said_skip = False  # the first skip goes to stderr too
        self.unhealthy = False  # the last applied step was not finite: no checkpoint now
        self.log, self.ledger = parts.log, parts.ledger  # the ledger: the batches incidents skipped
        self.ledger_hits: list[dict[str, Any]] = []
        self.scale = parts.scale  # each batch's largest |x| against the batches before (None: off)

    # -- the public API ------------------------------------------------------------------------
    def step(self, step: int, batch: Any) -> GuardStep:
        return GuardStep(self, step, batch)

    @property
    def incidents(self) -> list[Incident]:
        return self.log.incidents

    @property
    def records(self) -> list[StepRecord]:
        return self.log.records

    def skip_batch(self, step: int, batch: Any) -> bool:
        """True when an earlier run's incident skipped this batch (``RUN/ledger.jsonl``) and
        ``ledger="skip"``: do not train on it again. Call it before the step, in a resumed run."""
        found = self.ledger.find(step, lambda: batch_digest(self.adapter, batch))
        if found is None:
            return False
        entry, match = found
        again = self.ledger.mode == "skip"
        hit = {"step": step, "listed_step": entry.step, "kind": entry.kind, "run": entry.run, "match": match}
        self.ledger_hits.append({**hit, "action": "skipped again" if again else "replayed on purpose"})
        self.log.config["ledger"] = {"mode": self.ledger.mode, "batches": self.ledger_hits[-1000:]}
        verb = "skipped again" if again else "replayed on purpose (ledger='replay')"
        _log.info("envkit.guard: step %s: the batch %s skipped at step %s (%s): %s", step,
                  entry.run or "a run", entry.step, entry.kind, verb)  # fmt: skip
        return again

    def checkpoint_allowed(self) -> bool:
        """False right after a non-finite step was applied (policy warn): do not save NaN weights."""
        return not self.unhealthy

    def checkpoint(self, save: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        """Call ``save(*args, **kwargs)`` unless the last step left non-finite numbers (then warn)."""
        if not self.checkpoint_allowed():
            warnings.warn("envkit.guard: checkpoint refused after a non-finite step", stacklevel=2)
            return False
        save(*args, **kwargs)
        return True

    def close(self) -> Path:
        """Read what is pending and write RUN/report.json, steps.jsonl and steps.csv."""
        self._drain(None)
        if self.scale is not None:
            self.log.config["input_scale"] = self.scale.summary()
        return self.log.close()

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one step ------------------------------------------------------------------------------
    def finish_step(self, g: GuardStep) -> bool:
        """The end of the step ``g`` (its ``g.optimizer_step()``): check, clip, step (or skip/stop);
        True when the update was applied. Its batch is then the one the next incident compares with."""
        try:
            return self._finish(g)
        finally:
            self.previous = (g.step, g.batch)

    def step_raised(self, g: GuardStep, exc: Exception) -> None:
        """The step ``g`` raised ``exc`` (its ``with`` block): recorded and dumped; the caller re-raises."""
        self._raised(g, exc)

    def _finish(self, g: GuardStep) -> bool:
        a = self.adapter
        if a.scaler is not None:
            a.unscale()
        grads = a.grads()
        total = a.total_norm(grads)
        self.count += 1
        lr = a.lr()
        if self.count % self.check_every != 0:  # the finite flag is needed on the device only here
            return self._masked(g, grads, total, a.both(a.finite_flag(g.loss), a.finite_flag(total)), lr)
        if self.pending:
            self._drain(g)
        groups = a.group_norms()
        # after the gradient norms' ops (the first op after a backward pays ~75 µs on the CPU, whatever
        # it is: here the norms pay it); the scales are 0-d and read last (a group norm may be a vector)
        measured = self.measure_batch(g.batch)
        if self.world_size > 1:
            groups, scales = _split(a.read([*groups, *measured.values]), len(measured.values))
            ranks = a.gather([g.loss, total])
            losses, norms = [r[0] for r in ranks], [r[1] for r in ranks]
            loss, norm = losses[self.rank], norms[self.rank]
            # name the ranks whose loss went bad: after the all-reduce every rank's gradients are bad
            bad_ranks = [i for i, lv in enumerate(losses) if not math.isfinite(lv)] or [
                i for i, nv in enumerate(norms) if not math.isfinite(nv)
            ]
        else:
            loss, norm, *groups = a.read([g.loss, total, *groups, *measured.values])
            groups, scales = _split(groups, len(measured.values))
            losses = norms = None  # type: ignore[assignment]
            bad_ranks = [] if math.isfinite(loss) and math.isfinite(norm) else [0]
        scale = None if a.scaler is None else a.loss_scale()
        rec = StepRecord(g.step, loss, norm, lr=lr, loss_scale=scale, rank_losses=losses, rank_norms=norms)
        self.updates.record(rec, a.group_lrs(lr), groups, self.clip)
        outlier = self._judge(rec.step, measured, scales)  # kept out of the reference even if bad
        if bad_ranks:
            return self._bad(g, rec, grads, total, bad_ranks)
        self.consecutive_overflows = 0
        self.lr_watch.step()
        update = self.updates.spike(rec, self.lr_watch.setter, self.lr_watch.peak)
        if update is not None:  # found before the update is applied: the weights are still whole
            return self._incident(g, rec, IncidentKind.UPDATE_SPIKE, update.message, self.policy, [])
        if self.updates.accepted is not None:  # an lr set by hand kept, or a runaway lr: warned
            self._record_incident(g, rec, IncidentKind.UPDATE_SPIKE, self.updates.accepted, "warned", [])
        spike = self._spike(rec)
        if spike is not None and self.spike_policy is not Policy.WARN:
            return self._incident(g, rec, spike[0], spike[1], self.spike_policy or Policy.WARN, [])
        if spike is not None:  # recorded before the update: the dump holds the weights it started from
            self._record_incident(g, rec, spike[0], spike[1], "warned", [])
        if norms is not None:
            self._rank_check(g, rec)
        self._input_outlier(g, rec, outlier, exact=True)
        self._apply(rec, grads, total)
        return rec.skipped is None

    def _apply(self, rec: StepRecord, grads: list[Any], total: Any) -> None:
        a = self.adapter
        if self.clip is not None:
            a.clip(grads, total, self.clip)
            # the norm after, from the norm already read (no second host read per step)
            rec.clipped_norm = rec.grad_norm * min(1.0, self.clip / (rec.grad_norm + 1e-6))
        applied = a.optimizer_step()
        if applied is False:
            rec.overflow, rec.skipped = True, "loss-scale overflow (GradScaler skipped the step)"
        elif self.scheduler is not None:
            self.scheduler.step()
        a.zero_grad()
        self.consecutive_skips = 0
        self.unhealthy = not rec.finite
        self._store(rec)

    def _masked(self, g: GuardStep, grads: list[Any], total: Any, ok: Any, lr: float | None) -> bool:
        """A step between reads: zero its gradients on the device if it is bad, then step."""
        a = self.adapter
        a.gate(grads, ok)
        values = [g.loss, total]
        if self.clip is not None:
            values.append(a.clip(grads, a.where_ok(ok, total), self.clip, norm=True))
        a.optimizer_step()
        if self.scheduler is not None:
            self.scheduler.step()
        a.zero_grad()
        self.pending.append(PendingStep(g.step, values, g.batch, g.rng, lr, ok, self.measure_batch(g.batch)))
        return True

    def _drain(self, current: GuardStep | None) -> None:
        """Read the pending steps in one transfer; record them, and an incident for each bad one."""
        if not self.pending:
            return
        a = self.adapter
        flat = a.read([v for p in self.pending for v in (*p.values, *p.measured.values)])
        pending, self.pending = self.pending, []
        at = 0
        for p in pending:
            width, end = len(p.values), at + len(p.values) + len(p.measured.values)
            vals, at = flat[at:end], end
            rec = StepRecord(p.step, vals[0], vals[1], clipped_norm=vals[2] if width > 2 else None, lr=p.lr)
            outlier = self._judge(p.step, p.measured, vals[width:])
            if not rec.finite:
                rec.skipped = "non-finite (found at a later read: its gradients were zeroed on the device)"
                kind = (
                    IncidentKind.NONFINITE_LOSS
                    if not math.isfinite(rec.loss)
                    else IncidentKind.NONFINITE_GRAD
                )
                probe = GuardStep(self, p.step, p.batch, p.rng)
                self._record_incident(probe, rec, kind, _message(kind, rec), "skipped", [0], exact=False)
                self._store(rec)
                continue
            spike = self._spike(rec)
            self._store(rec)
            if spike is None and outlier is None:
                continue  # a healthy step: no incident to record
            probe = GuardStep(self, p.step, p.batch, p.rng)
            if spike is not None:
                self._record_incident(probe, rec, spike[0], spike[1], "warned", [], exact=False)
            self._input_outlier(probe, rec, outlier, exact=False)

    def _bad(self, g: GuardStep, rec: StepRecord, grads: list[Any], total: Any, ranks: list[int]) -> bool:
        a = self.adapter
        loss_ok = (
            math.isfinite(rec.loss) if rec.rank_losses is None else all(map(math.isfinite, rec.rank_losses))
        )
        if a.scaler is not None and loss_ok:
            rec.overflow = True
            found = self._overflow_incident(g, rec)
            if found is not None:  # a bad batch behind the overflow: an incident, the scaler's skip
                return self._incident(g, rec, *found)
            self.consecutive_overflows += 1
            if self.consecutive_overflows <= self.limits.max_overflows:
                a.optimizer_step()  # the scaler sees the inf, skips and backs off its scale
                a.zero_grad()
                rec.skipped = "loss-scale overflow (GradScaler skipped the step)"
                self._store(rec)
                return False
        kind = IncidentKind.NONFINITE_GRAD if loss_ok else IncidentKind.NONFINITE_LOSS
        message = _message(kind, rec)
        if rec.rank_losses is not None:
            message += f" on rank {', '.join(map(str, ranks))} of {self.world_size}"
        return self._incident(g, rec, kind, message, self.policy, ranks)

    def _overflow_incident(
        self, g: GuardStep, rec: StepRecord
    ) -> tuple[IncidentKind, str, Policy, list[int]] | None:
        """An overflow is the scaler's routine unless its (finite) loss is a spike against the losses
        before, or the same batch overflowed before at a larger scale: then an incident."""
        spike = None if self.spike_policy is None else self.spikes.loss.check(rec.loss)
        found = overflow_cause(rec, spike, lambda: batch_digest(self.adapter, g.batch), self.overflowed)
        if found is None:
            return None
        kind, text = found
        policy = self.policy  # a loss spike: the scaler skips it anyway, unless spikes stop the run
        if kind is IncidentKind.LOSS_SPIKE:
            policy = Policy.STOP if self.spike_policy is Policy.STOP else Policy.SKIP
        return kind, text, policy, [self.rank]

    def _incident(
        self,
        g: GuardStep,
        rec: StepRecord,
        kind: IncidentKind,
        message: str,
        policy: Policy,
        ranks: list[int],
    ) -> bool:
        a = self.adapter
        if policy is Policy.WARN:
            self._record_incident(g, rec, kind, message, "warned", ranks)
            grads = a.grads()
            self._apply(rec, grads, a.total_norm(grads))
            return True
        rec.skipped = f"{kind}: {message}"
        incident = self._record_incident(g, rec, kind, message, "skipped", ranks)
        self._ledger_add(g, kind)
        a.skip_step(overflow=not math.isfinite(rec.grad_norm))  # a GradScaler ends its step too
        a.zero_grad()
        self._store(rec)
        self.consecutive_skips += 1
        if policy is Policy.STOP or self.consecutive_skips >= self.limits.max_skips:
            why = "policy stop" if policy is Policy.STOP else f"{self.consecutive_skips} skips in a row"
            incident.action = "stopped"
            self.log.closed = True  # the guard ended the run: its record is whole
            report = self.log.save()
            where = f"; replay: envkit guard replay {self.log.root / incident.dump}" if incident.dump else ""
            raise GuardStopped(
                f"step {rec.step}: {kind}: {incident.message} ({why}); report {report}{where}",
                hint=f"envkit guard show {self.log.root}",
            )
        return False

    def _raised(self, g: GuardStep, exc: Exception) -> None:
        """The step raised (index out of range, a device assert): record and dump it, then re-raise."""
        self.count += 1
        loss = math.nan
        message = (
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"
        )
        rec = StepRecord(g.step, loss, math.nan, lr=self.adapter.lr(), raised=message)
        self._record_incident(g, rec, IncidentKind.ERROR, message, "raised", [self.rank])
        self._ledger_add(g, IncidentKind.ERROR)
        try:  # a loop that catches the error and goes on finds its GradScaler ready for the next step
            self.adapter.skip_step(overflow=False)
        except Exception as exc:  # noqa: BLE001 the step's own error is the one raised
            self.log.failed(f"step {g.step}: ending the GradScaler's step", exc)
        self.adapter.zero_grad()
        self._store(rec)
        self.log.save()

    def _ledger_add(self, g: GuardStep, kind: IncidentKind) -> None:
        """A skipped (or raising) batch into the ledger; a failure is said, training goes on."""
        try:
            digest = batch_digest(self.adapter, g.batch)
            self.ledger.add(LedgerEntry(g.step, str(kind), digest, self.log.run.name))
        except Exception as exc:  # noqa: BLE001 the guard's own recording never stops the training
            self.log.failed(f"step {g.step}: the bad-batch ledger", exc)

    def measure_batch(self, batch: Any) -> Measured:
        """The batch's scale on the device (nothing read); a batch the check cannot read turns it off."""
        if self.scale is None:
            return NOTHING
        try:
            return self.scale.measure(self.adapter, batch)
        except Exception as exc:  # noqa: BLE001 the guard's own check never stops the training
            self.scale = None
            self.log.failed("the input-scale check (off for the rest of the run)", exc)
            return NOTHING

    def _judge(self, step: int, measured: Measured, scales: list[float]) -> ScaleFinding | None:
        return None if self.scale is None or not measured.places else self.scale.judge(step, measured, scales)

    def _input_outlier(
        self, g: GuardStep, rec: StepRecord, found: ScaleFinding | None, *, exact: bool
    ) -> None:
        """A batch out of scale on a step no other check caught: a warning (the step is applied)."""
        if found is None or (self.log.incidents and self.log.incidents[-1].step == rec.step):
            return
        text = f"{found.text}: the input is out of scale; its loss and gradients look normal (applied)"
        self._record_incident(g, rec, IncidentKind.INPUT_OUTLIER, text, "warned", [], exact=exact)

    def _spike(self, rec: StepRecord) -> tuple[IncidentKind, str] | None:
        return None if self.spike_policy is None else self.spikes.check(rec.loss, rec.grad_norm)

    def _context(self, g: GuardStep, rec: StepRecord, kind: IncidentKind) -> dict[str, Any]:
        """The incident's step: lr and update ratio per group beside the largest before; a bad batch."""
        step, before = self.previous
        previous = before if step < g.step else None
        return {
            **self.updates.context(rec),
            **causes(self.adapter, self.log.records, rec, kind, g.batch, previous),
        }

    def _rank_check(self, g: GuardStep, rec: StepRecord) -> None:
        """Replicas whose all-reduced gradient norm differs from the majority's: a warning naming them."""
        norms = rec.rank_norms or []
        found = rank_outliers(norms)
        if found is None:
            return
        off = [int(i) for i in found.split(",")]
        text = ", ".join(f"rank {i}: {norms[i]!r}" for i in off)
        msg = f"gradient norms differ between replicas after the all-reduce ({text})"
        self._record_incident(
            g, rec, IncidentKind.RANK_MISMATCH, msg + ": a faulty device or mixed hardware?", "warned", off
        )

    def _store(self, rec: StepRecord) -> None:
        self.recent.append(rec)
        self.log.add(rec, first=len(self.log.records) == 0)
        if rec.skipped is not None:
            self._said_skipped(rec)
        text = self.dead.check(self.log.records)
        if text is not None:  # once a run: said, then not looked for again
            incident = Incident(rec.step, IncidentKind.DEAD_RUN, text, "warned")
            self.log.incidents.append(incident)
            self.log.incident(incident)
            warnings.warn(f"envkit.guard: step {rec.step}: {text}", stacklevel=5)

    def _said_skipped(self, rec: StepRecord) -> None:
        """Each skip on the ``envkit.guard`` logger; the first non-overflow one on stderr too."""
        from envkit._safe import one_line  # a skip only (its patterns cost ~3 ms to import)

        text = f"envkit.guard: step {rec.step} skipped: {one_line(rec.skipped or '')}"
        _log.info("%s", text)
        if not (self.said_skip or rec.overflow):
            self.said_skip = True
            more = f"further skips: logger envkit.guard (INFO); envkit guard show {self.log.root}"
            print(f"{text} ({more})", file=sys.stderr)

    def _record_incident(
        self,
        g: GuardStep,
        rec: StepRecord,
        kind: IncidentKind,
        message: str,
        action: str,
        ranks: list[int],
        *,
        exact: bool = True,
    ) -> Incident:
        from envkit.guard.localize import describe_nonfinite  # an incident's modules: imported by one

        incident = Incident(rec.step, kind, message, action, ranks=ranks)
        if kind not in WARNINGS or action != "warned":
            self.dead.bad_step(rec.step)  # a dead run is looked for after the latest bad step
        try:
            incident.context = self._context(g, rec, kind)
            if incident.context.get("nonfinite_batch"):  # said first: the input, not the model
                incident.message = f"{describe_nonfinite(incident.context['nonfinite_batch'])}; {message}"
            elif "text" in incident.context.get("input_outlier", {}):
                incident.message = f"{incident.context['input_outlier']['text']}; {message}"
            if "lr_trend" in incident.context and "the learning rate" not in message:
                incident.message += f"; {incident.context['lr_trend']}"
            self._describe(g, rec, kind, exact, incident)
        except Exception as exc:  # noqa: BLE001 the guard's own recording never stops the training
            incident.recording_error = self.log.failed(f"step {rec.step}: the incident", exc)
        self.log.incidents.append(incident)
        self.log.incident(incident)
        if action == "warned":
            warnings.warn(f"envkit.guard: step {rec.step}: {message}", stacklevel=4)
        return incident

    def _describe(
        self, g: GuardStep, rec: StepRecord, kind: IncidentKind, exact: bool, incident: Incident
    ) -> None:
        """The incident's gradient norms, dump and localization (the caller catches any failure)."""
        from envkit.guard.localize import largest_update, localize_on_twin

        a = self.adapter
        grad_norms = a.param_norms()
        incident.param_grad_norms = {k: json_float(v) for k, v in grad_norms.items()}
        if self.dumps.take(kind):
            try:
                incident.dump = self._dump(g, rec, kind, exact)
            except Exception as exc:  # noqa: BLE001 no dump (said why); the incident and training go on
                incident.recording_error = self.log.failed(f"step {rec.step}: the dump", exc)
            if self.loss_fn is not None and self.world_size == 1:
                incident.localization = localize_on_twin(
                    self.adapter, self.loss_fn, g.batch, g.rng, g.buffers
                )
                if incident.localization.get("loss_made_it") and not incident.context.get("nonfinite_batch"):
                    grads = "finite" if math.isfinite(rec.grad_norm) else "not finite"
                    incident.message += (
                        f"; the model's outputs were finite (the step replayed): the loss function made it "
                        f"(0·log 0, log 0, a division by 0?); the gradients were {grads}"
                    )
        ctx, loc = incident.context, incident.localization or {}
        outlier = kind is IncidentKind.INPUT_OUTLIER or "text" in ctx.get("input_outlier", {})
        if ctx.get("nonfinite_batch") or outlier or loc.get("loss_made_it"):
            loc.pop("largest_grad", None)  # the input or the loss made it: no parameter named (the
            return  # per-parameter norms stay in param_grad_norms)
        update = largest_update(grad_norms, a.weight_norms(), a.param_lrs())
        if update is not None:
            incident.localization = {**(incident.localization or {}), "largest_update": update}

    def _dump(self, g: GuardStep, rec: StepRecord, kind: IncidentKind, exact: bool) -> str:
        from envkit.guard.flight import write_dump
        from envkit.guard.localize import module_layout

        name = f"step-{rec.step}" if self.world_size == 1 else f"step-{rec.step}-rank-{self.rank}"
        relative = f"incidents/{name}"
        write_dump(
            self.log.folder("incidents") / name,
            self.adapter,
            batch=g.batch,
            rng=g.rng,
            model_state=self.adapter.model_state(g.buffers if exact else None),
            records=[r.to_json() for r in [*self.recent, rec]],
            env=self.log.env(),
            manifest={
                "step": rec.step,
                "kind_of_incident": str(kind),
                "exact": exact,
                "training": self.adapter.training(),
                "entry": self.entry,
                "rank": self.rank,
                "world_size": self.world_size,
                "backwards": g.backwards,  # > 1: a replay may run the batch as that many micro-batches
                "autocast": self.log.config.get("autocast"),  # replay runs the forward under it
                "modules": module_layout(self.adapter),  # a replay's entry must build these
                "outcome": {"loss": json_float(rec.loss), "grad_norm": json_float(rec.grad_norm)},
            },
        )
        return relative


def _split(floats: list[float], last: int) -> tuple[list[float], list[float]]:
    """``floats`` less its ``last`` values, and those."""
    return (floats[:-last], floats[-last:]) if last else (floats, [])


def _message(kind: IncidentKind, rec: StepRecord) -> str:
    if kind is IncidentKind.NONFINITE_LOSS:
        return f"the loss is {rec.loss}"
    return f"the global gradient norm is {rec.grad_norm} (loss {rec.loss!r})"
