"""The bad-batch ledger (``RUN/ledger.jsonl``) follows the run folder's rules (issue 43 item 5).

Read as a regular file only (a FIFO there made ``Guard(...)`` wait forever; a link was followed),
bounded; appended ``O_NOFOLLOW`` (a link planted while the run goes on was appended through, into
its target). Real torch, real FIFOs and links.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import GuardError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def guard(run: Path) -> Any:
    from envkit.guard import Guard

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    return Guard(model, torch.optim.SGD(model.parameters(), lr=0.1), run=run, policy="skip")


def step(g: Any, n: int, nan: bool = False) -> None:
    x = torch.ones(3, 4) * (math.nan if nan else 1.0)
    with g.step(n, (x,)) as s:
        s.backward(g.adapter.model(x).sum())
        s.optimizer_step()


def in_thread(fn: Any, seconds: float = 20) -> list[Any]:
    """``fn()``'s result or exception, or a failure when it is still waiting after ``seconds``."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except Exception as exc:  # noqa: BLE001 returned to the test
            out.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    return out


def test_a_fifo_ledger_is_refused_at_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "ledger.jsonl")
    out = in_thread(lambda: guard(run))
    if not out:  # let the blocked open go, so the process can end
        os.close(os.open(run / "ledger.jsonl", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("Guard(...) waited on a FIFO ledger.jsonl")
    assert isinstance(out[0], GuardError) and "ledger.jsonl" in str(out[0]) and "regular" in str(out[0])


def test_a_linked_ledger_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_text('{"step": 1, "kind": "nonfinite-loss", "digest": null, "run": "x"}\n')
    run = tmp_path / "run"
    run.mkdir()
    (run / "ledger.jsonl").symlink_to(secret)
    with pytest.raises(GuardError, match=r"ledger\.jsonl: not read: a symbolic link"):
        guard(run)


@pytest.mark.parametrize("kind", ["device", "directory"])
def test_a_ledger_that_is_no_file_is_refused(tmp_path: Path, kind: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    if kind == "directory":
        (run / "ledger.jsonl").mkdir()
    else:
        (run / "ledger.jsonl").symlink_to("/dev/zero")  # also a link: refused before it is read
    with pytest.raises(GuardError, match=r"ledger\.jsonl"):
        guard(run)


def test_a_link_planted_during_the_run_is_not_appended_through(tmp_path: Path) -> None:
    run = tmp_path / "run"
    g = guard(run)
    step(g, 0)
    run.mkdir(exist_ok=True)
    target = tmp_path / "victim.txt"
    target.write_text("untouched\n")
    (run / "ledger.jsonl").symlink_to(target)
    step(g, 1, nan=True)  # skipped: its batch goes to the ledger
    assert target.read_text() == "untouched\n"
    assert any("ledger" in e and "symbolic link" in e for e in g.log.recording_errors)
    step(g, 2)  # the training went on


def test_a_fifo_planted_during_the_run_does_not_block_the_append(tmp_path: Path) -> None:
    run = tmp_path / "run"
    g = guard(run)
    step(g, 0)
    run.mkdir(exist_ok=True)
    os.mkfifo(run / "ledger.jsonl")
    out = in_thread(lambda: step(g, 1, nan=True))
    if not out:
        os.close(os.open(run / "ledger.jsonl", os.O_RDONLY | os.O_NONBLOCK))
        pytest.fail("the ledger's append waited on a FIFO")
    # no reader: O_NONBLOCK's open fails at once (ENXIO); with one, the regular-file check refuses it
    assert any("the bad-batch ledger" in e for e in g.log.recording_errors)


@pytest.mark.parametrize(
    "line",
    [
        '{"step": "1", "kind": "x"}',
        '{"step": true, "kind": "x"}',
        '{"step": 1, "kind": ["x"]}',
        '{"step": 1, "kind": "x", "run": 5}',
        '{"step": 1, "kind": "x", "digest": 7}',
        "[1, 2]",
    ],
)
def test_a_ledger_line_of_the_wrong_shape_names_its_line(tmp_path: Path, line: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "ledger.jsonl").write_text(line + "\n" + '{"step": 2, "kind": "x", "digest": null, "run": "r"}\n')
    with pytest.raises(GuardError, match=r"ledger\.jsonl:1"):
        guard(run)
