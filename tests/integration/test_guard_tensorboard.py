"""TensorBoard event files of a real guarded torch run, read back with tensorboard's EventAccumulator."""

from __future__ import annotations

import json
import logging
import math
import struct
import sys
from pathlib import Path
from typing import Any

import pytest

from envkit.guard import tb
from tests.integration.test_guard_torch import batches, ce, mlp

torch = pytest.importorskip("torch")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

from envkit.guard import Guard, RunlogOptions  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]


def f32(value: float) -> float:
    """``value`` as the float32 an event's simple_value holds."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def run_guarded(run: Path, steps: int = 8, nan_at: int = 3) -> Guard:
    model, opt = mlp()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)
    guard = Guard(model, opt, run=run, clip=0.5, scheduler=sched, log=RunlogOptions(tensorboard=True))
    for i, batch in enumerate(batches(steps, nan_at)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    guard.close()
    return guard


def scalars(folder: Path) -> dict[str, list[Any]]:
    acc = event_accumulator.EventAccumulator(str(folder), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}


def test_every_step_is_in_the_event_file_with_loss_norm_clip_and_skip(tmp_path: Path) -> None:
    guard = run_guarded(tmp_path / "run")
    found = scalars(tmp_path / "run" / "tensorboard")
    assert {"guard/loss", "guard/grad_norm", "guard/clipped_norm", "guard/clipped", "guard/skipped"} <= set(
        found
    )
    recs = guard.records
    assert [e.step for e in found["guard/loss"]] == [r.step for r in recs] == list(range(8))
    for event, rec in zip(found["guard/loss"], recs, strict=True):
        assert (math.isnan(event.value) and math.isnan(rec.loss)) or event.value == f32(rec.loss)
    for event, rec in zip(found["guard/grad_norm"], recs, strict=True):
        assert (math.isnan(event.value) and not rec.finite) or event.value == f32(rec.grad_norm)
    skipped = [e.step for e in found["guard/skipped"] if e.value == 1.0]
    assert skipped == [r.step for r in recs if r.skipped] == [3]  # the planted NaN batch
    clipped = [e.step for e in found["guard/clipped"] if e.value == 1.0]
    assert clipped == [r.step for r in recs if r.clipped_norm is not None and r.clipped_norm < r.grad_norm]
    assert clipped  # clip 0.5 bites on this model
    lrs = [f32(r.lr) for r in recs if r.lr is not None]
    assert len(lrs) == 8 and [e.value for e in found["guard/lr"]] == lrs
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["guard"]["tensorboard"] == {"folder": "tensorboard", "note": None}


def test_without_tensorboard_the_guard_runs_writes_no_events_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in [m for m in sys.modules if m == "tensorboard" or m.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # `import tensorboard...` raises ImportError
    monkeypatch.setattr(tb, "_said", False)
    with caplog.at_level(logging.INFO, logger="envkit.guard"):
        first = run_guarded(tmp_path / "a")
        run_guarded(tmp_path / "b")
    assert [r.step for r in first.records if r.skipped] == [3]  # the guard did its work
    for run in ("a", "b"):
        assert not (tmp_path / run / "tensorboard").exists()
        report = json.loads((tmp_path / run / "report.json").read_text())
        assert report["guard"]["tensorboard"] == {"folder": None, "note": tb.MISSING}
    said = [r.getMessage() for r in caplog.records if "tensorboard is not installed" in r.getMessage()]
    assert len(said) == 1


def test_tensorboard_false_writes_no_event_file(tmp_path: Path) -> None:
    model, opt = mlp()
    with Guard(model, opt, run=tmp_path / "run", log=RunlogOptions(tensorboard=False)) as guard:
        for i, batch in enumerate(batches(3)):
            with guard.step(i, batch) as g:
                g.backward(ce(model, batch))
                g.optimizer_step()
    assert not (tmp_path / "run" / "tensorboard").exists()
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["guard"]["tensorboard"] == {"folder": None, "note": tb.TB_OFF}
