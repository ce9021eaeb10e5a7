"""The per-step input-scale check (envkit.guard.scale): real torch and Paddle tensors, healthy and
hostile batches, and the ``input-outlier`` warning of a guarded loop whose numbers stay healthy."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import GuardError
from envkit.guard.scale import FACTOR, LEAST, InputScale

torch = pytest.importorskip("torch")


def torch_adapter() -> Any:
    from envkit.guard.adapter import make_adapter

    model = torch.nn.Linear(4, 2)
    return make_adapter(model, torch.optim.SGD(model.parameters(), lr=0.1))


def normalized(seed: int, n: int = 16) -> Any:
    return torch.randn(n, 3, 8, 8, generator=torch.Generator().manual_seed(seed))


def one_step(scale: InputScale, adapter: Any, step: int, batch: Any) -> Any:
    measured = scale.measure(adapter, batch)
    return scale.judge(step, measured, adapter.read(list(measured.values)))


def warm(scale: InputScale, adapter: Any, batches: int = 10) -> None:
    for step in range(batches):
        assert one_step(scale, adapter, step, (normalized(step), torch.zeros(16, dtype=torch.long))) is None


def test_one_16_bit_image_in_a_normalized_batch_is_out_of_scale() -> None:
    adapter, scale = torch_adapter(), InputScale()
    warm(scale, adapter)
    x = normalized(99)
    x[3] = torch.linspace(0, 2.0e5, 3 * 8 * 8).reshape(3, 8, 8)
    found = one_step(scale, adapter, 10, (x, torch.zeros(16, dtype=torch.long)))
    assert found is not None and found.place == "batch[0]" and found.max_abs == 2.0e5
    assert found.ratio > 10_000 and found.text.startswith("batch[0] reaches |x| = 2e+05")
    # the outlier never joins the reference: the next healthy batch is in scale, a second one is out
    assert one_step(scale, adapter, 11, (normalized(11), torch.zeros(16, dtype=torch.long))) is None
    assert one_step(scale, adapter, 12, (x, torch.zeros(16, dtype=torch.long))) is not None


def test_a_first_batch_and_the_first_few_have_nothing_to_be_out_of_scale_with() -> None:
    adapter, scale = torch_adapter(), InputScale()
    huge = normalized(0) * 1e6
    assert one_step(scale, adapter, 0, normalized(1)) is None
    for step in range(1, LEAST):
        assert one_step(scale, adapter, step, huge if step == LEAST - 1 else normalized(step)) is None
    assert one_step(scale, adapter, LEAST + 1, huge) is not None  # LEAST batches seen: judged now


def test_integer_and_boolean_tensors_are_not_read() -> None:
    adapter, scale = torch_adapter(), InputScale()
    ids = torch.randint(0, 50_000, (8, 12))
    mask = torch.ones(8, 12, dtype=torch.bool)
    assert scale.measure(adapter, {"ids": ids, "mask": mask}).places == ()
    for step in range(10):  # token ids that jump from small to 50,000: never an input outlier
        small = torch.randint(0, 5 if step < 9 else 50_000, (8, 12))
        assert one_step(scale, adapter, step, {"ids": small, "mask": mask}) is None


def test_an_all_zero_batch_and_an_all_zero_history() -> None:
    adapter, scale = torch_adapter(), InputScale()
    warm(scale, adapter)
    assert one_step(scale, adapter, 10, (torch.zeros(16, 3, 8, 8),)) is None  # never out of scale
    zeros = InputScale()
    for step in range(8):  # a tensor that was all zeros so far has no scale to compare with: no alarm
        assert one_step(zeros, adapter, step, torch.zeros(4, 4)) is None
    assert one_step(zeros, adapter, 8, torch.full((4, 4), 1e5)) is None


def test_a_batch_of_one_and_a_ragged_last_batch() -> None:
    adapter, scale = torch_adapter(), InputScale()
    warm(scale, adapter)
    assert one_step(scale, adapter, 10, (normalized(50, n=1),)) is None
    assert one_step(scale, adapter, 11, (normalized(51, n=3),)) is None
    assert one_step(scale, adapter, 12, (normalized(52, n=1) * 1e4,)) is not None


def test_nan_and_inf_are_left_to_the_nonfinite_checks_and_never_kept() -> None:
    adapter, scale = torch_adapter(), InputScale()
    warm(scale, adapter)
    for bad in (math.nan, math.inf):
        x = normalized(70)
        x[0, 0, 0, 0] = bad
        assert one_step(scale, adapter, 10, (x,)) is None
    window = scale.seen["batch[0]"]
    assert all(math.isfinite(v) for v in window.order) and len(window) == 10
    assert scale.largest is not None and scale.largest[0] < 2.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_torch_half_precision_and_double_inputs(dtype: str) -> None:
    adapter, scale = torch_adapter(), InputScale()
    for step in range(8):
        assert one_step(scale, adapter, step, normalized(step).to(getattr(torch, dtype))) is None
    x = normalized(9)
    x[0] = 32768.0  # exact in float16 and bfloat16
    found = one_step(scale, adapter, 9, x.to(getattr(torch, dtype)))
    assert found is not None and found.max_abs == 32768.0


def test_paddle_tensors_of_every_float_dtype() -> None:
    paddle = pytest.importorskip("paddle")
    from envkit.guard.adapter import make_adapter

    model = paddle.nn.Linear(4, 2)
    adapter = make_adapter(model, paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters()))
    labels = paddle.to_tensor([1, 2, 3], dtype="int64")
    assert adapter.input_scale(labels) == []
    for dtype in ("float32", "float64", "float16", "bfloat16"):
        scale = InputScale()
        for step in range(6):
            x = paddle.to_tensor(normalized(step, n=3).numpy()).astype(dtype)
            assert one_step(scale, adapter, step, [x, labels]) is None
        raw = normalized(7, n=3).numpy()
        raw[1] = 32768.0
        found = one_step(scale, adapter, 6, [paddle.to_tensor(raw).astype(dtype), labels])
        assert found is not None and found.place == "batch[0]" and found.max_abs == 32768.0, dtype


def train(run: Path, *, plant: int | None, steps: int = 24, **guard: Any) -> dict[str, Any]:
    """A small CNN on normalized images under the guard; at ``plant`` one sample is a raw 16-bit image."""
    from envkit.guard import Guard

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.GroupNorm(2, 4), torch.nn.Flatten(), torch.nn.Linear(144, 3)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Guard(model, opt, run=run, **guard) as g:
        for step in range(steps):
            x, y = normalized(step), torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(step))
            if step == plant:
                x[0] = torch.linspace(0, 2.0e5, 3 * 8 * 8).reshape(3, 8, 8)
            with g.step(step, (x, y)) as s:
                s.backward(torch.nn.functional.cross_entropy(model(x), y))
                s.optimizer_step()
    report: dict[str, Any] = json.loads((run / "report.json").read_text())["guard"]
    return report


def test_a_guarded_run_warns_at_the_step_names_the_input_and_applies_the_step(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="step 15: batch\\[0\\] reaches"):
        report = train(tmp_path / "run", plant=15)
    (incident,) = report["incidents"]
    assert (incident["step"], incident["kind"], incident["action"]) == (15, "input-outlier", "warned")
    assert "the input" in incident["message"] and ".weight" not in incident["message"]
    assert "largest_update" not in (incident["localization"] or {})
    assert not report["skips"] and incident["dump"] == "incidents/step-15"
    assert report["config"]["input_scale"]["largest_ratio"] < FACTOR / 5


def test_a_healthy_run_and_the_check_turned_off(tmp_path: Path) -> None:
    from envkit.guard.options import SpikeOptions

    assert train(tmp_path / "healthy", plant=None)["incidents"] == []
    off = train(tmp_path / "off", plant=15, spikes=SpikeOptions(input_factor=None))
    assert off["incidents"] == [] and "input_scale" not in off["config"]
    with pytest.raises(GuardError, match="input_factor"):
        SpikeOptions(input_factor=1.0)


def test_deferred_reads_find_it_at_the_later_read(tmp_path: Path) -> None:
    from envkit.guard.options import ReadOptions

    with pytest.warns(UserWarning, match="step 13: batch\\[0\\]"):
        report = train(tmp_path / "run", plant=13, reads=ReadOptions(check_every=4, defer=True))
    (incident,) = report["incidents"]
    assert (incident["step"], incident["kind"], incident["action"]) == (13, "input-outlier", "warned")


def test_the_check_changes_no_number_of_a_run_with_two_parameter_groups(tmp_path: Path) -> None:
    """The group norms are read as vectors (one per group) beside the batch's 0-d scales: every
    record (losses, norms, update ratios per group) is the same with the check and without."""
    from envkit.guard import Guard
    from envkit.guard.options import SpikeOptions

    def records(run: Path, spikes: SpikeOptions) -> list[dict[str, Any]]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 8), torch.nn.Linear(8, 3))
        groups = [{"params": model[1].parameters(), "lr": 0.01}, {"params": model[2].parameters()}]
        opt = torch.optim.SGD(groups, lr=0.1)
        with Guard(model, opt, run=run, spikes=spikes) as g:
            for step in range(12):
                x, y = (
                    normalized(step),
                    torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(step)),
                )
                with g.step(step, (x, y)) as s:
                    s.backward(torch.nn.functional.cross_entropy(model(x), y))
                    s.optimizer_step()
        return [r.to_json() for r in g.records]

    on, off = (
        records(tmp_path / "on", SpikeOptions()),
        records(tmp_path / "off", SpikeOptions(input_factor=None)),
    )
    assert on == off and len(on[-1]["update_ratios"]) == 2


def test_paddle_eager_ops_and_the_public_api_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    paddle = pytest.importorskip("paddle")
    from envkit.guard import paddle_adapter

    x = paddle.to_tensor(normalized(3, n=4).numpy())
    x[2, 1, 3, 3] = -4.0e3  # the largest |x| is a negative value
    fast = float(paddle_adapter._max_abs(x))
    monkeypatch.setitem(paddle_adapter._FAST_MAX_ABS, "on", False)
    assert fast == float(paddle_adapter._max_abs(x)) == 4.0e3


def test_a_batch_the_check_cannot_reduce_turns_it_off_and_training_goes_on(tmp_path: Path) -> None:
    from envkit.guard import Guard

    sparse = torch.randn(4, 4).to_sparse()  # floating point, but aminmax has no sparse kernel
    with pytest.raises(Exception):  # noqa: B017 whatever torch raises for it
        torch.aminmax(sparse)
    model = torch.nn.Linear(4, 2)
    with Guard(model, torch.optim.SGD(model.parameters(), lr=0.1), run=tmp_path / "run") as g:
        for step in range(3):
            x = torch.randn(4, 4)
            with g.step(step, (x, sparse)) as s:
                s.backward(model(x).sum())
                assert s.optimizer_step()
    report = json.loads((tmp_path / "run" / "report.json").read_text())["guard"]
    assert len(report["steps"]) == 3 and "input_scale" not in report["config"]
    assert any("input-scale check" in e for e in report["recording_errors"])
