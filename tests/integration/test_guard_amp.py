"""envkit.guard under a GradScaler and autocast (tests/data/guard_scripts/amp_torch.py, real torch on
the CPU; Paddle's GradScaler in tests/integration/test_guard_paddle.py): a step the guard skips
itself leaves the scaler as the scaler's own skip would, and never lowers the scale of a step that
did not overflow; a bad batch whose gradients overflow is still an incident."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from envkit.guard import Limits

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "guard_scripts"


@pytest.fixture
def amp(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location("amp_torch", SCRIPTS / "amp_torch.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "amp_torch", module)
    spec.loader.exec_module(module)
    torch.set_num_threads(1)
    return module


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_skipped_update_spike_leaves_the_scaler_ready_and_its_scale_as_it_was(
    tmp_path: Path, amp: ModuleType, dtype: str
) -> None:
    """The lr × 10,000 at step 25 of 30 (by hand): the guard skips it; step 26's unscale_ used to
    raise 'unscale_() has already been called' (the guard never let the scaler finish the step)."""
    out = amp.train(tmp_path / "run", 30, dtype=getattr(torch, dtype), fault="lr", fault_step=25)
    records = out["records"]
    assert len(records) == 30 and not any(r.raised for r in records)
    assert str(out["incidents"][0].kind) == "update-spike" and out["incidents"][0].step == 25
    assert records[25].skipped and not records[25].overflow
    assert out["scales"][26] == out["scales"][25] == records[25].loss_scale  # not lowered


def test_the_guards_skip_does_not_count_toward_the_scales_growth(tmp_path: Path, amp: ModuleType) -> None:
    """growth_interval 4: the scaler doubles its scale after 4 good steps; a step the guard skipped
    neither counts as one nor resets the count (the scale is the one of the run without the step)."""
    out = amp.train(tmp_path / "run", 30, fault="lr", fault_step=25, growth_interval=4)
    scales, records = out["scales"], out["records"]
    assert all(r.skipped and not r.overflow for r in records[25:])  # the guard's skips, no overflow
    assert scales[25] == scales[26] == scales[29]
    assert out["trackers"][25] == out["growth_tracker"] > 0  # the count stays as it was


def test_a_nan_batch_skipped_by_the_guard_backs_the_scale_off_as_the_scalers_own_skip(
    tmp_path: Path, amp: ModuleType
) -> None:
    """A NaN pixel at step 10: the gradients overflow; the guard's skip is the scaler's own (the
    scale halves), and the whole run is bitwise the unguarded AMP loop's."""
    plain = amp.train(None, 16, fault="nan", fault_step=10)
    guarded = amp.train(tmp_path / "run", 16, fault="nan", fault_step=10)
    assert guarded["scales"] == plain["scales"] and plain["scales"][11] == plain["scales"][10] / 2
    assert [x.hex() for x in guarded["losses"] if math.isfinite(x)] == [
        x.hex() for x in plain["losses"] if math.isfinite(x)
    ]
    [incident] = guarded["incidents"]
    assert (incident.step, str(incident.kind), incident.action) == (10, "nonfinite-loss", "skipped")


def test_a_garbage_batch_whose_gradients_overflow_is_an_incident(tmp_path: Path, amp: ModuleType) -> None:
    """Noise for images, labels shuffled, at step 25 under float16: the loss (finite, 18.7 against a
    median of 1.09) is checked before the overflow path, which used to record a routine back-off."""
    out = amp.train(tmp_path / "run", 30, fault="garbage", fault_step=25)
    [incident] = out["incidents"]
    assert (incident.step, str(incident.kind), incident.action) == (25, "loss-spike", "skipped")
    assert "overflowed the loss scale 65536: a bad batch or a blow-up, not the scale" in incident.message
    assert incident.dump == "incidents/step-25" and (tmp_path / "run" / "ledger.jsonl").is_file()
    record = out["records"][25]
    assert record.overflow and record.skipped and out["scales"][26] == out["scales"][25] / 2  # as its own


def test_the_garbage_batch_under_bfloat16_does_not_overflow_and_is_caught_as_in_fp32(
    tmp_path: Path, amp: ModuleType
) -> None:
    out = amp.train(tmp_path / "run", 30, dtype=torch.bfloat16, fault="garbage", fault_step=25)
    [incident] = out["incidents"]
    assert (incident.step, str(incident.kind), incident.action) == (25, "update-spike", "skipped")
    assert not out["records"][25].overflow and out["scales"][26] == out["scales"][25]


def test_the_same_batch_overflowing_again_after_a_back_off_is_an_incident(
    tmp_path: Path, amp: ModuleType
) -> None:
    """The same batch (× 300, labels shifted) comes each epoch (steps 5, 25, 45, 65) and overflows each
    time though the scale backed off: from its second time an incident naming the first step (loss
    spikes off, so only the repeat can tell)."""
    out = amp.train(tmp_path / "run", 70, fault="loud", fault_step=25, guard_options={"spikes": None})
    assert [r.step for r in out["records"] if r.overflow] == [5, 25, 45, 65]
    found = [(i.step, str(i.kind), i.action) for i in out["incidents"]]
    assert found == [(s, "nonfinite-grad", "skipped") for s in (25, 45, 65)]
    assert "again on the batch that overflowed at step 5 at scale 65536" in out["incidents"][0].message


def test_one_raw_16_bit_image_in_a_normalized_batch_is_blamed_on_the_input(
    tmp_path: Path, amp: ModuleType
) -> None:
    """Values up to 2e5 in one image of 32 (float16 autocast: the forward overflows, the loss is NaN):
    the incident says the input, which sample and by how much, before anything about the model."""
    out = amp.train(tmp_path / "run", 30, fault="huge", fault_step=25)
    [incident] = out["incidents"]
    assert (incident.step, str(incident.kind)) == (25, "nonfinite-loss")
    assert incident.message.startswith("the input: sample 3 of batch[0] reaches |x| = 1.99")
    assert incident.context["input_outlier"]["sample"] == 3
    named = {"largest_grad", "largest_update"} & set(incident.localization or {})
    assert not named and ".weight" not in incident.message  # the input blamed: no parameter named


def test_an_lr_ramping_1000x_over_tens_of_steps_is_named_as_the_cause(
    tmp_path: Path, amp: ModuleType
) -> None:
    """The lr × 1.2 a step from step 25 (a schedule formula bug): no step is 10× the largest before,
    so no update spike; when the run blows up, the trend is said with the incident."""
    out = amp.train(
        tmp_path / "run", 60, fault="ramp", fault_step=25, guard_options={"limits": Limits(max_skips=100)}
    )
    named = [i for i in out["incidents"] if "the learning rate rose" in i.message]
    assert named and named[0].step <= 50 and "a schedule bug?" in named[0].message
    assert named[0].context["lr_trend"].startswith("the learning rate rose")
    assert not any("the learning rate rose" in i.message for i in out["incidents"] if i.step < 37)


def test_a_run_left_at_chance_loss_after_a_blow_up_gets_one_dead_run_warning(
    tmp_path: Path, amp: ModuleType
) -> None:
    """One step at lr × 300 (step 25): the weights blow up and the loss settles at ~2.3 (chance, 10
    classes) for the rest of the run: one warning, after 100 steps at it."""
    # policy warn: the guard refuses the kick itself under skip (a jump to 300× the declared lr)
    out = amp.train(tmp_path / "run", 200, fault="kick", fault_step=25, guard_options={"policy": "warn"})
    dead = [i for i in out["incidents"] if str(i.kind) == "dead-run"]
    assert len(dead) == 1 and dead[0].action == "warned" and 125 <= dead[0].step <= 175
    # the kick itself (lr 15, 300× the optimizer's 0.05) is named at its step, so the blow-up dates from it
    [kick] = [i for i in out["incidents"] if i.step == 25]
    assert kick.action == "warned" and "the learning rate is 15, 300× the largest before" in kick.message
    assert dead[0].message.startswith("the run looks dead: since the blow-up at step 25")
    assert 2.2 < out["losses"][-1] < 2.45


def test_a_healthy_run_after_one_skipped_nan_batch_is_not_dead(tmp_path: Path, amp: ModuleType) -> None:
    out = amp.train(tmp_path / "run", 200, fault="nan", fault_step=10)
    assert [str(i.kind) for i in out["incidents"]] == ["nonfinite-loss"]
