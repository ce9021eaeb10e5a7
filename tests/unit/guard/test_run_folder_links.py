"""The guard writes nothing through a link planted in its run folder (docs/concepts/security.md, the guard
library's row): ``steps.jsonl``, ``incidents.jsonl``, ``report.json``, ``incidents/`` and a dump's
``step-N``. Real torch runs; each planted link's target stays as it was and the training goes on."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def run_with_nan(run: Path, steps: int = 6, nan_at: int = 3) -> Any:
    from envkit.guard import Guard, RunlogOptions

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    guard = Guard(
        model, torch.optim.SGD(model.parameters(), lr=0.1), run=run, log=RunlogOptions(flush_every=2)
    )
    for step in range(steps):
        x = torch.ones(3, 4) * (math.nan if step == nan_at else 1.0)
        with guard.step(step, (x,)) as g:
            g.backward(model(x).sum())
            g.optimizer_step()
    guard.close()
    return guard


@pytest.mark.parametrize("name", ["steps.jsonl", "incidents.jsonl", "report.json", "steps.csv"])
def test_a_linked_run_file_is_replaced_never_written_through(tmp_path: Path, name: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    (run / name).symlink_to(victim)
    run_with_nan(run)
    assert victim.read_text() == "untouched\n"
    assert not (run / name).is_symlink() and (run / name).stat().st_size > 0


def test_a_linked_incidents_folder_is_not_written_into(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "incidents").symlink_to(elsewhere)
    guard = run_with_nan(run)
    assert list(elsewhere.iterdir()) == []
    assert any("symbolic link" in e for e in guard.log.recording_errors)
    assert len(guard.log.records) == 6  # the training went on


def test_a_linked_dump_folder_is_replaced_not_followed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "incidents").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "incidents" / "step-3").symlink_to(elsewhere)
    run_with_nan(run)
    assert list(elsewhere.iterdir()) == []
    dump = run / "incidents" / "step-3"
    assert not dump.is_symlink() and (dump / "manifest.json").is_file()
