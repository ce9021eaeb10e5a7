"""A guarded torch run killed with SIGKILL mid-training: ``envkit guard show`` reads what it wrote.

A real training process (a small MLP, AdamW, a NaN planted in the batch of step 12, policy skip,
``loss_fn`` for the localization, ``steps.jsonl`` flushed every 5 steps) is killed with SIGKILL right
after step 25: no ``close()``, no ``report.json`` (the steps after the last flush are lost).
``guard show`` rebuilds the run from ``steps.jsonl``, ``incidents.jsonl``, the dump and the
ledger, says the run did not close, and exits 1 for the incident; ``--json`` says ``closed:
false``; ``--html`` draws the steps written.
Before ``envkit.incident.runread`` it said ``RUN/report.json: no such report`` (exit 2).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.frameworks]

from envkit.cli import main  # noqa: E402

SCRIPT = textwrap.dedent(
    """
    import math, sys, time
    from pathlib import Path
    import torch
    import torch.nn.functional as F
    from envkit.guard import Guard, RunlogOptions

    run, ready = Path(sys.argv[1]), Path(sys.argv[2])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def loss_fn(model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    guard = Guard(model, opt, run=run, policy="skip", clip=1.0, loss_fn=loss_fn,
                  log=RunlogOptions(flush_every=5))
    g = torch.Generator().manual_seed(1)
    for step in range(1, 1000):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        if step == 12:
            x[1, 3] = math.nan
        with guard.step(step, (x, y)) as s:
            s.backward(loss_fn(model, (x, y)))
            s.optimizer_step()
        if step == 25:
            ready.write_text("25")
            time.sleep(600)   # killed here: close() never runs
    """
)


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("killed")
    script, run, ready = tmp / "train.py", tmp / "run", tmp / "ready"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, str(script), str(run), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 240
        while not ready.exists():
            assert proc.poll() is None, f"the training exited early ({proc.returncode})"
            assert time.monotonic() < deadline, "the training never reached step 25"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    assert not (run / "report.json").exists()
    return run


def test_show_reads_a_run_killed_at_step_25(killed_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guard", "show", str(killed_run)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    # the steps on disk: flushed every 5 steps and at the incident; the last flush before the kill
    written = len((killed_run / "steps.jsonl").read_text().splitlines())
    assert 20 <= written <= 25
    assert lines[0].startswith(f"{killed_run}: {written} steps, 1 skipped")
    assert "  the run did not close" in lines
    assert "skipped step 12: nonfinite-loss" in out or "skipped step 12: nonfinite-grad" in out
    assert "incident at step 12: nonfinite-" in out
    assert "the batch holds nan in batch[0] at [1, 3]" in out
    assert "ledger.jsonl lists 1 skipped batch(es)" in out
    assert f"dump: {killed_run / 'incidents' / 'step-12'}" in out


def test_show_json_says_the_run_did_not_close(killed_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guard", "show", str(killed_run), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["closed"] is False and 20 <= result["steps"] <= 25 and result["skipped"] == 1
    assert [i["step"] for i in result["incidents"]] == [12]
    assert result["clipped_steps"] >= 0 and any("did not close" in n for n in result["notes"])


def test_html_of_a_killed_run(killed_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "killed.html"
    assert main(["guard", "show", str(killed_run), "--html", str(page)]) == 1
    html = page.read_text()
    assert "steps, 1 skipped" in html and "the run did not close" in html
    assert "step 1</text>" in html and ">#1</text>" in html
