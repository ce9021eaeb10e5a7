"""The keywords Guard took in rounds 1 and 2 keep working, with a DeprecationWarning naming the new form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envkit.guard import Guard, Limits, ReadOptions, RunlogOptions, SpikeOptions
from envkit.guard.options import LEGACY, Grouped, fold_legacy

torch = pytest.importorskip("torch")

# a value for each old keyword that differs from its default
VALUES: dict[str, Any] = {
    "check_every": 7, "defer_reads": True, "max_skips": 3, "max_overflows": 4, "max_dumps": 1,
    "max_spike_dumps": 0, "spike_window": 50, "spike_warmup": 10, "spike_threshold": 5.0,
    "spike_factor": 3.0, "loss_spike_factor": 2.0, "update_factor": 20.0, "keep": 8,
    "flush_every": 10, "name": "bert", "seed": 3, "autocast": "bf16", "tensorboard": True,
    "ledger": "off",
}  # fmt: skip
DEFAULTS = Grouped(SpikeOptions(), ReadOptions(), Limits(), RunlogOptions())


def test_every_old_keyword_has_a_value_here() -> None:
    assert set(VALUES) == set(LEGACY)


@pytest.mark.parametrize("keyword", sorted(LEGACY))
def test_each_old_keyword_lands_in_its_group(keyword: str) -> None:
    group, field = LEGACY[keyword]
    folded, message = fold_legacy({keyword: VALUES[keyword]}, SpikeOptions(), DEFAULTS)
    assert getattr(getattr(folded, group), field) == VALUES[keyword]
    cls = type(getattr(DEFAULTS, group)).__name__
    assert message is not None and f"write Guard({group}={cls}({field}={VALUES[keyword]!r}))" in message


def test_nothing_old_is_no_warning_and_the_groups_as_given() -> None:
    assert fold_legacy({}, None, DEFAULTS) == (DEFAULTS, None)


def test_an_old_spikes_policy_string_and_old_spike_settings_fold_together() -> None:
    folded, message = fold_legacy({"spike_window": 40}, "skip", DEFAULTS)
    assert folded.spikes == SpikeOptions(policy="skip", window=40)
    assert message is not None and "spikes=SpikeOptions(window=40, policy='skip')" in message


def test_an_unknown_keyword_is_pythons_type_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'chek_every'"):
        fold_legacy({"chek_every": 1}, None, DEFAULTS)


def _model() -> tuple[Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def test_round_one_call_trains_with_a_deprecation_warning(tmp_path: Path) -> None:
    """``Guard(model, opt, check_every=…)`` as round 1 documented it raised TypeError in round 3."""
    model, opt = _model()
    with pytest.warns(
        DeprecationWarning, match=r"reads=ReadOptions\(check_every=5\), limits=Limits\(max_skips=2\)"
    ):
        guard = Guard(model, opt, run=tmp_path / "run", check_every=5, spikes="warn", max_skips=2)
    assert guard.limits.max_skips == 2 and guard.log.config["check_every_requested"] == 5
    assert guard.spike_policy is not None and str(guard.spike_policy) == "warn"
    for i in range(3):
        batch = torch.randn(8, 4)
        with guard.step(i, batch) as g:
            g.backward(model(batch).pow(2).mean())
            g.optimizer_step()
    guard.close()
    assert len(guard.records) == 3


def test_an_unknown_keyword_to_guard_is_a_type_error(tmp_path: Path) -> None:
    model, opt = _model()
    with pytest.raises(TypeError, match="unexpected keyword argument 'warmup'"):
        Guard(model, opt, run=tmp_path / "run", warmup=5)
