"""Reading a run that never closed (:mod:`envkit.incident.runread`): the files a live run appends.

The shapes a kill leaves: a last line cut mid-write, a line cut short and then appended after (a
resumed run), a dump whose incident line was never appended, a ``report.json`` written at a stop
with more steps appended after it, nothing at all; and the hostile ones: a FIFO or a link where a
file belongs, a field of the wrong type in a line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import ReportError
from envkit.incident.runread import read_run
from tests.unit.guard.test_show_hostile import INCIDENT, _step, report


def lines(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def live(tmp_path: Path, steps: str, incidents: str = "") -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "steps.jsonl").write_text(steps)
    if incidents:
        (run / "incidents.jsonl").write_text(incidents)
    return run


def test_a_last_line_cut_mid_write_is_skipped_and_said(tmp_path: Path) -> None:
    run = live(tmp_path, lines([_step(i) for i in range(7)]) + '{"step": 7, "loss": 0.9, "gr')
    view = read_run(run)
    assert (view.steps, view.closed) == (7, False)
    assert any("did not close" in n for n in view.notes)
    assert any("1 line(s) cut short" in n and "line 8" in n for n in view.notes)


def test_a_line_cut_short_then_appended_after_is_skipped(tmp_path: Path) -> None:
    cut = json.dumps(_step(3))[:25]
    run = live(
        tmp_path,
        lines([_step(0), _step(1), _step(2)]) + cut + json.dumps(_step(4)) + "\n" + lines([_step(5)]),
    )
    view = read_run(run)
    assert view.steps == 4 and any("line 4" in n for n in view.notes)


def test_skips_overflows_and_clipping_are_counted_from_the_lines(tmp_path: Path) -> None:
    rows = [_step(i) for i in range(6)]
    rows[1] |= {"skipped": "nonfinite-loss: the loss is nan"}
    rows[2] |= {"skipped": "loss-scale overflow (GradScaler skipped the step)", "overflow": True}
    rows[3] |= {"overflow": True, "skipped": "loss-scale overflow (GradScaler skipped the step)"}
    rows[4] |= {"clipped_norm": 1.0, "grad_norm": 5.0}
    rows[5] |= {"clipped_norm": None}  # no clip configured
    view = read_run(live(tmp_path, lines(rows), lines([INCIDENT])))
    assert [s.step for s in view.skips] == [1]  # the scaler's back-offs are counted, not listed
    assert view.overflows == 2 and view.clipped_steps == 5  # grad 2.0 > clipped 1.0 in _step
    assert [i["step"] for i in view.incidents] == [1]


def test_a_dump_without_its_incident_line_is_named(tmp_path: Path) -> None:
    run = live(tmp_path, lines([_step(0)]), lines([INCIDENT]))
    (run / "incidents" / "step-1").mkdir(parents=True)
    (run / "incidents" / "step-9").mkdir()
    (run / "incidents" / ".step-10.abc.tmp").mkdir()  # a dump the kill cut short: not a dump
    view = read_run(run)
    notes = " ".join(view.notes)
    assert "step-9" in notes and "step-1," not in notes and ".tmp" not in notes


def test_only_dumps_on_disk_is_still_a_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "incidents" / "step-3").mkdir(parents=True)
    view = read_run(run)
    assert view.steps == 0 and not view.closed and "step-3" in " ".join(view.notes)


def test_a_folder_with_nothing_a_run_writes_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    with pytest.raises(ReportError, match="not a guarded run"):
        read_run(tmp_path / "run")


def test_a_report_written_at_a_stop_with_more_steps_after(tmp_path: Path) -> None:
    run = live(tmp_path, lines([_step(i) for i in range(9)]))
    (run / "report.json").write_text(json.dumps(report(closed=False)))  # 3 steps, written mid-run
    view = read_run(run)
    assert view.steps == 9 and not view.closed
    (run / "steps.jsonl").write_text(lines([_step(0)]))
    view = read_run(run)
    assert view.steps == 3 and not view.closed and "mid-run" in view.notes[0]


def test_a_closed_report_is_read_as_it_is(tmp_path: Path) -> None:
    run = live(tmp_path, lines([_step(i) for i in range(3)]))  # close() wrote the report's steps
    (run / "report.json").write_text(json.dumps(report()))
    view = read_run(run)
    assert view.closed and view.steps == 3 and view.notes == ()


def test_the_ledger_is_counted(tmp_path: Path) -> None:
    run = live(tmp_path, lines([_step(0)]))
    (run / "ledger.jsonl").write_text(
        lines([{"step": 1, "kind": "nonfinite-loss", "digest": "ab", "run": "r"}])
    )
    assert any("ledger.jsonl lists 1" in n for n in read_run(run).notes)


@pytest.mark.parametrize("name", ["steps.jsonl", "incidents.jsonl", "ledger.jsonl"])
def test_a_fifo_in_the_run_folder_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    run = live(tmp_path, lines([_step(0)]))
    (run / name).unlink(missing_ok=True)
    os.mkfifo(run / name)
    with pytest.raises(ReportError, match=f"{name}: not read: .*regular"):
        read_run(run)


@pytest.mark.parametrize("name", ["steps.jsonl", "incidents.jsonl", "ledger.jsonl"])
def test_a_link_in_the_run_folder_is_refused(tmp_path: Path, name: str) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(lines([_step(0)]))
    run = live(tmp_path, lines([_step(0)]))
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(target)
    with pytest.raises(ReportError, match=f"{name}: not read: a symbolic link"):
        read_run(run)


def test_a_linked_incidents_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    run = live(tmp_path, lines([_step(0)]))
    (run / "incidents").symlink_to(tmp_path / "other")
    with pytest.raises(ReportError, match="incidents: not a folder"):
        read_run(run)


@pytest.mark.parametrize(
    ("steps", "incidents", "field"),
    [
        (lines([{**_step(0), "loss": "x"}]), "", "steps.jsonl:1: loss"),
        (lines([_step(0), {**_step(1), "step": "1"}]), "", "steps.jsonl:2: step"),
        (lines([_step(0), [1, 2]]), "", "steps.jsonl:2"),
        (lines([{**_step(0), "grad_norm": 10**400}]), "", "steps.jsonl:1: grad_norm"),
        (lines([_step(0)]), lines([{**INCIDENT, "ranks": 2}]), "incidents.jsonl:1: ranks"),
        (lines([_step(0)]), lines([{**INCIDENT, "localization": "x"}]), "incidents.jsonl:1: localization"),
        (lines([_step(0)]), lines([INCIDENT, {**INCIDENT, "step": None}]), "incidents.jsonl:2: step"),
    ],
)
def test_a_wrong_field_in_a_live_file_names_file_line_and_field(
    tmp_path: Path, steps: str, incidents: str, field: str
) -> None:
    with pytest.raises(ReportError, match=field):
        read_run(live(tmp_path, steps, incidents))


def test_a_resumed_run_that_did_not_close_after_a_closed_one(tmp_path: Path) -> None:
    """close() rewrites steps.jsonl with the report's steps; a resumed run appends after them."""
    run = live(tmp_path, lines([_step(i) for i in range(3)]))
    (run / "report.json").write_text(json.dumps(report()))  # closed, 3 steps
    assert read_run(run).closed
    with (run / "steps.jsonl").open("a") as fh:
        fh.write(lines([_step(i) for i in range(3, 8)]))
    view = read_run(run)
    assert not view.closed and view.steps == 8 and "a later run" in view.notes[0]
