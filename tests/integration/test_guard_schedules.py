"""envkit.guard and the user's own lr schedule: an lr change is judged with the lr it was made with.

Per-epoch warm-ups in real scripts (tests/data/guard_scripts/amp_torch.py: LambdaLR and StepLR
stepped per epoch, the same warm-up set by hand; paddle_warmup.py: Paddle's LinearWarmup stepped
per epoch, 20.8× at the first boundary) are healthy: no skip, no stop. An lr set by hand is refused
a few steps, then taken as the run's (one warning), never a stop."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from envkit.guard import Limits

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "guard_scripts"


def script(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    pytest.importorskip("paddle" if name.startswith("paddle") else "torch")
    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    if not name.startswith("paddle"):
        import torch

        torch.set_num_threads(1)
    return module


@pytest.mark.parametrize("schedule", ["lambda", "step"])
def test_a_torch_scheduler_stepped_per_epoch_is_no_anomaly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schedule: str
) -> None:
    """LambdaLR's warm-up makes the lr 34× larger at step 20 (the guard's warm-up is over): the
    update is 27× any before, yet its gradients are as before; it once skipped ten steps and stopped."""
    amp = script("amp_torch", monkeypatch)
    out = amp.train(tmp_path / "run", 120, schedule=schedule)
    assert out["incidents"] == [] and not any(r.skipped for r in out["records"])
    if schedule == "lambda":
        lrs = [r.lr for r in out["records"]]
        assert lrs[20] == pytest.approx(34 * lrs[19])


def test_paddle_linear_warmup_stepped_per_epoch_is_no_anomaly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ViT tutorial's LinearWarmup per epoch: 20.8× at step 25 (once: GuardStopped at step 34)."""
    vit = script("paddle_warmup", monkeypatch)
    out = vit.train(tmp_path / "run", 150)
    lrs = [r.lr for r in out["records"]]
    assert lrs[25] == pytest.approx(20.8 * lrs[24])
    assert out["incidents"] == [] and not any(r.skipped for r in out["records"])


def test_an_lr_set_by_hand_per_epoch_is_refused_three_steps_then_the_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same warm-up written into the param groups by hand (no scheduler to see): the guard skips
    three steps at the new lr, then takes it as the run's lr with one warning; never a stop."""
    amp = script("amp_torch", monkeypatch)
    out = amp.train(tmp_path / "run", 120, schedule="hand")
    kinds = [(i.step, str(i.kind), i.action) for i in out["incidents"]]
    assert kinds == [
        (20, "update-spike", "skipped"),
        (21, "update-spike", "skipped"),
        (22, "update-spike", "skipped"),
        (23, "update-spike", "warned"),
    ]
    assert "set without a scheduler stayed for 4 steps: taken as the run's lr" in out["incidents"][3].message
    assert len(out["records"]) == 120 and [r.step for r in out["records"] if r.skipped] == [20, 21, 22]


@pytest.mark.parametrize("schedule", ["lambda", "step"])
def test_an_lr_set_over_an_attached_scheduler_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schedule: str
) -> None:
    """The scheduler (not given to the guard) is attached to the optimizer; the loop multiplies the lr
    by 10,000 for one step after it: not the lr the scheduler computed, so refused (the guard once took
    any optimizer with a scheduler attached as scheduled and let it through)."""
    amp = script("amp_torch", monkeypatch)
    out = amp.train(tmp_path / "run", 80, schedule=schedule, fault="spike", fault_step=50)
    [found] = [i for i in out["incidents"] if i.step == 50]
    assert (str(found.kind), found.action) == ("update-spike", "skipped")
    assert "set by other code than the scheduler" in found.message
    assert not any(r.skipped for r in out["records"] if r.step != 50)


def test_a_runaway_the_scheduler_computes_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A LambdaLR formula bug: the scheduler itself ramps the lr 1 → 1000× over 30 steps (1.26× a
    step: no single step is a spike). Its lr is the schedule, yet 10× the optimizer's declared lr is
    said at once, as a runaway, within 11 steps of the ramp's start."""
    amp = script("amp_torch", monkeypatch)
    out = amp.train(tmp_path / "run", 70, schedule="runaway", guard_options={"limits": Limits(max_skips=100)})
    named = [i for i in out["incidents"] if "the largest the optimizer and its schedule declare" in i.message]
    assert named and 30 < named[0].step <= 41 and str(named[0].kind) == "update-spike"
    assert "the learning rate is" in named[0].message
