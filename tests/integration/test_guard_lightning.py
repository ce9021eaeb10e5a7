# mypy: disable-error-code="misc, name-defined"
# (the module subclasses LightningModule, imported through importorskip)
"""envkit.guard.lightning with a real Lightning Trainer on CPU: a planted NaN batch caught and skipped;
a bf16-mixed run's lr spike replayed bitwise under the autocast Lightning ran it with."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning.pytorch")

from envkit.cli import main  # noqa: E402
from envkit.errors import GuardError, GuardStopped  # noqa: E402
from envkit.guard import RunlogOptions  # noqa: E402
from envkit.guard.lightning import GuardCallback, trainer_autocast  # noqa: E402
from envkit.incident.replay import replay_dump  # noqa: E402

pytestmark = [
    pytest.mark.frameworks,
    pytest.mark.filterwarnings("ignore::UserWarning"),  # Lightning's advice (workers, logging)
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    # lightning 2.6.6's _pytree on torch 2.15: "`isinstance(treespec, LeafSpec)` is deprecated"
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning"),
]
NAN_AT = 3  # the batch (0-based) whose first input is NaN


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Linear(6, 8)
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x: Any) -> Any:
        return self.head(torch.relu(self.body(x)))

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.AdamW(self.parameters(), lr=1e-2, weight_decay=0.1)


def loader(nan_at: int | None) -> Any:
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(32, 6, generator=g), torch.randint(0, 2, (32,), generator=g)
    if nan_at is not None:
        x[nan_at * 4, 0] = math.nan
    data = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(data, batch_size=4, shuffle=False)


class Weights(L.Callback):
    """The weights after every batch (to see that a skipped step changed nothing)."""

    def __init__(self) -> None:
        self.after: list[list[Any]] = []

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self.after.append([p.detach().clone() for p in pl_module.parameters()])


def fit(callbacks: list[Any], nan_at: int | None = NAN_AT, **trainer: Any) -> Tiny:
    model = Tiny()
    options = {
        "max_epochs": 1,
        "accelerator": "cpu",
        "devices": 1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
    }
    L.Trainer(callbacks=callbacks, **{**options, **trainer}).fit(model, loader(nan_at))
    return model


def test_a_planted_nan_batch_is_caught_skipped_recorded_and_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    weights = Weights()
    guard_cb = GuardCallback(run)
    model = fit([guard_cb, weights])
    assert all(torch.isfinite(p).all() for p in model.parameters())
    guard = guard_cb.guard
    assert guard is not None
    (incident,) = guard.incidents
    assert (incident.step, str(incident.kind), incident.action) == (NAN_AT, "nonfinite-loss", "skipped")
    # the skip left the weights bitwise as they were (AdamW's weight decay would move them on zero grads)
    before, after = weights.after[NAN_AT - 1], weights.after[NAN_AT]
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(after, weights.after[NAN_AT + 1], strict=True))
    report = json.loads((run / "report.json").read_text())
    assert report["kind"] == "envkit-probe-report" and report["config"]["steps"] == 8
    assert report["frameworks"]["torch"]["workloads"]["train"]["nonfinite"]["step"] == NAN_AT + 1
    assert [s["step"] for s in report["guard"]["skips"]] == [NAN_AT]
    loc = report["guard"]["incidents"][0]["localization"]
    assert loc["batch"]["[0]"]["finite"] is False  # localized: the NaN came in with the data
    assert (run / "incidents" / f"step-{NAN_AT}" / "manifest.json").is_file()
    capsys.readouterr()
    assert main(["guard", "show", str(run)]) == 1
    assert f"step {NAN_AT}" in capsys.readouterr().out


def test_a_healthy_guarded_fit_is_bitwise_the_unguarded_fit(tmp_path: Path) -> None:
    plain = fit([], nan_at=None)
    guarded = fit([GuardCallback(tmp_path / "run")], nan_at=None)
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), guarded.parameters(), strict=True))
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["guard"]["incidents"] == [] and len(report["guard"]["steps"]) == 8
    assert main(["guard", "show", str(tmp_path / "run")]) == 0


def test_policy_stop_raises_out_of_fit_with_the_report(tmp_path: Path) -> None:
    with pytest.raises(GuardStopped, match="report"):
        fit([GuardCallback(tmp_path / "run", policy="stop")])
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["guard"]["incidents"][0]["action"] == "stopped"


def test_unsupported_setups_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GuardError, match="accumulate_grad_batches=2"):
        fit([GuardCallback(tmp_path / "run")], accumulate_grad_batches=2)


class Raises(Tiny):
    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if batch_idx == 2:
            raise IndexError("index 7 is out of bounds for dimension 0 with size 2")
        return super().training_step(batch, batch_idx)


def test_a_training_step_that_raises_is_recorded_and_dumped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    trainer = L.Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[GuardCallback(run)],
    )
    with pytest.raises(IndexError, match="out of bounds"):
        trainer.fit(Raises(), loader(None))
    report = json.loads((run / "report.json").read_text())
    (incident,) = report["guard"]["incidents"]
    assert (incident["step"], incident["kind"], incident["action"]) == (2, "error", "raised")
    assert "IndexError" in incident["message"] and (run / "incidents" / "step-2" / "manifest.json").is_file()


SPIKE_AT = 24  # the step whose lr is x10,000 (after the update check's 20-step warm-up)


class LrSpike(L.Callback):
    """The corpus's lr-spike: the lr x10,000 for one step, set before the batch, restored after."""

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if trainer.global_step == SPIKE_AT:
            for group in trainer.optimizers[0].param_groups:
                group["lr"] *= 10_000

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if trainer.global_step == SPIKE_AT + 1:  # Lightning counts the step before this hook
            for group in trainer.optimizers[0].param_groups:
                group["lr"] /= 10_000


def build() -> tuple[Any, Any, Any]:
    """The replay entry: the module, its optimizer, its training loss."""
    model = Tiny()
    return model, model.configure_optimizers(), lambda m, b: m.training_step(b, 0)


def spike_loader() -> Any:
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(128, 6, generator=g), torch.randint(0, 2, (128,), generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)


def test_a_bf16_mixed_lr_spike_replays_reproducible_under_the_trainers_autocast(tmp_path: Path) -> None:
    run = tmp_path / "run"
    trainer = L.Trainer(
        max_epochs=1, accelerator="cpu", devices=1, precision="bf16-mixed", logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[LrSpike(), GuardCallback(run, entry="test_guard_lightning:build")],
    )  # fmt: skip
    trainer.fit(Tiny(), spike_loader())
    report = json.loads((run / "report.json").read_text())
    (incident,) = report["guard"]["incidents"]
    assert (incident["step"], incident["kind"], incident["action"]) == (SPIKE_AT, "update-spike", "skipped")
    dump = run / "incidents" / f"step-{SPIKE_AT}"
    assert json.loads((dump / "manifest.json").read_text())["autocast"] == "bf16"
    verdict = replay_dump(dump, build)
    # before: replayed in fp32, the loss differed in the 5th digit and the verdict was 'transient'
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert verdict.replays[0]["loss"] == verdict.recorded["loss"]
    assert any("bfloat16 autocast" in n for n in verdict.notes)


def test_the_trainers_autocast_is_declared_unless_the_user_names_one(tmp_path: Path) -> None:
    assert [trainer_autocast(p) for p in ("bf16-mixed", "bf16", "bf16-true", "32-true", None)] == [
        "bf16", "bf16", None, None, None,
    ]  # fmt: skip
    own = GuardCallback(tmp_path / "run", log=RunlogOptions(autocast="fp16"))
    fit([own], nan_at=None, precision="bf16-mixed")
    assert own.guard is not None and own.guard.log.config["autocast"] == "fp16"
    fp32 = GuardCallback(tmp_path / "run32")
    fit([fp32], nan_at=None)
    assert fp32.guard is not None and fp32.guard.log.config["autocast"] is None
