"""``envkit guard replay`` with an entry that is not the run's (a usage problem, exit 2), never a verdict
that blames the device: an entry that raises while building, a ``loss_fn`` that raises on the step
(the recorded step did not), a model whose layers differ from the dump's with the same weights
(``Tanh`` for ``ReLU``); and the run's own entry replays a finite fp32 step bitwise. Before: a
raising builder was a traceback, a raising ``loss_fn`` on a NaN step was "reproducible" and on a
finite one "transient: suspect the device", the other model "transient"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from envkit.errors import UsageError  # noqa: E402
from envkit.guard import Guard  # noqa: E402
from envkit.guard.dump import read_dump  # noqa: E402
from envkit.incident.replay import replay_dump  # noqa: E402

pytestmark = pytest.mark.frameworks


def mse(model: Any, batch: Any) -> Any:
    return torch.nn.functional.mse_loss(model(batch[0]), batch[1])


def net(act: type[Any]) -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), act(), torch.nn.Linear(8, 1))


def build() -> tuple[Any, Any, Any]:
    model = net(torch.nn.ReLU)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), mse


def train(run: Path, fault: str) -> Path:
    """30 steps; at step 25 a NaN in the batch (``nan``) or the lr x10,000 (``lr``): one dump."""
    model, opt, loss_fn = build()
    guard = Guard(model, opt, run=run, loss_fn=loss_fn, entry="tests:build")
    gen = torch.Generator().manual_seed(1)
    for i in range(30):
        x, y = torch.randn(16, 4, generator=gen), torch.randn(16, 1, generator=gen)
        if i == 25 and fault == "nan":
            x[0, 0] = float("nan")
        opt.param_groups[0]["lr"] = 1000.0 if (i == 25 and fault == "lr") else 0.1
        with guard.step(i, (x, y)) as step:
            step.backward(loss_fn(model, (x, y)))
            step.optimizer_step()
    guard.close()
    return run / "incidents" / "step-25"


@pytest.fixture(scope="module", params=["nan", "lr"])
def dump(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(tmp_path_factory.mktemp(f"run-{request.param}"), request.param)


def test_the_dump_records_the_models_leaf_modules(dump: Path) -> None:
    assert read_dump(dump).manifest["modules"] == ["0:Linear", "1:ReLU", "2:Linear"]


def test_an_entry_that_raises_while_building_is_a_usage_error(dump: Path) -> None:
    def broken() -> Any:
        raise FileNotFoundError("/data/train.bin")

    with pytest.raises(UsageError, match=r"the entry raised FileNotFoundError: /data/train.bin") as info:
        replay_dump(dump, broken)
    assert "device" not in str(info.value)


def test_a_loss_fn_that_raises_on_the_step_is_a_usage_error_not_a_verdict(dump: Path) -> None:
    def wrong_loss() -> tuple[Any, Any, Any]:
        model, opt, _ = build()
        return model, opt, lambda m, batch: mse(m, batch["inputs"])  # the batch is a tuple

    with pytest.raises(
        UsageError, match=r"the entry's step raised here \(TypeError.*the recorded step did not"
    ):
        replay_dump(dump, wrong_loss)


def test_a_model_with_other_layers_is_named_as_not_the_dumps(dump: Path) -> None:
    def other_model() -> tuple[Any, Any, Any]:
        model = net(torch.nn.Tanh)  # the same weights' names and shapes
        return model, torch.optim.SGD(model.parameters(), lr=0.1), mse

    with pytest.raises(
        UsageError, match=r"not the dump's.*the dump has 1:ReLU; the entry's model has 1:Tanh"
    ) as e:
        replay_dump(dump, other_model)
    assert "tests:build" in (e.value.hint or "")


def test_the_runs_own_entry_replays_the_step_bitwise(dump: Path) -> None:
    """The run's entry, here where the run ran: reproducible, the finite step too (its batch was loaded
    as views at 8-byte offsets into safetensors' buffer: another CPU kernel path, 1 ulp off, called
    "transient: suspect the device")."""
    verdict = replay_dump(dump, build)
    assert verdict.verdict == "reproducible", verdict.replays
    assert all(r["error"] is None for r in verdict.replays)


@pytest.mark.parametrize(
    ("recorded", "mine"),
    [
        (["module:Linear"], [":Linear"]),  # a DDP-wrapped one-layer model, replayed bare
        ([":Linear"], ["module:Linear"]),  # and the other way
        (["module.0:Linear", "module.1:ReLU"], ["0:Linear", "1:ReLU"]),
        (["_orig_mod.0:Linear"], ["0:Linear"]),  # torch.compile
    ],
)
def test_the_layout_check_looks_through_the_wrappers(recorded: list[str], mine: list[str]) -> None:
    from types import SimpleNamespace

    from envkit.incident.replay import _check_layout

    _check_layout(SimpleNamespace(manifest={"modules": recorded}), mine)  # type: ignore[arg-type]
