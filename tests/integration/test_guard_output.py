"""What the guard and ``guard show`` print (issue 44 item 7): each line once, the scaler's routine
counted not listed, a one-off fault said not to reproduce.

- Under Paddle (whose import configures the root logger at INFO with a stderr handler) a skip was
  printed twice and every later skip once more; a real Paddle run in a child process here.
- A GradScaler's back-offs were each listed as a "skipped step" on a healthy run.
- A fault that the guard's own replay (the localization) did not reproduce: ``show`` said nothing.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from tests.unit.guard.test_show_hostile import _step, report, write

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning")]
REPO = Path(__file__).resolve().parents[2]

PADDLE_RUN = textwrap.dedent(
    """
    import math, sys
    import paddle
    from envkit.guard import Guard

    paddle.seed(0)
    model = paddle.nn.Linear(4, 2)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    guard = Guard(model, opt, run=sys.argv[1], policy="skip")
    for step in range(6):
        x = paddle.ones([3, 4]) * (math.nan if step in (2, 4) else 1.0)
        with guard.step(step, (x,)) as g:
            g.backward(model(x).sum())
            g.optimizer_step()
    guard.close()
    """
)


def test_a_skip_under_paddle_is_printed_once(tmp_path: Path) -> None:
    pytest.importorskip("paddle")
    (tmp_path / "train.py").write_text(PADDLE_RUN)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "train.py"), str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    skips = [line for line in done.stderr.splitlines() if "skipped: nonfinite" in line]
    assert len(skips) == 1 and "step 2 skipped" in skips[0], done.stderr[-2000:]


def test_scaler_back_offs_are_counted_not_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backoff = "loss-scale overflow (GradScaler skipped the step)"
    steps = [_step(i) for i in range(6)]
    for i in (0, 1, 3):
        steps[i] |= {"overflow": True, "skipped": backoff}
    skips = [{"step": i, "reason": backoff} for i in (0, 1, 3)]
    run = write(tmp_path, report(steps=steps, skips=skips, incidents=[]))
    assert main(["guard", "show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "0 skipped, 3 loss-scale overflows" in out and "skipped step" not in out
    assert main(["guard", "show", str(run), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["skipped"] == 0 and result["overflows"] == 3 and result["skips"] == []


def test_a_one_off_fault_that_the_localization_did_not_reproduce(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    from envkit.guard import Guard

    calls = {"n": 0}

    def flaky_loss(model: Any, batch: Any) -> Any:  # NaN once, as a flipped bit would make it
        calls["n"] += 1
        loss = model(batch[0]).pow(2).mean()
        return loss * math.nan if calls["n"] == 4 else loss

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    guard = Guard(
        model, torch.optim.SGD(model.parameters(), lr=0.1), run=tmp_path / "run", loss_fn=flaky_loss
    )
    for step in range(6):
        x = torch.ones(3, 4) * (step + 1)
        with guard.step(step, (x,)) as g:
            g.backward(flaky_loss(model, (x,)))
            g.optimizer_step()
    guard.close()
    assert main(["guard", "show", str(tmp_path / "run")]) == 1
    out = capsys.readouterr().out
    assert "incident at step 3: nonfinite-loss" in out
    assert "did not reproduce: the guard's replay of this step" in out


def test_a_fault_that_the_localization_reproduced_is_not_called_one_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    incident = {
        "step": 1, "kind": "nonfinite-loss", "message": "the loss is nan", "action": "skipped",
        "localization": {"batch": {}, "replayed": {"loss": "nan", "grad_norm": "nan"}},
    }  # fmt: skip
    assert main(["guard", "show", str(write(tmp_path, report(incidents=[incident])))]) == 1
    assert "did not reproduce" not in capsys.readouterr().out


def test_no_parameter_is_named_once_the_input_was_blamed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loc = {
        "nonfinite_batch": {"tensor": "batch[0]", "index": [1, 3], "value": "nan", "count": 1, "size": 32},
        "first_nonfinite_grad": "fc2.weight",
        "largest_grad": {"parameter": "fc1.weight", "norm": 3.5},
        "hints": [],
    }
    for message in ("the loss is nan", "the batch holds nan in batch[0] at [1, 3] (1 of 32 values ...)"):
        incident = {
            "step": 1,
            "kind": "nonfinite-loss",
            "message": message,
            "action": "skipped",
            "localization": loc,
        }
        main(
            [
                "guard",
                "show",
                str(write(tmp_path / message[:8].replace(" ", "_"), report(incidents=[incident]))),
            ]
        )
        out = capsys.readouterr().out
        assert "fc2.weight" not in out and "fc1.weight" not in out
        assert out.count("the batch holds nan in batch[0] at [1, 3]") == 1
