"""TensorBoard event files of a guarded run, when ``tensorboard`` is installed (the ``guard-tb`` extra).

Per step, under ``RUN/tensorboard/`` (``RUN/rank-N/tensorboard/`` for rank N): ``guard/loss``,
``guard/grad_norm`` (before clipping), ``guard/clipped_norm`` (when a clip is set),
``guard/clipped``, ``guard/skipped`` and ``guard/overflow`` (0 or 1), ``guard/lr`` and
``guard/loss_scale`` when known. Written with tensorboard's own ``EventFileWriter`` and its
``Event`` / ``Summary`` protos, the writer ``torch.utils.tensorboard.SummaryWriter`` wraps: the same
for a torch or a Paddle run, no framework needed. Scalars are ``simple_value`` (float32), what
TensorBoard's scalar dashboard reads; the exact float64 numbers stay in ``steps.jsonl``.

Without tensorboard nothing is written, the guard runs the same, and that is said once per
process (logger ``envkit.guard``) and in ``report.json`` (``guard.tensorboard``).
``Guard(..., log=RunlogOptions(tensorboard=False))`` writes none either. The cost is the writer's:
tensorboard's record writer computes its CRC32C in pure Python (~0.1 ms per 160-byte event here),
on its own thread.
"""

from __future__ import annotations

import importlib
import logging
import time
from pathlib import Path
from typing import Any

from envkit.guard.files import real_dir
from envkit.guard.records import StepRecord

__all__ = ["MISSING", "TB_OFF", "TensorBoardLog", "open_tensorboard", "scalars"]

MISSING = "tensorboard is not installed: no event files (pip install 'envkit-dl[guard-tb]')"
TB_OFF = "off (the default): Guard(log=RunlogOptions(tensorboard=True)) writes event files"
_log = logging.getLogger("envkit.guard")
_said = False


def _modules() -> tuple[Any, Any, Any] | None:
    try:
        writer = importlib.import_module("tensorboard.summary.writer.event_file_writer")
        event = importlib.import_module("tensorboard.compat.proto.event_pb2")
        summary = importlib.import_module("tensorboard.compat.proto.summary_pb2")
    except ImportError:
        return None
    return writer.EventFileWriter, event.Event, summary.Summary


def scalars(rec: StepRecord) -> dict[str, float]:
    """The tags and values of one step."""
    values = {
        "guard/loss": rec.loss,
        "guard/grad_norm": rec.grad_norm,
        "guard/skipped": float(rec.skipped is not None),
        "guard/overflow": float(rec.overflow),
    }
    if rec.clipped_norm is not None:
        values["guard/clipped_norm"] = rec.clipped_norm
        values["guard/clipped"] = float(rec.clipped_norm < rec.grad_norm)
    if rec.lr is not None:
        values["guard/lr"] = rec.lr
    if rec.loss_scale is not None:
        values["guard/loss_scale"] = rec.loss_scale
    return values


class TensorBoardLog:
    """One event file in ``folder``: a step's scalars per :meth:`add`."""

    def __init__(self, folder: Path, modules: tuple[Any, Any, Any]) -> None:
        writer_cls, self._event, self._summary = modules
        real_dir(folder.parent, folder.name)  # a link planted there is refused, never written through
        self.folder = folder
        self._writer = writer_cls(str(folder), max_queue_size=1000, flush_secs=30)

    def add(self, rec: StepRecord) -> None:
        summary = self._summary(
            value=[self._summary.Value(tag=tag, simple_value=v) for tag, v in scalars(rec).items()]
        )
        self._writer.add_event(self._event(wall_time=time.time(), step=rec.step, summary=summary))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def open_tensorboard(folder: Path) -> TensorBoardLog | None:
    """A writer into ``folder``, or None (said once per process) when tensorboard is not installed."""
    global _said
    modules = _modules()
    if modules is None:
        if not _said:
            _log.info("envkit.guard: %s", MISSING)
            _said = True
        return None
    return TensorBoardLog(folder, modules)
