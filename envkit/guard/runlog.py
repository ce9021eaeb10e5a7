"""The run's record: ``RUN/report.json`` (a probe report), ``RUN/steps.jsonl`` and ``RUN/steps.csv``.

``report.json`` is what ``envkit probe --compare runA runB`` reads: the probe's fingerprint, the
framework's info (versions, switches, thread counts), and one "workload" (the run's ``name``) with
the per-step loss and global gradient norm as exact floats (numbered 1..N, as the probe reads
them; ``config.first_step`` is the run's own number of the first, which the comparison shows),
per-parameter gradient norms at the first and last step, the final weight norms and the first
non-finite step. What only the guard
knows (skips and why, incidents with their localization and dump, overflows, clipping) is under
the report's ``guard`` key, which the probe ignores. A data-parallel rank other than 0 writes to
``RUN/rank-N/``. ``steps.jsonl`` also grows every ``flush_every`` (100) steps while the run goes
on, so a run that dies keeps its steps; the three files are rewritten whole when the guard stops or a
step raises, and at ``Guard.close()`` (``guard.closed`` true then). Each incident also appends its
steps so far to ``steps.jsonl`` and itself to ``incidents.jsonl``: a run killed mid-training (SIGKILL,
OOM) keeps what ``envkit guard show`` needs. With ``tensorboard`` installed, each step also goes to an
event file under ``RUN/tensorboard/`` (:mod:`envkit.guard.tb`).

Nothing is written through a link planted in the run folder (:mod:`envkit.guard.files`), and a
failure of the recording itself (a refused link, a full disk) is logged on the ``envkit.guard``
logger and kept in ``guard.recording_errors``: it never stops the training it records.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envkit._atomic import write_text_atomic
from envkit.guard.adapter import Adapter
from envkit.guard.files import append_text, real_dir
from envkit.guard.records import Incident, StepRecord, json_float
from envkit.guard.tb import MISSING, TB_OFF, TensorBoardLog, open_tensorboard
from envkit.probe.schema import KIND, SCHEMA  # not probe.model: its report classes cost a guarded start ~7 ms

__all__ = ["GUARD_SCHEMA", "KIND", "SCHEMA", "RunLog"]

GUARD_SCHEMA = 1
MAX_ERRORS = 20  # recording errors kept (and warned about); later ones are counted
_log = logging.getLogger("envkit.guard")
CSV_FIELDS = ("step", "loss", "grad_norm", "clipped_norm", "lr", "loss_scale", "overflow", "skipped")


def fingerprint() -> dict[str, Any]:
    # the probe payload's own function (stdlib; the payload is a script tree, not type-checked)
    fp = importlib.import_module("envkit.payload.scripts.fingerprint")
    data: dict[str, Any] = fp.collect()
    return data


class RunLog:
    """Writes a guarded run's record: ``report.json`` (a probe report), ``steps.jsonl``, ``steps.csv``."""

    def __init__(
        self,
        run: Path,
        adapter: Adapter,
        *,
        name: str,
        seed: int,
        rank: int,
        world: int,
        tensorboard: bool = True,
    ) -> None:
        self.run = run
        self.root = run if rank == 0 else run / f"rank-{rank}"
        self.adapter = adapter
        self.name, self.seed, self.rank, self.world = name, seed, rank, world
        self.records: list[StepRecord] = []
        self.incidents: list[Incident] = []
        self.config: dict[str, Any] = {}
        self.first_norms: dict[str, float] = {}
        self._env: dict[str, Any] | None = None
        self.flush_every = 100
        self._flushed = 0
        self.recording_errors: list[str] = []
        self._failures = 0
        self._tb: TensorBoardLog | None = None
        # what report.json says of the event files (None: not opened yet)
        self._tb_note: dict[str, str | None] | None = (
            None if tensorboard else {"folder": None, "note": TB_OFF}
        )

    def add(self, rec: StepRecord, *, first: bool) -> None:
        if first:
            self.first_norms = self.adapter.last_param_norms()
        self.records.append(rec)
        self.closed = False
        if self._tb is None and (self._tb_note is None or self._tb_note["folder"] is not None):
            self._open_tensorboard()  # again after close(): a new file
        if self._tb is not None:
            try:
                self._tb.add(rec)
            except Exception as exc:  # noqa: BLE001 the recording never stops the training
                self._tb, self._tb_note = None, {"folder": None, "note": self.failed("tensorboard", exc)}
        if self.flush_every and len(self.records) - self._flushed >= self.flush_every:
            self.flush()

    def _open_tensorboard(self) -> None:
        try:
            self._tb = open_tensorboard(self.folder() / "tensorboard")
        except Exception as exc:  # noqa: BLE001 a planted link, an unwritable folder: no event files
            self._tb, self._tb_note = None, {"folder": None, "note": self.failed("tensorboard", exc)}
            return
        self._tb_note = (
            {"folder": "tensorboard", "note": None} if self._tb else {"folder": None, "note": MISSING}
        )

    def _rank_part(self) -> list[str]:
        return [] if self.rank == 0 else [f"rank-{self.rank}"]

    def folder(self, *parts: str) -> Path:
        """``RUN`` (``RUN/rank-N``) or a folder below it, made; GuardError when a part is a link."""
        return real_dir(self.run, *self._rank_part(), *parts)

    def failed(self, what: str, exc: BaseException) -> str:
        """Say that the guard's own recording of ``what`` failed (logger ``envkit.guard``); the text."""
        from envkit._safe import one_line  # a failure only

        text = f"{what}: {type(exc).__name__}: {one_line(str(exc))[:300]}"
        self._failures += 1
        if len(self.recording_errors) < MAX_ERRORS:
            self.recording_errors.append(text)
            _log.warning("envkit.guard: could not record %s; training goes on", text)
        return text

    def flush(self) -> None:
        """Append the records not yet in ``steps.jsonl`` (a run that dies keeps its steps so far)."""
        try:
            if self._tb is not None:
                self._tb.flush()
            self._append("steps.jsonl", self.records, self._flushed)
            self._flushed = len(self.records)
        except Exception as exc:  # noqa: BLE001 the recording never stops the training
            self.failed("steps.jsonl", exc)

    def _append(self, name: str, items: list[Any], done: int) -> None:
        """``items[done:]`` as JSON lines at the end of ``name``; the whole file anew over a planted link."""
        if done >= len(items):
            return
        path = self.folder() / name
        if path.is_symlink():  # replaced by the whole file (the rename replaces the link, never follows it)
            write_text_atomic(path, _lines(items))
            return
        append_text(path, _lines(items[done:]))

    def incident(self, incident: Incident) -> None:
        """The incident just recorded, on disk at once: the steps so far, a line of ``incidents.jsonl``."""
        self.flush()
        try:
            self._append("incidents.jsonl", self.incidents, len(self.incidents) - 1)
        except Exception as exc:  # noqa: BLE001 the recording never stops the training
            self.failed("incidents.jsonl", exc)

    def env(self) -> dict[str, Any]:
        """The host fingerprint and the framework's info (computed once: it reads ~300 METADATA files)."""
        if self._env is None:
            self._env = {
                "fingerprint": fingerprint(),
                "framework": self.adapter.name,
                "info": self.adapter.info(),
            }
        return self._env

    def report(self, rows: Sequence[Mapping[str, object]] | None = None) -> dict[str, Any]:
        """The report; ``rows``: each record's ``to_json()`` when the caller made them already."""
        env = self.env()
        info = env["info"]
        steps = [
            {
                "step": i + 1,
                "loss": json_float(r.loss),
                "grad_norm": json_float(r.grad_norm),
                "finite": {"loss": math.isfinite(r.loss), "grads": math.isfinite(r.grad_norm)},
            }
            for i, r in enumerate(self.records)
        ]
        names = [n for n, _ in self.adapter.params()]
        last = self.adapter.last_param_norms()
        first_bad = next((i for i, r in enumerate(self.records) if not r.finite), None)
        workload: dict[str, Any] = {
            "status": "ok",
            "params": names,
            "steps": steps,
            "param_grad_norms": {
                "first": {k: json_float(v) for k, v in self.first_norms.items()},
                "last": {k: json_float(v) for k, v in last.items()},
            },
            "final_param_norms": {k: json_float(v) for k, v in self.adapter.weight_norms().items()},
            "final_params_sha256": self.adapter.weights_sha256(),
            "nonfinite": None,
        }
        if first_bad is not None:
            rec = self.records[first_bad]
            what = "loss" if not math.isfinite(rec.loss) else "grad"
            incident = next((i for i in self.incidents if i.step == rec.step), None)
            loc = (incident.localization or {}) if incident else {}
            workload["nonfinite"] = {
                "step": first_bad + 1,
                "what": what,
                "parameter": loc.get("first_nonfinite_grad"),
                "op_error": loc.get("error"),
            }
        threads = info.get("switches", {}).get("num_threads")
        return {
            "schema": SCHEMA,
            "kind": KIND,
            "label": self.name,
            "config": {
                "seed": self.seed,
                "steps": len(self.records),
                "workloads": [self.name],
                "mode": "guard",
                "dtype": self.adapter.dtype(),
                "device": self.adapter.device(),
                "threads": threads,
                "autocast": self.config.get("autocast"),
                "tf32": False,
                **self._first_step(),
            },
            "fingerprint": env["fingerprint"],
            "frameworks": {
                self.adapter.name: {"status": "ok", "info": info, "workloads": {self.name: workload}}
            },
            "guard": self.guard_part(rows),
        }

    def _first_step(self) -> dict[str, int]:
        """``first_step``: the first record's step, so that ``probe --compare`` shows the run's own
        step numbers (``first_step − 1 + position``). Only for steps that count up by one from it:
        with a gap (a step never passed to the guard) no single number maps them, and the report
        says nothing (its steps read as 1..N, as before)."""
        first = self.records[0].step
        if isinstance(first, bool) or not isinstance(first, int):
            return {}
        if any(r.step != first + i for i, r in enumerate(self.records)):
            return {}
        return {"first_step": first}

    def guard_part(self, rows: Sequence[Mapping[str, object]] | None = None) -> dict[str, Any]:
        clipped = sum(1 for r in self.records if r.clipped_norm is not None and r.clipped_norm < r.grad_norm)
        return {
            "schema": GUARD_SCHEMA,
            "config": self.config,
            "rank": self.rank,
            "world_size": self.world,
            "steps": [r.to_json() for r in self.records] if rows is None else rows,
            "skips": [{"step": r.step, "reason": r.skipped} for r in self.records if r.skipped],
            "incidents": [i.to_json() for i in self.incidents],
            "clipped_steps": clipped,
            "tensorboard": self._tb_note,
            "closed": self.closed,
            "recording_errors": list(self.recording_errors),
            "recording_failures": self._failures,
        }

    closed = False  # set by close(): a report without it was written mid-run

    def save(self) -> Path:
        """:meth:`write`, a failure logged (``recording_errors``), never raised: training goes on."""
        try:
            return self.write()
        except Exception as exc:  # noqa: BLE001 the recording never stops the training
            self.failed("report.json", exc)
            return self.root / "report.json"

    def write(self) -> Path:
        """Write the files (atomically); the path of report.json. Nothing for a run of no steps."""
        root = self.folder()
        path = root / "report.json"
        if not self.records:
            return path
        rows = [r.to_json() for r in self.records]  # once for the three files
        report = self.report(rows)
        write_text_atomic(path, json.dumps(report, indent=1, sort_keys=True, allow_nan=False) + "\n")
        write_text_atomic(root / "steps.jsonl", _json_lines(rows))
        self._flushed = len(self.records)
        if self.incidents:
            write_text_atomic(root / "incidents.jsonl", _lines(self.incidents))
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    k: "" if row[k] is None else (repr(row[k]) if isinstance(row[k], float) else row[k])
                    for k in CSV_FIELDS
                }
            )
        write_text_atomic(root / "steps.csv", buf.getvalue())
        if self._tb is not None:
            self._tb.flush()
        return path

    def close(self) -> Path:
        """:meth:`save` (``guard.closed`` true), and close the event file (a later step opens a new one)."""
        self.closed = True
        path = self.save()
        if self._tb is not None:
            try:
                self._tb.close()
            except Exception as exc:  # noqa: BLE001 the recording never stops the training
                self.failed("tensorboard", exc)
            self._tb = None
        return path


def _lines(items: list[Any]) -> str:
    return _json_lines([i.to_json() for i in items])


def _json_lines(rows: Sequence[Mapping[str, object]]) -> str:
    return "".join(json.dumps(row, sort_keys=True, allow_nan=False) + "\n" for row in rows)
